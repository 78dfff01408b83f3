"""An interrupted batch run again grades only what has no current result, and ends as an
uninterrupted run does: nothing lost, nothing twice."""
import os
import shutil
import signal
import subprocess

import pytest

from tests.helpers import ROOT, comparable, grade_command, nbgrader_export, results_in
from tests.services import json_count, wait_for

pytestmark = pytest.mark.slow


def grade(*args):
    return subprocess.run(grade_command(*args), cwd=ROOT, capture_output=True, text=True, timeout=1800)


def exported(out, tmp_path):
    return nbgrader_export(out, f"sqlite:///{out / 'gradebook.db'}", tmp_path)


def test_a_killed_client_run_again_grades_only_the_rest(a_class, uninterrupted, tmp_path):
    out = tmp_path / "out"
    first = subprocess.Popen(grade_command(a_class, "--out", out, "--jobs", "2"), cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: json_count(out) >= 6, "the sixth result", first)
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the client, mid-batch, with no chance to tidy up
        first.wait()
    before = {path.name: (path.stat().st_mtime_ns, path.read_bytes()) for path in out.glob("*.json")}
    second = grade(a_class, "--out", out, "--jobs", "2")
    assert second.returncode == 0, second.stdout + second.stderr
    assert f"{len(before)} already had a current result and were not graded again" in second.stdout
    assert {name: (out / name).stat().st_mtime_ns for name in before} == {name: t for name, (t, _) in before.items()}
    assert {name: (out / name).read_bytes() for name in before} == {name: data for name, (_, data) in before.items()}
    graded, expected = results_in(out), results_in(uninterrupted)
    assert sorted(graded) == sorted(expected)
    assert all(comparable(graded[name]) == comparable(expected[name]) for name in expected)
    assert (out / "grades.csv").read_text() == (uninterrupted / "grades.csv").read_text()
    assert exported(out, tmp_path) == exported(uninterrupted, tmp_path)


def test_regrade_grades_a_current_result_again(a_class, uninterrupted, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(uninterrupted, out)
    student = sorted(a_class.iterdir())[0]  # current: the run above shows a plain re-run keeps such results
    before = (out / f"{student.name}.json").stat().st_mtime_ns
    regraded = grade(student, "--out", out, "--regrade")
    assert regraded.returncode == 0 and "already had a current result" not in regraded.stdout, regraded.stderr
    assert (out / f"{student.name}.json").stat().st_mtime_ns != before
    assert comparable(results_in(out)[student.name]) == comparable(results_in(uninterrupted)[student.name])
    assert exported(out, tmp_path) == exported(uninterrupted, tmp_path)


def test_current_results_missing_from_the_gradebook_are_recorded_without_grading(a_class, uninterrupted, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(uninterrupted, out)
    (out / "gradebook.db").unlink()
    shutil.rmtree(out / "autograded")
    run = grade(a_class, "--out", out)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{json_count(uninterrupted)} already had a current result" in run.stdout
    recorded = len(list((uninterrupted / "autograded").iterdir()))
    assert f"{recorded} of them recorded in the gradebook now" in run.stdout
    assert exported(out, tmp_path) == exported(uninterrupted, tmp_path)
