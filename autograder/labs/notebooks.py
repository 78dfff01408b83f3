"""The student notebook of a lab, and the solved one: what build_student.py writes, with the
released cells the student's check compares a notebook with. The mistake catalogue
(measuring/catalogue.py) makes them too, so they lie here, below it, and not with the
instructor's tools."""
import ast
import json

import nbformat
from nbgrader.preprocessors import CheckCellMetadata, ComputeChecksums, LockCells

from autodiff_check.released import release_digest
from autograder.isolation.sandbox import Limits
from autograder.labs import HERE
from course.cells import Cell, LabError, is_optional
from course.check_cell import CHECK_CELL_ID, check_cell_source
from course.leaks import find_leaks
from course.syntax import parse

NBFORMAT_MINOR = 5


def nbgrader_metadata(cell, cell_id):
    """nbgrader's cell roles: answers are editable, checks are graded, the rest is locked."""
    if cell.role == "stub":
        flags = {"solution": True, "grade": False, "locked": False}
    elif cell.role == "check":
        # Optional work is nbgrader extra credit: the cell is worth nothing toward the maximum,
        # and the grader records its bonus points as extra_credit.
        points = 0 if is_optional(cell.activity) else cell.points
        flags = {"solution": False, "grade": True, "locked": True, "points": points}
    else:
        flags = {"solution": False, "grade": False, "locked": True}
    return {"grade_id": cell_id, "schema_version": 3, **flags}


def student_notebook(lab):
    """The release notebook of `lab`: no reference cells, no outputs, nbgrader metadata."""
    cells = []
    for cell, cell_id in lab.release_cells():
        maker = nbformat.v4.new_code_cell if cell.cell_type == "code" else nbformat.v4.new_markdown_cell
        cells.append(maker(cell.source, id=cell_id, metadata={"nbgrader": nbgrader_metadata(cell, cell_id)}))
    cells.append(check_cell(lab))
    notebook = nbformat.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "course": course_metadata(lab),
    })
    notebook.nbformat_minor = NBFORMAT_MINOR
    for step in (CheckCellMetadata(), LockCells(), ComputeChecksums()):
        notebook, _ = step.preprocess(notebook, {})
    notebook.metadata["course"]["release"] = release_digest(notebook.cells)
    leaks = find_leaks(lab, notebook)
    if leaks:
        raise LabError(f"{lab.path}: instructor material would reach the release:\n  " + "\n  ".join(leaks))
    return notebook


def uses_pytorch(lab):
    """The lab's USES_PYTORCH, read from its cases.py as text: the module is never imported, so no
    hidden case is computed and PyTorch is not loaded."""
    tree = parse((HERE / lab.name / "cases.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(target, "id", None) == "USES_PYTORCH"
                                                for target in node.targets):
            return frozenset(item.value for item in ast.walk(node.value) if isinstance(item, ast.Constant))
    raise LabError(f"lab {lab.name}'s cases.py declares no USES_PYTORCH")


def course_metadata(lab):
    """What the student's check (autodiff_check) reads of the lab in the notebook itself: its
    activities, which are graded with NumPy only, and the grader's CPU seconds for one cell (and
    the digest of the release, added once its cells are final)."""
    pytorch = uses_pytorch(lab)
    activities = [{"id": a.id, "title": a.title, "optional": a.optional, "functions": list(a.functions),
                   "numpy_only": a.id not in pytorch} for a in lab.activities.values()]
    return {"lab": lab.name, "title": lab.title, "activities": activities, "cell_seconds": Limits.cell_seconds}


def released_cells(notebook):
    """The JSON text of a release notebook's cells, as autodiff_check keeps them (labs/<lab>.json):
    what a student's check restores a locked cell from and compares the notebook with."""
    return json.dumps({"lab": notebook.metadata["course"]["lab"], "cells": notebook.cells}, indent=1,
                      ensure_ascii=False, sort_keys=True) + "\n"


def check_cell(lab):
    """The last cell: given code, locked like the rest, that runs the check before submitting."""
    source = check_cell_source(lab.name)
    given = Cell(len(lab.cells), "code", source, "given", None, None, ())
    return nbformat.v4.new_code_cell(source, id=CHECK_CELL_ID,
                                     metadata={"nbgrader": nbgrader_metadata(given, CHECK_CELL_ID)})


def solved_notebook(lab, release):
    """The release with every stub replaced by its reference: a perfect submission."""
    solved = nbformat.from_dict(release)
    answers = {f"{a.id}-answer": a.reference.source for a in lab.activities.values()}
    for cell in solved.cells:
        if cell.id in answers:
            cell.source = answers.pop(cell.id)
    return solved
