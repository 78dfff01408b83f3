"""What the cycle collector costs the grader: each lab's first catalogued mistake of every activity
graded with the objects alive after the labs were checked frozen (gc.freeze, as grading_for
leaves them) and with them walked again by every collection, alternately in one process with a
warm pool. Each grading draws its own seed's cases, as a class's submissions do: the cache of
drawn seeds is emptied before each.

    python -m bench.collector_cost [--rounds 3] [--lab LAB ...]     (from the repository root)

Prints, per lab, the median wall seconds and CPU seconds (this process's, and the submission's
workers') of grading the sample, and the ratios frozen / walked.
"""
import gc
import statistics
import tempfile
import time

from autograder.grading.grade import Options, grade
from autograder.isolation.sandbox import Pool
from autograder.isolation.warm import lab_imports
from autograder.labs import _seeded, grading_for
from bench.alternating import arguments
from bench.grader_overhead import sample
from course.labs import find_labs


def main():
    args = arguments(__doc__)
    labs = [lab for lab in find_labs() if not args.lab or lab.name in args.lab]
    for lab in labs:
        grading_for(lab.name)  # checked, and what is alive then frozen, as a grading run does
    variants = {"frozen": gc.freeze, "walked": gc.unfreeze}
    pool = Pool.launch(lab_imports)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for lab in labs:
                paths = sample(lab, scratch)
                walls, own, workers = ({name: [] for name in variants} for _ in range(3))
                scores = {}
                for round_number in range(args.rounds + 1):  # round 0 warms the zygotes
                    for name, variant in variants.items():
                        variant()
                        started, cpu, spent, got = time.perf_counter(), time.process_time(), 0.0, []
                        for path in paths:
                            _seeded.cache_clear()
                            result, _ = grade(path, Options(pool=pool))
                            spent += result["extra_data"]["cpu_seconds"]
                            got.append([t["score"] for t in result["tests"]])
                        if round_number:
                            walls[name].append(time.perf_counter() - started)
                            own[name].append(time.process_time() - cpu)
                            workers[name].append(spent)
                        scores.setdefault(name, got)
                assert scores["frozen"] == scores["walked"], "the two must grade alike"
                median = {name: (statistics.median(walls[name]), statistics.median(own[name]),
                                 statistics.median(workers[name])) for name in variants}
                (wall, mine, theirs), (wall0, mine0, theirs0) = median["frozen"], median["walked"]
                print(f"{lab.name}: {len(paths)} mistakes, median of {args.rounds} rounds")
                print(f"  walked: {wall0:.2f} s wall, grader {mine0:.2f} s CPU, workers {theirs0:.2f} s CPU")
                print(f"  frozen: {wall:.2f} s wall, grader {mine:.2f} s CPU, workers {theirs:.2f} s CPU")
                print(f"  ratios: wall {wall / wall0:.2f}, grader CPU {mine / mine0:.2f}, "
                      f"grader + workers CPU {(mine + theirs) / (mine0 + theirs0):.2f}")
    finally:
        gc.freeze()
        pool.close()


if __name__ == "__main__":
    main()
