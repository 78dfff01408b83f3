"""One private copy per machine (autograder/isolation/private_root.py) instead of one per grading process.

A copy lies in /dev/shm, a tmpfs, in a folder only root may enter (autograder-copies), named by
a digest of what it holds: every grading process that would make the same copy uses the first
one made. It is made under a temporary name and then renamed, so that no process ever sees half
of one; of two processes that make it at once, the second to rename uses the first one's and
drops its own. Each grading process holds a shared lock on the copy's lock file (<digest>.lock
beside it) for as long as it runs; a copy is removed only under the exclusive lock, so that no
copy a running grader reads goes away. At most KEPT copies stay, but those in use: each grading
process removes the oldest. Where /dev/shm is missing, not a tmpfs, or short of room, `copy` says
so (None) and the grading process makes its own copy, as before. The digest names the Python and
its distributions, not the system's libraries or /etc: after an upgrade of those, remove the folder.
"""
import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SHARED = Path("/dev/shm")
FOLDER = "autograder-copies"
KEPT = 2  # a machine grading with two versions of the grader's Python at once keeps both
BUILDING, REMOVING = ".building-", ".removing-"  # and the PID of the process doing it


def copies():
    return SHARED / FOLDER


def in_memory(folder):
    """True when `folder` is the mount point of a tmpfs."""
    with open("/proc/self/mountinfo") as mounts:
        return any(fields[4] == str(folder) and fields[fields.index("-") + 1] == "tmpfs"
                   for fields in map(str.split, mounts))


def has_room(needed):
    """True when SHARED holds `needed` bytes and still as much free after them."""
    found = os.statvfs(SHARED)
    return found.f_bavail * found.f_frsize >= 2 * needed


def held(lock):
    """Take a shared lock on the file `lock` (made if missing) and keep it until this process ends,
    retrying where a remover unlinked the file between its opening and its locking."""
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_SH)
        try:
            if os.stat(lock).st_ino == os.fstat(fd).st_ino:
                _held.append(fd)
                return
        except FileNotFoundError:
            pass
        os.close(fd)


_held = []  # the lock files of the copies this process uses: closed by the kernel as it ends


def copy(key, needed, make):
    """The folder of the copy named `key`, made by `make(folder)` into an empty folder unless some
    process made it before; None where SHARED cannot hold a copy of `needed()` bytes."""
    if not in_memory(SHARED):
        return None
    copies().mkdir(mode=0o700, exist_ok=True)
    os.chmod(copies(), 0o700)  # made by another root process with another umask
    folder = copies() / key
    held(copies() / f"{key}.lock")
    if not folder.is_dir():
        if not has_room(needed()):
            return None
        building = Path(tempfile.mkdtemp(prefix=f"{BUILDING}{os.getpid()}-", dir=copies()))
        try:
            make(building)
            os.rename(building, folder)
        except (OSError, subprocess.CalledProcessError):  # out of room, or another process renamed first
            shutil.rmtree(building, ignore_errors=True)
            if not folder.is_dir():
                return None
    prune(key)
    return folder


def prune(kept):
    """Remove the oldest copies but `kept` beyond KEPT that no running grader holds, and the folders
    left by processes killed while they made or removed one."""
    for path in copies().iterdir():
        if path.name.startswith((BUILDING, REMOVING)) and not Path("/proc", path.name.split("-")[1]).exists():
            shutil.rmtree(path, ignore_errors=True)
    others = sorted((path for path in copies().iterdir() if path.is_dir() and path.name != kept
                     and not path.name.startswith(".")), key=lambda path: path.stat().st_mtime)
    for path in others[:max(0, len(others) - KEPT + 1)]:
        removed(path)


def removed(folder):
    """Remove the copy `folder` and its lock file, if no process holds its lock (and no other
    process removed it first)."""
    lock = folder.with_name(f"{folder.name}.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        away = folder.with_name(f"{REMOVING}{os.getpid()}-{folder.name}")
        os.rename(folder, away)
        os.unlink(lock)
    except (BlockingIOError, FileNotFoundError):
        return
    finally:
        os.close(fd)
    shutil.rmtree(away, ignore_errors=True)
