"""Start the worker for one submission, inside bubblewrap where available, and talk to it.

The worker sees a fresh folder of capped size (the submission's data, nothing else of the
course), the Python installation, and the single file worker.py; a worker graded without PyTorch
sees them in a private copy held in memory (autograder/isolation/private_root.py). No network, its own
process tree, a /proc without the machine's counters, a scrubbed environment, and resource
limits. Killing the worker kills everything it started.
"""
import collections
import enum
import json
import multiprocessing.util
import os
import re
import resource
import secrets
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from autograder.isolation import seccomp
from autograder.isolation.cgroups import ControlGroup, available
from autograder.isolation.errors import GraderError, GradingProblem
from autograder.isolation.private_root import enter, private_root
from autograder.isolation.warm import lab_imports
from autograder.isolation.worker import MAX_REPLY, READ_BYTES, REPLY_NESTING, frame_sizes, with_frames
from autograder.isolation.zygote import proc_covered, write_proc_covers
from course.folder import PACKAGES

WORKER = Path(__file__).resolve().with_name("worker.py")
ZYGOTE = Path(__file__).resolve().with_name("zygote.py")
UNAVAILABLE = Path(__file__).resolve().with_name("unavailable")  # mounted over hidden packages
GRADER_PACKAGES = ("autograder", "course", "authoring", "build_student")  # never readable by a submission
MOUNTED_WORKER = "/grader/worker.py"
MATPLOTLIB_FOLDER = "/tmp/matplotlib"
# How an unprivileged worker starts: undumpable before worker.py runs, so that no other process of
# its user (the reference worker of a re-grade, say) can read its memory through /proc or ptrace.
UNDUMPABLE = ("import ctypes, runpy, sys\n"
              "if ctypes.CDLL(None).prctl(4, 0):  # PR_SET_DUMPABLE\n"
              "    sys.exit('the worker could not be made undumpable')\n"
              "del sys.argv[0]\n"
              "runpy.run_path(sys.argv[0], run_name='__main__')\n")
SANDBOX_HOME = "/submission"
NOBODY = 65534
MAX_ANSWER = 1 << 16  # a line from a zygote: a PID or an error message
# The most JSON values a line of the reply pipe may hold (json_values): the largest of the labs'
# solved notebooks' replies holds 40,036 (scalar_engine's graph of 10,001 nodes). Each value the
# parser makes costs the grader at most about 100 bytes, so a line costs at most its MAX_REPLY
# bytes twice over (the line and its strings) and 40 MB of objects while it is parsed, where a
# line of `[[],[],...]` under MAX_REPLY alone made 490 MiB of empty lists.
LINE_VALUES = 400_000
REMOVAL_SECONDS = 300
# Time limits count the CPU time of the submission's processes, so that a busy machine does not
# cost a student points; code that waits instead of computing meets this wall-clock backstop. The
# backstop counts only the time in which no thread of the submission ran or waited to run: a
# submission that computes on a starved machine meets its CPU limit, however long that takes, and
# is told the same thing as on an idle one.
WALL_FACTOR = 5
POLL_SECONDS = 0.2
ACTIVE_AFTER = 1.0  # the wall seconds a request runs before its threads' counters are read (Worker._over)
# Needed by some OpenBLAS builds to compute correctly on this hardware (see the env notes).
PASSED_THROUGH = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
# The top-level packages of the torch distribution: what a worker graded without PyTorch lacks.
WITHOUT_PYTORCH = ("functorch", "torch", "torchgen")
STUDENT_REQUIREMENTS = PACKAGES / "requirements-student.txt"


class WorkerFailure(GradingProblem):
    """The worker hung, died or broke the protocol; `kind` says which."""


class Lines:
    """The lines of a stream, each held to at most `cap` bytes while it arrives: a longer one is
    dropped as it streams in, never kept whole, and counts as a line that says nothing (None).

    Where the stream is `framed` (a worker's replies: worker.Channel), a line whose head announces
    frames is followed by that many bytes, which belong to it and are no line: they are taken
    with it, within the same cap, or stepped over unkept where line and frames together would pass
    it. The head is whatever wrote the line claims, so a forged one can make the reader step over
    what follows it, an honest reply included: that costs the submission that forged it the wait
    for a reply, as any garbage it writes before a reply does."""

    def __init__(self, cap, framed=False):
        self.cap, self.framed, self.partial, self.dropping = cap, framed, bytearray(), False
        self.ready = collections.deque()
        self.awaiting = None  # a framed line whose frames are arriving (None: dropped or none), its frames so far
        self.frames_left = 0  # bytes of frames still to come

    def feed(self, chunk):
        while chunk:
            if self.frames_left:
                taken, chunk = chunk[:self.frames_left], chunk[self.frames_left:]
                self.frames_left -= len(taken)
                if self.awaiting is not None:
                    self.awaiting[1].extend(taken)
                if not self.frames_left:
                    self.ready.append((None, None) if self.awaiting is None else
                                      (self.awaiting[0], bytes(self.awaiting[1])))
                    self.awaiting = None
                continue
            end = chunk.find(b"\n")
            piece, chunk = (chunk, b"") if end < 0 else (chunk[:end], chunk[end + 1:])
            if not self.dropping:
                self.partial += piece
                if len(self.partial) > self.cap:
                    self.partial, self.dropping = bytearray(), True
            if end >= 0:
                self._ended(None if self.dropping else bytes(self.partial))
                self.partial, self.dropping = bytearray(), False

    def _ended(self, line):
        sizes = frame_sizes(line) if self.framed and line is not None else None
        if not sizes or not sum(sizes):
            self.ready.append((line, None if sizes is None else b""))
            return
        self.frames_left = sum(sizes)
        self.awaiting = (line, bytearray()) if len(line) + self.frames_left <= self.cap else None

    def next(self):
        """The oldest whole line (None for one that was too long) and its frames' bytes (None for a
        line without frames: every line of a stream that is not `framed`); call only when `ready`."""
        return self.ready.popleft()


