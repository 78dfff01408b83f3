"""Record grades in nbgrader's gradebook, so that nbgrader's own tools work on them.

Each activity's score goes to the grade of its check cell (``<activity>-check``). Optional
activities are worth no points toward nbgrader's maximum; what they earn is extra credit.
The autograded notebook written beside it (``autograded/<student>/<lab>/<lab>.ipynb``, the
folder named by the student id as it is, which the roster only lets be a plain folder name, so that
nbgrader's commands find it; with the submission's nbgrader files) lets ``nbgrader
generate_feedback`` render the grader's messages under each check cell, and ``release_feedback``
hand the page to the student.
The gradebook is any database nbgrader's SQLAlchemy URL reaches: SQLite by default, PostgreSQL
for a course graded from several runs or machines. A record is keyed by (student, lab), as
nbgrader's submissions are: recording it again updates the same rows, so a re-graded submission
never appears twice, and a record that holds nothing to grade (a notebook of another lab, an
unreadable file) removes the lab's submission of that student, which then counts as missing.
Lateness goes where nbgrader keeps it: the lab's due date on the assignment, the time handed in
and any extension on the submission, and the penalty, in points, on its notebook.
Records are committed in batches, one transaction each, where nbgrader's own calls would commit
several times a record, each commit waiting for the database to make it durable:
`GradebookWriter.flush` commits what is staged, and the writer does so itself once `BATCH_RECORDS`
records or `BATCH_SECONDS` seconds have gathered since its last commit, so that a long run keeps
few records only in memory. A batch whose commit fails is lost to the gradebook alone: each of
its results has its JSON, which `catch_up` records on the next run. A Ctrl-C that comes while
the writer records or commits lands once it is done (`records.interrupts`): a transaction cut in
its middle would leave a connection that refuses the records of the run's own catch-up.
"""
import ast
import copy
import threading
import time
import warnings
from datetime import datetime, timedelta, timezone
from functools import cache
from pathlib import Path

import nbformat

from autograder.grading.submission import SubmissionError, answers, load, read_regular
from autograder.labs import course_labs
from autograder.records.interrupts import held_interrupts
from autograder.records.results_store import atomic_write
from course.labs import ROOT
from course.syntax import parse

BATCH_RECORDS, BATCH_SECONDS = 50, 10.0

# What nbgrader's submit leaves beside a notebook and its autograde copies beside the autograded
# one, for generate_feedback to carry into the feedback folder: release_feedback names each page
# from the secret, and fetch_feedback finds it by the secret the student's submit kept. Both come
# from the student's side: the time written beside the autograded notebook is the one that
# counted (autograder/records/lateness.py), the gradebook's, and the secret is copied only when it is a
# regular file of at most SECRET_BYTES (submit writes 128 hex digits).
TIMESTAMP, SECRET = "timestamp.txt", "submission_secret.txt"
SUBMISSION_FILES = (TIMESTAMP, SECRET)
SECRET_BYTES = 1024


@cache
def nbgrader_tools():
    """nbgrader's Gradebook and SaveCells, imported on first use: the import takes most of a
    second, which the background set-up (`prepare`) then pays instead of the grader's start."""
    import nbgrader.api
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import SaveCells
    from sqlalchemy.exc import SAWarning

    # nbgrader's add_submission makes SQLAlchemy warn about its own session handling.
    warnings.filterwarnings("ignore", category=SAWarning, module=r"nbgrader\.api")
    # A new gradebook is stamped with the head revision of nbgrader's migration scripts, which
    # nbgrader learns by running the `alembic heads` command: a new Python, a second of CPU, and
    # an `alembic` that must be on PATH. The same value, read here once (tests/test_gradebook_batch.py
    # checks it against the command's).
    nbgrader.api.get_alembic_version = alembic_head
    return Gradebook, SaveCells


