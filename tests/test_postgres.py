"""nbgrader's gradebook on a real PostgreSQL server (`--db postgresql://...`): the class recorded
there exports as the SQLite gradebook does, nbgrader's feedback works on it, and a re-graded
student is updated in place."""
import shutil
import subprocess

import pytest

from tests.helpers import ROOT, grade_command, nbgrader, nbgrader_export, results_in
from tests.services import postgres_database, postgres_server, unused_port


@pytest.fixture(scope="module")
def server():
    with postgres_server() as url:
        yield url


@pytest.fixture
def database(server):
    with postgres_database(server) as url:
        yield url


def submissions_of(db_url, student):
    import psycopg

    with psycopg.connect(db_url) as connection:
        return connection.execute("SELECT count(*) FROM submitted_assignment WHERE student_id = %s",
                                  (student,)).fetchone()[0]


@pytest.mark.slow
def test_the_class_in_postgresql_exports_as_in_sqlite_and_regrades_in_place(a_class, uninterrupted, database,
                                                                              tmp_path):
    out, submitted = tmp_path / "out", tmp_path / "submitted"
    shutil.copytree(a_class, submitted)
    run = subprocess.run(grade_command(submitted, "--out", out, "--jobs", "2", "--db", database), cwd=ROOT,
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    assert not (out / "gradebook.db").exists()
    sqlite = nbgrader_export(uninterrupted, f"sqlite:///{uninterrupted / 'gradebook.db'}", tmp_path)
    assert nbgrader_export(out, database, tmp_path) == sqlite

    lab = results_in(out)["student-00"]["extra_data"]["lab"]
    feedback = nbgrader("generate_feedback", lab, f"--CourseDirectory.root={out}",
                        f"--CourseDirectory.db_url={database}", "--student=student-00", cwd=tmp_path)
    assert feedback.returncode == 0, feedback.stderr
    assert (out / "feedback" / "student-00" / lab / f"{lab}.html").is_file()

    # student-00 resubmits (student-01's blank notebook): only that submission is graded again.
    notebook = submitted / "student-00" / lab / f"{lab}.ipynb"
    shutil.copyfile(submitted / "student-01" / lab / f"{lab}.ipynb", notebook)
    again = subprocess.run(grade_command(submitted, "--out", out, "--db", database), cwd=ROOT,
                           capture_output=True, text=True, timeout=1800)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"{len(results_in(out)) - 1} already had a current result" in again.stdout
    assert submissions_of(database, "student-00") == 1
    # The export has a row per student for every lab of the course; the class took one.
    rows = {row["student_id"]: row for row in nbgrader_export(out, database, tmp_path) if row["assignment"] == lab}
    before = {row["student_id"]: row for row in sqlite if row["assignment"] == lab}
    assert sorted(rows) == sorted(before)
    assert rows["student-00"]["score"] == rows["student-01"]["score"] != before["student-00"]["score"]


def test_a_gradebook_server_that_is_down_is_a_clear_error_before_any_grading(tmp_path):
    url = f"postgresql://grader:secret@127.0.0.1:{unused_port()}/gradebook"
    notebook = tmp_path / "some.ipynb"
    notebook.write_text("{}")
    run = subprocess.run(grade_command(notebook, "--out", tmp_path / "out", "--db", url), cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "cannot open the gradebook postgresql://grader:***@127.0.0.1" in run.stderr and "secret" not in run.stderr
    assert not list((tmp_path / "out").glob("*.json"))
