"""What a lab's optional activities add to grading one submission: the solved notebook graded
with every hidden check, and graded with the optional activities' checks left out (a baseline
for the comparison only; the grader has no such mode), alternately in one process, warm pool
as in a batch.

    python -m bench.optional_cost [--rounds 5] [--lab LAB ...]     (from the repository root)
"""
import argparse
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import autograder.grade
from autograder.grade import Options, grade
from autograder.labs import grading_for
from autograder.sandbox import Pool
from autograder.warm import lab_imports
from build_student import build
from course.labs import find_labs


def required_only(lab_name):
    """The lab's grading without the optional activities' hidden checks: the baseline."""
    real = grading_for(lab_name)
    return replace(real, cases={a: ([] if real.lab.activities[a].optional else cases)
                                for a, cases in real.cases.items()})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--lab", action="append", help="only these labs (default: every lab)")
    args = parser.parse_args()
    labs = [lab for lab in find_labs() if not args.lab or lab.name in args.lab]
    pool = Pool.launch(lab_imports())
    try:
        with tempfile.TemporaryDirectory() as scratch:
            build(Path(scratch), solved=True)
            for lab in labs:
                notebook = Path(scratch) / lab.name / f"{lab.name}.ipynb"
                gradings = {"every check": grading_for, "required checks only": required_only}
                times = {name: [] for name in gradings}
                for round_number in range(args.rounds + 1):  # round 0 warms caches and zygotes
                    for name, grading in gradings.items():
                        autograder.grade.grading_for = grading
                        started = time.perf_counter()
                        grade(notebook, Options(pool=pool))
                        if round_number:
                            times[name].append(time.perf_counter() - started)
                optional = [a for a in lab.activities.values() if a.optional]
                extra = sum(len(grading_for(lab.name).cases[a.id]) for a in optional)
                full, baseline = (statistics.median(times[name]) for name in gradings)
                print(f"{lab.name}: optional {', '.join(a.id for a in optional)} ({extra} hidden checks); "
                      f"median of {args.rounds} rounds")
                print(f"  every check {full:.2f} s, required checks only {baseline:.2f} s, ratio {full / baseline:.2f}")
    finally:
        autograder.grade.grading_for = grading_for
        if pool is not None:
            pool.close()


if __name__ == "__main__":
    main()
