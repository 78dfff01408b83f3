"""Grading on a Dask cluster (`--scheduler`): a real scheduler and two workers, each a process of
its own on 127.0.0.1, give the results of `--jobs 1`, even when a worker dies mid-batch."""
import csv
import os
import signal
import subprocess

import pytest

from tests.helpers import ROOT, comparable, grade_command, results_in
from tests.services import dask_cluster, json_count, unused_port, wait_for


def same_results(out, reference):
    graded, expected = results_in(out), results_in(reference)
    assert sorted(graded) == sorted(expected)
    for name in expected:
        assert comparable(graded[name]) == comparable(expected[name]), name


@pytest.fixture
def cluster(tmp_path):
    with dask_cluster(tmp_path / "cluster", workers=2) as running:
        yield running


@pytest.mark.slow
def test_a_class_graded_on_the_cluster_equals_jobs_1(cluster, a_class, uninterrupted, tmp_path):
    out = tmp_path / "out"
    run = subprocess.run(grade_command(a_class, "--out", out, "--scheduler", cluster.address), cwd=ROOT,
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    same_results(out, uninterrupted)
    assert (out / "grades.csv").read_text() == (uninterrupted / "grades.csv").read_text()


@pytest.mark.slow
def test_a_worker_killed_mid_batch_leaves_exactly_one_result_each(cluster, a_class, uninterrupted, tmp_path):
    out = tmp_path / "out"
    client = subprocess.Popen(grade_command(a_class, "--out", out, "--scheduler", cluster.address), cwd=ROOT,
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
    rows = [row["submission"] for row in csv.DictReader((out / "grades.csv").open())]
    assert sorted(rows) == sorted(set(rows)) == sorted(results_in(uninterrupted))


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
