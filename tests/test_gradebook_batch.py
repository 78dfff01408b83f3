"""How the grader writes nbgrader's gradebook, on real SQLite and PostgreSQL gradebooks: a new one is
stamped with the migration head that nbgrader's `alembic heads` command names, without running it;
records are committed in batches, each one transaction that another connection sees whole or not
at all; the class recorded in batches is the gradebook of a commit per record; and a batch whose
commit fails is named, record by record, while its JSON results stand for the next run to record."""
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

from autograder.cli.commands import caught_up
from autograder.grading.roster import Submission
from autograder.grading.secret import course_secret
from autograder.grading.submission import answers, load
from autograder.labs import course_labs
from autograder.records.gradebook import (GradebookWriter, NotRecorded, alembic_head, grade_values, held_scores,
                                          nbgrader_tools, recordable, staging_session)
from autograder.records.lateness import read_course
from autograder.records.report import write_json
from autograder.records.results_store import notebook_digest
from tests.helpers import (LABS, ROOT, ctrl_c_raises, grade_command, lab_notebook, nbgrader_export, read,
                           records_in)
from tests.services import HANG_SECONDS, json_count, postgres_database, postgres_server
from tests.submissions import save_class, variants


def test_a_new_gradebook_is_stamped_with_the_head_nbgrader_s_alembic_command_names(tmp_path, monkeypatch):
    from nbgrader.dbutil import _temp_alembic_ini
    from sqlalchemy import text

    # As nbgrader.api.get_alembic_version runs it (an nbgrader whose migrations end elsewhere fails here).
    with _temp_alembic_ini("sqlite:////tmp/gradebook.db") as alembic_ini:
        said = subprocess.run([str(Path(sys.executable).parent / "alembic"), "-c", alembic_ini, "heads"],
                              capture_output=True, text=True, check=True, timeout=300).stdout
    head = said.split("\n")[0].split(" ")[0]
    assert alembic_head() == head
    monkeypatch.setenv("PATH", str(tmp_path))  # no `alembic` command to run
    with nbgrader_tools()[0](f"sqlite:///{tmp_path / 'gradebook.db'}") as gradebook:
        assert gradebook.db.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [head]


def test_migration_scripts_that_branch_are_read_by_alembic_itself(tmp_path, monkeypatch):
    import nbgrader.dbutil
    from alembic.util import CommandError

    shutil.copytree(Path(nbgrader.dbutil.ALEMBIC_DIR), tmp_path / "alembic")
    head = alembic_head()
    (tmp_path / "alembic" / "versions" / "0a_branch.py").write_text(
        f"revision = '0a0a0a0a0a0a'\ndown_revision = {head!r}\n")
    (tmp_path / "alembic" / "versions" / "0b_branch.py").write_text(
        f"revision = '0b0b0b0b0b0b'\ndown_revision = {head!r}\n")
    monkeypatch.setattr(nbgrader.dbutil, "ALEMBIC_DIR", str(tmp_path / "alembic"))
    with pytest.raises(CommandError, match="multiple heads"):  # alembic's own answer: two heads
        alembic_head.__wrapped__()
    (tmp_path / "alembic" / "versions" / "0c_merge.py").write_text(
        "revision = '0c0c0c0c0c0c'\ndown_revision = ('0a0a0a0a0a0a', '0b0b0b0b0b0b')\n")
    assert alembic_head.__wrapped__() == "0c0c0c0c0c0c"


@pytest.fixture(scope="module")
def server():
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'gradebook.db'}"
        return
    with postgres_database(request.getfixturevalue("server")) as url:
        yield url


def class_records(graded, lab_name=None):
    """(Submission, result) of each record in the results folder `graded` (of `lab_name` alone if
    given), by student: what catch_up is given."""
    return [(Submission(student, name, Path(result["extra_data"]["path"])), result)
            for (student, name), result in sorted(records_in(graded).items()) if lab_name in (None, name)]


def writer_of(db_url, out, a_class):
    """The writer of a grading run of the class: its labs, with the course file's due dates."""
    writer = GradebookWriter(db_url, out)
    writer.prepare(sorted(course_labs()), read_course(a_class.parent / "course.toml", course_labs()).due)
    return writer


