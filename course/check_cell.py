"""The last cell of every student notebook (autograder/labs/notebooks.py adds it): it runs the student's
check, `python -m autodiff_check`, on the notebook's saved file. The grader knows it as the
course's code, not the student's (autograder/grading/submission.py). Nothing heavy is imported here: the
grader reads it."""
from autodiff_check import CHECKING

CHECK_CELL_ID = "before-you-submit"
# Built from the lab's name, never from the instructor's text: a build adds it to every lab alike.
# Its names start with `_`, and it imports inside a function, to leave the student's names alone;
# where the check is not installed it says how to install it, and where the saved file is not
# beside the kernel (Colab, a renamed copy, the grader's sandbox) it prints the command to run.
# NBGRADER_EXECUTION is what nbgrader sets while its validate or autograde runs a notebook.
TEMPLATE = """\
# Before you submit: save, then run this cell. The course's check runs this notebook's saved file
# top to bottom in a fresh kernel, with the visible checks. The grader runs hidden checks too.
def _check_before_you_submit(notebook="{notebook}"):
    import importlib.util
    import os
    import subprocess
    import sys

    # The check's own run of this notebook, or nbgrader's (validate, autograde), which runs the
    # checks itself: a second run of the whole notebook would tell it nothing more.
    if os.environ.get("{checking}") or os.environ.get("NBGRADER_EXECUTION"):
        return
    if importlib.util.find_spec("autodiff_check") is None:
        print("To check before you submit, install the course's check where this kernel runs, from the course "
              "folder: `pip install -r requirements-student.txt`; then run this cell again.")
        return
    if not os.path.isfile(notebook):
        print(f"To check before you submit, run `python -m autodiff_check {{notebook}}` in the folder of your saved "
              "notebook; the grader runs hidden checks too.")
        return
    command = [sys.executable, "-m", "autodiff_check", notebook]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as check:
        for line in check.stdout:  # as it comes: the run takes as long as the notebook does
            print(line, end="", flush=True)


_check_before_you_submit()
"""


def check_cell_source(lab_name):
    return TEMPLATE.format(notebook=f"{lab_name}.ipynb", checking=CHECKING)