@cache
def alembic_head():
    """The head revision of nbgrader's migration scripts (nbgrader.dbutil.ALEMBIC_DIR), as the
    `alembic heads` command that nbgrader.api.get_alembic_version runs names it: the revision that
    no script names as its `down_revision`. Read from the scripts' assignments, since importing
    alembic to read them costs a tenth of a second of each run that writes a gradebook; alembic
    reads them where they are not one plain line of revisions."""
    from nbgrader.dbutil import ALEMBIC_DIR

    revisions, replaced = set(), set()
    try:
        for script in sorted(Path(ALEMBIC_DIR, "versions").glob("*.py")):
            for node in parse(script.read_text(encoding="utf-8")).body:
                names = [getattr(target, "id", None) for target in node.targets] if isinstance(node, ast.Assign) else []
                if names == ["revision"]:
                    revisions.add(getattr(node.value, "value", ...))
                elif names == ["down_revision"]:
                    replaced.add(getattr(node.value, "value", ...))  # a tuple (a merge) is not a Constant
    except (OSError, SyntaxError, ValueError):
        revisions = set()
    heads = revisions - replaced
    if len(heads) == 1 and all(isinstance(r, (str, type(None))) for r in revisions | replaced):
        return heads.pop()
    from alembic.script import ScriptDirectory

    return ScriptDirectory(ALEMBIC_DIR).get_current_head()


@cache
def staging_session():
    """The session class of the writer's gradebook. nbgrader's Gradebook commits after each
    change it makes; in this session such a commit only sends the changes to the database (so
    that nbgrader's next queries see them, in the same transaction), and `commit_batch` commits."""
    from sqlalchemy.orm import Session

    class StagingSession(Session):
        def commit(self):
            self.flush()

        def commit_batch(self):
            super().commit()

    return StagingSession


class NotRecorded(Exception):
    """The gradebook lost these records (`keys`, each (student, lab)): the transaction that held
    them failed, or its commit did, with `cause`."""

    def __init__(self, keys, cause):
        self.keys, self.cause = list(keys), cause
        self.names = [f"{student}/{lab_name}" for student, lab_name in self.keys]
        self.reason = f"{type(cause).__name__}: {cause}"
        super().__init__(f"{', '.join(self.names)}: {self.reason}")


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
    """What the gradebook holds for a result: (auto score, extra credit) per check cell, and under
    None the submission's (time handed in, extension, late penalty in points)."""
    values = {f"{test['name']}-check": (0.0, float(test["score"])) if "optional" in test["tags"]
              else (float(test["score"]), None) for test in result["tests"]}
    extra = result["extra_data"]
    late = extra.get("late", {})
    values[None] = (naive_utc(late.get("submitted")), timedelta(hours=late["extension_hours"])
                    if late.get("extension_hours") else None, float(extra.get("penalty_points", 0)))
    return values


def naive_utc(moment):
    """An ISO 8601 time (or an aware datetime) as nbgrader stores times: naive, in UTC."""
    if moment is None:
        return None
    moment = datetime.fromisoformat(moment) if isinstance(moment, str) else moment
    return moment.astimezone(timezone.utc).replace(tzinfo=None)


def nbgrader_timestamp(moment):
    """An ISO 8601 time as nbgrader's submit writes timestamp.txt: "2026-12-01 23:59:07.123456 UTC"."""
    return f"{naive_utc(moment).isoformat(' ', 'microseconds')} UTC"


def recordable(result):
    """False when nothing was graded (a notebook of another lab, an unreadable file,
    lab_not_gradable): nbgrader has no place for it."""
    return result["extra_data"]["lab"] in course_labs() and bool(result["tests"])


