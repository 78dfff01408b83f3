"""A warm start for workers: one process per grading run imports what the labs import, then
forks a fresh, sandboxed worker for each submission.

    python -I zygote.py CONTROL_FD MODULES_JSON HIDDEN_JSON SCRATCH    (started by sandbox.Pool, as root)

A zygote with HIDDEN modules (PyTorch's packages) never imports them, and its workers cannot:
in the worker's root their folders hold autograder/isolation/unavailable instead, and worker.py refuses
them by name.

Each fork builds its own sandbox the way bubblewrap does: new mount, PID, network, IPC and
host-name namespaces; a root of its own holding the system, the Python installation and the
submission's data (read-only but for its working folder and a private /tmp, tmpfs of capped
size); the user `nobody`; no new privileges; limits; a seccomp filter refusing the calls that
could carry data between workers (autograder/isolation/seccomp.py); only its two pipes open; fresh random
seeds. The worker's code is worker.py's, as in the cold path. Nothing of the grader but worker.py is imported here.

Protocol on CONTROL_FD (a Unix socket): the grader sends one JSON line with three file
descriptors attached (the worker's request pipe, its reply pipe, and a status pipe on which the
worker's exit status is written when it ends); the zygote answers with the worker's host PID.
"""
import ctypes
import errno
import gc
import importlib.util
import json
import os
import random
import resource
import shutil
import signal
import socket
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x4000000, 0x8000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PROC_COVERS = "/proc-covers"  # in the new root, until /proc is covered
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
NOBODY = 65534
DEVICES = ("null", "zero", "full", "random", "urandom")
# Of /proc, a worker sees as they are only the folders of its own processes and the links into them
# (self, thread-self, mounts, net). Every other entry (loadavg, stat, meminfo, vmstat, pressure/,
# sys/fs/file-nr...) counts what the whole machine does, so that a worker could read there what
# another one did, even one long gone: each is covered by an empty folder or a fixed file. The
# fixed files are empty but for these, which libraries read to know the processor, copied
# without the lines that follow the load (a core's current frequency).
PROC_STATIC = {"cpuinfo": (b"cpu MHz",)}

libc = ctypes.CDLL(None, use_errno=True)


def check(result, what):
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def mount(source, target, kind, flags, data=None):
    check(libc.mount(source and source.encode(), str(target).encode(), kind and kind.encode(), flags,
                     data and data.encode()), f"mount {target}")


