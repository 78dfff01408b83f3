"""What the catalogue's visible runs cost: every activity's visible check run on its reference
answer as the catalogue runs it for each wrong answer, with every given cell before the check (a
baseline for the comparison only) and with the demonstrations that bind nothing the check reads
left out (what the catalogue does: measuring/catalogue.py `without_idle_demos`), alternately in
one warm pool, so that a noisy machine slows both alike. CPU counts every process, the
sandboxed workers included (bench/cpu.py).

    python -m bench.visible_cost [--rounds 3] [--lab LAB ...]     (from the repository root)
"""
import statistics
import time

from autograder.grading.batch import warm
from autograder.grading.grade import Options
from autograder.labs import course_labs
from autograder.measuring import catalogue
from bench.alternating import arguments
from bench.cpu import counted

KEEPING = {"every given cell": lambda steps, demos: steps, "idle demos left out": catalogue.without_idle_demos}


def visible_runs(lab, options):
    for activity in lab.activities.values():
        caught, message = catalogue.visible_verdict(lab, activity.id, activity.reference.source, options)
        assert not caught and message == "the check passed", (lab.name, activity.id, message)


def one_pass(lab, options, keeping):
    """(wall, CPU) seconds of the visible runs of every activity of `lab` on its reference."""
    catalogue.without_idle_demos = keeping
    try:
        with counted() as cpu:
            started = time.perf_counter()
            visible_runs(lab, options)
            return time.perf_counter() - started, cpu.seconds()
    finally:
        catalogue.without_idle_demos = KEEPING["idle demos left out"]


def main():
    args = arguments(__doc__)
    labs = [lab for lab in course_labs().values() if not args.lab or lab.name in args.lab]
    with warm(Options()) as options:
        for lab in labs:
            visible_runs(lab, options)  # uncounted: starts the zygote outside the counted groups, warms caches
            measured = {name: [] for name in KEEPING}
            for _ in range(args.rounds):
                for name, keeping in KEEPING.items():
                    measured[name].append(one_pass(lab, options, keeping))
            (old_wall, old_cpu), (new_wall, new_cpu) = (
                (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
                for runs in measured.values())
            print(f"{lab.name}: {len(lab.activities)} visible runs, median of {args.rounds} rounds")
            print(f"  every given cell {old_wall:.2f} s wall, {old_cpu:.2f} s CPU; idle demos left out "
                  f"{new_wall:.2f} s wall, {new_cpu:.2f} s CPU; ratio {new_wall / old_wall:.2f} wall, "
                  f"{new_cpu / old_cpu:.2f} CPU")


if __name__ == "__main__":
    main()
