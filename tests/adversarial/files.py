"""Attacks through the batch folder rather than a notebook's code: what the grader follows and
the files it names after a submission.

A link to the instructor's notebook (or to a device), a named pipe and a device node must get
the status not_a_regular_file, never the instructor's marks, a hang or a batch read forever. A
linked folder beside a student's own notebook must not be searched. Odd names (`..`, a
formula, a stem long enough to overflow the result writer's names) are graded like any other
notebook, and must leave nothing outside the results folder's own files and no live formula in
grades.csv. An attack here builds a function that makes its entry at the path the corpus gives
it (<name>.ipynb in the batch folder).
"""
import csv
import os
import stat
from pathlib import Path

import nbformat

from autograder.results_store import stored_results, student_folder
from tests.adversarial.common import Attack, nth, stubbed

# What a spreadsheet reads as the start of a formula in a cell of text (tab and carriage return:
# one behind blank space).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
LONG_NAME = "long-name-" + "x" * 224  # the stem that made the writer's temporary names too long


def instructor_notebook(lab):
    return lab.path.with_suffix(".ipynb")


def link_to(target):
    return lambda lab, solved, blank, context: lambda path: path.symlink_to(target(lab))


def pipe(lab, solved, blank, context):
    return os.mkfifo


def zero_device(lab, solved, blank, context):
    """A character device that reads as /dev/zero: zeros without end."""
    return lambda path: os.mknod(path, stat.S_IFCHR | 0o600, os.stat("/dev/zero").st_rdev)


def linked_folder(lab, solved, blank, context):
    """nbgrader's submitted/<student>/<lab>/ holding the student's notebook (first activity
    unsolved) and, sorted before it, a link to the instructor's folder: searched, it would give
    this student the instructor's notebook under the same name."""
    def place(path):
        student = path.parent / "submitted" / path.name.removesuffix(".ipynb")
        (student / lab.name).mkdir(parents=True)
        nbformat.write(stubbed(solved, blank, nth(lab, 0)), student / lab.name / f"{lab.name}.ipynb")
        (student / "0-linked").symlink_to(instructor_notebook(lab).parent, target_is_directory=True)
    return place


def named(activity_index):
    """The solved notebook with one activity unsolved: the name of its file is the attack."""
    return lambda lab, solved, blank, context: stubbed(solved, blank, nth(lab, activity_index))


def only_results_folder_files(context):
    """A trace when a folder other than autograded/ and the students' own is in the results
    folder (a name that climbed out of its folder) or a hidden entry is in any of them."""
    out = Path(context["out"])
    students = {student_folder(student) for student, _ in stored_results(out)}
    strays = [entry.name for entry in out.iterdir() if entry.is_dir() and entry.name not in {"autograded", *students}]
    strays += [entry.name for folder in (out, out / "autograded", *(out / name for name in students))
               if folder.is_dir() for entry in folder.iterdir() if entry.name.startswith(".")]
    return f"left in {out}: {', '.join(strays)}" if strays else None


def no_formula_in_grades(context):
    path = Path(context["out"]) / "grades.csv"
    if not path.is_file():
        return "no grades.csv"
    with path.open(newline="") as handle:
        formulas = [cell for row in csv.reader(handle) for cell in row if cell.startswith(FORMULA_STARTS)]
    return f"formulas in grades.csv: {formulas}" if formulas else None


def attacks(lab):
    refused = "not_a_regular_file"
    return [
        Attack("link-to-instructor", "a symbolic link to the instructor's notebook", status=refused,
               build=link_to(instructor_notebook)),
        Attack("link-to-zero", "a symbolic link to /dev/zero", status=refused, build=link_to(lambda _: "/dev/zero")),
        Attack("named-pipe", "a FIFO no one writes to", status=refused, build=pipe),
        Attack("zero-device", "a device node reading as /dev/zero", status=refused, build=zero_device),
        Attack("linked-folder", "first activity unsolved; a link to the instructor's folder beside the notebook",
               zero=frozenset({nth(lab, 0)}), build=linked_folder),
        Attack("..", "second activity unsolved; the stem `..`", zero=frozenset({nth(lab, 1)}), build=named(1),
               host_check=only_results_folder_files),
        Attack("=2+5", "third activity unsolved; a formula for a stem", zero=frozenset({nth(lab, 2)}), build=named(2),
               host_check=no_formula_in_grades),
        Attack(LONG_NAME, "fourth activity unsolved; a 234-byte stem", zero=frozenset({nth(lab, 3)}), build=named(3)),
    ]