def bind(host_path, new_root, follow=False):
    """Mount `host_path` read-only at the same path below `new_root`. A symlink is copied as a symlink,
    unless `follow` mounts what it points to (a virtualenv may be a link to elsewhere)."""
    target = new_root / str(host_path).lstrip("/")
    if host_path.is_symlink() and not follow:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(os.readlink(host_path))
        return
    if host_path.is_dir():
        target.mkdir(parents=True, exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
    mount(str(host_path), target, None, MS_BIND | MS_REC)
    mount(None, target, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_RDONLY)


def build_root(new_root, folder, home, hidden_paths=(), unavailable=None, *, files, disk_bytes, libraries=()):
    """The worker's file system: what bwrap_command in sandbox.py exposes, at the same paths:
    /tmp and `home` are tmpfs of `disk_bytes` each, and `files` (relative to `folder`) are
    mounted read-only at the same places below `home`."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", new_root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    # The private /tmp comes first: later mounts may lie below it (a checkout in /tmp).
    (new_root / "tmp").mkdir()
    mount("tmpfs", new_root / "tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={disk_bytes}")
    for path in ("/usr", "/bin", "/lib", "/lib64", "/sbin", "/etc"):
        if os.path.lexists(path):
            bind(Path(path), new_root)
    for path in (sys.base_prefix, sys.prefix, *libraries):
        bind(Path(path), new_root, follow=True)
    for path in hidden_paths:  # a package that refuses to import in its place (a module: /dev/null)
        target = new_root / path.lstrip("/")
        source = unavailable if target.is_dir() else "/dev/null"
        mount(source, target, None, MS_BIND)
        mount(None, target, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_RDONLY)
    (new_root / "dev").mkdir(exist_ok=True)
    mount("tmpfs", new_root / "dev", "tmpfs", MS_NOSUID, "mode=0755")
    for device in DEVICES:
        (new_root / "dev" / device).touch()
        mount(f"/dev/{device}", new_root / "dev" / device, None, MS_BIND)
    (new_root / home.lstrip("/")).mkdir(parents=True)
    mount("tmpfs", new_root / home.lstrip("/"), "tmpfs", MS_NOSUID | MS_NODEV,
          f"mode=0755,uid={NOBODY},gid={NOBODY},size={disk_bytes}")
    for relative in files:
        place_read_only(Path(folder, relative), new_root / home.lstrip("/"), relative)
    (new_root / "proc").mkdir(exist_ok=True)
    write_proc_covers(new_root / PROC_COVERS.lstrip("/"))
    old = new_root / "old-root"
    old.mkdir()
    check(libc.syscall(SYS_PIVOT_ROOT[os.uname().machine], str(new_root).encode(), str(old).encode()),
          "pivot_root")
    os.chdir("/")
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV)
    cover_proc(Path(PROC_COVERS))
    shutil.rmtree(PROC_COVERS)  # the mounts keep what they cover /proc with
    check(libc.umount2(b"/old-root", MNT_DETACH), "umount old root")
    os.rmdir("/old-root")


def proc_covered():
    """The entries of /proc that a worker must not see as they are: name -> True for a folder."""
    return {entry.name: entry.is_dir(follow_symlinks=False) for entry in os.scandir("/proc")
            if not entry.name.isdigit() and not entry.is_symlink()}


def write_proc_covers(folder):
    """Write into `folder` the fixed file that covers each file of the host's /proc (see PROC_STATIC)."""
    folder.mkdir(mode=0o755)
    for name, is_folder in proc_covered().items():
        if not is_folder:
            (folder / name).write_bytes(fixed_proc_text(name))
            (folder / name).chmod(0o444)


def fixed_proc_text(name):
    if name not in PROC_STATIC:
        return b""
    lines = Path("/proc", name).read_bytes().splitlines(keepends=True)
    return b"".join(line for line in lines if not line.startswith(PROC_STATIC[name]))


def cover_proc(covers):
    """Cover what proc_covered names in the worker's fresh /proc: each folder by an empty tmpfs,
    each file by its fixed copy in `covers` (a file the host's /proc lacked has none: the worker
    then fails to start rather than see it)."""
    for name, is_folder in proc_covered().items():
        target = Path("/proc", name)
        if is_folder:
            mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "mode=0555,size=4k")
        else:
            mount(str(covers / name), target, None, MS_BIND)
            mount(None, target, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_RDONLY)


def place_read_only(source, home, relative):
    """Mount the file `source` read-only at `relative` below `home`, in folders the worker owns."""
    target = home / relative
    for folder in reversed(Path(relative).parents[:-1]):
        if not (home / folder).exists():
            (home / folder).mkdir()
            os.chown(home / folder, NOBODY, NOBODY)
    target.touch()
    mount(str(source), target, None, MS_BIND)
    mount(None, target, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_RDONLY)


def become_worker(request, fds):
    """In the forked child: enter the sandbox, then serve the grader as worker.py does. As with
    bubblewrap, the first process of the new PID namespace is a small init that waits for the
    worker and reports how it ended (a worker that were PID 1 could not even kill itself)."""
    to_worker, from_worker, status, *link = fds
    for number in range(1, signal.NSIG):  # the zygote ignores SIGCHLD; a worker must not
        try:
            signal.signal(number, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
    os.setsid()
    for folder in request["cgroups"]:
        Path(folder, "cgroup.procs").write_text(f"{os.getpid()}\n")
    check(libc.unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET), "unshare")
    if os.fork():
        os._exit(0)  # the init below carries on in the new namespaces
    build_root(Path(request["root"]), request["folder"], request["home"], request["hidden_paths"],
               request["unavailable"], files=request["files"], disk_bytes=request["disk_bytes"], libraries=request["libraries"])
    socket.sethostname("grader")
    worker = os.fork()
    if worker:
        for fd in (to_worker, from_worker, *link):
            os.close(fd)
        _, code = os.waitpid(worker, 0)
        os.write(status, struct.pack("i", code))
        os._exit(0)
    os.close(status)
    quiet = os.open("/dev/null", os.O_RDWR)  # output goes nowhere, as in the cold path
    for fd in (0, 1, 2):
        os.dup2(quiet, fd)
    os.close(quiet)
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, NOBODY)
    os.setresuid(NOBODY, NOBODY, NOBODY)
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no new privileges")
    for name, (soft, hard) in request["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (soft, hard))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails instead of killing
    kept = sorted((to_worker, from_worker, *link))
    for low, high in zip([2, *kept], [*kept, 1 << 16]):
        os.closerange(low + 1, high)
    os.environ.clear()
    os.environ.update(request["environment"])
    os.chdir(request["home"])
    reseed()
    if request.get("seccomp"):
        confine(bytes.fromhex(request["seccomp"]))
    sys.modules["worker"].main(to_worker, from_worker, request["hidden"], link or None)


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def confine(program):
    """Install the seccomp filter of autograder/isolation/seccomp.py (built by the grader, sent as bytes)."""
    buffer = ctypes.create_string_buffer(program, len(program))
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(SockFprog(len(program) // 8,
                                                                               ctypes.addressof(buffer))), 0, 0),
          "seccomp filter")


