"""Grading on a Dask cluster (`--scheduler`) deployed as Dask deploys one: a stock scheduler that
has dask and distributed but not the grader, and two workers that have the grader installed as pip
installs it and the course folder as their current folder, each a process of its own on
127.0.0.1. It gives the class the record that `--jobs 2` gives it, even when a worker dies
mid-batch, and through TLS; a client that dies or is stopped leaves nothing running; one that
cannot reach its scheduler says so within seconds and writes nothing. A worker that cannot grade
is named once, as misconfigured; a task is queued until its worker starts it, and timed from then."""
import csv
import os
import signal
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from autograder.grading.distributed import Settings, grade_on_cluster
from autograder.grading.roster import Submission
from autograder.isolation.sandbox import Limits
from tests.classroom import check_record, grade_class
from tests.helpers import LABS, ROOT, comparable, grade_command, lab_notebook, read, records_in
from tests.installed import clean_environment, course_copy, installed_environment
from tests.report_pages import page_tables
from tests.submissions import save, with_cell_after
from tests.services import dask_cluster, json_count, tls_files, tls_flags, unused_port, wait_for

FREE_SECONDS = 180  # a stopped grading frees its worker long before the hanging cell's 600 s would
REFUSED_SECONDS = 20  # the client gives up on a scheduler after 5 s; Dask's own wait was 30 s


def same_results(out, reference):
    graded, expected = records_in(out), records_in(reference)
    assert sorted(graded) == sorted(expected)
    for key in expected:
        assert comparable(graded[key]) == comparable(expected[key]), key
    for table in ("grades.csv", "course.csv", "diagnoses.csv", "canvas.csv"):
        assert (out / table).read_text() == (reference / table).read_text(), table
    assert page_tables((out / "report.html").read_text(), timing=False) == \
        page_tables((reference / "report.html").read_text(), timing=False)


def left_behind(temporary, seconds=60):
    """What a stopped worker's grading left in its TMPDIR (Dask's own scratch folder aside), once
    the removal, which may follow the process's end by a moment, has had `seconds` to finish."""
    deadline = time.monotonic() + seconds
    while True:
        found = sorted(path.name for path in temporary.iterdir() if path.name != "dask-scratch-space")
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


@pytest.fixture
def node(tmp_path):
    """A grading node's Python, with the grader's wheel installed, and its course folder: made for
    each test, since the client grades with the checkout as it is then, and a node must match it."""
    return installed_environment(tmp_path / "node") / "python", course_copy(tmp_path / "node" / "course")


@pytest.fixture
def cluster(node, tmp_path):
    python, course = node
    with dask_cluster(tmp_path / "cluster", workers=2, python=python, course=course) as running:
        yield running


def imports(python, module, cwd):
    return subprocess.run([str(python), "-c", f"import {module}"], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=clean_environment())


