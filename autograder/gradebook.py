"""Record grades in nbgrader's gradebook, so that nbgrader's own tools work on them.

Each activity's score goes to the grade of its check cell (``<activity>-check``). Optional
activities are worth no points toward nbgrader's maximum; what they earn is extra credit.
The autograded notebook written beside it (``autograded/<student>/<lab>/<lab>.ipynb``, the
folder named by `file_stem`) lets ``nbgrader generate_feedback`` render the grader's messages
under each check cell.
The gradebook is any database nbgrader's SQLAlchemy URL reaches: SQLite by default, PostgreSQL
for a course graded from several runs or machines. Recording a student again updates the same
rows, so a re-graded submission never appears twice.
"""
import copy
import os
import sys
import threading
import warnings
from functools import cache
from pathlib import Path

import nbformat

from autograder.labs import course_labs
from autograder.results_store import atomic_write, file_stem
from autograder.submission import answers, load
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


def check_database(db_url):
    """Refuse, before anything is graded, a gradebook URL that cannot work: malformed, of a
    database SQLAlchemy has no driver for, or of a server that does not answer."""
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    try:
        url = make_url(db_url)
    except Exception as error:  # SQLAlchemy's ArgumentError, or a ValueError from the parser
        raise SystemExit(f"autograder: --db {db_url!r} is not a database URL ({error}); "
                         "use sqlite:///FILE or postgresql://USER@HOST:PORT/DATABASE") from None
    shown = url.render_as_string(hide_password=True)
    try:
        arguments = {"connect_timeout": 10} if url.get_backend_name() == "postgresql" else {}
        engine = create_engine(url, connect_args=arguments)
        try:
            with engine.connect():
                pass
        finally:
            engine.dispose()
    except Exception as error:  # no driver, no server, wrong password, no such database, ...
        reason = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
        raise SystemExit(f"autograder: cannot open the gradebook {shown}: {type(error).__name__}: {reason}") from None


def grade_values(result):
    """What the gradebook holds for a result: (auto score, extra credit) per check cell."""
    return {f"{test['name']}-check": (0.0, float(test["score"])) if "optional" in test["tags"]
            else (float(test["score"]), None) for test in result["tests"]}


def recordable(result):
    """False when nothing was graded (no lab, or lab_not_gradable): nbgrader has no place for it."""
    return result["extra_data"]["lab"] is not None and bool(result["tests"])


class GradebookWriter:
    """Writes grades into one gradebook, through a connection kept open for the whole batch."""

    def __init__(self, db_url, course_dir):
        check_database(db_url)
        self.db_url, self.course_dir, self.known, self._preparing = db_url, Path(course_dir), set(), None
        self._open = None
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

    def _gradebook(self, lab_name):
        """The open gradebook, once the lab's assignment exists in it."""
        if self._preparing is not None:
            self._preparing.join()
            self._preparing = None
        self._ensure_lab(lab_name)
        if self._open is None:
            self._open = nbgrader_tools()[0](self.db_url)
        return self._open

    def record(self, name, result, answers):
        """Store `result` for student `name`; `answers` maps answer-cell ids to the student's code.
        Recording again updates the same rows: nbgrader keeps one submission per student and lab."""
        if not recordable(result):
            return
        lab_name = result["extra_data"]["lab"]
        gradebook = self._gradebook(lab_name)
        try:
            gradebook.update_or_create_student(name)
            gradebook.update_or_create_submission(lab_name, name)
            for grade_id, (auto_score, extra_credit) in grade_values(result).items():
                grade = gradebook.find_grade(grade_id, lab_name, lab_name, name)
                grade.auto_score, grade.extra_credit = auto_score, extra_credit
            gradebook.db.commit()
        except Exception:  # a lost connection or a server restart: start afresh on the next record
            self.close()
            raise
        self._write_autograded(name, lab_name, result, answers)

    def recorded(self, lab_name):
        """{student: grade_values} of what the gradebook holds for `lab_name`, in one query."""
        from nbgrader.api import Assignment, BaseCell, Grade, SubmittedAssignment, SubmittedNotebook

        gradebook = self._gradebook(lab_name)
        rows = (gradebook.db.query(SubmittedAssignment.student_id, BaseCell.name, Grade.auto_score, Grade.extra_credit)
                .join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
                .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
                .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                .join(BaseCell, Grade.cell_id == BaseCell.id)
                .filter(Assignment.name == lab_name))
        found = {}
        for student, grade_id, auto_score, extra_credit in rows:
            found.setdefault(student, {})[grade_id] = (auto_score, extra_credit)
        gradebook.db.commit()  # ends the read transaction
        return found

    def catch_up(self, kept):
        """Record the current results of earlier runs that this gradebook lacks or holds
        differently (a run killed between writing a result and recording it cannot leave one:
        the JSON comes last; but an earlier --db, or a server that was down, can). `kept` holds
        (name, path, result). Returns how many were recorded now."""
        missing, held = [], {}
        for name, path, result in kept:
            if not recordable(result):
                continue
            lab_name = result["extra_data"]["lab"]
            if lab_name not in held:
                held[lab_name] = self.recorded(lab_name)
            values, stored = grade_values(result), held[lab_name].get(name, {})
            notebook = self.course_dir / "autograded" / file_stem(name) / lab_name / f"{lab_name}.ipynb"
            if {grade_id: stored.get(grade_id) for grade_id in values} != values or not notebook.is_file():
                missing.append((name, path, result))
        for name, path, result in missing:
            lab = course_labs()[result["extra_data"]["lab"]]
            self.record(name, result, answers(lab, load(path)))
        return len(missing)

    def close(self):
        if self._open is not None:
            self._open.close()
            self._open = None

    def _write_autograded(self, name, lab_name, result, answers):
        notebook = copy.deepcopy(release_notebook(lab_name))
        messages = {f"{test['name']}-check": test["output"] for test in result["tests"]}
        for cell in notebook.cells:
            if cell.id in answers:
                cell.source = answers[cell.id]
            if cell.id in messages:
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=messages[cell.id] + "\n")]
        folder = self.course_dir / "autograded" / file_stem(name) / lab_name
        folder.mkdir(parents=True, exist_ok=True)
        text = nbformat.writes(notebook)
        atomic_write(folder / f"{lab_name}.ipynb", text if text.endswith("\n") else text + "\n")