class GradebookWriter:
    """Writes grades into one gradebook, through a connection kept open for the whole run, from
    one thread. `record` stages a record in the open transaction; the transaction is committed by
    `flush` and `close`, and by `record` itself once `batch_records` records or `batch_seconds`
    seconds have gathered since the last commit. A failure that ends the transaction raises
    NotRecorded, naming every record it held."""

    batch_records, batch_seconds = BATCH_RECORDS, BATCH_SECONDS

    def __init__(self, db_url, course_dir):
        check_database(db_url)
        self.db_url, self.course_dir, self.known, self._preparing = db_url, Path(course_dir), set(), None
        self._open, self.due = None, {}
        self._staged, self._committed = [], time.monotonic()

    def prepare(self, lab_names, due=None):
        """Create the gradebook in the background, while grading runs (with nbgrader's import, it
        takes over a second), and read the student notebooks of `lab_names`, which each lab's first record
        needs; `due` ({lab: aware datetime}) holds the labs' due dates. A lab's assignment is made
        by its first record, not here: `nbgrader export` lists every student under every
        assignment, a lab nobody handed in included. `record` waits for this; a failure here is
        retried, and reported, by `record`."""
        self.due = dict(due or {})

        def work():
            try:
                with nbgrader_tools()[0](self.db_url):
                    pass
                for name in lab_names:
                    release_notebook(name)
            except Exception:  # record() tries again and reports it
                return
        self._preparing = threading.Thread(target=work, daemon=True)
        self._preparing.start()

    def _ensure_lab(self, lab_name):
        if lab_name in self.known:
            return
        # The lab's set-up commits through connections of its own, which a SQLite gradebook
        # makes wait for the lock that the staged records hold: they are committed first.
        self.flush()
        Gradebook, SaveCells = nbgrader_tools()
        with Gradebook(self.db_url) as gradebook:
            gradebook.update_or_create_assignment(lab_name, duedate=naive_utc(self.due.get(lab_name)))
        resources = {"nbgrader": {"db_url": self.db_url, "assignment": lab_name, "notebook": lab_name}}
        SaveCells().preprocess(release_notebook(lab_name), resources)
        self.known.add(lab_name)

    def _gradebook(self, lab_name=None):
        """The open gradebook, once `lab_name`'s assignment, if given, exists in it."""
        if self._preparing is not None:
            self._preparing.join()
            self._preparing = None
        if lab_name is not None:
            self._ensure_lab(lab_name)
        if self._open is None:
            from sqlalchemy.orm import scoped_session, sessionmaker

            gradebook = nbgrader_tools()[0](self.db_url)
            gradebook.db.remove()  # the session of nbgrader's own set-up, which committed it
            gradebook.db = scoped_session(sessionmaker(bind=gradebook.engine, class_=staging_session(), future=True))
            self._open, self._committed = gradebook, time.monotonic()
        return self._open

    @held_interrupts()
    def record(self, student, lab_name, result, answers):
        """Stage `result` as `student`'s record of `lab_name`; `answers` maps answer-cell ids to the
        student's code. Recording again updates the same rows: nbgrader keeps one submission per
        student and lab. A result with nothing graded removes that submission. The record is in
        the gradebook once its batch is committed (see the class); NotRecorded when the
        transaction is lost, naming this record and every other it held."""
        if lab_name not in course_labs():
            return  # a folder named for no lab: nothing of the course to record
        try:
            gradebook = self._gradebook(lab_name if recordable(result) else None)
            if recordable(result):
                self._stage(gradebook, student, lab_name, result)
            else:
                self._remove(gradebook, student, lab_name)
        except Exception as error:  # a lost connection or a server restart: start afresh on the next record
            raise self._lost(error, (student, lab_name)) from error
        self._staged.append((student, lab_name))
        if recordable(result):
            self._write_autograded(student, lab_name, result, answers)
        if len(self._staged) >= self.batch_records or time.monotonic() - self._committed >= self.batch_seconds:
            self.flush()

    def _stage(self, gradebook, student, lab_name, result):
        from nbgrader.api import MissingEntry

        gradebook.update_or_create_student(student)
        values = grade_values(result)
        submitted, extension, penalty = values.pop(None)
        submission = gradebook.update_or_create_submission(lab_name, student)
        submission.timestamp, submission.extension = submitted, extension
        try:
            fill_in(gradebook, student, lab_name, values, penalty)
        except MissingEntry:
            complete(gradebook, submission)
            fill_in(gradebook, student, lab_name, values, penalty)

    @held_interrupts()
    def flush(self):
        """Commit the staged records, in one transaction. When that fails they are not in the
        gradebook (their JSON results are, for `catch_up`): NotRecorded names them."""
        if self._open is None or not self._open.db().in_transaction():
            return
        try:
            self._open.db().commit_batch()
        except Exception as error:  # the server went away, a lock was not granted, ...
            raise self._lost(error) from error
        self._staged, self._committed = [], time.monotonic()

    def _lost(self, error, *keys):
        """The NotRecorded of `error`, which ended the open transaction: the records it staged and
        `keys`. The connection is closed, so the next record opens a new one."""
        if isinstance(error, NotRecorded):  # a commit before this record's own work failed
            return NotRecorded(error.keys + list(keys), error.cause)
        lost = NotRecorded(self._staged + list(keys), error)
        self._disconnect()
        return lost

    def _remove(self, gradebook, student, lab_name):
        from nbgrader.api import MissingEntry

        try:
            gradebook.remove_submission(lab_name, student)
        except MissingEntry:
            pass
        autograded = self._autograded(student, lab_name)
        for path in (autograded, *(autograded.with_name(name) for name in SUBMISSION_FILES)):
            path.unlink(missing_ok=True)

    def _autograded(self, student, lab_name):
        return self.course_dir / "autograded" / student / lab_name / f"{lab_name}.ipynb"

    def recorded(self, lab_name):
        """{student: grade_values} of what the gradebook holds for `lab_name`, in two queries."""
        from nbgrader.api import Assignment, BaseCell, Grade, SubmittedAssignment, SubmittedNotebook

        gradebook = self._gradebook()
        submissions = (gradebook.db.query(SubmittedAssignment.student_id, SubmittedAssignment.timestamp,
                                          SubmittedAssignment.extension, SubmittedNotebook.late_submission_penalty)
                       .join(SubmittedNotebook, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
                       .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                       .filter(Assignment.name == lab_name))
        found = {student: {None: (submitted, extension, float(penalty or 0))}
                 for student, submitted, extension, penalty in submissions}
        rows = grade_rows(gradebook, SubmittedAssignment.student_id, BaseCell.name, Grade.auto_score,
                          Grade.extra_credit).filter(Assignment.name == lab_name)
        for student, grade_id, auto_score, extra_credit in rows:
            found.setdefault(student, {})[grade_id] = (auto_score, extra_credit)
        self.flush()  # ends the read transaction (nothing is staged: catch_up reads before it records)
        return found

    @held_interrupts()
    def catch_up(self, kept):
        """Make the gradebook hold the current results of earlier runs as they are (a run killed
        before its last batch was committed leaves results that are not, as do a batch whose
        commit failed, an earlier --db, a server that was down, or a late policy changed since). `kept`
        holds (submission, result). Returns how many records were written now, once they are
        committed; NotRecorded when a batch of them is not."""
        missing, held = [], {}
        for submission, result in kept:
            student, lab_name = submission.key
            if lab_name not in course_labs():
                continue
            if lab_name not in held:
                held[lab_name] = self.recorded(lab_name)
            stored = held[lab_name].get(student)
            if not recordable(result):
                if stored is not None or self._autograded(student, lab_name).exists():
                    missing.append((submission, result))
                continue
            values = grade_values(result)
            if {key: (stored or {}).get(key) for key in values} != values or \
                    not self._autograded(student, lab_name).is_file():
                missing.append((submission, result))
        for submission, result in missing:
            lab = course_labs()[submission.lab]
            found = answers(lab, load(submission.path)) if recordable(result) else {}
            self.record(submission.student, submission.lab, result, found)
        self.flush()
        return len(missing)

    @held_interrupts()
    def close(self):
        """Commit what is staged (`flush`, which may raise NotRecorded) and close the connection,
        once `prepare`'s set-up has ended: a run stopped before its first record would otherwise
        leave it creating the gradebook beside whatever reads it next (canvas.csv's students)."""
        try:
            if self._preparing is not None:
                self._preparing.join()
                self._preparing = None
            self.flush()
        finally:
            self._disconnect()

    def _disconnect(self):
        """Close the connection; what it staged and did not commit is rolled back."""
        self._staged = []
        if self._open is not None:
            self._open.close()
            self._open = None

    def _write_autograded(self, student, lab_name, result, answers):
        notebook = copy.deepcopy(release_notebook(lab_name))
        messages = {f"{test['name']}-check": test["output"] for test in result["tests"]}
        for cell in notebook.cells:
            if cell.id in answers:
                cell.source = answers[cell.id]
            if cell.id in messages:
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=messages[cell.id] + "\n")]
        text = nbformat.writes(notebook)
        autograded = atomic_write(self._autograded(student, lab_name), text if text.endswith("\n") else text + "\n")
        counted = result["extra_data"].get("late", {}).get("submitted")
        write_or_remove(autograded.with_name(TIMESTAMP), counted and nbgrader_timestamp(counted))
        secret = Path(result["extra_data"]["path"]).with_name(SECRET)
        try:
            write_or_remove(autograded.with_name(SECRET), read_regular(secret, SECRET_BYTES, ValueError))
        except (SubmissionError, ValueError):  # none, or not what submit writes: no feedback page is named from it
            write_or_remove(autograded.with_name(SECRET), None)


