"""Regenerate each instructor .ipynb from its .py (the source of truth) and execute it.

    python -m course.instructor [LAB ...]
"""
import sys

import jupytext

from course.execute import execute
from course.labs import find_labs


def refresh(lab):
    notebook = jupytext.read(lab.path)
    for index, cell in enumerate(notebook.cells):  # jupytext draws random ids; keep diffs small
        cell.id = f"cell-{index:03d}"
    execute(notebook, lab.folder)
    jupytext.write(notebook, lab.path.with_suffix(".ipynb"))


def main(names):
    for lab in find_labs():
        if not names or lab.name in names:
            refresh(lab)
            print(f"executed {lab.path.with_suffix('.ipynb')}")


if __name__ == "__main__":
    main(sys.argv[1:])
