"""What grading without PyTorch costs: each lab's solved notebook graded under its declared
policy (activities without PyTorch in a worker forked from a zygote that never imported it,
cells run statement by statement, a second worker where some activity uses PyTorch) and with
PyTorch allowed everywhere (one worker, as before the policy), alternating, warm pool as in a
batch. The second is a baseline for the comparison only; the grader has no such mode.

    python -m bench.policy_cost [--rounds 5] [--lab LAB ...]     (from the repository root)
"""
from dataclasses import replace

from autograder.labs import CHECK_SEED, grading_for
from bench.alternating import alternate, arguments


def everywhere(lab_name, seed=CHECK_SEED):
    """The lab's grading with every activity allowed PyTorch: the baseline."""
    real = grading_for(lab_name, seed)
    return replace(real, uses_pytorch=frozenset(real.lab.activities))


def main():
    args = arguments(__doc__)
    policies = {"declared policy": grading_for, "PyTorch everywhere": everywhere}
    for lab, medians in alternate(args, policies):
        declared, baseline = (medians[name] for name in policies)
        uses = grading_for(lab.name).uses_pytorch
        print(f"{lab.name}: without PyTorch {', '.join(sorted(set(lab.activities) - uses))}; "
              f"with it {', '.join(sorted(uses)) or 'none'}")
        print(f"  median of {args.rounds} rounds: declared policy {declared:.2f} s, "
              f"PyTorch everywhere {baseline:.2f} s, ratio {declared / baseline:.2f}")


if __name__ == "__main__":
    main()
