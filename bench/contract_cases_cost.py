"""What the hidden cases drawn from the contracts cost: each lab's solved notebook graded with
the cases and probes of an earlier revision (the baseline, read from git) and with today's,
alternately in one process with a warm pool as in a batch. Prints wall and CPU medians and
their ratios; every seed's cases are drawn afresh per submission, so their drawing is counted.

    python -m bench.contract_cases_cost --before REV [--rounds 5] [--lab LAB ...]   (from the repository root)
"""
import subprocess
import sys
import types
from dataclasses import replace
from functools import cache

from autograder.labs import CHECK_SEED, grading_for
from bench.alternating import alternate, arguments


def source_at(revision, path):
    return subprocess.run(["git", "show", f"{revision}:{path}"], check=True, capture_output=True, text=True).stdout


@cache
def cases_module(revision, lab_name):
    module = types.ModuleType(f"cases_at_{revision}_{lab_name}")
    exec(compile(source_at(revision, f"autograder/labs/{lab_name}/cases.py"), module.__name__, "exec"),
         module.__dict__)
    return module


def at(revision):
    """A grading function that gives a lab's cases and probes as they were at `revision`."""
    def grading(lab_name, seed=CHECK_SEED):
        module = cases_module(revision, lab_name)
        return replace(grading_for(lab_name, seed), cases=module.cases(seed),
                       probes=source_at(revision, f"autograder/labs/{lab_name}/probes.py"),
                       apart=frozenset(getattr(module, "APART", ())))
    return grading


def main():
    sys.argv, before = without_before(sys.argv)
    args = arguments(__doc__)
    gradings = {"before": at(before), "now": grading_for}
    cpu = {}
    for lab, walls in alternate(args, gradings, cpu):
        counts = {name: sum(map(len, grading(lab.name).cases.values())) for name, grading in gradings.items()}
        used = cpu[lab.name]
        print(f"{lab.name}: {counts['before']} hidden checks at {before}, {counts['now']} now; "
              f"median of {args.rounds} rounds")
        print(f"  wall {walls['before']:.2f} s -> {walls['now']:.2f} s (ratio {walls['now'] / walls['before']:.2f}); "
              f"CPU {used['before']:.2f} s -> {used['now']:.2f} s (ratio {used['now'] / used['before']:.2f})")


def without_before(argv):
    """(argv without `--before REV`, REV): the shared parser knows only --rounds and --lab."""
    if "--before" not in argv or argv.index("--before") + 1 >= len(argv):
        raise SystemExit("give the baseline revision: --before REV")
    at_index = argv.index("--before")
    return argv[:at_index] + argv[at_index + 2:], argv[at_index + 1]


if __name__ == "__main__":
    main()
