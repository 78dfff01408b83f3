"""What a re-grade on the reference engine costs, in this checkout and in another revision: each
lab's solved notebook with the answer of an activity that later ones call left as its stub, so
that those are judged again on the correct engine across the link (autograder/isolation/worker.Link).
The other revision is checked out in a temporary git worktree; the two are graded alternately,
so that a change in the machine's load hits both.

    python -m bench.regrade_cost --before REV [--rounds 2] [--lab LAB]     (from the repository root)

Prints, per lab, the least wall and CPU seconds of a grading each way (CPU of every process the
grading command starts, its sandboxed workers included: bench/cpu.py; and the submission's
workers' alone, as its result counts them, without the command's start) and the ratios this
checkout / REV. Both must give the same scores and feedback.
"""
import json
from collections import Counter
from pathlib import Path

import nbformat

from autograder.labs import declared_depends
from bench.worktree import HERE, arguments, beside, grade_command
from build_student import build
from course.labs import find_labs
from tests.submissions import answer_cell, with_answer

def most_called(lab):
    """The activity to leave as its stub: the one the most activities call (the last of a tie,
    whose callers are re-graded on the most of the correct engine)."""
    calls = Counter(need for needs in declared_depends(lab.name).values() for need in needs)
    return max(reversed(lab.activities), key=lambda activity: calls[activity])


def grade(tree, notebook, out, secret):
    """(Measured, result) of `tree` grading `notebook` alone, its hidden inputs drawn with `secret`."""
    measured = grade_command(tree, notebook, "--out", out, "--jobs", "1", "--regrade", "--secret-file", secret)
    (result,) = [json.loads(path.read_text()) for path in Path(out).glob("*/*.json")]
    return measured, result


def main():
    args = arguments(__doc__, rounds=2)
    labs = [lab for lab in find_labs() if not args.lab or lab.name in args.lab]
    with beside(args.before) as (scratch, trees, secret):
        build(scratch / "solved", solved=True)
        build(scratch / "release")
        for lab in labs:
            activity = most_called(lab)
            solved = nbformat.read(scratch / "solved" / lab.name / f"{lab.name}.ipynb", as_version=4)
            blank = nbformat.read(scratch / "release" / lab.name / f"{lab.name}.ipynb", as_version=4)
            notebook = scratch / f"{lab.name}-stub-{activity}.ipynb"
            nbformat.write(with_answer(solved, activity, answer_cell(blank, activity).source), notebook)
            measured = {name: [] for name in trees}
            for round_number in range(args.rounds):
                for name, tree in trees.items():
                    out = scratch / f"out-{lab.name}-{round_number}-{name.replace(' ', '-')}"
                    measured[name].append(grade(tree, notebook, out, secret))
            for name, runs in measured.items():
                for _, result in runs:
                    if "cpu_seconds" not in result["extra_data"]:
                        raise SystemExit(f"{lab.name}, graded by {name}, was not graded: {result['output']}")
            said = {name: [(t["name"], t["score"], t["output"]) for t in runs[-1][1]["tests"]]
                    for name, runs in measured.items()}
            assert len({json.dumps(s) for s in said.values()}) == 1, f"{lab.name}: the two revisions grade differently"
            rejudged = sum("on a correct engine" in output for _, _, output in said[HERE])
            least = {name: (min(m.wall for m, _ in runs), min(m.cpu for m, _ in runs),
                            min(r["extra_data"]["cpu_seconds"] for _, r in runs)) for name, runs in measured.items()}
            (wall, cpu, own), (wall0, cpu0, own0) = least[HERE], least[args.before]
            print(f"{lab.name}, activity {activity} a stub, {rejudged} activities passed on the correct engine "
                  f"(least of {args.rounds}; CPU of the command by {measured[args.before][-1][0].counted}, and of "
                  "the submission's workers as its result counts them):")
            print(f"  {args.before}: wall {wall0:6.1f} s, CPU {cpu0:6.1f} s, workers {own0:6.1f} s")
            print(f"  this checkout: wall {wall:6.1f} s, CPU {cpu:6.1f} s, workers {own:6.1f} s   ratio wall "
                  f"{wall / wall0:.2f}, CPU {cpu / cpu0:.2f}, workers {own / own0:.2f}")


if __name__ == "__main__":
    main()
