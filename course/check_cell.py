"""The last cell of every student notebook (course/release.py adds it): it runs `autograder
check` on the notebook's saved file. The grader knows it as the course's code, not the student's
(autograder/submission.py). Nothing heavy is imported here: the grader reads it."""
# The check sets this for the kernel it runs the notebook in, so that the cell does nothing there.
CHECKING = "AUTOGRADER_CHECKING"
CHECK_CELL_ID = "before-you-submit"
# Built from the lab's name, never from the instructor's text: a build adds it to every lab alike.
# Its names start with `_`, and it imports inside a function, to leave the student's names alone;
# where no grader is installed (Colab, the grader's own sandbox) it only prints where to check.
TEMPLATE = """\
# Before you submit: the course's check runs this notebook's saved file top to bottom in a fresh
# kernel, with the visible checks (save first). The grader runs hidden checks on other inputs too.
def _check_before_you_submit(notebook="{notebook}"):
    import importlib.util
    import os
    import subprocess
    import sys

    if os.environ.get("{checking}"):  # the check's own run of this notebook
        return
    if importlib.util.find_spec("autograder") is None or not os.path.isfile(notebook):
        print(f"To check before you submit, run `python -m autograder check {{notebook}}` where the course's "
              "grader is installed; the grader runs hidden checks too.")
        return
    command = [sys.executable, "-m", "autograder", "check", notebook]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as check:
        for line in check.stdout:  # as it comes: the run takes as long as the notebook does
            print(line, end="", flush=True)


_check_before_you_submit()
"""


def check_cell_source(lab_name):
    return TEMPLATE.format(notebook=f"{lab_name}.ipynb", checking=CHECKING)
