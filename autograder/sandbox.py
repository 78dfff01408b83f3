"""Start the worker for one submission, inside bubblewrap where available, and talk to it.

The worker sees a fresh folder (the submission's data, nothing else of the course), the Python
installation, and the single file worker.py. No network, its own process tree, a scrubbed
environment, and resource limits. Killing the worker kills everything it started.
"""
import json
import os
import resource
import secrets
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from autograder.cgroups import ControlGroup, available
from autograder.errors import GradingProblem

WORKER = Path(__file__).resolve().with_name("worker.py")
MOUNTED_WORKER = "/grader/worker.py"
SANDBOX_HOME = "/submission"
MAX_REPLY = 256 << 20
# Needed by some OpenBLAS builds to compute correctly on this hardware (see the env notes).
PASSED_THROUGH = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


class WorkerFailure(GradingProblem):
    """The worker hung, died or broke the protocol; `kind` says which."""


@dataclass(frozen=True)
class Limits:
    cell_seconds: float = 60.0
    submission_seconds: float = 600.0
    memory_bytes: int = 6 << 30
    file_bytes: int = 64 << 20
    processes: int = 64


@cache
def cgroups_available():
    return available()


def bwrap_available():
    """True when bubblewrap is installed and can create namespaces here."""
    if shutil.which("bwrap") is None:
        return False
    probe = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


def choose_sandbox(mode):
    """True to sandbox, for --sandbox auto|bwrap|none; refuses bwrap where it cannot run."""
    if mode == "none":
        return False
    available = bwrap_available()
    if mode == "bwrap" and not available:
        raise SystemExit("autograder: --sandbox bwrap, but bubblewrap is not installed or cannot run here")
    if not available:
        print("autograder: bubblewrap is not available: grading WITHOUT a sandbox, so submissions can read "
              "and write this machine's files", file=sys.stderr)
    return available


def bwrap_command(folder, python_args):
    """bubblewrap arguments that expose only the system, Python, worker.py and `folder`."""
    # The private /tmp comes first: later mounts may lie below it (a checkout in /tmp).
    mounts = ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for path in ("/usr", "/bin", "/lib", "/lib64", "/sbin", "/etc", sys.base_prefix, sys.prefix):
        if Path(path).exists():
            mounts += ["--ro-bind", path, path]
    mounts += ["--ro-bind", str(WORKER), MOUNTED_WORKER]
    return ["bwrap", "--unshare-all", "--die-with-parent", "--new-session",
            "--uid", "65534", "--gid", "65534", "--hostname", "grader", *mounts,
            "--bind", str(folder), SANDBOX_HOME, "--chdir", SANDBOX_HOME,
            "--", sys.executable, "-I", MOUNTED_WORKER, *python_args]


def clean_environment(home):
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "MPLBACKEND": "Agg",
           "MPLCONFIGDIR": "/tmp/matplotlib", "IPYTHONDIR": "/tmp/ipython",
           "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    env.update({key: os.environ[key] for key in PASSED_THROUGH if key in os.environ})
    return env


class Worker:
    """One worker process; every request has a deadline."""

    def __init__(self, folder, limits, sandboxed):
        self.limits = limits
        self.group = ControlGroup(limits.processes, limits.memory_bytes) if cgroups_available() else None
        to_worker, self._requests = os.pipe()
        self._replies, from_worker = os.pipe()
        python_args = [str(to_worker), str(from_worker)]
        if sandboxed:
            command, home = bwrap_command(folder, python_args), SANDBOX_HOME
        else:
            command, home = [sys.executable, "-I", str(WORKER), *python_args], str(folder)
        self.process = subprocess.Popen(
            command, cwd=folder, env=clean_environment(home), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(to_worker, from_worker),
            start_new_session=True, preexec_fn=self._apply_limits)
        os.close(to_worker)
        os.close(from_worker)
        self._buffer, self._seq = b"", "0"
        self.ask(None, timeout=120)  # the ready message, after the worker's imports

    def _apply_limits(self):
        if self.group is not None:
            self.group.join()
        limits = self.limits
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        cpu = int(limits.submission_seconds) + 5
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails instead of killing

    def ask(self, request, timeout):
        """Send `request` (None: only wait for the ready message) and return its reply, or raise
        WorkerFailure. Lines on the reply pipe that are not this request's reply (the
        submission can write there too) are skipped."""
        # A fresh random tag per request: a reply the submission forges blindly never matches.
        self._seq = secrets.token_hex(8) if request is not None else "0"
        if request is not None:
            try:
                data = (json.dumps({**request, "seq": self._seq}) + "\n").encode()
                while data:
                    ready = select.select([], [self._requests], [], timeout)[1]
                    if not ready:
                        raise WorkerFailure("timeout", "the worker stopped reading requests")
                    data = data[os.write(self._requests, data[:1 << 16]):]
            except BrokenPipeError:
                raise self._died() from None
        deadline = time.monotonic() + timeout
        while True:
            reply = self._next_line(deadline, timeout)
            if isinstance(reply, dict) and reply.get("seq") == self._seq:
                return reply

    def _next_line(self, deadline, timeout):
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._replies], [], [], left)[0]:
                raise WorkerFailure("timeout", f"did not finish within the time limit of {timeout:.3g} s")
            chunk = os.read(self._replies, 1 << 20)
            if not chunk:
                raise self._died()
            self._buffer += chunk
            if len(self._buffer) > MAX_REPLY:
                raise WorkerFailure("protocol", "too much was written to the grader's reply pipe")
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            return None

    def _died(self):
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        # bubblewrap reports a child killed by signal N as exit status 128 + N.
        number = -code if code is not None and code < 0 else code - 128 if code and code > 128 else None
        if number in set(signal.Signals):
            how = f"was killed by signal {signal.Signals(number).name}"
        else:
            how = f"exited with status {code}"
        return WorkerFailure("died", f"the Python process running the submission {how}")

    def close(self):
        """Kill the worker and everything it started; safe to call twice."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.group is not None:
            self.group.remove()  # also the processes that left the worker's session
            self.group = None
        self.process.wait()
        for fd in (self._requests, self._replies):
            try:
                os.close(fd)
            except OSError:
                pass