def json_values(line):
    """An upper bound on the JSON values in `line` (bytes), counted without parsing it: each
    but the first follows a comma or opens a container."""
    return line.count(b",") + line.count(b"[") + line.count(b"{") + 1


def parse_reply(line, frames=None):
    """A line of the reply pipe as JSON (a framed line's message, its arrays' data its `frames`:
    worker.with_frames), or None where it is no reply: not JSON, holding more values than
    LINE_VALUES, nested deeper than an honest reply (the parser's own recursion is caught, never
    let through), or framed otherwise than Channel.send frames. The count comes first, so that what
    the parser builds of a hostile line stays small (see LINE_VALUES)."""
    if line is None or json_values(line) > LINE_VALUES:
        return None
    try:
        value = json.loads(line) if frames is None else with_frames(line, frames)
    except (ValueError, RecursionError, KeyError):
        return None
    return value if nesting_within(value, REPLY_NESTING) else None


def nesting_within(value, limit):
    """True when no list or dict in `value` lies more than `limit` deep. Walked without
    recursion, holding one iterator per level, so a wide reply costs no memory either."""
    todo = [iter((value,))]
    while todo:
        for item in todo[-1]:
            if isinstance(item, (list, dict)):
                if len(todo) > limit:
                    return False
                todo.append(iter(item.values() if isinstance(item, dict) else item))
                break
        else:
            todo.pop()
    return True


def at_exit(function, *args):
    """Call `function(*args)` when this process ends, also where it is a multiprocessing child (a
    Dask nanny's worker): such a child ends with os._exit, which skips atexit's handlers but runs
    multiprocessing's finalizers, which atexit runs in every other process."""
    multiprocessing.util.Finalize(None, function, args, exitpriority=10)


def process_scratch():
    """A temporary folder of this process's own, removed when it exits, however it ends."""
    folder = tempfile.mkdtemp(prefix="grader-")
    at_exit(remove_tree, folder)
    removed_when_gone(folder)
    return folder


# Waits for the end of its standard input, then unmounts what is mounted below the folder $0 (a
# private copy's tmpfs: autograder/isolation/private_root.py), the deepest first, and removes the folder.
REAPER = """cat >/dev/null
awk -v below="$0/" 'index($5, below) == 1 {print $5}' /proc/self/mountinfo | sort -r |
    while read -r point; do umount -l "$point"; done
exec rm -rf -- "$0"
"""


def removed_when_gone(folder):
    """Have `folder` removed once this process has ended, even by a signal no handler sees (a Dask
    nanny's worker dies of the SIGTERM sent to its group; SIGKILL): a small process of its own
    session waits for the end of a pipe that only this process holds, then removes it, with
    whatever this process mounted in it."""
    read, write = os.pipe()  # not inherited: no worker or zygote this process starts holds `write`
    subprocess.Popen(["sh", "-c", REAPER, folder], stdin=read,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    os.close(read)
    _held_until_exit.append(write)


_held_until_exit = []  # write ends of removed_when_gone's pipes: closed by the kernel as the process ends


def remove_tree(path):
    """Remove `path` however deep and odd the tree a submission left in it: `rm` walks it without
    recursion (shutil.rmtree overflows Python's stack on a few thousand levels) and copes with
    paths longer than PATH_MAX; folders made unreadable are opened up and tried again. Gives up
    silently after REMOVAL_SECONDS, so cleaning up never costs a result."""
    for command in (["rm", "-rf", "--", str(path)], ["chmod", "-R", "u+rwx", "--", str(path)],
                    ["rm", "-rf", "--", str(path)]):
        if not os.path.lexists(path):
            return
        try:
            subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=REMOVAL_SECONDS, check=False)
        except subprocess.TimeoutExpired:
            return


@dataclass(frozen=True)
class Limits:
    cell_seconds: float = 60.0
    submission_seconds: float = 600.0
    memory_bytes: int = 6 << 30
    file_bytes: int = 64 << 20
    processes: int = 64
    disk_bytes: int = 512 << 20  # each of /submission and /tmp, held in memory (tmpfs)
    # What a submission's workers may write on the grader's pipes in all: grading a solved notebook
    # reads 17.3 MB at most (pt03_autodiff); the parsing's CPU time counts against the time limit too.
    reply_bytes: int = 1 << 30


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


