"""`python -m autograder check NOTEBOOK`: what a student can know before submitting, and no more.

It reads the notebook as the grader reads it (its lab, its answer cells, what the grader would
refuse), compares its locked cells with the release, notes the answers of activities graded with
NumPy only that name PyTorch, and runs the saved file top to bottom in a fresh kernel from its own
folder, timing each visible check. It never runs a hidden check: it neither computes the lab's
hidden cases nor compares with its reference solutions, so a visible pass is not a grade, and
its last line says so.
"""
import ast
import functools
import os
import sys
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import nbformat

from autograder.labs import HERE, course_labs
from autograder.policy import NUMPY_ONLY, pytorch_mentions
from autograder.roster import folder_lab
from autograder.sandbox import Limits
from autograder.submission import SubmissionError, answers, identify, load, untouched
from autograder.vocabulary import listing
from course.check_cell import CHECKING
from course.execute import errors, execute
from course.release import student_notebook
from course.syntax import parse

# Wall-clock seconds for one cell, as nbgrader's Validate allows in the release folder: the grader's
# own limit (Limits.cell_seconds, in CPU seconds) is reported per cell rather than enforced here.
CELL_TIMEOUT = 600


def uses_pytorch(lab):
    """The lab's USES_PYTORCH, read from its cases.py as text: the module is never imported, so no
    hidden case is computed and PyTorch is not loaded."""
    tree = parse((HERE / lab.name / "cases.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(target, "id", None) == "USES_PYTORCH"
                                                for target in node.targets):
            return frozenset(item.value for item in ast.walk(node.value) if isinstance(item, ast.Constant))
    raise SubmissionError("lab_not_gradable", f"lab {lab.name}'s cases.py declares no USES_PYTORCH")


def named(notebook, index):
    """How a notebook editor shows cell `index`: its number counted from 1, and its id."""
    cell_id = notebook.cells[index].get("id")
    return f"cell {index + 1}" + (f" ({cell_id})" if cell_id else "")


def structure(path, notebook, lab):
    """What the grader will read differently from the release: problems, and notes that cost nothing."""
    problems, notes = [], []
    expected = folder_lab(path)
    if expected is not None and expected != lab.name:
        problems.append(f"this notebook is lab {lab.name}, but its folder hands it in as lab {expected}: the grader "
                        "would grade it as neither")
    by_id = {cell.get("id"): index for index, cell in enumerate(notebook.cells)}
    sources = {cell.source for cell in notebook.cells}
    for cell in student_notebook(lab).cells:
        if not cell.metadata["nbgrader"]["locked"]:
            continue
        index = by_id.get(cell.id)
        if index is not None and notebook.cells[index].source != cell.source:
            problems.append(f"locked {named(notebook, index)} was edited: the grader runs the release's version "
                            "(and your edit as your own code); undo the edit")
        elif index is None and cell.source not in sources:
            problems.append(f"locked cell {cell.id} is missing: put it back from the release")
    found = answers(lab, notebook)
    for activity in lab.activities.values():
        if f"{activity.id}-answer" not in found:
            problems.append(f"activity {activity.id} has no answer cell (the one defining "
                            f"{listing(activity.functions)})")
    numpy_only = set(lab.activities) - uses_pytorch(lab)
    for activity in lab.activities:
        mention = pytorch_mentions(lab, found.get(f"{activity}-answer", "")) if activity in numpy_only else None
        if mention is not None:
            problems.append(f"activity {activity} is graded with NumPy only, and its answer uses PyTorch on its line "
                            f"{mention[0]} (`{mention[1][:80]}`): {NUMPY_ONLY}")
    blank = [activity for activity in lab.activities if activity in untouched(lab, notebook)]
    if blank:
        notes.append(f"not attempted yet (the answer cell is still the stub): {listing(blank)}")
    return problems, notes


def seconds(cell):
    """How long a code cell of a timed run took, from the times nbclient kept; None if it did not run."""
    times = cell.get("metadata", {}).get("execution", {})
    try:
        return (datetime.fromisoformat(times["shell.execute_reply"])
                - datetime.fromisoformat(times["iopub.execute_input"])).total_seconds()
    except (KeyError, TypeError, ValueError):
        return None


@contextmanager
def checking():
    """The variable that makes the notebook's own check cell do nothing in the kernel this starts."""
    before = os.environ.get(CHECKING)
    os.environ[CHECKING] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ[CHECKING]
        else:
            os.environ[CHECKING] = before


def run(path, notebook):
    """The notebook run top to bottom past errors, as nbgrader's Validate runs it, from its folder:
    (the run, why it stopped early or None)."""
    ran = nbformat.from_dict(notebook)
    for cell in ran.cells:  # a saved notebook holds the times and numbers of the student's own run
        cell.get("metadata", {}).pop("execution", None)
        if cell.cell_type == "code":
            cell.execution_count = None
    stopped = None
    with checking():
        try:
            execute(ran, Path(path).resolve().parent, timeout=CELL_TIMEOUT, allow_errors=True, timing=True)
        except Exception as error:  # nbclient's timeouts and a dead kernel end the run
            stopped = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
    return ran, stopped


def first_line(error):
    said = str(error.get("evalue", "")).strip().splitlines()
    return error.get("ename", "Error") + (f": {said[0][:120]}" if said else "")


def execution(path, notebook, lab, blank):
    """Run the notebook: (lines to show, whether all is fine, the activities whose visible checks
    all pass). An optional activity still the stub fails its check as designed, which is fine."""
    checks = [cell.id for cell in student_notebook(lab).cells if cell.metadata["nbgrader"]["grade"]]
    designed = tuple(f"Complete Activity {a}:" for a in blank if lab.activities[a].optional)
    ran, stopped = run(path, notebook)
    lines, failing, stop = [], set(), None
    for index, cell in enumerate(ran.cells):
        if cell.cell_type != "code":
            continue
        took, said = seconds(cell), errors(cell)
        fine = not said or said[0].get("ename") == "NotImplementedError" and str(said[0].get("evalue")).startswith(
            designed)
        if cell.get("id") in checks:
            activity = cell.id.partition("-check")[0]
            fine = fine or activity in blank and lab.activities[activity].optional
            verdict = "passed" if not said else "not attempted" if fine else "failed"
            failing |= set() if not said else {activity}
            shown = f"{took:5.1f} s" if took is not None else "not run"
            lines.append(f"  {activity:<3} {cell.id:<12} {verdict:<13} {shown:>8}"
                         + (f"  {first_line(said[0])}" if said else ""))
        elif not fine:
            lines.append(f"  ! {named(ran, index)} raised {first_line(said[0])}")
        if not fine and stop is None:
            stop = f"Run All stops at {named(ran, index)}: {said[0].get('ename', 'Error')}"
        if took is not None and took > Limits.cell_seconds:
            lines.append(f"  ! {named(ran, index)} took {took:.0f} s here; the grader stops a cell or a check "
                         f"after {Limits.cell_seconds:g} s of CPU time")
    unrun = [cell_id for cell_id in checks if not any(c.get("id") == cell_id and c.execution_count for c in ran.cells)]
    failing |= {cell_id.partition("-check")[0] for cell_id in unrun}
    if stopped is not None:
        lines.append(f"  ! the run stopped before the end: {stopped}")
    total = sum(took for took in map(seconds, ran.cells) if took is not None)
    lines.append(stop or f"the notebook runs top to bottom ({total:.0f} s of cells)")
    fine = stop is None and stopped is None and not any(line.startswith("  !") for line in lines)
    return lines, fine, [activity for activity in lab.activities if activity not in failing]


def closing(passing):
    """The last line: what passed, and that the grader asks more than the visible checks."""
    if not passing:
        return "no activity passes its visible checks yet; the grader also runs hidden checks on other inputs"
    return (f"the visible checks of {listing(passing)} pass; the grader also runs hidden checks on other inputs, "
            "which this check never runs")


def command_check(path):
    """Check the notebook at `path`; 0 when everything the check can see is fine, else 1."""
    try:
        notebook = load(path)
        lab = identify(notebook, list(course_labs().values()))
        problems, notes = structure(path, notebook, lab)
    except SubmissionError as error:
        print(f"autograder check: {path}: {error}", file=sys.stderr)
        return 1
    say = functools.partial(print, flush=True)  # the run takes as long as the notebook: show what is known
    say(f"{path}: lab {lab.name} ({lab.title})")
    for line in problems or ["as the grader reads it: every locked cell as released, every answer cell there, "
                             "no PyTorch in an answer graded with NumPy only"]:
        say(f"  {'! ' if problems else ''}{line}")
    for line in notes:
        say(f"  {line}")
    say(f"running it top to bottom in a fresh kernel, from {Path(path).resolve().parent} (past errors, as "
        "nbgrader's Validate does):")
    lines, fine, passing = execution(path, notebook, lab, untouched(lab, notebook))
    for line in lines:
        say(line)
    say(closing(passing))
    return 0 if fine and not problems else 1
