"""Grade on an existing Dask cluster (`grade --scheduler tcp://HOST:8786`): one task per submission.

The client (the `grade` command) reads each notebook and sends its bytes with the task, so the
grading nodes share no file system with it; they need the same checkout of the course and its
environment (see the README). The client also derives the seed of the submission's hidden
inputs from those bytes and the course secret, and the seed travels with the task: the secret
never leaves the client. A task grades one submission in the node's sandbox, forking the
worker from a zygote that the Dask worker process starts once and keeps, and returns the result.
Only the client writes results, the CSV and the gradebook. The scheduler runs a task again
elsewhere when its worker is lost; a task that still fails leaves its submission without a
result, for the next run to grade.
"""
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

from autograder.batch import safe_grade
from autograder.grade import Options
from autograder.results_store import grader_version, lab_version
from autograder.sandbox import Limits, Pool, Stopper, choose_sandbox, stopping
from autograder.submission import SubmissionError, read_submission
from autograder.secret import submission_seed
from autograder.warm import lab_imports

QUEUED_PER_THREAD = 2  # tasks handed out per worker thread: workers never wait, few notebooks sit in memory
THREADS_SECONDS = 5  # how often the client asks how many worker threads there are now
WAIT_FOR_WORKERS = 120  # seconds a cluster without workers gets before the command gives up
WATCH_SECONDS = 2  # how often a task asks whether it is still wanted


@dataclass(frozen=True)
class Settings:
    """What a node needs to grade as the client was asked to: the limits, and the sandbox mode,
    which each node resolves against what it has."""
    limits: Limits
    sandbox: str  # auto, bwrap or none
    warm: bool


_node_lock = threading.Lock()
_node_options = {}


def node_options(settings):
    """This Dask worker's grading options. Its zygote starts with the first task and lives as
    long as the worker process: it ends by itself when its control socket closes."""
    with _node_lock:
        if settings not in _node_options:
            try:
                sandboxed = choose_sandbox(settings.sandbox)
            except SystemExit as refusal:  # --sandbox bwrap on a node without bubblewrap
                raise RuntimeError(str(refusal)) from None
            pool = Pool.launch(lab_imports()) if settings.warm and sandboxed else None
            _node_options[settings] = Options(settings.limits, sandboxed, settings.warm, pool)
        return _node_options[settings]


def watch(worker, key, stopper, done):
    """Until `done`, stop the grading of task `key` once the scheduler no longer wants it (its
    client cancelled it, or died): Dask cannot stop a task's thread, but the grading's own
    workers can be killed, and then no new one starts."""
    while not done.wait(WATCH_SECONDS):
        task = worker.state.tasks.get(key)
        if task is None or task.state in ("cancelled", "released", "forgotten"):
            print(f"autograder: task {key} is no longer wanted; its grading stopped", file=sys.stderr, flush=True)
            stopper.stop()
            return


def grade_task(filename, data, settings, seed, expected_lab=None):
    """Runs on a Dask worker: (result, answers, versions) for one notebook given as bytes, its
    hidden inputs drawn from `seed`, handed in as `expected_lab` (None: any lab)."""
    from distributed import get_worker

    worker, stopper, done = get_worker(), Stopper(), threading.Event()
    watcher = threading.Thread(target=watch, args=(worker, worker.get_current_task(), stopper, done), daemon=True)
    watcher.start()
    with tempfile.TemporaryDirectory(prefix="submission-") as folder, stopping(stopper):
        path = Path(folder) / filename
        path.write_bytes(data)
        try:
            result, answers = safe_grade(path, replace(node_options(settings), seed=seed), expected_lab)
        finally:
            done.set()
    versions = {"grader": grader_version(), "lab": lab_version(result["extra_data"]["lab"]),
                "worker": worker.address}
    return result, answers, versions


def connect(address):
    """A client of the scheduler at `address` with a worker to talk to, or a clear refusal."""
    from distributed import Client

    try:
        client = Client(address, set_as_default=False)
    except (OSError, ValueError, TypeError) as error:
        raise SystemExit(f"autograder: cannot reach the Dask scheduler at {address}: {error}") from None
    try:
        client.wait_for_workers(1, timeout=WAIT_FOR_WORKERS)
    except TimeoutError:
        client.close()
        raise SystemExit(f"autograder: the Dask scheduler at {address} has no workers after {WAIT_FOR_WORKERS} s; "
                         f"start them on the grading nodes with `dask worker {address}` (see the README)") from None
    return client


def readable(path):
    """The notebook's bytes if they are worth sending to a node; else None."""
    try:
        return read_submission(path)
    except SubmissionError:
        return None


def grade_on_cluster(client, submissions, settings, secret, on_result, on_start=lambda submission: None):
    """Grade roster.Submissions on the cluster with the course `secret`; call on_start(submission)
    as each is sent and on_result(submission, result, answers) here as each one finishes. Returns
    the messages of the submissions left without a result."""
    from distributed import as_completed

    queue, sent, running, failures = list(reversed(submissions)), {}, as_completed(loop=client.loop), []
    threads = {"count": 1, "asked": -THREADS_SECONDS}

    def hand_out():
        if time.monotonic() - threads["asked"] >= THREADS_SECONDS:  # workers come and go
            threads.update(count=max(sum(client.nthreads().values()), 1), asked=time.monotonic())
        while queue and len(sent) < QUEUED_PER_THREAD * threads["count"]:
            submission = queue.pop()
            data = readable(submission.path)
            if data is None:  # unreadable or too large: the client's reader gives that result at once
                result, answers = safe_grade(submission.path, Options(secret=secret), submission.expected)
                on_result(submission, result, answers)
                continue
            future = client.submit(grade_task, submission.path.name, data, settings, submission_seed(secret, data),
                                   submission.expected, key=f"grade-{uuid.uuid4().hex}", pure=False)
            sent[future] = submission
            running.add(future)
            on_start(submission)

    try:
        hand_out()
        for future in running:
            submission = sent.pop(future)
            try:
                result, answers, versions = future.result()
            except Exception as error:  # e.g. KilledWorker: its workers kept dying; no result is written
                failures.append(f"{submission}: {type(error).__name__}: {error}")
            else:
                lab = result["extra_data"]["lab"]
                if (versions["grader"], versions["lab"]) != (grader_version(), lab_version(lab)):
                    raise SystemExit(f"autograder: the Dask worker {versions['worker']} grades with another version "
                                     f"of the course than this client (grader {versions['grader']} against "
                                     f"{grader_version()}, lab {lab} {versions['lab']} against {lab_version(lab)}); "
                                     "install the same checkout on every grading node and run again")
                result["extra_data"]["path"] = str(submission.path)
                on_result(submission, result, answers)
            hand_out()
    finally:  # interrupted or refused: what is still queued on the cluster is of no use to anyone
        if sent:
            client.cancel(list(sent), force=True)
    return failures