class Protection(enum.Enum):
    """What keeps a submission's code from the grader's files, by its --sandbox mode. It is true for
    the sandbox alone, as the `sandboxed` flag it stands in for was."""
    SANDBOX = "bwrap"
    USER = "user"  # no sandbox, but the worker runs as NOBODY: it reads what every user may read
    NONE = "none"

    def __bool__(self):
        return self is Protection.SANDBOX

    def __str__(self):
        return {"bwrap": "bubblewrap sandbox", "user": "unprivileged user without a sandbox",
                "none": "none"}[self.value]


@cache
def unprivileged_available():
    """True when this process is root and the user nobody can start this Python with the libraries
    a worker imports (it cannot where they lie in a folder only root may enter, such as /root)."""
    if os.geteuid() != 0:
        return False
    probe = subprocess.run([sys.executable, "-I", "-c", "import numpy, IPython"], cwd="/", env=clean_environment("/"),
                           user=NOBODY, group=NOBODY, extra_groups=[], capture_output=True, timeout=120)
    return probe.returncode == 0


def choose_sandbox(mode):
    """The Protection for --sandbox auto|bwrap|user|none: auto takes bubblewrap where it runs, else
    the unprivileged user where it can, else none; bwrap and user refuse to grade without theirs."""
    if mode == "none":
        return Protection.NONE
    if mode != "user" and bwrap_available():
        return Protection.SANDBOX
    if mode == "bwrap":
        raise SystemExit("autograder: --sandbox bwrap, but bubblewrap is not installed or cannot run here")
    if unprivileged_available():
        if mode == "auto":
            print("autograder: bubblewrap is not available: grading WITHOUT a sandbox, as the user nobody, so "
                  "submissions can read what every user of this machine may read", file=sys.stderr)
        return Protection.USER
    if mode == "user":
        raise SystemExit("autograder: --sandbox user needs root, and a Python that the user nobody can start")
    print("autograder: bubblewrap is not available: grading WITHOUT a sandbox, so submissions can read "
          "and write this machine's files", file=sys.stderr)
    return Protection.NONE


@cache
def hidden_paths(hidden):
    """Where the modules named in `hidden` live on this Python's path: the directories and files
    a worker graded without them must not see."""
    found = []
    for entry in filter(None, sys.path):  # as the worker's Python sees them: not resolved
        folder = Path(entry)
        for name in hidden:
            for path in (folder / name, folder / f"{name}.py"):
                if path.exists() and str(path) not in found:
                    found.append(str(path))
    return tuple(found)


@cache
def library_paths():
    """Folders of installed packages that this Python reads from outside its prefixes (another
    environment's site-packages named in a .pth file): the sandbox mounts them as it mounts the
    prefixes. Other entries of the path, a checkout of the course among them, stay outside."""
    prefixes = (Path(sys.prefix), Path(sys.base_prefix))
    return tuple(entry for entry in dict.fromkeys(filter(None, sys.path))
                 if Path(entry).name in ("site-packages", "dist-packages") and Path(entry).is_dir()
                 and not any(Path(entry).is_relative_to(prefix) for prefix in prefixes))


@cache
def grader_paths():
    """Where the grader's own packages lie inside what the sandbox mounts (pip installs them beside
    the libraries): hidden there like a lab's hidden modules, since they hold the labs' cases."""
    mounted = (Path(sys.prefix), Path(sys.base_prefix), *map(Path, library_paths()))
    return tuple(path for path in hidden_paths(GRADER_PACKAGES)
                 if any(Path(path).is_relative_to(folder) for folder in mounted))


@cache
def seccomp_program():
    """The filter of autograder/isolation/seccomp.py for this machine; where it has none, every run says so."""
    program = seccomp.program()
    if program is None:
        print(f"autograder: no seccomp filter for {os.uname().machine}: workers that run at the same time could "
              "pass data through file locks and the like", file=sys.stderr)
    return program


def seccomp_pipe():
    """A pipe's read end holding the filter, for bubblewrap's --seccomp; None without a filter."""
    program = seccomp_program()
    if program is None:
        return None
    read, write = os.pipe()  # the program is far smaller than a pipe's buffer
    os.write(write, program)
    os.close(write)
    return read


@cache
def font_lists():
    """matplotlib's lists of the machine's fonts in this user's matplotlib cache, one per
    matplotlib version (fontlist-v<version>.json). A fresh sandbox or zygote would otherwise make
    its own (fc-list, then every font file read: a fifth of a second of CPU); given the list of
    its version, matplotlib reads it instead."""
    try:
        cache_home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        folder = Path(os.environ.get("MPLCONFIGDIR") or cache_home / "matplotlib")
        return tuple(path for path in sorted(folder.glob("fontlist-v*.json")) if path.is_file())
    except (OSError, RuntimeError, KeyError):  # no home folder to look in
        return ()


@cache
def proc_covers():
    """The fixed files that cover the host-wide files of a sandbox's /proc (zygote.PROC_STATIC)."""
    folder = Path(process_scratch(), "proc")
    write_proc_covers(folder)
    return folder


def proc_mounts(covers):
    """bubblewrap arguments that cover, in the sandbox's /proc, what the zygote's workers have
    covered (zygote.cover_proc): each host-wide folder by an empty tmpfs, each file by its fixed
    copy in `covers`."""
    mounts = []
    for name, is_folder in proc_covered().items():
        mounts += ["--tmpfs", f"/proc/{name}"] if is_folder else ["--ro-bind", str(covers / name), f"/proc/{name}"]
    return mounts


