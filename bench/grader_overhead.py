"""What the grader's own bookkeeping costs per submission: each lab's first catalogued mistake of
every activity (a failing answer: judged, then replayed for its diagnosis) graded as committed and
as before two cuts, alternately in one process with a warm pool:
- every reply was sketched for diagnosis, though only the replay's sketches are compared;
- every reading of a worker's clock read each of its threads' /proc/<tid>/schedstat, though only
  the wall-clock backstop needs them, and only for a request that has lasted a while
  (bench/thread_counters_cost.py measures the last step of that cut alone).

    python -m bench.grader_overhead [--rounds 3] [--lab LAB ...]     (from the repository root)

Prints, per lab, the median wall seconds and CPU seconds (this process's, which the two cuts
touch, and the submission's workers') of grading the sample, and the ratios committed / before.
"""
import statistics
import tempfile
import time
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import nbformat

import autograder.grading.grade as grade_module
from autograder.grading.grade import Options, grade
from autograder.isolation.sandbox import Pool, Worker
from autograder.isolation.warm import lab_imports
from autograder.labs import grading_for
from autograder.labs.notebooks import solved_notebook, student_notebook
from autograder.measuring.catalogue import mistaken
from bench.alternating import arguments
from course.labs import find_labs


def reading_threads(clock):
    """`clock` (Worker._clock) that also reads every thread's counters, as each reading once did."""
    def reading(self):
        if self.group is not None:
            self.group.active_seconds()
        return clock(self)
    return reading


@contextmanager
def as_before():
    judge, clock = grade_module.judge_activity, Worker._clock
    grade_module.judge_activity = partial(judge, sketch=True)
    Worker._clock = reading_threads(clock)
    try:
        yield
    finally:
        grade_module.judge_activity, Worker._clock = judge, clock


@contextmanager
def as_committed():
    yield


def sample(lab, folder):
    """The notebooks of the lab's first catalogued mistake of each activity, written in `folder`."""
    solved = solved_notebook(lab, student_notebook(lab))
    firsts = {}
    for mistake in grading_for(lab.name).mistakes:
        firsts.setdefault(mistake.activity, mistake)
    paths = []
    for number, mistake in enumerate(firsts.values()):
        paths.append(Path(folder) / f"{lab.name}-{number:02d}.ipynb")
        nbformat.write(mistaken(lab, solved, mistake)[1], paths[-1])
    return paths


def compare(lab, paths, variants, rounds, pool, before_each=lambda: None):
    """Grade `paths` under each of `variants` ({name: context manager}, the new first, the old
    second) alternately, `rounds` times after a round that warms caches and zygotes; print the
    medians of wall time, this process's CPU and the workers', and the ratios new / old.
    `before_each` runs before each grading. Every variant must grade every sample alike."""
    walls, own, workers = ({name: [] for name in variants} for _ in range(3))
    scores = {}
    for round_number in range(rounds + 1):
        for name, variant in variants.items():
            with variant():
                started, cpu, spent, got = time.perf_counter(), time.process_time(), 0.0, []
                for path in paths:
                    before_each()
                    result, _ = grade(path, Options(pool=pool))
                    spent += result["extra_data"]["cpu_seconds"]
                    got.append([t["score"] for t in result["tests"]])
                if round_number:
                    walls[name].append(time.perf_counter() - started)
                    own[name].append(time.process_time() - cpu)
                    workers[name].append(spent)
            scores.setdefault(name, got)
    (new, old) = variants
    assert scores[new] == scores[old], "the two must grade alike"
    median = {name: (statistics.median(walls[name]), statistics.median(own[name]),
                     statistics.median(workers[name])) for name in variants}
    (wall, mine, theirs), (wall0, mine0, theirs0) = median[new], median[old]
    print(f"{lab.name}: {len(paths)} mistakes, median of {rounds} rounds")
    for name, (w, m, t) in ((old, median[old]), (new, median[new])):
        print(f"  {name + ':':<10} {w:.2f} s wall, grader {m:.2f} s CPU, workers {t:.2f} s CPU")
    print(f"  ratios: wall {wall / wall0:.2f}, grader CPU {mine / mine0:.2f}, "
          f"grader + workers CPU {(mine + theirs) / (mine0 + theirs0):.2f}")


def compare_sampled(doc, variants):
    """The bench's arguments read (`doc` its help), then `compare` of `variants` on the sample of
    each lab asked for, in one warm pool."""
    args = arguments(doc)
    pool = Pool.launch(lab_imports)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for lab in [lab for lab in find_labs() if not args.lab or lab.name in args.lab]:
                compare(lab, sample(lab, scratch), variants, args.rounds, pool)
    finally:
        pool.close()


def main():
    compare_sampled(__doc__, {"committed": as_committed, "before": as_before})


if __name__ == "__main__":
    main()
