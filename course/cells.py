"""The role of every cell in an instructor notebook, read from its tags and metadata.

The vocabulary (documented in the README for instructors):

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
import re
from dataclasses import dataclass

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

    @property
    def label(self):
        first = next((line for line in self.source.splitlines() if line.strip()), "")
        return f"cell {self.index} ({self.role} {self.cell_type}: {first[:60]!r})"

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


def read_cell(index, cell):
    metadata = cell.get("metadata", {})
    tags = [tag for tag in metadata.get("tags", []) if tag in ROLES]
    if len(tags) > 1:
        raise LabError(f"cell {index} has more than one role tag: {tags}")
    role = tags[0] if tags else "given"
    activity = metadata.get("activity")
    points = metadata.get("points")
    requires = tuple(str(metadata.get("requires", "")).split())
    made = Cell(index, cell["cell_type"], cell["source"], role,
                None if activity is None else str(activity), points, requires)
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


def read_cells(notebook):
    return [read_cell(i, cell) for i, cell in enumerate(notebook["cells"])]