def reseed():
    """Siblings must not share the zygote's random state."""
    random.seed(os.urandom(32))
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(int.from_bytes(os.urandom(4), "little"))
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)


def preload(modules, hidden):
    """Import what the labs import but the `hidden` modules, with PyTorch kept to one thread:
    threads do not survive a fork, and a child waiting on a pool the parent started hangs.
    Returns why the zygote cannot serve, or None."""
    if "torch" not in hidden:
        import torch
        # A first gradient from a given upstream gradient (backward(g), autograd.grad) imports
        # this, and SymPy with it: 0.3 s of CPU in every worker that takes one, paid here once.
        import torch.fx.experimental.symbolic_shapes  # noqa: F401

        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
    for name in modules:
        if name.split(".")[0] in hidden:
            continue
        try:
            importlib.import_module(name)
        except Exception:  # a module a lab imports that is missing fails there, with its own message
            pass
    if "matplotlib" in sys.modules:
        import matplotlib

        matplotlib.use("Agg")
    spec = importlib.util.spec_from_file_location("worker", HERE / "worker.py")
    worker = importlib.util.module_from_spec(spec)
    sys.modules["worker"] = worker
    spec.loader.exec_module(worker)
    from IPython.core.interactiveshell import InteractiveShell  # noqa: F401 -- imported for the children
    leaked = sorted(name for name in sys.modules if name.split(".")[0] in hidden)
    # What is imported now lives as long as every worker: the cycle collector need not walk it
    # again in each of them, and the pages stay shared with the zygote.
    gc.freeze()
    return f"importing the labs' modules imported {', '.join(leaked[:3])}, which it must not" if leaked else None


def threads():
    return len(os.listdir("/proc/self/task"))


def serve(control, refusal):
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forked children are reaped by the kernel
    channel = socket.socket(fileno=control)
    if refusal is not None:
        channel.sendall((json.dumps({"error": refusal}) + "\n").encode())
        return
    channel.sendall((json.dumps({"ready": True, "threads": threads()}) + "\n").encode())
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(channel, 1 << 16, 5)
        except OSError as error:
            if error.errno == errno.EINTR:
                continue
            if error.errno == errno.ECONNRESET:  # the grader closed its end: the run is over
                return
            raise
        if not message:
            return
        request = json.loads(message)
        if threads() != 1:
            for fd in fds:
                os.close(fd)
            channel.sendall((json.dumps({"error": f"{threads()} threads running; cannot fork safely"}) + "\n").encode())
            continue
        pid = os.fork()
        if pid == 0:
            channel.close()
            try:
                become_worker(request, fds)
            except BaseException:  # the child never returns into the zygote's loop
                os._exit(70)
            os._exit(0)
        for fd in fds:
            os.close(fd)
        channel.sendall((json.dumps({"pid": pid}) + "\n").encode())


if __name__ == "__main__":
    try:
        serve(int(sys.argv[1]), preload(json.loads(sys.argv[2]), tuple(json.loads(sys.argv[3]))))
    finally:  # the folder of its imports' caches: the grader that made it may have died without a word
        shutil.rmtree(sys.argv[4], ignore_errors=True)
