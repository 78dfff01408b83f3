"""Submissions made for the tests: the solved notebook with one thing changed."""
import copy

import nbformat


def answer_cell(notebook, activity):
    return next(cell for cell in notebook.cells if cell.id == f"{activity}-answer")


def with_answer(notebook, activity, source):
    """A copy of `notebook` whose answer cell for `activity` holds `source`."""
    changed = copy.deepcopy(notebook)
    answer_cell(changed, activity).source = source
    return changed


def with_cell_after(notebook, cell_id, source):
    """A copy with a new code cell (no nbgrader metadata) after the cell `cell_id`."""
    changed = copy.deepcopy(notebook)
    position = next(i for i, cell in enumerate(changed.cells) if cell.id == cell_id)
    changed.cells.insert(position + 1, nbformat.v4.new_code_cell(source, id=f"student-{position}"))
    return changed


def save(notebook, folder, name):
    path = folder / f"{name}.ipynb"
    nbformat.write(notebook, path)
    return path