def record(writer, submission, result):
    """What a run's keep (commands.grade_and_write) records of a graded submission."""
    found = answers(course_labs()[submission.lab], load(submission.path)) if recordable(result) else {}
    writer.record(submission.student, submission.lab, result, found)


def held(db_url, lab_name):
    """The students whose submission of `lab_name` another connection sees in the gradebook."""
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    try:
        with engine.connect() as connection:
            return set(connection.execute(text(
                "SELECT submitted_assignment.student_id FROM submitted_assignment JOIN assignment "
                "ON submitted_assignment.assignment_id = assignment.id WHERE assignment.name = :lab"),
                {"lab": lab_name}).scalars())
    finally:
        engine.dispose()


@contextmanager
def commits_counted():
    """The list of the commits of the writer's sessions (nbgrader's own commits in them are not)."""
    from sqlalchemy import event

    commits = []

    def count(session):
        commits.append(session)

    event.listen(staging_session(), "after_commit", count)
    try:
        yield commits
    finally:
        event.remove(staging_session(), "after_commit", count)


@pytest.mark.slow
def test_a_batch_is_one_commit_that_another_connection_sees_whole_after_it_and_not_before(db_url, a_class,
                                                                                        uninterrupted, tmp_path):
    lab_name = LABS[0].name
    kept = class_records(uninterrupted, lab_name)
    assert len(kept) >= 5 and any(not recordable(result) for _, result in kept)  # a removal among them
    writer = writer_of(db_url, tmp_path / "out", a_class)
    writer.batch_records, writer.batch_seconds = 4, HANG_SECONDS  # batches of 4, whatever the machine's speed
    with commits_counted() as commits:
        for number, (submission, result) in enumerate(kept, 1):
            record(writer, submission, result)
            committed = kept[:number - number % 4]
            assert len(commits) == number // 4, number
            assert held(db_url, lab_name) == {s.student for s, r in committed if recordable(r)}, number
        writer.close()
        assert len(commits) == math.ceil(len(kept) / 4)
    assert held(db_url, lab_name) == {s.student for s, r in kept if recordable(r)}


@pytest.mark.slow
@pytest.mark.parametrize("batch", [{}, {"batch_records": 1}, {"batch_records": 3}, {"batch_seconds": 0}],
                         ids=["one batch", "a commit per record", "batches of 3", "a commit every 0 s"])
def test_the_class_recorded_in_batches_is_the_gradebook_of_a_commit_per_record(batch, db_url, a_class, uninterrupted,
                                                                                tmp_path):
    """What catch_up writes of the whole class, in any batches, is what the uninterrupted run's
    gradebook holds, which test_class_record checks record by record."""
    out = tmp_path / "out"
    kept = class_records(uninterrupted)
    writer = writer_of(db_url, out, a_class)
    for name, value in batch.items():
        setattr(writer, name, value)
    with commits_counted() as commits:
        recorded = writer.catch_up(kept)
        writer.close()
    assert recorded == len([result for _, result in kept if recordable(result)])
    if batch.get("batch_records") == 1 or batch.get("batch_seconds") == 0:
        assert len(commits) >= recorded
    elif not batch:  # the reads of each lab, the records of each lab before the next lab's set-up, and the rest
        assert len(commits) <= 2 * len(LABS)
    assert nbgrader_export(out, db_url, tmp_path) == nbgrader_export(
        uninterrupted, f"sqlite:///{uninterrupted / 'gradebook.db'}", tmp_path)


@contextmanager
def commit_refused(db_url):
    """The gradebook refuses the next commit of the writer's staged records, as a real database
    does: SQLite because another connection (an instructor's formgrader, say) reads in a
    transaction, and holds the lock the commit needs past SQLite's 5 s wait; PostgreSQL because the
    server ended the writer's connection, as a restart or a fast shutdown does."""
    if db_url.startswith("sqlite"):
        import sqlite3

        reader = sqlite3.connect(db_url.removeprefix("sqlite:///"), isolation_level=None)
        try:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM submitted_assignment").fetchall()
            yield
        finally:
            reader.execute("ROLLBACK")
            reader.close()
        return
    import psycopg

    with psycopg.connect(db_url, autocommit=True) as admin:
        ended = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                              "WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchall()
        assert ended and all(done for done, in ended)
    yield


