"""What grading without PyTorch costs: each lab's solved notebook graded under its declared
policy (activities without PyTorch in a worker forked from a zygote that never imported it,
cells run statement by statement, a second worker where some activity uses PyTorch) and with
PyTorch allowed everywhere (one worker, as before the policy), alternating, warm pool as in a
batch. The second is a baseline for the comparison only; the grader has no such mode.

    python -m bench.policy_cost [--rounds 5] [--lab LAB ...]     (from the repository root)
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


def everywhere(lab_name):
    """The lab's grading with every activity allowed PyTorch: the baseline."""
    real = grading_for(lab_name)
    return replace(real, uses_pytorch=frozenset(real.lab.activities))


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
                full = sum(a.points for a in lab.activities.values())
                policies = {"declared policy": grading_for, "PyTorch everywhere": everywhere}
                times = {name: [] for name in policies}
                for round_number in range(args.rounds + 1):  # round 0 warms caches and zygotes
                    for name, policy in policies.items():
                        autograder.grade.grading_for = policy
                        started = time.perf_counter()
                        result, _ = grade(notebook, Options(pool=pool))
                        if round_number:
                            times[name].append(time.perf_counter() - started)
                        assert result["score"] == full, (name, result["output"])
                declared, baseline = (statistics.median(times[name]) for name in policies)
                uses = grading_for(lab.name).uses_pytorch
                print(f"{lab.name}: without PyTorch {', '.join(sorted(set(lab.activities) - uses))}; "
                      f"with it {', '.join(sorted(uses)) or 'none'}")
                print(f"  median of {args.rounds} rounds: declared policy {declared:.2f} s, "
                      f"PyTorch everywhere {baseline:.2f} s, ratio {declared / baseline:.2f}")
    finally:
        autograder.grade.grading_for = grading_for
        if pool is not None:
            pool.close()


if __name__ == "__main__":
    main()