def write_or_remove(path, data):
    """Write `data` (text or bytes) to `path`, or remove `path` where there is no data."""
    if data:
        atomic_write(path, data)
    else:
        path.unlink(missing_ok=True)


def fill_in(gradebook, student, lab_name, values, penalty):
    """Set the grades `values` ({check cell: (auto score, extra credit)}) and the late `penalty` in
    the rows of `student`'s submission of `lab_name`; MissingEntry where a row is not there."""
    for grade_id, (auto_score, extra_credit) in values.items():
        grade = gradebook.find_grade(grade_id, lab_name, lab_name, student)
        grade.auto_score, grade.extra_credit = auto_score, extra_credit
    gradebook.find_submission_notebook(lab_name, lab_name, student).late_submission_penalty = penalty


def complete(gradebook, submission):
    """Add the rows that nbgrader's add_submission gives a new submission and `submission` lacks:
    its notebooks, their grades and their comments. A failed `nbgrader autograde` leaves a
    submission without them (made while its assignment had no notebooks yet, as after `nbgrader db
    assignment add`), and nbgrader never adds them later, so without this no record of that
    student and lab could ever be written. Rows that are there, a person's grades among them, stay."""
    from nbgrader.api import Comment, Grade, SubmittedNotebook

    # Each row goes into the session as it is made: SQLAlchemy 2 follows no back-reference there.
    session = gradebook.db
    held = {notebook.notebook_id: notebook for notebook in submission.notebooks}
    for notebook in submission.assignment.notebooks:
        submitted = held.get(notebook.id)
        if submitted is None:
            submitted = SubmittedNotebook(notebook=notebook, assignment=submission)
            session.add(submitted)
        graded = {grade.cell_id for grade in submitted.grades}
        commented = {comment.cell_id for comment in submitted.comments}
        session.add_all([Grade(cell_id=cell.id, notebook=submitted)
                         for cell in [*notebook.grade_cells, *notebook.task_cells] if cell.id not in graded])
        session.add_all([Comment(cell_id=cell.id, notebook=submitted)
                         for cell in [*notebook.solution_cells, *notebook.task_cells] if cell.id not in commented])
    session.flush()