@pytest.mark.slow
def test_a_batch_whose_commit_fails_is_named_and_the_next_runs_catch_up_records_it(db_url, a_class, uninterrupted,
                                                                                   tmp_path):
    lab_name, out = LABS[0].name, tmp_path / "out"
    kept = class_records(uninterrupted, lab_name)
    graded = {submission.student for submission, result in kept if recordable(result)}
    writer = writer_of(db_url, out, a_class)
    writer.batch_seconds = HANG_SECONDS
    for submission, result in kept:
        record(writer, submission, result)
    with commit_refused(db_url):
        with pytest.raises(NotRecorded) as lost:
            writer.flush()
    assert lost.value.keys == [submission.key for submission, _ in kept]
    assert lost.value.names == [str(submission) for submission, _ in kept]
    assert held(db_url, lab_name) == set()
    writer.close()  # nothing left to commit
    assert held(db_url, lab_name) == set()

    # The next run: the writer opens the gradebook afresh, and catch_up records the lost batch.
    again = writer_of(db_url, out, a_class)
    assert again.catch_up(kept) == len(graded)
    recorded = again.recorded(lab_name)
    again.close()
    assert held(db_url, lab_name) == graded
    for submission, result in kept:
        if recordable(result):
            values = grade_values(result)
            assert {key: recorded[submission.student].get(key) for key in values} == values, submission


def one_batch(db_url, a_class, uninterrupted, tmp_path):
    """(lab name, [(submission, result)], writer): the class's records of its first lab staged in
    one batch of a writer into the gradebook at `db_url`, not committed yet."""
    lab_name = LABS[0].name
    kept = class_records(uninterrupted, lab_name)
    writer = writer_of(db_url, tmp_path / "out", a_class)
    writer.batch_seconds = HANG_SECONDS
    for submission, result in kept:
        record(writer, submission, result)
    return lab_name, kept, writer


@pytest.mark.slow
def test_a_ctrl_c_that_ends_a_batchs_commit_loses_no_result_the_run_wrote(db_url, a_class, uninterrupted, tmp_path,
                                                                          monkeypatch):
    """Ctrl-C can fall inside a batch's commit, whose transaction then ends with nothing written;
    the run's results are in their JSONs, and `grade` records them before it stops
    (commands.caught_up), not only in the next run."""
    lab_name, kept, writer = one_batch(db_url, a_class, uninterrupted, tmp_path)

    def interrupted(session):
        session.rollback()
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(staging_session(), "commit_batch", interrupted)
        with pytest.raises(KeyboardInterrupt):
            writer.flush()
    writer.close()
    assert held(db_url, lab_name) == set()
    assert caught_up(writer, dict(kept)) == []
    writer.close()
    assert held(db_url, lab_name) == {submission.student for submission, result in kept if recordable(result)}


@pytest.mark.slow
def test_a_ctrl_c_pressed_during_a_commit_lands_once_the_batch_is_in_the_gradebook(db_url, a_class, uninterrupted,
                                                                                  tmp_path, monkeypatch):
    """A real SIGINT that comes while the writer commits: the batch is committed whole, and the
    KeyboardInterrupt comes after it (a transaction cut in its middle refused the run's own
    catch-up in tests/test_resume.py)."""
    lab_name, kept, writer = one_batch(db_url, a_class, uninterrupted, tmp_path)
    commit = staging_session().commit_batch

    def pressed(session):
        os.kill(os.getpid(), signal.SIGINT)
        commit(session)

    with ctrl_c_raises(), monkeypatch.context() as patched:
        patched.setattr(staging_session(), "commit_batch", pressed)
        with pytest.raises(KeyboardInterrupt):
            writer.flush()
    try:
        assert held(db_url, lab_name) == {submission.student for submission, result in kept
                                          if recordable(result)} != set()
    finally:
        writer.close()


