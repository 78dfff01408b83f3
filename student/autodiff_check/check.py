"""`python -m autodiff_check NOTEBOOK`: what a student can know before submitting, and no more.

It reads the notebook against the lab as released (autodiff_check.released), then runs the saved
file top to bottom in a fresh kernel from its own folder, past errors as nbgrader's Validate
does, timing each visible check. It never runs a hidden check: it holds no hidden case and no
reference solution, so a visible pass is not a grade, and its last line says so."""
import functools
import os
import sys
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import nbformat

from autodiff_check import CHECKING
from autodiff_check.cells import cell_name
from autodiff_check.execute import errors, execute
from autodiff_check.released import (CheckError, activity_problems, course_of, locked_problems, read_notebook,
                                     release_of, release_problems, untouched)

# Wall-clock seconds for one cell, as nbgrader's Validate allows in the release folder: the grader's
# own limit (the notebook's metadata.course.cell_seconds, CPU seconds) is reported per cell instead.
CELL_TIMEOUT = 600


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
            said = str(error).strip()
            stopped = f"{type(error).__name__}: {said.splitlines()[0] if said else ''}"
    return ran, stopped


def error_line(error):
    said = str(error.get("evalue", "")).strip().splitlines()
    return error.get("ename", "Error") + (f": {said[0][:120]}" if said else "")


def listing(words):
    """'a', 'a and b', 'a, b and c'."""
    words = list(words)
    return " and ".join(filter(None, [", ".join(words[:-1]), words[-1] if words else ""]))


def execution(path, notebook, course, release, blank):
    """Run the notebook: (lines to show, whether all is fine, the activities whose visible checks
    all pass). An optional activity still the stub fails its check as designed, which is fine."""
    optional = {activity["id"] for activity in course["activities"] if activity.get("optional")}
    checks = [cell.id for cell in release if cell.metadata.get("nbgrader", {}).get("grade")]
    designed = tuple(f"Complete Activity {a}:" for a in blank & optional)
    limit = course.get("cell_seconds")
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
            fine = fine or activity in blank & optional
            verdict = "passed" if not said else "not attempted" if fine else "failed"
            failing |= {activity} if said else set()
            shown = f"{took:5.1f} s" if took is not None else "not run"
            lines.append(f"  {activity:<3} {verdict:<13} {shown:>8}  {cell_name(ran.cells, index)}"
                         + (f": {error_line(said[0])}" if said else ""))
        elif not fine:
            lines.append(f"  ! {cell_name(ran.cells, index)} raised {error_line(said[0])}")
        if not fine and stop is None:
            stop = f"Run All stops at {cell_name(ran.cells, index)}: {said[0].get('ename', 'Error')}"
        if took is not None and limit and took > limit:
            lines.append(f"  ! {cell_name(ran.cells, index)} took {took:.0f} s here; the grader stops a cell or a "
                         f"check after {limit:g} s of CPU time")
    unrun = [cell_id for cell_id in checks if not any(c.get("id") == cell_id and c.execution_count for c in ran.cells)]
    failing |= {cell_id.partition("-check")[0] for cell_id in unrun}
    if stopped is not None:
        lines.append(f"  ! the run stopped before the end: {stopped}")
    total = sum(took for took in map(seconds, ran.cells) if took is not None)
    lines.append(stop or f"the notebook runs top to bottom ({total:.0f} s of cells)")
    fine = stop is None and stopped is None and not any(line.startswith("  !") for line in lines)
    return lines, fine, [a["id"] for a in course["activities"] if a["id"] not in failing]


def closing(passing):
    """The last line: what passed, and that the grader asks more than the visible checks."""
    if not passing:
        return "no activity passes its visible checks yet; the grader also runs hidden checks on other inputs"
    return (f"the visible checks of {listing(passing)} pass; the grader also runs hidden checks on other inputs, "
            "which this check never runs")


def check(path, more_problems=()):
    """Check the notebook at `path`; 0 when everything the check can see is fine, else 1.
    Each of `more_problems`, called with the notebook, adds what a caller knows besides (the grader's own reading)."""
    try:
        notebook = read_notebook(path)
        course = course_of(notebook)
        release = release_of(course["lab"])
        problems = [line for more in more_problems for line in more(notebook)]
        problems += (release_problems(course, release) + locked_problems(notebook, release, Path(path).name)
                     + activity_problems(notebook, course, release))
    except CheckError as error:
        print(f"autodiff_check: {path}: {error}", file=sys.stderr)
        return 1
    say = functools.partial(print, flush=True)  # the run takes as long as the notebook: show what is known
    say(f"{path}: lab {course['lab']} ({course.get('title', '')})")
    for line in problems or ["as the grader reads it: every locked cell as released, every answer cell there, "
                             "no PyTorch in an answer graded with NumPy only"]:
        say(f"  {'! ' if problems else ''}{line}")
    blank = untouched(notebook, course, release)
    if blank:
        stubs = listing(a["id"] for a in course["activities"] if a["id"] in blank)
        say(f"  not attempted yet (the answer cell is still the stub): {stubs}")
    say(f"running it top to bottom in a fresh kernel, from {Path(path).resolve().parent} (past errors, as "
        "nbgrader's Validate does):")
    lines, fine, passing = execution(path, notebook, course, release, blank)
    for line in lines:
        say(line)
    say(closing(passing))
    return 0 if fine and not problems else 1
