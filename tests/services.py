"""Real services for the scaling tests, started on 127.0.0.1 and always stopped: a Dask scheduler
with workers, and a PostgreSQL server (unless .ci/run started one). Waits poll for an event with
a generous limit that only guards against a hang; no test depends on how fast the machine is."""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers import ROOT

POSTGRES_URL = "AUTOGRADER_TEST_POSTGRES"  # set by .ci/run to the server it started
HANG_SECONDS = 600


def wait_for(condition, what, process=None, seconds=HANG_SECONDS):
    """Poll `condition` until it holds; fail if `process` ends first or it never does."""
    deadline = time.monotonic() + seconds
    while not condition():
        if process is not None and process.poll() is not None:
            pytest.fail(f"the process ended (status {process.returncode}) before {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {seconds} s")
        time.sleep(0.1)


def stop(process):
    """End a process started with start_new_session, and everything in its process group."""
    for how, patience in ((signal.SIGTERM, 15), (signal.SIGKILL, 15)):
        try:
            os.killpg(process.pid, how)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=patience)
            break
        except subprocess.TimeoutExpired:
            continue


def scheduler_address(path):
    try:
        return json.loads(path.read_text())["address"]
    except (OSError, ValueError, KeyError):  # not written yet, or half written
        return None


@contextmanager
def dask_cluster(folder, workers=2):
    """A scheduler and `workers` single-threaded workers, each a process of its own, on random
    ports of 127.0.0.1. Yields .address and .workers (their Popen objects, one process group each)."""
    from distributed import Client

    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = []

    def start(module, *args, log):
        process = subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT, env=environment,
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        started.append(process)
        return process

    folder.mkdir(parents=True, exist_ok=True)
    scheduler_file = folder / "scheduler.json"
    with open(folder / "cluster.log", "w") as log:
        try:
            scheduler = start("distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                              "--no-dashboard", "--scheduler-file", str(scheduler_file), log=log)
            wait_for(lambda: scheduler_address(scheduler_file), "the Dask scheduler's start", scheduler)
            address = scheduler_address(scheduler_file)
            processes = [start("distributed.cli.dask_worker", address, "--name", f"worker-{number}",
                               "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard", "--memory-limit", "0",
                               "--local-directory", str(folder / f"worker-{number}"), log=log)
                         for number in range(workers)]
            with Client(address, set_as_default=False) as client:
                client.wait_for_workers(workers, timeout=HANG_SECONDS)
            yield SimpleNamespace(address=address, workers=processes)
        finally:
            for process in reversed(started):
                stop(process)


@contextmanager
def postgres_server():
    """The URL of a PostgreSQL server: the one .ci/run started, or one of our own."""
    if os.environ.get(POSTGRES_URL):
        yield os.environ[POSTGRES_URL]
        return
    folder = tempfile.mkdtemp(prefix="autograder-postgres-")  # under /tmp, where the postgres user reaches
    script = ["bash", str(ROOT / "tools" / "postgres.sh")]
    try:
        started = subprocess.run([*script, "start", folder], capture_output=True, text=True, timeout=300)
        if started.returncode != 0:
            pytest.fail(f"could not start PostgreSQL for the gradebook tests: {started.stderr.strip()}\n"
                        "Set-up: `bash tools/postgres.sh install` (Debian's postgresql), or set "
                        f"{POSTGRES_URL} to a server's URL (.ci/run does both)")
        yield started.stdout.strip()
    finally:
        subprocess.run([*script, "stop", folder], capture_output=True, timeout=300)


@contextmanager
def postgres_database(server_url):
    """A new, empty database on the server, dropped afterwards; yields its URL."""
    import psycopg
    from sqlalchemy.engine import make_url

    name = f"gradebook_{os.getpid()}_{time.monotonic_ns()}"
    server = make_url(server_url)
    admin = server.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield server.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def unused_port():
    """A port of 127.0.0.1 with nothing behind it (for the tests of an unreachable service)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def json_count(folder):
    """How many records the results folder holds (<student>/<lab>.json)."""
    return len(list(Path(folder).glob("*/*.json")))