@pytest.mark.slow
def test_a_ctrl_c_between_a_json_and_the_runs_note_of_it_loses_no_record(db_url, a_class, uninterrupted, tmp_path):
    """Ctrl-C can fall after a result's JSON is renamed into place and before the run notes it
    (commands.grade_and_write's keep): the run then holds nothing of it, and the gradebook still
    gets it, read back from the JSON (a loaded machine's Ctrl-C fell there in tests/test_resume.py)."""
    lab_name, out = LABS[0].name, tmp_path / "out"
    kept = class_records(uninterrupted, lab_name)
    for _, result in kept:
        write_json(out, result)
    todo = [(submission, notebook_digest(submission.path)) for submission, _ in kept]
    writer = writer_of(db_url, out, a_class)
    assert caught_up(writer, {}, out, todo, course_secret()) == []
    writer.close()
    assert held(db_url, lab_name) == {submission.student for submission, result in kept if recordable(result)} != set()


@pytest.mark.slow
def test_a_run_whose_last_commit_fails_names_each_submission_and_the_next_run_records_them(server, release_dir,
                                                                                          solved_dir, tmp_path):
    """End to end, through `grade`: PostgreSQL refuses the commit of every batch holding a
    submission (a deferred trigger raises at COMMIT), so the run's one batch, committed at its end,
    fails; the JSON results are written, each submission is named, and with the trigger gone the
    next run records them without grading them again."""
    import psycopg

    lab = LABS[0]
    kinds = variants(lab, read(lab_notebook(solved_dir, lab)), read(lab_notebook(release_dir, lab)))[:2]
    submitted = save_class(tmp_path, lab, kinds, 2)
    out = tmp_path / "out"
    with postgres_database(server) as database:
        with nbgrader_tools()[0](database):
            pass  # the gradebook's tables, for the trigger
        with psycopg.connect(database, autocommit=True) as connection:
            connection.execute("CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
                               "$$ BEGIN RAISE EXCEPTION 'the test refuses this commit'; END $$")
            connection.execute("CREATE CONSTRAINT TRIGGER refuse AFTER INSERT OR UPDATE ON submitted_assignment "
                               "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse()")
        run = subprocess.run(grade_command(submitted, "--out", out, "--db", database, "--jobs", "2"), cwd=ROOT,
                             capture_output=True, text=True, timeout=1800)
        assert run.returncode == 1, run.stdout + run.stderr
        students = sorted(path.name for path in submitted.iterdir())
        for student in students:
            assert f"autograder: not recorded in the gradebook: {student}/{lab.name}: " in run.stderr, run.stderr
        assert "the test refuses this commit" in run.stderr
        assert json_count(out) == len(students)
        assert held(database, lab.name) == set()

        with psycopg.connect(database, autocommit=True) as connection:
            connection.execute("DROP TRIGGER refuse ON submitted_assignment")
        again = subprocess.run(grade_command(submitted, "--out", out, "--db", database), cwd=ROOT,
                               capture_output=True, text=True, timeout=1800)
        assert again.returncode == 0, again.stdout + again.stderr
        assert f"{len(students)} already had a current result and were not graded again (--regrade grades them " \
               f"all); {len(students)} of them recorded in the gradebook now" in again.stdout
        assert held(database, lab.name) == set(students)
        scores = held_scores(database)
        for (student, name), result in records_in(out).items():
            held_score = sum(scores[(student, name)]["points"].values()) - scores[(student, name)]["penalty"]
            assert held_score == pytest.approx(result["score"]), student


def test_a_run_stopped_before_its_first_record_leaves_nothing_creating_the_gradebook(tmp_path):
    """`prepare` creates the gradebook in the background while grading starts; a run that ends
    before recording anything (a misconfigured Dask worker, a refused course) closes the writer and
    then reads the gradebook for canvas.csv: nothing of the set-up may still be running then, or
    the two create nbgrader's course row at once and one logs an IntegrityError's traceback."""
    before = set(threading.enumerate())
    writer = GradebookWriter(f"sqlite:///{tmp_path / 'gradebook.db'}", tmp_path)
    writer.prepare(sorted(course_labs()))
    writer.close()
    assert set(threading.enumerate()) <= before
