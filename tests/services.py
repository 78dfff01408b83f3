"""Real services for the scaling tests, started on 127.0.0.1 and always stopped: a Dask scheduler
with workers, and a PostgreSQL server (unless .ci/run started one). Waits poll for an event with
a generous limit that only guards against a hang; no test depends on how fast the machine is."""
import json
import os
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers import ROOT
from tests.installed import clean_environment

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


def stock_python(folder):
    """The Python of a scheduler installed as Dask's documentation installs one: the test
    environment's libraries (dask and distributed among them) and nothing of this project. A
    virtual environment whose one .pth line adds the libraries' folder, whose own .pth files (the
    editable install of the checkout among them) are then not read."""
    venv = Path(folder) / "stock"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    (Path(purelib) / "libraries.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python


def tls_files(folder, roles=("scheduler", "worker", "client")):
    """A certificate authority of its own in `folder` and, signed by it, a certificate and key for
    each role: {"ca": path, role: (certificate, key)}. Made with the openssl command."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def openssl(*args):
        subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=60)

    files = {"ca": folder / "ca.pem"}
    openssl("req", "-x509", *key, "-keyout", folder / "ca.key", "-out", files["ca"], "-days", "2",
            "-subj", "/CN=test cluster CA", "-addext", "basicConstraints=critical,CA:TRUE")
    for role in roles:
        files[role] = folder / f"{role}.pem", folder / f"{role}.key"
        openssl("req", *key, "-keyout", files[role][1], "-out", folder / f"{role}.csr", "-subj", f"/CN={role}")
        openssl("x509", "-req", "-in", folder / f"{role}.csr", "-CA", files["ca"], "-CAkey", folder / "ca.key",
                "-CAcreateserial", "-out", files[role][0], "-days", "2")
    return files


def tls_flags(files, role):
    """`dask scheduler`'s and `dask worker`'s options (and `grade`'s, for the client) for TLS."""
    certificate, key = files[role]
    return ["--tls-ca-file", str(files["ca"]), "--tls-cert", str(certificate), "--tls-key", str(key)]


@contextmanager
def dask_cluster(folder, workers=2, python=sys.executable, course=ROOT, tls=None, environment=None):
    """A cluster deployed as Dask deploys one, every process of its own on random ports of
    127.0.0.1: a scheduler run from an empty folder by `stock_python`, which has dask and
    distributed but not the grader, and `workers` single-threaded workers run by `python` (one that
    imports the grader as installed) in the course folder `course`, none with PYTHONPATH. With
    `tls` (tls_files), every connection is TLS with those certificates, and nothing else is taken.
    `environment` adds to the workers' own (a misconfigured node's, say).
    Yields .address, .workers (their Popen objects, one process group each), .temporary (each
    worker's TMPDIR, a folder of its own), .security (what a client needs, or None),
    .scheduler_python and .scheduler_folder."""
    from distributed import Client, Security

    encryption = {"DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True"} if tls else {}
    started = []

    def start(program, module, *args, cwd, log, **environment):
        process = subprocess.Popen([str(program), "-m", module, *args], cwd=cwd,
                                   env=clean_environment(**encryption, **environment),
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        started.append(process)
        return process

    scheduler_folder = Path(folder) / "scheduler"
    scheduler_folder.mkdir(parents=True, exist_ok=True)
    scheduler_python = stock_python(folder)
    scheduler_file = Path(folder) / "scheduler.json"
    # Each process's web pages too: they need no login, so only this machine may see them.
    local = ["--host", "127.0.0.1", "--no-dashboard", "--dashboard-address", "127.0.0.1:0"]
    security = Security(tls_ca_file=str(tls["ca"]), tls_client_cert=str(tls["client"][0]),
                        tls_client_key=str(tls["client"][1]), require_encryption=True) if tls else None
    with open(Path(folder) / "cluster.log", "w") as log:
        try:
            scheduler = start(scheduler_python, "distributed.cli.dask_scheduler", *local, "--port", "0",
                              "--scheduler-file", str(scheduler_file),
                              *(["--protocol", "tls", *tls_flags(tls, "scheduler")] if tls else []),
                              cwd=scheduler_folder, log=log)
            wait_for(lambda: scheduler_address(scheduler_file), "the Dask scheduler's start", scheduler)
            address = scheduler_address(scheduler_file)
            temporary = [Path(folder) / f"worker-{number}-tmp" for number in range(workers)]
            for made in temporary:
                made.mkdir()
            processes = [start(python, "distributed.cli.dask_worker", address, *local, "--name", f"worker-{number}",
                               "--nthreads", "1", "--memory-limit", "0",
                               "--local-directory", str(Path(folder) / f"worker-{number}"),
                               *(tls_flags(tls, "worker") if tls else []), cwd=course, log=log,
                               TMPDIR=str(temporary[number]), **(environment or {}))
                         for number in range(workers)]
            with Client(address, security=security, set_as_default=False) as client:
                client.wait_for_workers(workers, timeout=HANG_SECONDS)
            yield SimpleNamespace(address=address, workers=processes, temporary=temporary, security=security,
                                  scheduler_python=scheduler_python, scheduler_folder=scheduler_folder)
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
