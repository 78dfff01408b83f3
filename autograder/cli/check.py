"""`python -m autograder check NOTEBOOK`: the student's check (autodiff_check.check), with what
only the grader knows besides: the lab the notebook's locked cells make it, as grading recognises
it, and the lab its folder hands it in as (a course folder's submitted/<student>/<lab>/)."""
from autodiff_check.check import check
from autograder.grading.roster import folder_lab
from autograder.grading.submission import SubmissionError, identify
from autograder.labs import course_labs


def grader_reading(path):
    """What the grader would read differently from what the notebook says of itself: a function of
    the notebook, for the student's check to report with its own problems."""
    def problems(notebook):
        try:
            lab = identify(notebook, list(course_labs().values()))
        except SubmissionError as error:
            return [f"the grader would not grade it: {error}"]
        found, said = [], notebook.metadata.get("course", {}).get("lab")
        if said != lab.name:
            found.append(f"its metadata says lab {said}, but its locked cells are lab {lab.name}'s: the grader grades "
                         f"it as lab {lab.name}")
        expected = folder_lab(path)
        if expected is not None and expected != lab.name:
            found.append(f"this notebook is lab {lab.name}, but its folder hands it in as lab {expected}: the grader "
                         "would grade it as neither")
        return found
    return problems


def command_check(path):
    """Check the notebook at `path` as a student's check does, and as the grader reads it."""
    return check(path, more_problems=[grader_reading(path)])