def mounted_folders():
    """The machine's folders that a sandbox shows, at the same paths: the system and Python."""
    return ("/usr", "/bin", "/lib", "/lib64", "/sbin", "/etc", sys.base_prefix, sys.prefix, *library_paths())


@cache
def private_copy():
    """This process's copy of what workers without PyTorch read (autograder/isolation/private_root.py): what
    a student installs and the labs import; None where this process is not root and cannot mount
    it (then every run says so)."""
    if os.geteuid() != 0:
        print("autograder: not root, so workers graded without PyTorch read the machine's own files, whose "
              "page cache a worker with PyTorch can leave a message in", file=sys.stderr)
        return None
    return private_root(process_scratch(), mounted_folders(), (*hidden_paths(WITHOUT_PYTORCH), *grader_paths()),
                        (WORKER, UNAVAILABLE, *font_lists()), student_distributions(), tuple(lab_imports()))


@cache
def student_distributions():
    """The distributions a student installs (requirements-student.txt, in a checkout of the grader).
    Empty where the grader is installed without it (Gradescope): then what the labs' code and the
    worker import, and what that needs, is all a worker without PyTorch gets."""
    try:
        lines = STUDENT_REQUIREMENTS.read_text().splitlines()
    except FileNotFoundError:
        return ()
    return tuple(re.match(r"[A-Za-z0-9._-]+", line)[0] for line in lines if line.strip() and not line.startswith("#"))


class Files:
    """Where a worker's files come from: the machine's own, or for a worker without PyTorch, the
    private copy (`copy`, a private_root.Copy)."""

    def __init__(self, hidden):
        self.copy = private_copy() if tuple(hidden) == WITHOUT_PYTORCH else None

    def system(self, path):
        """The source of the machine's `path`."""
        return str(path) if self.copy is None else str(self.copy.system / str(path).lstrip("/"))

    def grader(self, path):
        """The source of the grader's file `path` (worker.py, a font list...)."""
        return str(path) if self.copy is None else str(self.copy.grader / Path(path).name)

    def font_lists(self):
        """The font lists a sandbox is given: those the copy took when it was made, or the machine's.
        The machine's may appear later (a fresh machine's first matplotlib import writes them); a
        copy made before then holds none, and bubblewrap refuses to mount a file that is missing."""
        found = font_lists() if self.copy is None else sorted(self.copy.grader.glob("fontlist-v*.json"))
        return tuple(path for path in found if Path(path).is_file())

    def proc_covers(self):
        return proc_covers() if self.copy is None else self.copy.grader / "proc"

    def enter(self):
        """In a zygote about to start: see only these files (nothing to do for the machine's own)."""
        if self.copy is not None:
            enter(self.copy.system, mounted_folders())


def bwrap_command(folder, python_args, hidden=(), disk_bytes=Limits.disk_bytes, seccomp_fd=None):
    """bubblewrap arguments that expose only the system, Python, worker.py and the files of
    `folder`, with the packages named in `hidden` replaced by one that refuses to import (a
    module by /dev/null) and, given `seccomp_fd`, the seccomp filter read from it. The places the
    submission can write, /tmp and SANDBOX_HOME, are tmpfs of `disk_bytes` each, gone with the
    sandbox; `folder`'s files are mounted read-only at the same places below SANDBOX_HOME."""
    files = Files(hidden)
    # The private /tmp comes first: later mounts may lie below it (a checkout in /tmp).
    mounts = ["--proc", "/proc", *proc_mounts(files.proc_covers()), "--dev", "/dev", "--size", str(disk_bytes),
              "--tmpfs", "/tmp"]
    fonts = files.font_lists()
    if fonts:  # matplotlib's folder (MPLCONFIGDIR), which it needs to be able to write to
        mounts += ["--perms", "0777", "--dir", MATPLOTLIB_FOLDER]
        for found in fonts:
            mounts += ["--ro-bind", files.grader(found), f"{MATPLOTLIB_FOLDER}/{found.name}"]
    for path in mounted_folders():
        if Path(files.system(path)).exists():
            mounts += ["--ro-bind", files.system(path), path]
    for path in (*hidden_paths(hidden), *grader_paths()):
        mounts += ["--ro-bind", files.grader(UNAVAILABLE) if Path(path).is_dir() else "/dev/null", path]
    mounts += ["--ro-bind", files.grader(WORKER), MOUNTED_WORKER, "--size", str(disk_bytes), "--tmpfs", SANDBOX_HOME]
    for relative in folder_files(folder):
        mounts += ["--ro-bind", str(Path(folder, relative)), f"{SANDBOX_HOME}/{relative}"]
    confined = ["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []
    return ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", *confined,
            "--uid", "65534", "--gid", "65534", "--hostname", "grader", *mounts, "--chdir", SANDBOX_HOME,
            "--", sys.executable, "-I", MOUNTED_WORKER, *python_args, json.dumps(list(hidden))]


