"""A notebook read against the lab as the course released it, without a kernel.

The lab's structure comes from the notebook itself: its `metadata.course` (the lab, its activities,
which are graded with NumPy only, the grader's time for one cell) and each cell's nbgrader
metadata. The text of the released cells comes from this package (labs/<lab>.json, which
build_student.py writes beside release/): a student can edit or delete a locked cell in the
notebook, but not the package's copy, so an edit is found and a deleted cell can be put back.
Those files hold what the release holds and nothing more (no reference solution, no hidden case;
tests/test_check.py proves it with the build's own leak finder)."""
import hashlib
import json
import re
from pathlib import Path

import nbformat

from autodiff_check.cells import cell_name
from autodiff_check.policy import NUMPY_ONLY, pytorch_mentions, pytorch_names

LABS = Path(__file__).resolve().parent / "labs"
REINSTALL = "install it again from the course folder: `pip install -r requirements-student.txt`"


class CheckError(Exception):
    """What stops the check reading a notebook, in one line that says what to do."""


def read_notebook(path):
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeError) as error:
        raise CheckError(f"cannot read it: {getattr(error, 'strerror', None) or error}") from None
    try:
        return nbformat.reads(text, as_version=4)
    except Exception as error:  # nbformat raises many kinds on what is not a notebook
        raise CheckError(f"it is not a Jupyter notebook ({type(error).__name__}): check the notebook the course "
                         "released, saved from Jupyter") from None


def course_of(notebook):
    """The notebook's `metadata.course`, as the course's build wrote it."""
    course = notebook.metadata.get("course")
    if not isinstance(course, dict) or not isinstance(course.get("lab"), str) \
            or not isinstance(course.get("activities"), list):
        raise CheckError("its metadata does not say which of the course's labs it is (no complete \"course\" entry): "
                         "check the notebook the course released, with your answers in it")
    return course


def known_labs():
    return sorted(path.stem for path in LABS.glob("*.json"))


def release_of(lab_name):
    """The released cells of `lab_name` (as nbformat cells), from this package."""
    if lab_name not in known_labs():
        raise CheckError(f"it is lab {lab_name}, which this autodiff_check does not know (it knows "
                         f"{', '.join(known_labs()) or 'no lab'}): {REINSTALL}")
    cells = json.loads((LABS / f"{lab_name}.json").read_text(encoding="utf-8"))["cells"]
    return [nbformat.from_dict(cell) for cell in cells]


def grade_id(cell):
    nbgrader = cell.get("metadata", {}).get("nbgrader", {})
    return nbgrader.get("grade_id") if isinstance(nbgrader, dict) else None


def position(notebook, released):
    """Where `released` is in the notebook: by its id, kept by JupyterLab, or its nbgrader grade_id,
    kept where a tool gave the cell a new id; None if neither is there."""
    return next((index for index, cell in enumerate(notebook.cells)
                 if released.id in (cell.get("id"), grade_id(cell))), None)


def locked(cell):
    return bool(cell.metadata.get("nbgrader", {}).get("locked"))


def release_digest(cells):
    """A digest of the locked cells of a release: the notebook's metadata.course.release holds its
    release's, so that a notebook and a package of different releases are told apart."""
    locked_text = [[cell.id, cell.source] for cell in cells if locked(cell)]
    return hashlib.sha256(json.dumps(locked_text).encode("utf-8")).hexdigest()[:16]


def release_problems(course, release):
    """Whether the notebook and this package come from different releases of the lab: then the
    locked cells named as edited may differ for that reason alone."""
    if course.get("release") == release_digest(release):
        return []
    return [f"this notebook and this autodiff_check come from different releases of lab {course['lab']}, so a locked "
            "cell named below may differ for that reason alone: take the check from the course folder your "
            f"notebook came from, or {REINSTALL} from the current one and compare with its release"]


def restore_command(notebook_name, released):
    return f"`python -m autodiff_check {notebook_name} --restore {released.id}`"


