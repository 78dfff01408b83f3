"""The role of every cell in an instructor notebook, read from its tags and metadata.

The vocabulary (documented for instructors in docs/instructors.md):

* ``tags=["stub"] activity="1a"``: the code a student starts from; it must raise
  ``NotImplementedError('Complete Activity 1a: <function>')``.
* ``tags=["reference"]``: instructor-only; removed from the release. A code cell also carries
  ``activity`` and must directly follow that activity's stub, which it replaces in the solved
  notebook. Markdown reference cells hold instructor answers and notes.
* ``tags=["check"] activity="1a" points=3``: a visible check, graded by nbgrader.
* ``requires="1a 2"`` on an untagged code cell: given code that calls student functions, so it
  fails in the release until those activities are done.
* anything else is given material, read-only in the release.
* ``tags=["timing"]`` beside any of these: the cell prints a figure measured with a clock, which
  changes from run to run, so the executed instructor copy stores it without its outputs.

Activity ids are a digit plus an optional lower-case letter (required work) or a single
capital letter (optional, bonus points).
"""
import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path

from course.syntax import parse

ROLES = ("stub", "reference", "check")
TIMING = "timing"
ACTIVITY_ID = re.compile(r"^(?:\d+[a-z]?|[A-Z])$")


class LabError(ValueError):
    """The instructor notebook breaks the tag vocabulary; the message names the cell."""


@dataclass(frozen=True)
class Cell:
    index: int
    cell_type: str
    source: str
    role: str  # "stub", "reference", "check" or "given"
    activity: str | None
    points: int | None
    requires: tuple[str, ...]
    place: str | None = None  # "source/<lab>/<lab>.py:597", the line of its `# %%`, where the file is known

    @property
    def label(self):
        """Where the instructor finds the cell: the file and line, then its number counted from 1
        as a notebook editor counts cells, its role and first line."""
        first = next((line for line in self.source.splitlines() if line.strip()), "")
        where = f"{self.place}, cell {self.index + 1}" if self.place else f"cell {self.index + 1}"
        return f"{where} ({self.role} {self.cell_type}: {first[:60]!r})"

    def defined_functions(self):
        if self.cell_type != "code":
            return set()
        return defined_functions(self.source, self.label)


def defined_functions(source, label):
    """Names of the functions a code cell defines at top level."""
    try:
        tree = parse(source)
    except SyntaxError as error:
        raise LabError(f"{label} is not valid Python: {error}") from None
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


def is_optional(activity):
    return activity.isupper()


def read_cell(index, cell, place=None):
    metadata = cell.get("metadata", {})
    tags = [tag for tag in metadata.get("tags", []) if tag in ROLES]
    activity = metadata.get("activity")
    points = metadata.get("points")
    requires = tuple(str(metadata.get("requires", "")).split())
    role = tags[0] if tags else "given"
    made = Cell(index, cell["cell_type"], cell["source"], role, None if activity is None else str(activity), points,
                requires, place)
    if len(tags) > 1:
        raise LabError(f"{made.label} has more than one role tag: {tags}")
    for name in (made.activity, *requires):
        if name is not None and not ACTIVITY_ID.match(name):
            raise LabError(f"{made.label}: {name!r} is not an activity id")
    if role in ("stub", "check") and made.activity is None:
        raise LabError(f"{made.label} needs an activity id (activity=\"...\")")
    if role in ("stub", "check") and cell["cell_type"] != "code":
        raise LabError(f"{made.label}: a {role} cell must be a code cell")
    if role == "check" and (not isinstance(points, int) or isinstance(points, bool) or points <= 0):
        raise LabError(f"{made.label} needs a positive whole number of points (points=...)")
    if role == "reference" and cell["cell_type"] == "code" and made.activity is None:
        raise LabError(f"{made.label}: a reference code cell needs the activity it solves")
    return made


def cell_lines(text):
    """The line, counted from 1, of each cell's `# %%` marker in a Jupytext percent file."""
    return [number for number, line in enumerate(text.splitlines(), 1) if line.startswith("# %%")]


def read_cells(notebook, path=None):
    """The cells of `notebook`; given the percent file `path` it was read from, each knows its line."""
    cells = notebook["cells"]
    places = [None] * len(cells)
    if path is not None:
        lines = cell_lines(Path(path).read_text(encoding="utf-8"))
        if len(lines) == len(cells):  # a cell without its marker (text before the first): no lines
            shown = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else str(path)
            places = [f"{shown}:{line}" for line in lines]
    return [read_cell(i, cell, place) for i, (cell, place) in enumerate(zip(cells, places))]
