"""`python -m autodiff_check NOTEBOOK --restore CELL`: one locked cell put back as released.

Everything else of the notebook stays as it is. The file as it was is kept first, in the first
free one of NOTEBOOK.bak, NOTEBOOK.bak2, ... (a name Jupyter does not open as a notebook, so the
grader never takes it for one), and the new file replaces the old in one step (os.replace), so
that an interrupted restore leaves either file whole and the student's work is never lost."""
import os
import shutil
import sys
import tempfile
from itertools import count
from pathlib import Path

import nbformat

from autodiff_check.cells import cell_name
from autodiff_check.released import CheckError, course_of, read_notebook, release_of, restore


def backup_path(path):
    return next(candidate for n in count(1) if not (candidate := path.with_name(
        f"{path.name}.bak{n if n > 1 else ''}")).exists())


def write_atomically(path, text):
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.",
                                     suffix=".tmp", delete=False) as temporary:
        temporary.write(text)
    os.replace(temporary.name, path)


def command_restore(path, cell_id):
    path = Path(path)
    try:
        notebook = read_notebook(path)
        index = restore(notebook, release_of(course_of(notebook)["lab"]), cell_id)
    except CheckError as error:
        print(f"autodiff_check: {path}: {error}", file=sys.stderr)
        return 1
    backup = backup_path(path)
    shutil.copy2(path, backup)
    write_atomically(path, nbformat.writes(notebook) + "\n")
    print(f"{path}: restored {cell_name(notebook.cells, index)} as released; the file as it was is in {backup.name}. "
          "If the notebook is open in Jupyter, reload it from disk before you save again (File > Reload "
          "Notebook from Disk), or your next save writes the old cells back.")
    return 0