def grade_rows(gradebook, *columns):
    """A query of `columns` over every grade the gradebook holds, joined to its submission, its
    assignment and its cell."""
    from nbgrader.api import Assignment, BaseCell, Grade, SubmittedAssignment, SubmittedNotebook

    return (gradebook.db.query(*columns)
            .join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
            .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
            .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
            .join(BaseCell, Grade.cell_id == BaseCell.id))


def held_scores(db_url):
    """What the gradebook `db_url` holds, by (student, lab): {"points": {activity: points},
    "penalty": late penalty in points, "seconds_late": seconds after the due date or None}. An
    activity's points are its manual score where a person gave one, else the grader's, plus any
    extra credit: the gradebook is where manual grading lands."""
    from nbgrader.api import Assignment, BaseCell, Grade, SubmittedAssignment, SubmittedNotebook

    check_database(db_url)
    held = {}
    with nbgrader_tools()[0](db_url) as gradebook:
        submissions = (gradebook.db.query(SubmittedAssignment.student_id, Assignment.name, SubmittedAssignment.timestamp,
                                          Assignment.duedate, SubmittedAssignment.extension,
                                          SubmittedNotebook.late_submission_penalty)
                       .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                       .join(SubmittedNotebook, SubmittedNotebook.assignment_id == SubmittedAssignment.id))
        for student, lab_name, submitted, due, extension, penalty in submissions:
            late = None
            if submitted is not None and due is not None:
                late = max(0.0, (submitted - due - (extension or timedelta(0))).total_seconds())
            held[(student, lab_name)] = {"points": {}, "penalty": float(penalty or 0), "seconds_late": late}
        grades = grade_rows(gradebook, SubmittedAssignment.student_id, Assignment.name, BaseCell.name,
                            Grade.auto_score, Grade.manual_score, Grade.extra_credit)
        for student, lab_name, cell, auto, manual, extra in grades:
            if (student, lab_name) in held and cell.endswith("-check"):
                score = manual if manual is not None else (auto or 0.0)
                held[(student, lab_name)]["points"][cell.removesuffix("-check")] = score + (extra or 0.0)
    return held


def canvas_people(db_url):
    """{student: {"name", "id"}} from nbgrader's students table (`nbgrader db student import`
    fills it: last and first name, and lms_user_id, the student's Canvas ID), for canvas.csv."""
    from nbgrader.api import Student

    with nbgrader_tools()[0](db_url) as gradebook:
        rows = gradebook.db.query(Student.id, Student.first_name, Student.last_name, Student.lms_user_id).all()
    return {student: {"name": ", ".join(filter(None, (last, first))) or None, "id": lms_user_id}
            for student, first, last, lms_user_id in rows}
