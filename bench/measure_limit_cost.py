"""What the diagnosis measures of tests/test_diagnosis.py cost at a hidden check's CPU limit of 60 s
(grading's) and of 30 s (the catalogue's, which they now use): a lab's variants and strangers
measured both ways alternately in one process with one warm pool, every process counted
(bench/cpu.py). An answer that never finishes meets the limit; every other case takes
milliseconds, so both ways must name the same mistakes (asserted).

    python -m bench.measure_limit_cost [--rounds 1] [--lab LAB ...]     (from the repository root)

Prints each way's median wall and CPU seconds per lab, the answers that stopped, and the ratios 30 / 60.
"""
import argparse
import time

from autograder.grading.grade import Options
from autograder.isolation.sandbox import Limits, Pool
from autograder.isolation.warm import lab_imports
from autograder.measuring.fingerprints import measure, stranger_answers, variant_answers
from bench.cpu import counted
from bench.ratios import report
from course.labs import find_labs

FRESH_SEED = 99  # tests/test_diagnosis.py's
LIMITS = (60, 30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--lab", action="append", help="only these labs (default: every lab)")
    args = parser.parse_args()
    pool = Pool.launch(lab_imports)
    try:
        for lab in find_labs():
            if args.lab and lab.name not in args.lab:
                continue
            answers = [*variant_answers(lab.name), *stranger_answers(lab.name)]
            walls, cpus, named = ({seconds: [] for seconds in LIMITS} for _ in range(3))
            stopped = set()
            for _ in range(args.rounds):
                for seconds in LIMITS:
                    with counted() as cpu:
                        started = time.perf_counter()
                        measured = measure(lab.name, answers, FRESH_SEED, Options(Limits(cell_seconds=seconds),
                                                                                  pool=pool), jobs=2)
                        walls[seconds].append(time.perf_counter() - started)
                        cpus[seconds].append(cpu.seconds())
                    named[seconds].append([(m.answer, m.failed, m.named) for m in measured])
                    stopped |= {m.answer for m in measured if m.stopped}
            assert all(run == named[LIMITS[0]][0] for runs in named.values() for run in runs), \
                f"{lab.name}: the two limits fail or name different answers"
            print(f"{lab.name}: {len(answers)} answers, median of {args.rounds} round(s); stopped: "
                  f"{sorted(stopped) or 'none'}; the ways are a hidden check's CPU limits in seconds")
            report(walls, cpus, LIMITS[1], LIMITS[0], indent="  ")
    finally:
        pool.close()


if __name__ == "__main__":
    main()
