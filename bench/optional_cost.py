"""What a lab's optional activities add to grading one submission: the solved notebook graded
with every hidden check, and graded with the optional activities' checks left out (a baseline
for the comparison only; the grader has no such mode), alternately in one process, warm pool
as in a batch.

    python -m bench.optional_cost [--rounds 5] [--lab LAB ...]     (from the repository root)
"""
from dataclasses import replace

from autograder.labs import CHECK_SEED, grading_for
from bench.alternating import alternate, arguments


def required_only(lab_name, seed=CHECK_SEED):
    """The lab's grading without the optional activities' hidden checks: the baseline."""
    real = grading_for(lab_name, seed)
    return replace(real, cases={a: ([] if real.lab.activities[a].optional else cases)
                                for a, cases in real.cases.items()})


def main():
    args = arguments(__doc__)
    gradings = {"every check": grading_for, "required checks only": required_only}
    for lab, medians in alternate(args, gradings):
        optional = [a for a in lab.activities.values() if a.optional]
        extra = sum(len(grading_for(lab.name).cases[a.id]) for a in optional)
        full, baseline = (medians[name] for name in gradings)
        print(f"{lab.name}: optional {', '.join(a.id for a in optional)} ({extra} hidden checks); "
              f"median of {args.rounds} rounds")
        print(f"  every check {full:.2f} s, required checks only {baseline:.2f} s, ratio {full / baseline:.2f}")


if __name__ == "__main__":
    main()
