"""Regenerate an instructor .ipynb from its .py (the source of truth) and execute it.

    python -m course.instructor [LAB ...]     (every lab when none is named)

Executing an unchanged lab twice writes the same bytes: cell ids are fixed, consecutive
stream outputs are merged (the kernel may split one print across messages), and no timing
metadata is recorded.
"""
import sys

import jupytext
from nbconvert.preprocessors import CoalesceStreamsPreprocessor

from course.execute import execute
from course.labs import find_labs


def refresh(lab, target=None):
    """Execute `lab`'s .py and write the result to `target` (default: the paired .ipynb)."""
    notebook = jupytext.read(lab.path)
    for index, cell in enumerate(notebook.cells):  # jupytext draws random ids; keep diffs small
        cell.id = f"cell-{index:03d}"
    execute(notebook, lab.folder)
    notebook, _ = CoalesceStreamsPreprocessor().preprocess(notebook, {})
    jupytext.write(notebook, target or lab.path.with_suffix(".ipynb"))


def main(names):
    labs = {lab.name: lab for lab in find_labs()}
    unknown = [name for name in names if name not in labs]
    if unknown:
        print(f"course.instructor: no lab {', '.join(unknown)} in source/ (labs: {', '.join(labs)})", file=sys.stderr)
        return 2
    for name in names or labs:
        refresh(labs[name])
        print(f"executed {labs[name].path.with_suffix('.ipynb')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
