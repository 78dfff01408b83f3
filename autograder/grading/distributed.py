"""Grade on an existing Dask cluster (`grade --scheduler tcp://HOST:8786`): one task per submission.

The client (the `grade` command) reads each notebook and sends its bytes with the task, so the
grading nodes share no file system with it; they need the grader installed and the course folder
(see docs/operators.md). The client also derives the seed of the submission's hidden inputs from those
bytes and the course secret, and the seed travels with the task: the secret never leaves the
client. A task grades one submission in the node's sandbox, forking the worker from a zygote that
the Dask worker process starts once and keeps, and returns the result as plain data, with how
long it ran there (not how long it waited in the queue). As it starts, the task tells the client
(a Dask event), whose progress then lists it as running rather than queued. Only the client writes
results, the CSV and the gradebook. The scheduler runs a task again
elsewhere when its worker is lost; a task that still fails leaves its submission without a
result, for the next run to grade. A node that cannot grade at all (no course folder where its
worker looked, or no bubblewrap for `--sandbox bwrap`) stops the run with one message naming it.

The scheduler unpickles every task it is sent, and a scheduler deployed as Dask's documentation
deploys one has dask and distributed only. So what it unpickles names nothing of ours: each task
is `pickle.loads` applied to bytes (see `Call`), and only the worker, running the task, unpickles
those bytes, which is what imports the grader and grades.
"""
import asyncio
import os
import pickle
import signal
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from autograder.grading.batch import safe_grade
from autograder.grading.grade import Options
from autograder.grading.secret import submission_seed
from autograder.grading.submission import SubmissionError, read_submission
from autograder.grading.versions import grader_version, lab_version
from autograder.isolation.sandbox import Limits, Pool, Stopper, choose_sandbox, process_scratch, stopping
from autograder.isolation.warm import lab_imports
from course.folder import ENVIRONMENT, course_root, is_course, use_course

CONNECT_SECONDS = 5  # a scheduler that has not answered by then will not: say so instead of Dask's 30 s
STARTED = "autograder-started"  # the topic of the event a task logs as it starts running on its worker
QUEUED_PER_THREAD = 2  # tasks handed out per worker thread: workers never wait, few notebooks sit in memory
THREADS_SECONDS = 5  # how often the client asks how many worker threads there are now
WAIT_FOR_WORKERS = 120  # seconds a cluster without workers gets before the command gives up
WATCH_SECONDS = 0.5  # how often a task asks whether it is still wanted: a look at a dict, so often is cheap


@dataclass(frozen=True)
class Settings:
    """What a node needs to grade as the client was asked to: the limits, and the sandbox mode,
    which each node resolves against what it has."""
    limits: Limits
    sandbox: str  # auto, bwrap, user or none
    warm: bool


class NodeRefused(RuntimeError):
    """A Dask worker that cannot grade anything as it is set up: no result it could give would
    differ, so the client stops at the first and names the worker instead of each submission."""


class Call:
    """`function(*args)`, pickled so that unpickling it makes the call: the client sends a task of
    `pickle.loads` on these bytes, and the worker that runs it grades."""

    def __init__(self, function, *args):
        self.function, self.args = function, args

    def __reduce__(self):
        return self.function, self.args


_node_lock = threading.Lock()
_node_options = {}


def node_options(settings, worker):
    """This Dask worker's grading options. Its zygote starts with the first task and lives as
    long as the worker process: it ends by itself when its control socket closes."""
    with _node_lock:
        if settings not in _node_options:
            tempfile.tempdir = node_scratch()
            folder = course_root()  # $AUTOGRADER_COURSE, or the worker's current folder, as for the command
            if not is_course(folder):
                raise NodeRefused(misconfigured(worker, f"{folder} is not a course folder: it holds no lab (no "
                                                        f"source/<lab>/<lab>.py); {where_it_looked()}",
                                                COURSE_REMEDY))
            use_course(folder)
            try:
                sandboxed = choose_sandbox(settings.sandbox)
            except SystemExit as refusal:  # --sandbox bwrap on a node without bubblewrap, say
                raise NodeRefused(misconfigured(worker, refusal, "Install what it lacks on that node, or choose "
                                                                 "another --sandbox")) from None
            pool = Pool.launch(lab_imports) if settings.warm and sandboxed else None
            _node_options[settings] = Options(settings.limits, sandboxed, settings.warm, pool)
        return _node_options[settings]


COURSE_REMEDY = (f"Restart that worker in the course folder (`make dask-worker` in the checkout does), or with "
                 f"${ENVIRONMENT} set to the course folder")


def where_it_looked():
    given = os.environ.get(ENVIRONMENT)
    return f"${ENVIRONMENT} is {given}" if given else f"${ENVIRONMENT} is not set; the current folder is {Path.cwd()}"


def misconfigured(worker, refusal, remedy):
    """What the operator reads when the Dask `worker` cannot grade: which worker, what is wrong
    there, and what to do about it."""
    name = f"{worker.address} ({worker.name})" if str(worker.name) != worker.address else worker.address
    return (f"the Dask worker {name} is misconfigured and cannot grade any submission: "
            f"{str(refusal).removeprefix('autograder: ')}. {remedy}; then run the same command again, which "
            "keeps the results written so far")


def watch(worker, key, stopper, done):
    """Until `done`, stop the grading of task `key` once the scheduler no longer wants it (its
    client cancelled it, or died): Dask cannot stop a task's thread, but the grading's own
    workers can be killed, and then no new one starts. The stop is repeated until the grading
    ends, since a worker already being started when it came joins the stopper only afterwards."""
    while not done.wait(WATCH_SECONDS):
        task = worker.state.tasks.get(key)
        if task is None or task.state in ("cancelled", "released", "forgotten"):
            if not stopper.stopped.is_set():
                print(f"autograder: task {key} is no longer wanted; its grading stopped", file=sys.stderr, flush=True)
            stopper.stop()