@cache
def readable_worker():
    """A copy of worker.py that the user nobody can read, as the grader's own package may be closed
    to it (autograder/gradescope/run.py closes it)."""
    folder = Path(process_scratch())
    folder.chmod(0o755)
    copy = folder / WORKER.name
    shutil.copyfile(WORKER, copy)
    copy.chmod(0o644)
    return copy


def folder_files(folder):
    """The files below `folder` (the lab's data), as paths relative to it."""
    return sorted(str(path.relative_to(folder)) for path in Path(folder).rglob("*") if path.is_file())


def clean_environment(home):
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "MPLBACKEND": "Agg",
           "MPLCONFIGDIR": MATPLOTLIB_FOLDER, "IPYTHONDIR": "/tmp/ipython",
           "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    env.update({key: os.environ[key] for key in PASSED_THROUGH if key in os.environ})
    return env


def rlimits(limits, cap_processes=True):
    """The per-process limits of a worker: resource name -> [soft, hard]."""
    # A worker's process runs the submission's seconds and, in the grader's diagnosis replays
    # (grade.Clock.refunded), as many again: the CPU limit is a backstop to the grader's clock.
    cpu = int(2 * limits.submission_seconds) + 5
    found = {"RLIMIT_AS": [limits.memory_bytes] * 2, "RLIMIT_FSIZE": [limits.file_bytes] * 2, "RLIMIT_CORE": [0, 0],
             "RLIMIT_CPU": [cpu, cpu + 5]}  # SIGXCPU at the soft limit, SIGKILL at the hard one
    if cap_processes:  # counted per user across the machine: only where no control group caps them
        found["RLIMIT_NPROC"] = [limits.processes] * 2
    return found


class Zygote:
    """One zygote (zygote.py): workers forked from a process that has already imported what the
    labs import, less the modules it is `hidden`. `launch` starts it and returns at once, so that
    its imports overlap the grader's own set-up; the first worker waits until it is ready and has
    forked one worker that works. Where the warm path cannot run, `usable` is False and every
    worker starts cold."""

    def __init__(self, process, channel, hidden):
        self.process, self.channel, self.hidden, self._lines = process, channel, hidden, Lines(MAX_ANSWER)
        self._lock, self._state = threading.RLock(), None

    @classmethod
    def launch(cls, modules, hidden):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # Caches the zygote's imports write (matplotlib's fonts, PyTorch's compiler) go into one
        # folder of its own, removed when it closes, instead of lingering in /tmp.
        scratch = tempfile.mkdtemp(prefix="zygote-")
        environment = clean_environment(tempfile.gettempdir())
        environment.update(MPLCONFIGDIR=os.path.join(scratch, "matplotlib"),
                           TORCHINDUCTOR_CACHE_DIR=os.path.join(scratch, "torchinductor"))
        os.mkdir(environment["MPLCONFIGDIR"])
        for found in font_lists():
            try:
                shutil.copyfile(found, os.path.join(environment["MPLCONFIGDIR"], found.name))
            except OSError:  # then matplotlib makes its own
                pass
        process = subprocess.Popen([sys.executable, "-I", str(ZYGOTE), str(theirs.fileno()), json.dumps(modules),
                                    json.dumps(list(hidden)), scratch],
                                   env=environment, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   pass_fds=(theirs.fileno(),), start_new_session=True,
                                   preexec_fn=Files(hidden).enter)
        theirs.close()
        zygote = cls(process, ours, hidden)
        zygote.scratch = scratch
        return zygote

    def usable(self):
        """True once the zygote is ready and a worker forked from it has answered."""
        with self._lock:
            if self._state is None:
                self._state = "ok"  # the trial worker below asks again, from this thread
                try:
                    ready = self._receive(timeout=300)
                    if "error" in ready:
                        raise WorkerFailure("zygote", ready["error"])
                    if ready.get("threads") != 1:
                        raise WorkerFailure("threads", f"the zygote runs {ready.get('threads')} threads")
                    folder = Path(tempfile.mkdtemp(prefix="grading-trial-"))
                    try:
                        with stopping(None):  # the zygote serves every later grading, not only this one
                            Worker(folder, Limits(), True, self, self.hidden).close()
                    finally:
                        shutil.rmtree(folder, ignore_errors=True)
                except (WorkerFailure, GraderError) as failure:
                    self._state = "failed"
                    self.close()
                    print(f"autograder: starting every worker cold, since a warm one could not start: {failure}",
                          file=sys.stderr)
            return self._state == "ok"

    def _receive(self, timeout):
        deadline = time.monotonic() + timeout
        while not self._lines.ready:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.channel], [], [], left)[0]:
                raise WorkerFailure("timeout", "the grader's zygote did not answer")
            chunk = self.channel.recv(1 << 16)
            if not chunk:
                raise WorkerFailure("died", "the grader's zygote ended")
            self._lines.feed(chunk)
        answer = parse_reply(*self._lines.next())
        if not isinstance(answer, dict):
            raise WorkerFailure("protocol", "the grader's zygote answered something that is not an answer")
        return answer

    def spawn(self, request, fds):
        """Fork a worker with `fds` (request pipe, reply pipe, status pipe); its host PID."""
        with self._lock:
            socket.send_fds(self.channel, [json.dumps(request).encode()], list(fds))
            answer = self._receive(timeout=60)
        if "pid" not in answer:
            raise WorkerFailure("died", f"the grader's zygote could not fork a worker: {answer.get('error')}")
        return answer["pid"]

    def close(self):
        self.channel.close()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        remove_tree(self.scratch)


