"""Read a submitted notebook, recognise its lab, and turn it into the code the grader runs.

The submitted file is read once into memory and never written, and only when it is a regular
file itself: a symbolic link is never followed (it could point at the instructor's notebook),
and a pipe or a device is never read (it could be read forever). What runs is the lab's own
given code (from the instructor notebook, not the submission's copy, which a student may have
edited) interleaved with every code cell the student wrote or changed, in the student's order.
Unchanged check cells and given demos that call student code are left out: no score depends
on them.
"""
import errno
import json
import os
import stat
import warnings
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autodiff_check.cells import cell_name
from autodiff_check.released import answer_places as released_places
from autodiff_check.released import grade_id
from autograder.isolation.errors import GradingProblem
from course.check_cell import check_cell_source

MAX_BYTES = 64 << 20
# Far deeper than any notebook (its cells' outputs and metadata included) and far from Python's
# recursion limit, which nbformat's validation and copying would reach.
MAX_DEPTH = 100


class SubmissionError(GradingProblem):
    """A submission that cannot be graded; `kind` becomes its status."""


@dataclass(frozen=True)
class Step:
    source: str
    student: bool  # False: the lab's given code
    label: str  # how the feedback names it


KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
         (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def not_regular(path, mode):
    kind = next((said for test, said in KINDS if test(mode)), "not a regular file")
    if stat.S_ISLNK(mode):
        try:
            kind += f" (to {os.readlink(path)})"
        except OSError:  # gone since it was looked at: the kind alone says enough
            pass
    return SubmissionError("not_a_regular_file", f"{Path(path).name} is {kind}: only a notebook file itself is "
                                                 "graded, never what a link points to, nor a pipe or a device")


def too_large(size):
    return SubmissionError("too_large", f"the file is {size / 2**20:.0f} MiB; the limit is {MAX_BYTES >> 20} MiB "
                                        "(clear the outputs and save again)")


def read_submission(path):
    """The bytes of the regular file at `path`, at most MAX_BYTES, or SubmissionError."""
    return read_regular(path, MAX_BYTES, too_large)


def read_regular(path, limit, oversize):
    """The bytes of the regular file at `path`, or SubmissionError; oversize(size) is raised for
    a file of more than `limit` bytes. The file is looked at without following a link (lstat) and
    opened so that a link or a pipe put in its place since then cannot be followed or block
    (O_NOFOLLOW, O_NONBLOCK); what was opened is checked again (fstat) before a byte is read, and
    at most `limit` + 1 are read."""
    try:
        mode = os.lstat(path).st_mode
        if not stat.S_ISREG(mode):
            raise not_regular(path, mode)
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ELOOP:  # a link put in the file's place since lstat
            raise not_regular(path, stat.S_IFLNK) from None
        raise SubmissionError("unreadable", f"cannot read the file: {error.strerror}") from None
    with os.fdopen(handle, "rb") as file:
        opened = os.fstat(file.fileno())
        if not stat.S_ISREG(opened.st_mode):
            raise not_regular(path, opened.st_mode)
        if opened.st_size > limit:
            raise oversize(opened.st_size)
        try:
            data = file.read(limit + 1)
        except OSError as error:
            raise SubmissionError("unreadable", f"cannot read the file: {error.strerror}") from None
    if len(data) > limit:  # it grew while being read
        raise oversize(len(data))
    return data


def load(path):
    """The submission as an nbformat v4 notebook, or SubmissionError."""
    data = read_submission(path)
    if not data.strip():
        raise SubmissionError("invalid_notebook", "the file is empty")
    return parsed(data)


def parsed(data):
    """The notebook in `data`, or SubmissionError: whatever the bytes (any encoding, size or
    nesting), nothing else is raised, since every notebook is read here and one file's fault must
    cost only that file. Nesting is bounded right after the JSON is read, so that nothing later
    (nbformat's validation, copies, feedback) walks a structure deep enough to overflow."""
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeError, RecursionError, MemoryError) as error:
        raise SubmissionError("invalid_notebook", f"the file is not a Jupyter notebook (not JSON: "
                                                  f"{type(error).__name__}: {str(error)[:200]})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("nbformat"), int):
        raise SubmissionError("invalid_notebook", "the file is JSON but not a Jupyter notebook (no nbformat)")
    if nested_deeper(raw, MAX_DEPTH):
        raise SubmissionError("invalid_notebook", f"the notebook nests lists or objects more than {MAX_DEPTH} deep, "
                                                  "which no notebook does: save it again from Jupyter")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            notebook = nbformat.reads(data.decode("utf-8"), as_version=4)
        # What the grader reads of every cell: nbformat lets a notebook without them through.
        if any(not isinstance(cell.get("source"), str) or not isinstance(cell.get("cell_type"), str)
               for cell in notebook.cells):
            raise ValueError("a cell has no source text or no type")
        # A \ud800 escape is valid JSON but no text: nothing (feedback, the autograded copy) could write it out.
        json.dumps(raw, ensure_ascii=False).encode("utf-8")
    except Exception as error:  # nbformat raises many kinds on malformed input, MemoryError included
        raise SubmissionError("invalid_notebook", f"the notebook is malformed: {type(error).__name__}: "
                                                  f"{str(error)[:200]}") from None
    return notebook


def nested_deeper(value, limit):
    """Whether the JSON `value` nests lists or objects more than `limit` deep; without recursion,
    so that any depth can be measured."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def identify(notebook, labs):
    """The lab a notebook belongs to, from its structure: the lab whose locked cells (every cell
    nbgrader locks in the release, i.e. all but the answers) it holds the most of, matched by their
    text. Its metadata and the names it defines are the student's to write, so they decide
    nothing."""
    held = {cell.source.strip() for cell in notebook.cells}
    found = {lab.name: len(held & locked_sources(lab)) for lab in labs}
    best, *others = sorted(labs, key=lambda lab: (-found[lab.name], lab.name))
    if found[best.name] == 0:
        raise SubmissionError("unknown_lab", "this notebook is not one of the course's labs "
                                             f"({', '.join(lab.name for lab in labs)}): none of their locked cells "
                                             "is in it; hand in the notebook the course released, with its cells")
    if others and found[others[0].name] == found[best.name]:
        raise SubmissionError("unknown_lab", f"this notebook holds as many of lab {best.name}'s locked cells as of "
                                             f"lab {others[0].name}'s ({found[best.name]}), so it is neither's: hand "
                                             "in one lab's notebook")
    return best


def locked_sources(lab):
    """The text of every cell nbgrader locks in `lab`'s release: all but the answer cells."""
    return {cell.source.strip() for cell, _ in lab.release_cells() if cell.role != "stub"} | {
        check_cell_source(lab.name).strip()}


def program(lab, notebook):
    """The steps to run: given code from the lab, the student's code where the student put it.
    Every step is named as JupyterLab counts the cells of the notebook as submitted (see
    given_name for the lab's own code)."""
    ids = {}
    for cell, cell_id in lab.release_cells():
        ids[cell_id] = cell
    by_source = {c.source: c for c in lab.cells if c.cell_type == "code" and c.role in ("given", "check")}
    course_code = {check_cell_source(lab.name)}  # the release's own last cell: nothing to grade, nothing to run
    after = {}  # index of the given cell a student cell follows (None: before all) -> student steps
    placed = {}  # index of a given cell -> its index in the notebook, found by its text or else its id
    anchor = None
    for position, cell in enumerate(notebook.cells):
        if cell.cell_type != "code" or not cell.source.strip() or cell.source in course_code:
            continue
        known = by_source.get(cell.source)
        claimed = ids.get(cell.get("id")) or ids.get(grade_id(cell))
        if known is not None:
            if known.role == "given":
                anchor = known.index
                placed.setdefault(known.index, position)
            continue
        # Anything else is the student's code, an edited check cell included: running it can
        # only cost the student time, since no score depends on a check cell.
        if claimed is not None and claimed.role == "given" and claimed.cell_type == "code":
            anchor = claimed.index  # a markdown cell's id would attach the code where no step follows
            placed.setdefault(claimed.index, position)
        after.setdefault(anchor, []).append(Step(cell.source, True, cell_name(notebook.cells, position)))
    steps = list(after.get(None, []))
    for cell in lab.cells:
        if cell.role == "given" and cell.cell_type == "code":
            if not cell.requires:
                steps.append(Step(cell.source, False, given_name(lab, notebook, placed.get(cell.index), cell)))
            steps.extend(after.get(cell.index, []))
    return steps


def given_name(lab, notebook, position, cell):
    """How a message names the lab's given code `cell`: where it is in the student's notebook
    (`position`; a cell the student edited too, since the released text runs just before the
    student's). A cell the student deleted has no number of theirs: it is named by the released
    notebook's, where the student can find it and copy it back."""
    if position is not None:
        return f"given {cell_name(notebook.cells, position)}"
    cells, places = released(lab)
    return f"given {cell_name(cells, places[cell.index])} of the released notebook (missing from yours)"


def released(lab):
    """The cells of `lab`'s release as cell_name reads them, and {index of a lab cell: its place
    among them} (reference cells are not released)."""
    cells, places = [], {}
    for cell, _ in lab.release_cells():
        places[cell.index] = len(cells)
        cells.append({"source": cell.source})
    return cells, places


def untouched(lab, notebook):
    """The activities whose answer cell still holds the stub, character for character."""
    found = answers(lab, notebook)
    return {activity.id for activity in lab.activities.values()
            if found.get(f"{activity.id}-answer", "").strip() == activity.stub.source.strip()}


def answers(lab, notebook):
    """The student's code for each answer cell (see answer_places)."""
    return {key: notebook.cells[index].source for key, index in answer_places(lab, notebook).items()}


def answer_names(lab, notebook):
    """{answer cell id: the student's cell for it, named as every message names a cell}."""
    return {key: cell_name(notebook.cells, index) for key, index in answer_places(lab, notebook).items()}


def answer_places(lab, notebook):
    """{answer cell id: the index of the student's cell for it}, found as the student's check finds it."""
    return released_places(notebook.cells, {activity.id: activity.functions for activity in lab.activities.values()})
