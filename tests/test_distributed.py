"""Grading on a Dask cluster (`--scheduler`): a real scheduler and two workers, each a process of
its own on 127.0.0.1, give the class the record that `--jobs 2` gives it, even when a worker dies
mid-batch."""
import csv
import os
import signal
import subprocess

import pytest

from tests.classroom import check_record, grade_class
from tests.helpers import LABS, ROOT, comparable, grade_command, lab_notebook, read, records_in
from tests.report_pages import page_tables
from tests.submissions import save, with_cell_after
from tests.services import HANG_SECONDS, dask_cluster, json_count, unused_port, wait_for


def same_results(out, reference):
    graded, expected = records_in(out), records_in(reference)
    assert sorted(graded) == sorted(expected)
    for key in expected:
        assert comparable(graded[key]) == comparable(expected[key]), key
    for table in ("grades.csv", "course.csv", "diagnoses.csv", "canvas.csv"):
        assert (out / table).read_text() == (reference / table).read_text(), table
    assert page_tables((out / "report.html").read_text(), timing=False) == \
        page_tables((reference / "report.html").read_text(), timing=False)


@pytest.fixture
def cluster(tmp_path):
    with dask_cluster(tmp_path / "cluster", workers=2) as running:
        yield running


@pytest.mark.slow
def test_a_class_graded_on_the_cluster_equals_jobs_2(cluster, a_class, uninterrupted, tmp_path):
    out = tmp_path / "out"
    run = subprocess.run(grade_class(a_class, "--out", out, "--scheduler", cluster.address), cwd=ROOT,
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    same_results(out, uninterrupted)
    check_record(out, f"sqlite:///{out / 'gradebook.db'}", tmp_path)


@pytest.mark.slow
def test_a_worker_killed_mid_batch_leaves_exactly_one_result_each(cluster, a_class, uninterrupted, tmp_path):
    out = tmp_path / "out"
    client = subprocess.Popen(grade_class(a_class, "--out", out, "--scheduler", cluster.address), cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: json_count(out) >= 4, "the fourth result", client)
        os.killpg(cluster.workers[0].pid, signal.SIGKILL)  # the worker and its nanny, mid-task
        cluster.workers[0].wait()
        output, errors = client.communicate(timeout=1800)
    finally:
        if client.poll() is None:
            client.kill()
    assert client.returncode == 0, output + errors
    same_results(out, uninterrupted)
    rows = [(row["student"], row["lab"]) for row in csv.DictReader((out / "grades.csv").open())]
    assert rows == sorted(set(rows)) == sorted(records_in(uninterrupted))


@pytest.mark.slow
def test_a_killed_client_leaves_no_grading_running_on_the_cluster(cluster, solved_dir, tmp_path):
    """A client killed outright cannot cancel its tasks; the scheduler lets them go, and each task
    then stops its grading by itself, long before the hanging cell's ten-minute limit would."""
    from distributed import Client

    lab = LABS[0]
    hanging = save(with_cell_after(read(lab_notebook(solved_dir, lab)), f"{next(iter(lab.activities))}-answer",
                                   "while True:\n    pass\n"), tmp_path, "hanging")
    client = subprocess.Popen(grade_command(hanging, "--out", tmp_path / "out", "--scheduler", cluster.address,
                                            "--cell-timeout", "600"), cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    log = tmp_path / "cluster" / "cluster.log"
    try:
        with Client(cluster.address, set_as_default=False) as watcher:
            wait_for(lambda: any(watcher.processing().values()), "the grading task's start", client)
            client.kill()
            client.wait()
            wait_for(lambda: "is no longer wanted; its grading stopped" in log.read_text(),
                     "the task to stop its grading")
            # Each worker has one thread: it runs a new task only once the grading has ended.
            for address in watcher.scheduler_info()["workers"]:
                assert watcher.submit(len, "free", workers=[address], pure=False).result(timeout=HANG_SECONDS) == 4
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()


def test_an_unreachable_scheduler_is_a_clear_error_and_writes_nothing(tmp_path):
    address = f"tcp://127.0.0.1:{unused_port()}"
    notebook = tmp_path / "some.ipynb"
    notebook.write_text("{}")
    environment = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"}
    run = subprocess.run(grade_command(notebook, "--out", tmp_path / "out", "--scheduler", address), cwd=ROOT,
                         capture_output=True, text=True, timeout=300, env=environment)
    assert run.returncode != 0
    assert f"cannot reach the Dask scheduler at {address}" in run.stderr
    assert not list((tmp_path / "out").iterdir())
