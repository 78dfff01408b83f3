"""What a submission's own hidden inputs cost the grader: each lab's `cases(seed)` (the inputs
drawn from the seed and PyTorch's expected values), in CPU seconds of this process.

    python -m bench.hidden_inputs_cost [--seeds 5]     (from the repository root)

Every submission has a seed of its own (autograder/grading/secret.py), so the grader computes this once
per submission, on top of running the student's code and judging it. The first seed of each
lab is computed and not counted: it pays for the lab's imports (PyTorch's lazy modules among
them), which a grading run pays once.
"""
import argparse
import statistics
import time

from autograder.labs import _import, course_labs


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    for lab_name in sorted(course_labs()):
        cases = _import(lab_name, "cases").cases
        cases(1)
        spent = []
        for seed in range(2, 2 + args.seeds):
            started = time.process_time()
            drawn = cases(seed)
            spent.append(time.process_time() - started)
        count = sum(map(len, drawn.values()))
        print(f"{lab_name}: {count} hidden cases, {statistics.median(spent):.2f} s of CPU per seed "
              f"(median of {args.seeds}; from {min(spent):.2f} to {max(spent):.2f})")


if __name__ == "__main__":
    main()