@cache
def node_scratch():
    """Where this Dask worker's gradings make their folders (tempfile's, set by node_options): a
    folder removed when the worker's process ends, however it ends (killed mid-task included). Its
    own mode lets the user nobody reach the folders made for it inside, never list them."""
    folder = process_scratch()
    os.chmod(folder, 0o711)
    return folder


def grade_task(filename, data, settings, seed, expected_lab=None):
    """Runs on a Dask worker: (result, answers, versions, seconds), plain data, for one notebook
    given as bytes, its hidden inputs drawn from `seed`, handed in as `expected_lab` (None: any
    lab); `seconds` is how long the task ran here."""
    from distributed import get_worker

    began, worker = time.monotonic(), get_worker()
    key = worker.get_current_task()
    worker.log_event(STARTED, {"key": key})
    options = replace(node_options(settings, worker), seed=seed)  # first: it sets where the folders below go
    stopper, done = Stopper(), threading.Event()
    watcher = threading.Thread(target=watch, args=(worker, key, stopper, done), daemon=True)
    watcher.start()
    with tempfile.TemporaryDirectory(prefix="submission-") as folder, stopping(stopper):
        path = Path(folder) / filename
        path.write_bytes(data)
        try:
            result, answers = safe_grade(path, options, expected_lab)
        finally:
            done.set()
    versions = {"grader": grader_version(), "lab": lab_version(result["extra_data"]["lab"]),
                "worker": worker.address}
    return result, answers, versions, time.monotonic() - began


def connect(address):
    """A client of the scheduler at `address` with a worker to talk to, or a clear refusal within
    CONNECT_SECONDS. TLS comes from Dask's settings (distributed.comm.tls.*, which `grade`'s --tls-*
    options set)."""
    from distributed import Client, Security
    from distributed.comm import connect as reach

    security = Security()
    if address.startswith("tls://") and not (security.tls_ca_file and security.tls_client_cert):
        raise SystemExit(f"autograder: the Dask scheduler at {address} takes TLS clients only: give this one the "
                         "cluster's CA and its own certificate with --tls-ca-file, --tls-cert and --tls-key")

    async def answered():  # without a Client first: one whose start fails holds up the exit by twice its timeout
        comm = await reach(address, timeout=CONNECT_SECONDS, **security.get_connection_args("client"))
        await comm.close()

    try:
        # Dask waits for the handshake's answer without a limit, and what is not a scheduler may never give one.
        asyncio.run(asyncio.wait_for(answered(), CONNECT_SECONDS))
        client = Client(address, security=security, timeout=CONNECT_SECONDS, set_as_default=False)
    except Exception as error:  # refused, silent, TLS refused, or no Dask scheduler at all (e.g. its web port)
        raise SystemExit(f"autograder: cannot reach the Dask scheduler at {address}: {type(error).__name__}: "
                         f"{str(error) or f'no answer within {CONNECT_SECONDS} s'}") from None
    try:
        client.wait_for_workers(1, timeout=WAIT_FOR_WORKERS)
    except TimeoutError:
        client.close()
        raise SystemExit(f"autograder: the Dask scheduler at {address} has no workers after {WAIT_FOR_WORKERS} s; "
                         f"start them on the grading nodes with `dask worker {address}` (see docs/operators.md)") from None
    return client


def readable(path):
    """The notebook's bytes if they are worth sending to a node; else None."""
    try:
        return read_submission(path)
    except SubmissionError:
        return None


def grade_on_cluster(client, submissions, settings, secret, on_result, on_queued=lambda submission: None,
                     on_running=lambda submission: None):
    """Grade roster.Submissions on the cluster with the course `secret`; call on_queued(submission)
    as each is sent, on_running(submission) (from another thread) once a worker starts it, and
    on_result(submission, result, answers, seconds) here as each one finishes, `seconds` being
    how long it ran on its worker. Returns the messages of the submissions left without a result."""
    from distributed import as_completed

    queue, sent, running, failures = list(reversed(submissions)), {}, as_completed(loop=client.loop), []
    by_key = {}  # a sent task's key -> its submission, for the event its worker logs as it starts
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
            call = Call(grade_task, submission.path.name, data, settings, submission_seed(secret, data),
                        submission.expected)
            key = f"grade-{uuid.uuid4().hex}"
            by_key[key] = submission
            on_queued(submission)  # before it is sent, so that its start can never be told first
            future = client.submit(pickle.loads, pickle.dumps(call), key=key, pure=False)
            sent[future] = submission
            running.add(future)

    def started(event):  # (the scheduler's time, the worker's message), in the client's own thread
        submission = by_key.get(event[1]["key"])
        if submission is not None:
            on_running(submission)

    def interrupt(number, frame):  # a service manager's stop: as Ctrl-C, so the tasks are cancelled
        raise KeyboardInterrupt

    terminate = signal.signal(signal.SIGTERM, interrupt)
    client.subscribe_topic(STARTED, started)
    try:
        hand_out()
        for future in running:
            submission = sent.pop(future)
            by_key.pop(future.key, None)
            try:
                result, answers, versions, seconds = future.result()
            except NodeRefused as refusal:
                raise SystemExit(f"autograder: {refusal}") from None
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
                on_result(submission, result, answers, seconds)
            hand_out()
    finally:  # interrupted or refused: what is still queued on the cluster is of no use to anyone
        signal.signal(signal.SIGTERM, terminate)
        client.unsubscribe_topic(STARTED)
        if sent:
            client.cancel(list(sent), force=True)
    return failures