@pytest.mark.slow
def test_a_stock_scheduler_and_installed_workers_grade_the_class_as_jobs_2(cluster, a_class, uninterrupted,
                                                                             tmp_path):
    for module in ("autograder", "course"):
        refused = imports(cluster.scheduler_python, module, cluster.scheduler_folder)
        assert refused.returncode != 0 and f"No module named '{module}'" in refused.stderr
    assert imports(cluster.scheduler_python, "distributed", cluster.scheduler_folder).returncode == 0
    out = tmp_path / "out"
    run = subprocess.run(grade_class(a_class, "--out", out, "--scheduler", cluster.address), cwd=ROOT,
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    same_results(out, uninterrupted)
    check_record(out, f"sqlite:///{out / 'gradebook.db'}", tmp_path)
    assert "deserialization" not in (tmp_path / "cluster" / "cluster.log").read_text()
    # Stopped as an operator stops them (SIGTERM to the group, or Ctrl-C's SIGINT), the workers
    # leave none of their grading's folders: the process's own, its zygotes', its notebooks'.
    for worker, temporary, how in zip(cluster.workers, cluster.temporary, (signal.SIGTERM, signal.SIGINT)):
        assert list(temporary.glob("grader-*/zygote-*")), temporary  # the node's folder, its zygotes' inside
        os.killpg(worker.pid, how)
        worker.wait(timeout=120)
        assert left_behind(temporary) == [], (how, temporary)


@pytest.mark.slow
def test_a_worker_killed_mid_batch_leaves_exactly_one_result_each(cluster, a_class, uninterrupted, tmp_path):
    out = tmp_path / "out"
    client = subprocess.Popen(grade_class(a_class, "--out", out, "--scheduler", cluster.address), cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: json_count(out) >= 4 or client.poll() is not None, "the fourth result")
        assert client.poll() is None, "".join(client.communicate())
        os.killpg(cluster.workers[0].pid, signal.SIGKILL)  # the worker and its nanny, mid-task
        cluster.workers[0].wait()
        assert left_behind(cluster.temporary[0]) == []
        output, errors = client.communicate(timeout=1800)
    finally:
        if client.poll() is None:
            client.kill()
    assert client.returncode == 0, output + errors
    same_results(out, uninterrupted)
    rows = [(row["student"], row["lab"]) for row in csv.DictReader((out / "grades.csv").open())]
    assert rows == sorted(set(rows)) == sorted(records_in(uninterrupted))


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["killed", "terminated"])
def test_a_client_that_dies_or_is_stopped_leaves_no_grading_running_on_the_cluster(how, cluster, solved_dir,
                                                                                   tmp_path):
    """Killed, the client cancels nothing, but the scheduler lets its tasks go as its connection
    closes, and each task then stops its grading by itself; stopped (SIGTERM, as Ctrl-C), it
    cancels them. Either way both workers are free long before the hanging cell's limit."""
    from distributed import Client

    lab = LABS[0]
    hanging = save(with_cell_after(read(lab_notebook(solved_dir, lab)), f"{next(iter(lab.activities))}-answer",
                                   "while True:\n    pass\n"), tmp_path, "hanging")
    client = subprocess.Popen(grade_command(hanging, "--out", tmp_path / "out", "--scheduler", cluster.address,
                                            "--cell-timeout", "600"),
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = tmp_path / "cluster" / "cluster.log"
    try:
        with Client(cluster.address, set_as_default=False) as watcher:
            wait_for(lambda: any(watcher.processing().values()), "the grading task's start", client)
            client.send_signal(how)
            client.wait()
            wait_for(lambda: "is no longer wanted; its grading stopped" in log.read_text(),
                     "the task to stop its grading")
            # Each worker has one thread: it runs a new task only once the grading has ended.
            for address in watcher.scheduler_info()["workers"]:
                assert watcher.submit(len, "free", workers=[address], pure=False).result(timeout=FREE_SECONDS) == 4
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    if how == signal.SIGTERM:  # what Ctrl-C gives: the tasks cancelled, the tables written
        assert client.returncode == 130
        assert "requests to cancel" in log.read_text()


@pytest.mark.slow
def test_a_tls_cluster_grades_and_refuses_a_client_without_its_certificates(node, a_class, uninterrupted,
                                                                             tmp_path):
    python, course = node
    files = tls_files(tmp_path / "tls")
    stranger = tls_files(tmp_path / "stranger", roles=("client",))  # a CA of its own, which signs the client
    with dask_cluster(tmp_path / "cluster", workers=2, python=python, course=course, tls=files) as cluster:
        assert cluster.address.startswith("tls://127.0.0.1:")
        plain = cluster.address.replace("tls://", "tcp://")
        for address, flags, said in ((cluster.address, [], "takes TLS clients only"),
                                     (cluster.address, tls_flags(stranger, "client"), "cannot reach"),
                                     (plain, [], "cannot reach")):
            refused = subprocess.run(grade_class(a_class, "--out", tmp_path / "refused", "--scheduler", address,
                                                 *flags), cwd=ROOT, capture_output=True, text=True, timeout=300)
            assert refused.returncode != 0
            assert said in refused.stderr and address in refused.stderr, refused.stderr
            assert "Traceback" not in refused.stderr and "Exception ignored" not in refused.stderr, refused.stderr
        assert not (tmp_path / "refused").exists()
        out = tmp_path / "out"
        run = subprocess.run(grade_class(a_class, "--out", out, "--scheduler", cluster.address,
                                         *tls_flags(files, "client"), given=[a_class / "s03"]),
                             cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    graded, expected = records_in(out), records_in(uninterrupted)
    assert sorted(graded) == [(student, lab) for student, lab in sorted(expected) if student == "s03"]
    for key in graded:
        assert comparable(graded[key]) == comparable(expected[key]), key


class NotDask(BaseHTTPRequestHandler):
    """What answers on a scheduler's web port (8787) when the grader is given it by mistake."""

    def do_GET(self):
        self.send_error(404)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("listening", [False, True], ids=["nothing-listens", "no-dask-scheduler"])
def test_an_unreachable_scheduler_is_a_clear_error_within_seconds_and_writes_nothing(listening, tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), NotDask) if listening else None
    if server is not None:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"tcp://127.0.0.1:{server.server_address[1] if server else unused_port()}"
    notebook = tmp_path / "some.ipynb"
    notebook.write_text("{}")
    try:
        started = time.monotonic()
        run = subprocess.run(grade_command(notebook, "--out", tmp_path / "out", "--scheduler", address), cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
        seconds = time.monotonic() - started
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
    assert run.returncode != 0
    assert f"cannot reach the Dask scheduler at {address}" in run.stderr
    assert "Traceback" not in run.stderr and "Exception ignored" not in run.stderr, run.stderr
    assert seconds < REFUSED_SECONDS, f"{seconds:.1f} s to give up"
    assert not (tmp_path / "out").exists()


def checkout_worker(**environment):
    """A worker's environment in which it imports this checkout's grader, as the client does,
    from whatever folder it is started in."""
    return {"PYTHONPATH": str(ROOT), **environment}


def empty_notebooks(folder, count, lab=LABS[0].name):
    """`count` students' small files in nbgrader's layout, which the client sends as they are:
    each is graded on a worker, quickly, as not a notebook."""
    for number in range(count):
        (folder / f"s{number}" / lab).mkdir(parents=True)
        (folder / f"s{number}" / lab / f"{lab}.ipynb").write_text("{}")
    return sorted(folder.glob("*/*/*.ipynb"))


def test_a_worker_without_a_course_is_named_once_as_misconfigured_and_nothing_is_left_to_run_again(tmp_path):
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    notebooks = empty_notebooks(tmp_path / "submitted", 3)
    with dask_cluster(tmp_path / "cluster", workers=1,
                      environment=checkout_worker(AUTOGRADER_COURSE=str(nowhere))) as cluster:
        run = subprocess.run(grade_command(*notebooks, "--out", tmp_path / "out", "--scheduler", cluster.address),
                             cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    said = [line for line in run.stderr.splitlines() if "misconfigured" in line]
    assert len(said) == 1, run.stderr
    assert "(worker-0) is misconfigured and cannot grade any submission" in said[0], said[0]
    assert f"{nowhere} is not a course folder" in said[0] and f"$AUTOGRADER_COURSE is {nowhere}" in said[0]
    assert "Restart that worker in the course folder" in said[0]
    assert "no result, run again" not in run.stderr and "Traceback" not in run.stderr, run.stderr


def test_a_task_is_queued_until_its_worker_starts_it_and_timed_from_then(tmp_path):
    from distributed import Client

    submissions = [Submission(path.parent.parent.name, path.stem, path) for path in empty_notebooks(tmp_path / "given", 3)]
    seen = []
    with dask_cluster(tmp_path / "cluster", workers=1, environment=checkout_worker()) as cluster, \
            Client(cluster.address, set_as_default=False) as client:
        failures = grade_on_cluster(client, submissions, Settings(Limits(), "none", warm=False), b"s" * 32,
                                    on_result=lambda submission, result, answers, seconds=None:
                                    seen.append(("done", str(submission), seconds)),
                                    on_queued=lambda submission: seen.append(("queued", str(submission))),
                                    on_running=lambda submission: seen.append(("running", str(submission))))
        wait_for(lambda: sum(event[0] == "running" for event in seen) == len(submissions), "every task's start")
    assert failures == []
    for submission in map(str, submissions):
        events = [event for event in seen if event[1] == submission]
        assert [event[0] for event in events[:2]] == ["queued", "running"], seen
        (done,) = [event for event in events if event[0] == "done"]
        assert isinstance(done[2], float) and done[2] >= 0, done
    # One worker thread, two tasks handed out per thread: the second waits queued while the first
    # runs, whichever of the first's start and the second's hand-out the client hears first.
    state, both = {}, False
    for kind, submission, *_ in seen:
        state[submission] = kind
        both = both or {"queued", "running"} <= set(state.values())
    assert both, seen