class Pool:
    """The zygotes of a grading run, one per set of hidden modules: workers that may use PyTorch
    fork from one that imported it, workers that grade without it from one that never did, so
    that no reference to PyTorch can survive into them. Needs root and control groups.

    A zygote pays for its imports once and saves them on every later worker; a worker started
    cold pays for what its own notebook imports. So a run pays for a zygote only where it is
    going to fork more than one worker of its kind. An `eager` pool (a run of many submissions)
    starts the zygote without PyTorch at once, so that its imports overlap the grader's own
    set-up (every lab grades some activity without PyTorch), and the other when a worker first
    needs it: a class has many submissions of each kind. A pool that is not eager (a run of one notebook, most of which need one worker of
    each kind) starts each kind's first worker cold and its zygote when a second is asked for
    (a re-grade, a restart). A run that never grades with PyTorch never imports it."""

    KINDS = ((), WITHOUT_PYTORCH)

    def __init__(self, modules, eager=True):
        """`modules`: a function returning what a zygote imports, called when one starts (reading
        it from the labs' text is work that a run starting none need not do)."""
        self._modules, self.zygotes, self._lock, self._asked, self.eager = modules, {}, threading.Lock(), {}, eager
        if eager:
            self._launched(WITHOUT_PYTORCH)

    @classmethod
    def launch(cls, modules, eager=True):
        if os.geteuid() != 0 or not cgroups_available() or not bwrap_available():
            return None
        return cls(modules, eager)

    def _launched(self, hidden):
        with self._lock:
            if hidden not in self.zygotes:
                self.zygotes[hidden] = Zygote.launch(self._modules(), hidden)
            return self.zygotes[hidden]

    def zygote(self, hidden):
        """The zygote for workers without the modules `hidden`, if it can fork them; None where
        the worker is to start cold."""
        hidden = tuple(hidden)
        if hidden not in self.KINDS:
            return None
        with self._lock:
            self._asked[hidden] = self._asked.get(hidden, 0) + 1
            if not self.eager and self._asked[hidden] == 1 and hidden not in self.zygotes:
                return None
        found = self._launched(hidden)
        return found if found.usable() else None

    def running(self, hidden):
        """The zygote for workers without the modules `hidden` where one is started and can fork
        them, without starting one: for the grader's side of a link, a worker that a run of one
        notebook starts once per session, which a cold start costs less than a zygote."""
        with self._lock:
            found = self.zygotes.get(tuple(hidden))
        return found if found is not None and found.usable() else None

    def close(self):
        with self._lock:
            for zygote in self.zygotes.values():
                zygote.close()


