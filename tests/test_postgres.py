"""nbgrader's gradebook on a real PostgreSQL server (`--db postgresql://...`): the class recorded
there exports as the SQLite gradebook does, the class report read from it shows what the results
folder's does, nbgrader's feedback works on it, and a re-graded student's lab is updated in place."""
import os
import shutil
import subprocess
import sys

import pytest

from tests.classroom import check_record, grade_class
from tests.helpers import LABS, ROOT, grade_command, nbgrader, nbgrader_export, records_in
from tests.report_pages import page_tables
from tests.services import json_count, postgres_database, postgres_server, unused_port


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
    shutil.copyfile(a_class.parent / "course.toml", tmp_path / "course.toml")
    # The graded class's records, current for these same notebooks, go into PostgreSQL as they
    # are (the way a class moves to a server): nothing is graded, every record is written there.
    shutil.copytree(uninterrupted, out, ignore=shutil.ignore_patterns("gradebook.db", "autograded"))
    run = subprocess.run(grade_class(submitted, "--out", out, "--jobs", "2", "--db", database), cwd=ROOT,
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    recorded = len([result for result in records_in(out).values() if result["tests"]])
    assert f"{json_count(out)} already had a current result and were not graded again (--regrade grades them all); " \
           f"{recorded} of them recorded in the gradebook now" in run.stdout
    assert not (out / "gradebook.db").exists()
    sqlite = nbgrader_export(uninterrupted, f"sqlite:///{uninterrupted / 'gradebook.db'}", tmp_path)
    assert nbgrader_export(out, database, tmp_path) == sqlite
    check_record(out, database, tmp_path)
    # The class report from the gradebook: the same scores as the results folder's own report.
    report = subprocess.run([sys.executable, "-m", "autograder", "report", out, "--db", database, "--out",
                             tmp_path / "from-gradebook.html"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert report.returncode == 0, report.stdout + report.stderr
    assert page_tables((tmp_path / "from-gradebook.html").read_text()) == page_tables((out / "report.html").read_text())
    assert database.rpartition("@")[0] not in (tmp_path / "from-gradebook.html").read_text()

    student, lab = "s01", LABS[0].name
    feedback = nbgrader("generate_feedback", lab, f"--CourseDirectory.root={out}",
                        f"--CourseDirectory.db_url={database}", f"--student={student}", cwd=tmp_path)
    assert feedback.returncode == 0, feedback.stderr
    assert (out / "feedback" / student / lab / f"{lab}.html").is_file()

    # s01 resubmits, on time, the notebook s04 handed in after the cutoff: only that submission is
    # graded again, and it gets s04's points without the penalty.
    resubmitted = submitted / student / lab / f"{lab}.ipynb"
    written = resubmitted.stat()  # before its timestamp.txt's claim, as nbgrader's submit leaves it
    shutil.copyfile(submitted / "s04" / lab / f"{lab}.ipynb", resubmitted)
    os.utime(resubmitted, ns=(written.st_atime_ns, written.st_mtime_ns))
    again = subprocess.run(grade_class(submitted, "--out", out, "--db", database), cwd=ROOT,
                           capture_output=True, text=True, timeout=1800)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"{len(records_in(out)) - 1} already had a current result" in again.stdout
    assert submissions_of(database, student) == len(
        [key for key, result in records_in(out).items() if key[0] == student and result["tests"]])
    rows = {(row["student_id"], row["assignment"]): row for row in nbgrader_export(out, database, tmp_path)}
    before = {(row["student_id"], row["assignment"]): row for row in sqlite}
    assert sorted(rows) == sorted(before)
    assert rows[(student, lab)]["raw_score"] == rows[("s04", lab)]["raw_score"] != before[(student, lab)]["raw_score"]
    assert float(rows[(student, lab)]["late_submission_penalty"]) == 0
    assert float(rows[("s04", lab)]["score"]) == 0 < float(rows[(student, lab)]["score"])
    assert {key: row for key, row in rows.items() if key != (student, lab)} == {
        key: row for key, row in before.items() if key != (student, lab)}


def test_a_gradebook_server_that_is_down_is_a_clear_error_before_any_grading(tmp_path):
    url = f"postgresql://grader:secret@127.0.0.1:{unused_port()}/gradebook"
    notebook = tmp_path / "some.ipynb"
    notebook.write_text("{}")
    run = subprocess.run(grade_command(notebook, "--out", tmp_path / "out", "--db", url), cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "cannot open the gradebook postgresql://grader:***@127.0.0.1" in run.stderr and "secret" not in run.stderr
    assert not list((tmp_path / "out").glob("*/*.json"))
