"""Build the student notebooks from the instructor notebooks.

    python build_student.py               write release/<lab>/<lab>.ipynb (and its data) for every lab, and
                                          student/autodiff_check/labs/<lab>.json, its released cells
    python build_student.py --check       exit 1, naming the file, if either is not what a build writes
    python build_student.py --solved DIR  write DIR/<lab>/<lab>.ipynb with the reference solutions filled in

A build refuses to write anything when a lab breaks the tag vocabulary or when instructor
material would reach the release; the error names the cell.
"""
import argparse
import filecmp
import shutil
import sys
import tempfile
from pathlib import Path

import course  # noqa: F401  (before nbformat: see course/__init__.py)
import nbformat

from autograder.labs.notebooks import released_cells, solved_notebook, student_notebook
from course.cells import LabError
from course.labs import ROOT, find_labs


# Beside each notebook, so that `nbgrader validate` run in the lab's folder (or JupyterLab's
# Validate button in a server started there) reads it: nbgrader's default of 30 s per cell is
# shorter than a training cell takes on a busy machine, and validation then ends in a "fatal
# error" that says nothing about the student's work. 600 s is the grader's own nbgrader setting.
# Any other nbgrader command started there would take the lab's folder for a course folder and
# write a gradebook or assignment folders into what students are given: it stops at once. (It
# cannot share the checkout's autograder/cli/nbgrader_commands.py: students get this file alone.)
VALIDATE_CONFIG = """\
# Read by nbgrader run in this folder: `nbgrader validate` gets the course's time limit for one
# cell, and any other nbgrader command stops before it writes here.
from nbgrader.apps import NbGrader, NbGraderApp, ValidateApp
from traitlets.config import Application

app = Application.instance() if Application.initialized() else None
if isinstance(app, NbGrader) and type(app) not in (NbGraderApp, ValidateApp):
    raise SystemExit(f"{app.name}: refused in this folder, which holds one lab as students get it: only "
                     "`nbgrader validate` runs here; the exchange's commands (fetch_assignment, submit, "
                     "fetch_feedback) run in the folder that holds it, the instructor's in the course folder")
c = get_config()  # noqa: F821
c.Execute.timeout = 600
"""


def write_lab(lab, notebook, folder):
    """Write `notebook`, the lab's data files and the validation settings into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{lab.name}.ipynb").write_text(nbformat.writes(notebook) + "\n", encoding="utf-8")
    (folder / "nbgrader_config.py").write_text(VALIDATE_CONFIG, encoding="utf-8")
    lab.copy_data(folder)


# The student's check compares a notebook with these, and restores a locked cell from them.
CELLS = ROOT / "student" / "autodiff_check" / "labs"


def build(out, solved=False, source=ROOT / "source", cells=None):
    """Build every lab in `source` into `out` (and its released cells into `cells`, if given);
    return the lab folders written. A lab whose
    executed .ipynb no longer matches its .py is built all the same (the release comes from the
    .py alone), with a warning: the instructor's executed copy shows outputs of other code."""
    folders = []
    for lab in find_labs(source):
        if not lab.twin_is_current():
            print(f"build_student.py: warning: {lab.path.with_suffix('.ipynb')} is not the executed copy of "
                  f"{lab.path} as it is now; run `make instructor LAB={lab.name}`", file=sys.stderr)
        notebook = student_notebook(lab)
        if solved:
            notebook = solved_notebook(lab, notebook)
        write_lab(lab, notebook, out / lab.name)
        if cells is not None:
            cells.mkdir(parents=True, exist_ok=True)
            (cells / f"{lab.name}.json").write_text(released_cells(notebook), encoding="utf-8")
        folders.append(out / lab.name)
    return folders


def stale_files(fresh, current):
    """Paths under `current` that differ from, or are missing next to, those under `fresh`."""
    fresh_files = {p.relative_to(fresh) for p in fresh.rglob("*") if p.is_file()}
    current_files = {p.relative_to(current) for p in current.rglob("*") if p.is_file()} if current.is_dir() else set()
    stale = [p for p in sorted(fresh_files) if p not in current_files
             or not filecmp.cmp(fresh / p, current / p, shallow=False)]
    stale += sorted(current_files - fresh_files)
    return [current / p for p in stale]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare release/ with a fresh build")
    mode.add_argument("--solved", type=Path, metavar="DIR", help="write solved notebooks to DIR")
    parser.add_argument("--source", type=Path, default=ROOT / "source", help="instructor notebooks (default: source/)")
    parser.add_argument("--release", type=Path, default=ROOT / "release", help="student notebooks (default: release/)")
    parser.add_argument("--cells", type=Path, help="the student check's released cells (default: "
                        "student/autodiff_check/labs/ for the course's own source/ and release/; none for others)")
    args = parser.parse_args(argv)
    if args.cells is None and (args.source, args.release) == (ROOT / "source", ROOT / "release"):
        args.cells = CELLS  # a build of other folders must never rewrite the checkout's student package
    try:
        if args.solved:
            for folder in build(args.solved, solved=True, source=args.source):
                print(f"wrote {folder}")
            return 0
        with tempfile.TemporaryDirectory() as scratch:
            fresh, cells = Path(scratch) / "release", Path(scratch) / "labs"
            build(fresh, source=args.source, cells=cells)
            if args.check:
                stale = stale_files(fresh, args.release) + (stale_files(cells, args.cells) if args.cells else [])
                for path in stale:
                    print(f"stale: {path} is not what build_student.py writes now", file=sys.stderr)
                if stale:
                    print("run `python build_student.py` (or `make release`) and commit "
                          + (f"{args.release} and {args.cells}" if args.cells else f"{args.release}"), file=sys.stderr)
                    return 1
                print(f"{args.release} is up to date")
                return 0
            if args.release.exists():
                shutil.rmtree(args.release)
            shutil.copytree(fresh, args.release)
            if args.cells is not None:
                if args.cells.exists():
                    shutil.rmtree(args.cells)
                shutil.copytree(cells, args.cells)
            for lab_folder in sorted(args.release.iterdir()):
                print(f"wrote {lab_folder}")
        return 0
    except LabError as error:
        print(f"build_student.py: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
