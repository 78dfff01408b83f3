"""What grading a class of solved notebooks costs, in this checkout and in another revision: for
each lab, a folder of copies of its solved notebook graded in one run of the `grade` command, by
the two revisions alternately, so that a change in the machine's load hits both.

    python -m bench.batch_cost --before REV [--copies 8] [--rounds 3] [--lab LAB]   (from the repository root)

Each copy differs from the others in its bytes (a key of its notebook metadata), so each draws
hidden inputs of its own, as a class's notebooks do; both revisions draw them with one secret.
Prints, per lab, the least wall and CPU seconds of a run each way (CPU of every process the
command starts, its zygotes and sandboxed workers included: bench/cpu.py) and the ratios this
checkout / REV. Every copy must get the same score from both.
"""
import json
from pathlib import Path

import nbformat

from bench.worktree import HERE, arguments, beside, grade_command
from build_student import build
from course.labs import find_labs


def class_of(solved, copies, folder):
    """`folder` holding `copies` copies of the notebook at `solved`, student ids s01, s02, ..."""
    folder.mkdir()
    notebook = nbformat.read(solved, as_version=4)
    for number in range(1, copies + 1):
        notebook.metadata["bench_copy"] = number
        nbformat.write(notebook, folder / f"s{number:02d}.ipynb")
    return folder


def grade(tree, folder, out, secret):
    """(Measured, {student: score}) of `tree` grading the class in `folder`, one notebook at a time."""
    measured = grade_command(tree, folder, "--out", out, "--jobs", "1", "--secret-file", secret)
    scores = {path.parent.name: json.loads(path.read_text())["score"] for path in Path(out).glob("*/*.json")}
    return measured, scores


def main():
    args = arguments(__doc__, rounds=3, copies=8)
    labs = [lab for lab in find_labs() if not args.lab or lab.name in args.lab]
    with beside(args.before) as (scratch, trees, secret):
        build(scratch / "solved", solved=True)
        for lab in labs:
            folder = class_of(scratch / "solved" / lab.name / f"{lab.name}.ipynb", args.copies,
                              scratch / f"class-{lab.name}")
            measured = {name: [] for name in trees}
            for round_number in range(args.rounds):
                for name, tree in trees.items():
                    out = scratch / f"out-{lab.name}-{round_number}-{name.replace(' ', '-')}"
                    measured[name].append(grade(tree, folder, out, secret))
            every = [scores for runs in measured.values() for _, scores in runs]
            if len(every[0]) != args.copies or any(scores != every[0] for scores in every):
                raise SystemExit(f"{lab.name}: the runs scored the class differently: {every}")
            least = {name: (min(m.wall for m, _ in runs), min(m.cpu for m, _ in runs))
                     for name, runs in measured.items()}
            (wall, cpu), (wall0, cpu0) = least[HERE], least[args.before]
            print(f"{lab.name}, {args.copies} solved copies, each scored {sorted(set(every[0].values()))} "
                  f"(least of {args.rounds}; CPU of the command by {measured[args.before][-1][0].counted}):")
            print(f"  {args.before}: wall {wall0:6.1f} s, CPU {cpu0:6.1f} s")
            print(f"  {HERE}: wall {wall:6.1f} s, CPU {cpu:6.1f} s   ratio wall {wall / wall0:.2f}, CPU {cpu / cpu0:.2f}")


if __name__ == "__main__":
    main()
