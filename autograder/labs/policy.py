"""Which activities are graded without PyTorch, and what students are told about it.

A lab's ``cases.py`` declares ``USES_PYTORCH``: the activities whose point is PyTorch itself (a
custom ``torch.autograd.Function``, a witness that compares with PyTorch). Every other activity
is graded in a worker that never imported PyTorch and cannot import it, so no route (an import,
one built from strings, a reference saved earlier, ``sys.modules``, a given helper that calls
PyTorch) lets an answer hand its work to PyTorch. The activity's text in the notebook says so.
"""
import re

from autodiff_check.policy import NUMPY_ONLY, pytorch_names
from autodiff_check.policy import pytorch_mentions as mentions
from autograder.isolation.sandbox import WITHOUT_PYTORCH
from course.syntax import parse

NEEDED_PYTORCH = ("This activity is graded with NumPy only, and your code needed PyTorch, which is not "
                  "available to this activity's functions when graded: write them with NumPy.")


def hidden_for(grading, activity):
    """The modules a worker grading `activity` must not be able to import."""
    return () if activity in grading.uses_pytorch else WITHOUT_PYTORCH


def given_code(lab):
    return [cell.source for cell in lab.cells if cell.role == "given" and cell.cell_type == "code"]


def pytorch_mentions(lab, source):
    """The first line of an answer cell that names PyTorch or a given helper built on it, as
    (line number, text), or None (autodiff_check.policy, which the student's check shares)."""
    return mentions(pytorch_names(given_code(lab), parse), source)


def policy_problems(lab, uses_pytorch):
    """What is inconsistent between a lab's USES_PYTORCH and its notebook's activity texts."""
    problems = [f"USES_PYTORCH names activity {a}, which the notebook does not have"
                for a in uses_pytorch if a not in lab.activities]
    starts = [activity.stub.index for activity in lab.activities.values()]
    for (activity_id, activity), previous in zip(lab.activities.items(), [-1, *starts]):
        text = " ".join(c.source for c in lab.cells[previous + 1:activity.stub.index] if c.cell_type == "markdown")
        says = NUMPY_ONLY in re.sub(r"\s+", " ", re.sub(r"(?m)^>\s?", "", text))
        if activity_id in uses_pytorch and says:
            problems.append(f"activity {activity_id} uses PyTorch (USES_PYTORCH), but its text says "
                            f"'{NUMPY_ONLY}'")
        elif activity_id not in uses_pytorch and not says:
            problems.append(f"activity {activity_id} is graded without PyTorch, so its text must say "
                            f"'{NUMPY_ONLY}'")
    return problems
