"""A class's record through interruptions and re-grades: an interrupted batch (Ctrl-C, or a client
killed outright) keeps and tables what it finished, the same command again grades only the rest,
and the end is the uninterrupted run's record; a re-grade of one student's lab changes that
record alone."""
import os
import shutil
import signal
import subprocess

import pytest

from tests.classroom import check_record, grade_class
from tests.helpers import ROOT, comparable, nbgrader_export, records_in
from tests.services import json_count, wait_for

pytestmark = pytest.mark.slow


def grade(*args, given=None):
    return subprocess.run(grade_class(*args, given=given), cwd=ROOT, capture_output=True, text=True, timeout=1800)


def sqlite(out):
    return f"sqlite:///{out / 'gradebook.db'}"


def stopped(a_class, out, records, how):
    """Start grading the class into `out`, and once `records` results are written, interrupt it
    `how` (SIGINT to its process group, as Ctrl-C does; SIGKILL to the client alone, which can
    tidy nothing up). Returns what the client printed and its exit status. The client starts with
    Ctrl-C's default action, as a terminal's foreground job does: a suite started in the background
    (`make test &`) hands its processes SIGINT ignored, and Python then keeps ignoring it."""
    run = subprocess.Popen(grade_class(a_class, "--out", out, "--jobs", "2"), cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, start_new_session=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_for(lambda: json_count(out) >= records, f"result {records}", run)
        os.killpg(run.pid, how) if how == signal.SIGINT else run.send_signal(how)
        said, _ = run.communicate(timeout=600)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    return said, run.returncode


def test_an_interrupted_run_tables_what_it_finished_and_a_run_again_grades_only_the_rest(a_class, uninterrupted,
                                                                                        tmp_path):
    out = tmp_path / "out"
    said, status = stopped(a_class, out, 4, signal.SIGINT)
    assert status == 130, said
    assert "interrupted; every result written so far is kept" in said and "without a result yet" in said, said
    assert "not recorded" not in said, said
    check_record(out, sqlite(out), tmp_path, only=set(records_in(out)))  # the tables: exactly what was written
    said, status = stopped(a_class, out, json_count(out) + 3, signal.SIGKILL)
    assert status == -signal.SIGKILL, said
    before = {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in out.glob("*/*.json")}
    last = grade(a_class, "--out", out, "--jobs", "2")
    assert last.returncode == 0, last.stdout + last.stderr
    assert f"{len(before)} already had a current result and were not graded again" in last.stdout
    assert {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in before} == before
    graded, expected = records_in(out), records_in(uninterrupted)
    assert sorted(graded) == sorted(expected)
    differ = {key: (graded[key]["status"], graded[key]["output"][:300]) for key in expected
              if comparable(graded[key]) != comparable(expected[key])}
    assert differ == {}, f"records unlike the uninterrupted run's: {differ}"
    for table in ("grades.csv", "course.csv"):
        assert (out / table).read_text() == (uninterrupted / table).read_text(), table
    check_record(out, sqlite(out), tmp_path)
    assert nbgrader_export(out, sqlite(out), tmp_path) == nbgrader_export(uninterrupted, sqlite(uninterrupted),
                                                                          tmp_path)


def test_regrading_one_students_lab_changes_that_record_alone(a_class, uninterrupted, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(uninterrupted, out)
    student, lab = sorted(key for key, result in records_in(out).items() if result["status"] == "graded")[0]
    chosen = out / student / f"{lab}.json"
    others = {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in out.glob("*/*.json") if path != chosen}
    before = chosen.stat().st_mtime_ns
    regraded = grade(a_class, "--out", out, "--regrade", "--student", student, "--lab", lab)
    assert regraded.returncode == 0 and "graded 1 of 1 submissions" in regraded.stdout, regraded.stdout
    assert chosen.stat().st_mtime_ns != before
    assert {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in others} == others
    assert comparable(records_in(out)[(student, lab)]) == comparable(records_in(uninterrupted)[(student, lab)])
    check_record(out, sqlite(out), tmp_path)
    # A student's folder given alone grades that student's labs, each once, and keeps the rest.
    again = grade(a_class, "--out", out, given=[a_class / student])
    assert again.returncode == 0, again.stdout + again.stderr
    labs = len([key for key in records_in(out) if key[0] == student])
    assert f"{labs} already had a current result" in again.stdout
    check_record(out, sqlite(out), tmp_path)


def test_current_results_missing_from_the_gradebook_are_recorded_without_grading(a_class, uninterrupted, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(uninterrupted, out)
    (out / "gradebook.db").unlink()
    shutil.rmtree(out / "autograded")
    run = grade(a_class, "--out", out)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{json_count(uninterrupted)} already had a current result" in run.stdout
    recorded = len(list((uninterrupted / "autograded").glob("*/*/*.ipynb")))
    assert f"{recorded} of them recorded in the gradebook now" in run.stdout
    assert nbgrader_export(out, sqlite(out), tmp_path) == nbgrader_export(uninterrupted, sqlite(uninterrupted),
                                                                          tmp_path)
