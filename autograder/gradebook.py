"""Record grades in nbgrader's gradebook, so that nbgrader's own tools work on them.

Each activity's score goes to the grade of its check cell (``<activity>-check``). Optional
activities are worth no points toward nbgrader's maximum; what they earn is extra credit.
The autograded notebook written beside it (``autograded/<student>/<lab>/<lab>.ipynb``) lets
``nbgrader generate_feedback`` render the grader's messages under each check cell.
"""
import copy
import os
import sys
import threading
import warnings
from functools import cache
from pathlib import Path

import nbformat

from course.labs import ROOT


@cache
def nbgrader_tools():
    """nbgrader's Gradebook and SaveCells, imported on first use: the import takes most of a
    second, which the background set-up (`prepare`) then pays instead of the grader's start."""
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import SaveCells
    from sqlalchemy.exc import SAWarning

    # nbgrader's add_submission makes SQLAlchemy warn about its own session handling.
    warnings.filterwarnings("ignore", category=SAWarning, module=r"nbgrader\.api")
    return Gradebook, SaveCells


@cache
def release_notebook(lab_name):
    return nbformat.read(ROOT / "release" / lab_name / f"{lab_name}.ipynb", as_version=4)


class GradebookWriter:
    def __init__(self, db_url, course_dir):
        self.db_url, self.course_dir, self.known, self._preparing = db_url, Path(course_dir), set(), None
        # nbgrader runs the `alembic` command that sits beside this Python, wherever PATH points.
        bin_dir = str(Path(sys.executable).parent)
        if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
            os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")

    def prepare(self, lab_names):
        """Create the gradebook and each lab's assignment in the background, while grading runs
        (the first set-up takes seconds); `record` waits for it. A failure here is retried, and
        reported, by `record`."""
        def work():
            for name in lab_names:
                try:
                    self._ensure_lab(name)
                except Exception:  # record() tries again and reports it
                    return
        self._preparing = threading.Thread(target=work, daemon=True)
        self._preparing.start()

    def _ensure_lab(self, lab_name):
        if lab_name in self.known:
            return
        Gradebook, SaveCells = nbgrader_tools()
        with Gradebook(self.db_url) as gradebook:
            gradebook.update_or_create_assignment(lab_name)
        resources = {"nbgrader": {"db_url": self.db_url, "assignment": lab_name, "notebook": lab_name}}
        SaveCells().preprocess(release_notebook(lab_name), resources)
        self.known.add(lab_name)

    def record(self, name, result, answers):
        """Store `result` for student `name`; `answers` maps answer-cell ids to the student's code."""
        lab_name = result["extra_data"]["lab"]
        if lab_name is None or not result["tests"]:  # nothing was graded (e.g. lab_not_gradable)
            return
        if self._preparing is not None:
            self._preparing.join()
            self._preparing = None
        self._ensure_lab(lab_name)
        Gradebook, _ = nbgrader_tools()
        with Gradebook(self.db_url) as gradebook:
            gradebook.update_or_create_student(name)
            gradebook.update_or_create_submission(lab_name, name)
            for test in result["tests"]:
                grade = gradebook.find_grade(f"{test['name']}-check", lab_name, lab_name, name)
                if "optional" in test["tags"]:
                    grade.auto_score, grade.extra_credit = 0.0, float(test["score"])
                else:
                    grade.auto_score, grade.extra_credit = float(test["score"]), None
            gradebook.db.commit()
        self._write_autograded(name, lab_name, result, answers)

    def _write_autograded(self, name, lab_name, result, answers):
        notebook = copy.deepcopy(release_notebook(lab_name))
        messages = {f"{test['name']}-check": test["output"] for test in result["tests"]}
        for cell in notebook.cells:
            if cell.id in answers:
                cell.source = answers[cell.id]
            if cell.id in messages:
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=messages[cell.id] + "\n")]
        folder = self.course_dir / "autograded" / name / lab_name
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, folder / f"{lab_name}.ipynb")
