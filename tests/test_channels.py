"""No data passes between two workers alive at the same time: the kernel's per-file state
(locks, leases, change notifications) and the keyrings of the user nobody are closed by the seccomp filter (autograder/seccomp.py), on the warm and the cold path.

Each channel is tried the way an attack would use it: one worker sets the state, a second one,
alive at the same time, reads it back. The same code run in two plain processes on the host shows
that each reading would carry the data where nothing refuses it, so the tests can fail."""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.sandbox import WITHOUT_PYTORCH, Limits, Pool, Worker
from autograder.warm import lab_imports

# A shared read-only file every worker sees, and the byte range that carries the "message".
SHARED = json.dumps(str(Path(json.__file__)))
OFFSET, LENGTH = 7331, 4242

WRITE = f"""
import ctypes, fcntl, os
_file = os.open({SHARED}, os.O_RDONLY)
_written = []
for _name, _try in [("lockf", lambda: fcntl.lockf(_file, fcntl.LOCK_SH | fcntl.LOCK_NB, {LENGTH}, {OFFSET})),
                    ("flock", lambda: fcntl.flock(_file, fcntl.LOCK_SH | fcntl.LOCK_NB))]:
    try:
        _try()
        _written.append(_name)
    except OSError:
        pass
"""

READ = f"""
import ctypes, errno, fcntl, os, struct
def read_channels():
    seen = {{}}
    f = os.open({SHARED}, os.O_RDONLY)
    try:
        lock = fcntl.fcntl(f, fcntl.F_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))
        kind, _, start, length, _ = struct.unpack("hhqqi", lock)
        seen["lock range"] = [start, length] if kind != fcntl.F_UNLCK else None
    except OSError as error:
        seen["lock range"] = errno.errorcode[error.errno]
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        seen["flock"] = "free"
    except OSError as error:
        seen["flock"] = errno.errorcode[error.errno]
    libc = ctypes.CDLL(None, use_errno=True)
    seen["inotify"] = "allowed" if libc.inotify_init1(0) >= 0 else errno.errorcode[ctypes.get_errno()]
    keyctl = {{"x86_64": 250, "aarch64": 219}}[os.uname().machine]
    # KEYCTL_GET_KEYRING_ID (0) of the user keyring (-4), shared by every process of one user
    seen["keyring"] = "allowed" if libc.syscall(keyctl, 0, -4, 0) >= 0 else errno.errorcode[ctypes.get_errno()]
    return seen
"""


def run_pair(pool, hidden):
    """Start two workers, let the first write, and return what the second reads while both live."""
    folders = [Path(tempfile.mkdtemp(prefix="channels-")) for _ in range(2)]
    writer = Worker(folders[0], Limits(), True, pool, hidden)
    reader = Worker(folders[1], Limits(), True, pool, hidden)
    try:
        assert "ok" in writer.ask({"op": "run", "source": WRITE}, 60)
        assert "ok" in reader.ask({"op": "run", "source": READ}, 60)
        reply = reader.ask({"op": "probe", "source": "def probe():\n    return str(read_channels())\n",
                            "args": {}}, 60)
        return eval(reply["value"]["value"])  # a dict literal of strings, numbers and None
    finally:
        writer.close()
        reader.close()


@pytest.fixture(scope="module")
def pool():
    launched = Pool.launch(lab_imports)
    assert launched is not None, "the warm path needs root, control groups and bubblewrap"
    yield launched
    launched.close()


def refused(seen):
    return {"lock range": "EPERM", "flock": "EPERM", "inotify": "EPERM", "keyring": "EPERM"} == seen


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
@pytest.mark.parametrize("hidden", [(), WITHOUT_PYTORCH], ids=["with-pytorch", "without-pytorch"])
def test_a_worker_reads_nothing_another_one_set(pool, warm, hidden):
    seen = run_pair(pool if warm else None, hidden)
    assert refused(seen), seen


def test_the_same_channels_carry_data_between_plain_processes(tmp_path):
    """The control: unconfined, the second process reads the first one's lock range exactly."""
    writer = subprocess.Popen([sys.executable, "-c", WRITE + "\nimport sys\nprint(_written, flush=True)\n"
                               "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert "lockf" in writer.stdout.readline()
        read = subprocess.run([sys.executable, "-c", READ + "\nprint(repr(read_channels()))"],
                              capture_output=True, text=True, check=True)
        seen = eval(read.stdout)
        assert seen["lock range"] == [OFFSET, LENGTH]
        assert seen["flock"] == "EAGAIN"
        assert seen["inotify"] == "allowed"
    finally:
        writer.communicate("")
