"""The student notebook of a lab, and the solved one: what build_student.py writes."""
import nbformat
from nbgrader.preprocessors import CheckCellMetadata, ComputeChecksums, LockCells

from course.cells import Cell, LabError, is_optional
from course.check_cell import CHECK_CELL_ID, check_cell_source
from course.leaks import find_leaks

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
        "course": {"lab": lab.name, "title": lab.title},
    })
    notebook.nbformat_minor = NBFORMAT_MINOR
    for step in (CheckCellMetadata(), LockCells(), ComputeChecksums()):
        notebook, _ = step.preprocess(notebook, {})
    leaks = find_leaks(lab, notebook)
    if leaks:
        raise LabError(f"{lab.path}: instructor material would reach the release:\n  " + "\n  ".join(leaks))
    return notebook


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
