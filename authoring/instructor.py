"""Regenerate an instructor .ipynb from its .py (the source of truth) and execute it.

    python -m authoring.instructor [LAB ...]     (every lab when none is named)

Executing an unchanged lab twice writes the same bytes: cell ids are fixed, consecutive
stream outputs are merged (the kernel may split one print across messages), no timing
metadata is recorded, and cells tagged `timing` (a figure measured with a clock) are stored
without their outputs.
"""
import sys

import jupytext
import nbformat
from nbclient.exceptions import CellExecutionError
from nbconvert.preprocessors import CoalesceStreamsPreprocessor

from autodiff_check.execute import execute, stdout
from course.cells import TIMING, LabError
from course.labs import find_labs


def run(lab, probe=None):
    """Execute `lab`'s .py as `make instructor` does and return (notebook, printed): with `probe`,
    that code also runs in the same kernel after the last cell, and `printed` is its output.
    The probe is not part of the notebook returned."""
    notebook = jupytext.read(lab.path)
    for index, cell in enumerate(notebook.cells):  # jupytext draws random ids; keep diffs small
        cell.id = f"cell-{index:03d}"
    if probe is not None:
        notebook.cells.append(nbformat.v4.new_code_cell(probe, id="probe"))
    try:
        execute(notebook, lab.folder)
    except CellExecutionError as error:  # name the cell by its line in the .py the instructor edits
        failed = next((index for index, cell in enumerate(notebook.cells)
                       if any(output.get("output_type") == "error" for output in cell.get("outputs", ()))), None)
        where = lab.cells[failed].label if failed is not None and failed < len(lab.cells) else "the probe"
        raise LabError(f"{where} raised {error.ename}: {error.evalue}") from None
    printed = stdout(notebook.cells.pop()) if probe is not None else None
    notebook, _ = CoalesceStreamsPreprocessor().preprocess(notebook, {})
    for cell in notebook.cells:
        if TIMING in cell.metadata.get("tags", []):
            cell.outputs = []
    return notebook, printed


def refresh(lab, target=None):
    """Execute `lab`'s .py and write the result to `target` (default: the paired .ipynb)."""
    jupytext.write(run(lab)[0], target or lab.path.with_suffix(".ipynb"))


def main(names):
    try:
        labs = {lab.name: lab for lab in find_labs()}
        unknown = [name for name in names if name not in labs]
        if unknown:
            raise LabError(f"no lab {', '.join(unknown)} in source/ (labs: {', '.join(labs)})")
        for name in names or labs:
            refresh(labs[name])
            print(f"executed {labs[name].path.with_suffix('.ipynb')}")
    except LabError as error:
        print(f"authoring.instructor: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