class Forked:
    """A pooled worker's process, answering `pid` and `wait` like subprocess.Popen."""

    def __init__(self, pid, status):
        self.pid, self._status, self._code = pid, status, None

    def wait(self, timeout=None):
        if self._code is None and self._status is not None:
            if not select.select([self._status], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired("worker", timeout)
            data = os.read(self._status, 4)
            os.close(self._status)
            self._status = None
            if len(data) == 4:
                raw = struct.unpack("i", data)[0]
                self._code = -os.WTERMSIG(raw) if os.WIFSIGNALED(raw) else os.WEXITSTATUS(raw)
        return self._code


class Stopper:
    """The workers started under it (see `stopping`), to be killed at once when what they grade
    is no longer wanted: the run was interrupted (Ctrl-C), or a Dask task was cancelled. Once
    stopped, no new worker starts under it; each worker's owner still closes its own."""

    def __init__(self):
        self.stopped, self.workers = threading.Event(), weakref.WeakSet()

    def stop(self):
        self.stopped.set()
        for worker in list(self.workers):
            try:
                os.killpg(worker.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError, AttributeError):  # gone, or not started yet
                pass


EVERY_WORKER = Stopper()  # every worker of this process
_current = threading.local()


@contextmanager
def stopping(stopper):
    """Put the workers that this thread starts in the block under `stopper` too (None: under no
    stopper but EVERY_WORKER)."""
    before, _current.stopper = getattr(_current, "stopper", None), stopper
    try:
        yield stopper
    finally:
        _current.stopper = before


def stoppers():
    return [EVERY_WORKER] + [stopper for stopper in [getattr(_current, "stopper", None)] if stopper is not None]


class Kept:
    """What the grader keeps of one request: its observations, then its reply, within the
    bounds Worker.ask states; a line past them is a WorkerFailure, since no honest probe writes it."""

    def __init__(self, declared):
        self.declared, self.observations, self.size, self.values = declared, [], 0, 0

    def add(self, reply, line, frames=b""):
        """`reply`: `line` (its bytes) and its `frames` as parse_reply gave it."""
        self.size += len(line) + len(frames)
        self.values += json_values(line)
        if self.size > MAX_REPLY or self.values > LINE_VALUES:
            raise WorkerFailure("protocol", f"the request's reply and observations took more than {MAX_REPLY} "
                                            f"bytes or {LINE_VALUES} values")
        if "observation" in reply:
            if self.declared is not None and len(self.observations) == self.declared:
                raise WorkerFailure("protocol", f"the worker sent more observations than the {self.declared} "
                                                "its probe makes")
            self.observations.append(reply["observation"])


class Worker:
    """One worker process; every request has a time limit."""

    def __init__(self, folder, limits, sandboxed, pool=None, hidden=(), link=(), group=None):
        """`pool`: a Pool, or the one Zygote to fork from; `hidden`: the top-level modules the
        worker must not be able to import (WITHOUT_PYTORCH, or none); `link`: the two ends of a
        worker.Link to another worker; `group`: another worker's control group to join, which
        then also counts this one's time and memory (and is removed by its owner only)."""
        self._stoppers = stoppers()
        if any(stopper.stopped.is_set() for stopper in self._stoppers):
            raise GraderError("the grading was stopped: it is no longer wanted")
        self.limits, self._owns_group = limits, group is None
        self.group = group if group is not None else \
            ControlGroup(limits.processes, limits.memory_bytes) if cgroups_available() else None
        to_worker, self._requests = os.pipe()
        self._replies, from_worker = os.pipe()
        self._root, self._unprivileged = None, sandboxed is Protection.USER
        zygote = pool.zygote(hidden) if isinstance(pool, Pool) else pool
        if zygote is not None and sandboxed and self.group is not None and zygote.usable():
            status_read, status_write = os.pipe()
            os.chown(folder, NOBODY, NOBODY)  # the forked worker is nobody on the host too
            self._root = tempfile.mkdtemp(prefix="grading-root-")
            request = {"folder": str(folder), "root": self._root, "home": SANDBOX_HOME,
                       "cgroups": [str(d) for d in self.group.dirs], "rlimits": rlimits(limits, False),
                       "disk_bytes": limits.disk_bytes, "files": folder_files(folder),
                       "environment": clean_environment(SANDBOX_HOME), "hidden": list(hidden),
                       "hidden_paths": [*hidden_paths(tuple(hidden)), *grader_paths()],
                       "unavailable": Files(hidden).grader(UNAVAILABLE),
                       "libraries": list(library_paths()),
                       "seccomp": (seccomp_program() or b"").hex(), "link": bool(link)}
            try:
                pid = zygote.spawn(request, (to_worker, from_worker, status_write, *link))
            finally:
                os.close(status_write)
            self.process = Forked(pid, status_read)
        else:
            python_args = [str(to_worker), str(from_worker)]
            link_args = [json.dumps(list(link))] if link else []
            filter_fd = seccomp_pipe() if sandboxed else None
            if sandboxed:
                command = bwrap_command(folder, python_args, tuple(hidden), limits.disk_bytes, filter_fd) + link_args
                home = SANDBOX_HOME
            else:  # the worker's own finder is then all that refuses the hidden modules
                start = [sys.executable, "-I", "-c", UNDUMPABLE, str(readable_worker())] if self._unprivileged \
                    else [sys.executable, "-I", str(WORKER)]
                command = [*start, *python_args, json.dumps(list(hidden)), *link_args]
                home = str(folder)
                if self._unprivileged:
                    os.chown(folder, NOBODY, NOBODY)
            try:
                self.process = subprocess.Popen(
                    command, cwd=folder, env=clean_environment(home), stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    pass_fds=(to_worker, from_worker, *link, *([filter_fd] if filter_fd is not None else [])),
                    start_new_session=True, preexec_fn=self._apply_limits)
            finally:
                if filter_fd is not None:
                    os.close(filter_fd)
        for stopper in self._stoppers:
            stopper.workers.add(self)
        os.close(to_worker)
        os.close(from_worker)
        self._lines, self._seq, self._start, self._threads_since = Lines(MAX_REPLY, framed=True), "0", None, None
        # The grader's own CPU seconds spent parsing this worker's lines, counted as the
        # submission's (see _clock), and the bytes it read from it (see Clock.received).
        self.parsing, self.received = 0.0, 0
        if any(stopper.stopped.is_set() for stopper in self._stoppers):  # stopped while this one started
            self.close()
            raise GraderError("the grading was stopped: it is no longer wanted")
        try:
            self.ask(None, timeout=120)  # the ready message, after the worker's imports
        except WorkerFailure as failure:  # no submission code has run yet: this one is ours
            self.close()
            raise GraderError(f"the grader could not start a worker: {failure}") from None
        self._start = self._clock()

    def _clock(self):
        """(CPU seconds of the worker's processes and of the grader's parsing of its lines, or None
        where they are not counted, and wall seconds)."""
        if self.group is None:
            return None, time.monotonic()
        return self.group.cpu_seconds() + self.parsing, time.monotonic()

    def used(self):
        """Seconds of the submission's time used since the worker was ready: CPU time where it is
        counted, else wall-clock time."""
        if self._start is None:
            return 0.0
        (cpu0, wall0), (cpu, wall) = self._start, self._clock()
        return cpu - cpu0 if cpu is not None and cpu0 is not None else wall - wall0

    def _over(self, since, timeout):
        """Why a request that started at `since` has run out of its `timeout`, or None."""
        (cpu0, wall0), (cpu, wall) = since, self._clock()
        if cpu is None or cpu0 is None:
            return f"did not finish within the time limit of {timeout:.3g} s" if wall - wall0 > timeout else None
        if cpu - cpu0 > timeout:
            return f"did not finish within the time limit of {timeout:.3g} s of CPU time"
        if self._threads_since is None:
            # Reading every thread's counters costs a file each, and nearly every request ends
            # within milliseconds: they are first read once a request has lasted a while. The
            # waiting counted from then is at most what the whole request waited, so the backstop
            # can only come later than it would have, by about ACTIVE_AFTER seconds.
            if wall - wall0 > ACTIVE_AFTER:
                self._threads_since = wall, self.group.active_seconds()
            return None
        if wall - wall0 <= WALL_FACTOR * timeout:
            return None
        # The busiest thread's time running or runnable is time the submission did not wait.
        wall1, active1 = self._threads_since
        busy = max((seconds - active1.get(thread, 0.0) for thread, seconds in self.group.active_seconds().items()),
                   default=0.0)
        if wall - wall1 - busy > WALL_FACTOR * timeout:
            return (f"did not finish within the time limit ({WALL_FACTOR * timeout:.3g} s of waiting; "
                    f"it used {cpu - cpu0:.3g} s of CPU time)")
        return None

    def _apply_limits(self):
        if self.group is not None:
            self.group.join()
        # RLIMIT_NPROC counts every process of the user nobody on the machine, which would let two
        # sandboxes signal to each other through it: only where no control group caps processes.
        for name, (soft, hard) in rlimits(self.limits, self.group is None).items():
            resource.setrlimit(getattr(resource, name), (soft, hard))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails instead of killing
        if self._unprivileged:  # last: joining the control group needs root
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(NOBODY, NOBODY, NOBODY)

    def ask(self, request, timeout, observations=None, budget=None):
        """Send `request` (None: only wait for the ready message) and return its reply, or raise
        WorkerFailure. `timeout` counts CPU time where the control group counts it (see
        WALL_FACTOR). Lines on the reply pipe that are not this request's reply (the submission
        can write there too: forgeries, garbage, lines too long or too deep to be a reply) are
        skipped; the request's observations, written before its reply, come back in order as the
        reply's "observations".

        What the grader keeps of a request is bounded whatever the submission writes: its reply
        and observations together take at most MAX_REPLY bytes and LINE_VALUES values, and at
        most `observations` observations (the probe's declared count; None: any number). All
        that is read meanwhile, kept or skipped, takes at most `budget` bytes (None: no bound)."""
        # A fresh random tag per request: a reply the submission forges blindly never matches.
        self._seq = secrets.token_hex(8) if request is not None else "0"
        since, self._threads_since = self._clock(), None
        if request is not None:
            try:
                data = (json.dumps({**request, "seq": self._seq}) + "\n").encode()
                while data:
                    if not select.select([], [self._requests], [], POLL_SECONDS)[1]:
                        if self._over(since, timeout):
                            raise WorkerFailure("timeout", "the worker stopped reading requests")
                        continue
                    data = data[os.write(self._requests, data[:1 << 16]):]
            except BrokenPipeError:
                raise self._died() from None
        kept = Kept(observations)  # a probe's observations come before its reply (worker.py)
        read = self.received
        while True:
            line, frames, reply = self._next_line(since, timeout)
            if budget is not None and self.received - read > budget:
                raise WorkerFailure("protocol", f"the worker wrote more than the {budget} bytes left to the "
                                                "submission on the grader's pipe")
            if isinstance(reply, dict) and reply.get("seq") == self._seq:
                kept.add(reply, line, frames)
                if "observation" not in reply:
                    reply["observations"] = kept.observations
                    return reply

    def _next_line(self, since, timeout):
        """(the next line of the reply pipe, b"" for one too long; its frames, b"" for none; and what
        parse_reply makes of them): never more than MAX_REPLY bytes of one line and its frames are
        held, however much the submission writes. The parsing's CPU time is the submission's."""
        while not self._lines.ready:
            readable = select.select([self._replies], [], [], POLL_SECONDS)[0]
            why = self._over(since, timeout)  # also while a flood keeps the pipe readable
            if why:
                raise WorkerFailure("timeout", why)
            if not readable:
                continue
            chunk = os.read(self._replies, READ_BYTES)
            if not chunk:
                raise self._died()
            self.received += len(chunk)
            self._lines.feed(chunk)
        line, frames = self._lines.next()
        started = time.thread_time()
        try:
            if line is not None and json_values(line) > LINE_VALUES and self._seq.encode() in line:
                # The request's tag on a line no honest reply fills: a forgery, refused unparsed.
                raise WorkerFailure("protocol", "a line carrying the request's tag held more values than any reply")
            return line or b"", frames or b"", parse_reply(line, frames)
        finally:
            self.parsing += time.thread_time() - started

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
        if self.group is not None and self._owns_group:
            self.group.remove()  # also the processes that left the worker's session
        self.group = None
        self.process.wait()
        for fd in (self._requests, self._replies):
            try:
                os.close(fd)
            except OSError:
                pass
        if self._root is not None:
            os.rmdir(self._root)  # the tmpfs on it lived in the worker's own mount namespace
            self._root = None