def locked_problems(notebook, release, notebook_name):
    """Each locked cell of the release that was edited or is missing, named with what to do."""
    problems, sources = [], {cell.source for cell in notebook.cells}
    for number, released in enumerate(release):
        if not locked(released):
            continue
        index = position(notebook, released)
        if index is not None and notebook.cells[index].source != released.source:
            problems.append(f"{cell_name(notebook.cells, index)} is a locked cell and was edited: the grader runs the "
                            "released version (and your edit as code of your own); undo the edit, or put the "
                            f"released one back with {restore_command(notebook_name, released)}")
        elif index is None and released.source not in sources:
            problems.append(f"a locked cell is missing, the release's {cell_name(release, number)}: put it back "
                            f"with {restore_command(notebook_name, released)}")
    return problems


def defined_names(source):
    return set(re.findall(r"^def (\w+)\s*\(", source, re.MULTILINE))


def answer_places(cells, functions):
    """{"<activity>-answer": the index of its answer cell} for `functions` ({activity: the names its
    answer defines}): the cell found by id or grade_id or, if both were lost, by the functions it
    defines (the last such cell: the one that counts when run). The grader reads answers the same
    way (autograder/grading/submission.py)."""
    code = [(index, cell) for index, cell in enumerate(cells) if cell.cell_type == "code"]
    places = {}
    for activity, names in functions.items():
        key = f"{activity}-answer"
        found = [index for index, cell in code if key in (cell.get("id"), grade_id(cell))] or [
            index for index, cell in code if defined_names(cell.source) & set(names)]
        if found:
            places[key] = found[-1]
    return places


def answer_sources(cells, functions):
    """{"<activity>-answer": the code of its answer cell} (see answer_places)."""
    return {key: cells[index].source for key, index in answer_places(cells, functions).items()}


def activity_problems(notebook, course, release):
    """Activities without an answer cell, and answers of activities graded with NumPy only that
    name PyTorch."""
    activities = {activity["id"]: activity for activity in course["activities"]}
    found = answer_sources(notebook.cells, {a: activity["functions"] for a, activity in activities.items()})
    names = pytorch_names(cell.source for cell in release
                          if cell.cell_type == "code" and locked(cell) and not cell.metadata["nbgrader"].get("grade"))
    problems = []
    for name, activity in activities.items():
        answer = found.get(f"{name}-answer")
        if answer is None:
            problems.append(f"activity {name} has no answer cell (the one defining {', '.join(activity['functions'])})")
            continue
        mention = pytorch_mentions(names, answer) if activity.get("numpy_only") else None
        if mention is not None:
            problems.append(f"activity {name} is graded with NumPy only, and its answer uses PyTorch on its line "
                            f"{mention[0]} (`{mention[1][:80]}`): {NUMPY_ONLY}")
    return problems


def untouched(notebook, course, release):
    """The activities whose answer cell still holds the released stub."""
    stubs = {cell.id: cell.source.strip() for cell in release}
    found = answer_sources(notebook.cells, {a["id"]: a["functions"] for a in course["activities"]})
    return {a["id"] for a in course["activities"] if found.get(f"{a['id']}-answer", "").strip() == stubs.get(
        f"{a['id']}-answer")}


def restore(notebook, release, cell_id):
    """Put the released locked cell `cell_id` back into `notebook` (changed in place): over the
    edited cell where it still is, else after the released cell that comes before it. Returns its
    index."""
    numbered = {cell.id: number for number, cell in enumerate(release) if locked(cell)}
    if cell_id not in numbered:
        raise CheckError(f"the release has no locked cell {cell_id}: give the id the check names, as in "
                         f"`--restore {next(iter(numbered), 'ID')}`")
    released = release[numbered[cell_id]]
    fresh = nbformat.from_dict(json.loads(json.dumps(released)))  # a copy: the release stays as read
    index = position(notebook, released)
    if index is not None:
        notebook.cells[index] = fresh
        return index
    before = (position(notebook, cell) for cell in reversed(release[:numbered[cell_id]]))
    index = next((found + 1 for found in before if found is not None), 0)
    notebook.cells.insert(index, fresh)
    return index
