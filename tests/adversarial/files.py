"""Attacks through the batch folder rather than a notebook's code: what the grader follows and
the files it names after a submission.

A link to the instructor's notebook (or to a device), a named pipe and a device node must get
the status not_a_regular_file, never the instructor's marks, a hang or a batch read forever. A
linked folder beside a student's own notebook must not be searched, nor nbgrader's layout laid
out again inside a student's lab folder, claiming the control's record and a student who does
not exist. Odd names (a formula, a stem long enough to overflow the result writer's names) are
graded like any other notebook, and must leave no live formula in grades.csv; a stem that cannot
be a folder name as it is (`..`) makes no record, and nothing outside the results folder's own
files. An attack here builds a function that makes its entry at the path the corpus gives it
(<name>.ipynb in the batch folder).
"""
import csv
import os
import stat
from pathlib import Path

import nbformat

from autograder.records.results_store import stored_results, student_folder
from tests.adversarial.common import SKIPPED, Attack, nth, stubbed

# What a spreadsheet reads as the start of a formula in a cell of text (tab and carriage return:
# one behind blank space).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
LONG_NAME = "long-name-" + "x" * 224  # the stem that made the writer's temporary names too long
GHOST = "no-such-student"  # claimed by a folder inside a student's own submission


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


def nested_claim(lab, solved, blank, context):
    """nbgrader's submitted/<student>/<lab>/ holding the student's notebook (first activity
    unsolved) and, inside that lab folder (nbgrader's collect copies sub-folders), the layout
    again: a blank notebook claiming the control's record, and one claiming a student who does
    not exist."""
    def place(path):
        folder = path.parent / "submitted" / path.name.removesuffix(".ipynb") / lab.name
        folder.mkdir(parents=True)
        nbformat.write(stubbed(solved, blank, nth(lab, 0)), folder / f"{lab.name}.ipynb")
        for claimed in ("control", GHOST):
            (folder / "submitted" / claimed / lab.name).mkdir(parents=True)
            nbformat.write(blank, folder / "submitted" / claimed / lab.name / f"{lab.name}.ipynb")
    return place


def no_record_claimed(context):
    """A trace when the nested layout made a record: of the student who does not exist, or of the
    control from any file but its own."""
    records = stored_results(context["out"])
    control = [result["extra_data"]["path"] for (student, _), result in records.items() if student == "control"]
    claimed = [student for student, _ in records if student == GHOST]
    if claimed or control != [str(Path(context["batch"]) / "control.ipynb")]:
        return f"records of {GHOST}: {len(claimed)}; the control's from {control}"
    return None


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
        Attack("..", "second activity unsolved; the stem `..`, which nbgrader would read as the folder above",
               status=SKIPPED, build=named(1), host_check=only_results_folder_files),
        Attack("nested-claim", "first activity unsolved; inside its lab folder, nbgrader's layout claiming the "
               "control's record and a student who does not exist", zero=frozenset({nth(lab, 0)}),
               build=nested_claim, host_check=no_record_claimed),
        Attack("=2+5", "third activity unsolved; a formula for a stem", zero=frozenset({nth(lab, 2)}), build=named(2),
               host_check=no_formula_in_grades),
        Attack(LONG_NAME, "fourth activity unsolved; a 234-byte stem", zero=frozenset({nth(lab, 3)}), build=named(3)),
    ]
