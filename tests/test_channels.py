"""No data passes between two workers alive at the same time: the kernel's per-file state
(locks, leases, change notifications) and the keyrings of the user nobody are closed by the seccomp filter (autograder/isolation/seccomp.py), on the warm and the cold path.
Nor between a worker with an oracle (PyTorch) and any worker without it, then or later: the calls
that tell which of a file's pages are in memory are refused, /proc shows no counter of the whole
machine, and a worker without PyTorch reads only a private copy of its files held in memory
(autograder/isolation/private_root.py), so that the time of a first read tells it nothing.

Each channel is tried the way an attack would use it: one worker sets the state, a second one,
alive at the same time, reads it back. The same code run in two plain processes on the host shows
that each reading would carry the data where nothing refuses it, so the tests can fail."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.isolation import private_root, shared_copy
from autograder.isolation.sandbox import WITHOUT_PYTORCH, Forked, Limits, Worker
from autograder.isolation.zygote import mount

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


# Each way of asking the kernel whether a file's page is in memory, without reading it from disk.
RESIDENCY = f"""
import ctypes, errno, os
def residency():
    seen = {{}}
    libc = ctypes.CDLL(None, use_errno=True)
    numbers = {{"x86_64": {{"cachestat": 451, "io_setup": 206, "io_uring_setup": 425}},
               "aarch64": {{"cachestat": 451, "io_setup": 0, "io_uring_setup": 425}}}}[os.uname().machine]
    def outcome(result):
        return "allowed" if result >= 0 else errno.errorcode[ctypes.get_errno()]
    shared = os.open({SHARED}, os.O_RDONLY)
    try:
        os.preadv(shared, [bytearray(4096)], 0, os.RWF_NOWAIT)
        seen["preadv2"] = "allowed"
    except OSError as error:
        seen["preadv2"] = "allowed" if error.errno == errno.EAGAIN else errno.errorcode[error.errno]
    try:  # a flag every file system takes: tmpfs refuses RWF_NOWAIT on writes
        os.pwritev(os.open("/tmp", os.O_TMPFILE | os.O_RDWR), [b"x"], 0, os.RWF_DSYNC)
        seen["pwritev2"] = "allowed"
    except OSError as error:
        seen["pwritev2"] = errno.errorcode[error.errno]
    span, counts = ctypes.create_string_buffer(16), ctypes.create_string_buffer(40)  # whole file; 5 counters
    seen["cachestat"] = outcome(libc.syscall(numbers["cachestat"], shared, span, counts, 0))
    context = ctypes.c_ulong(0)
    seen["io_setup"] = outcome(libc.syscall(numbers["io_setup"], 1, ctypes.byref(context)))
    parameters = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
    seen["io_uring_setup"] = outcome(libc.syscall(numbers["io_uring_setup"], 1, parameters))
    return seen
"""


# The sockets a worker may open: Unix ones only (see autograder/isolation/seccomp.py).
SOCKETS = """
import errno, socket
def sockets():
    seen = {}
    for family, kind in [("AF_UNIX", "SOCK_STREAM"), ("AF_INET", "SOCK_DGRAM"), ("AF_INET6", "SOCK_STREAM"),
                         ("AF_NETLINK", "SOCK_RAW"), ("AF_PACKET", "SOCK_DGRAM")]:
        try:
            socket.socket(getattr(socket, family), getattr(socket, kind)).close()
            seen[family] = "allowed"
        except OSError as error:
            seen[family] = errno.errorcode[error.errno]
    return seen
"""

# The free space of the file system below a file of the lab's data (the machine's disk).
FREE_SPACE = """
import errno, os
def free_space(path):
    try:
        return os.statvfs(path).f_bfree
    except OSError as error:
        return errno.errorcode[error.errno]
"""

# The kernel's log, and the machine's event counters: whether a worker may ask for them at all.
KERNEL_WIDE = """
import ctypes, errno, os
def kernel_wide():
    libc = ctypes.CDLL(None, use_errno=True)
    numbers = {"x86_64": {"syslog": 103, "perf_event_open": 298},
               "aarch64": {"syslog": 116, "perf_event_open": 241}}[os.uname().machine]
    def outcome(result):
        return "allowed" if result >= 0 else errno.errorcode[ctypes.get_errno()]
    attributes = ctypes.create_string_buffer(128)  # struct perf_event_attr: a software clock of this process
    ctypes.c_uint32.from_buffer(attributes, 0).value = 1  # PERF_TYPE_SOFTWARE; config 0 = CPU clock
    ctypes.c_uint32.from_buffer(attributes, 4).value = 128
    return {"syslog": outcome(libc.syscall(numbers["syslog"], 10, None, 0)),  # SYSLOG_ACTION_SIZE_BUFFER
            "perf_event_open": outcome(libc.syscall(numbers["perf_event_open"], attributes, 0, -1, -1, 0))}
"""

# What a worker can read of /proc: each top-level entry but its processes' own folders.
PROC = """
import os
def proc_seen():
    seen = {}
    for name in sorted(os.listdir("/proc")):
        path = "/proc/" + name
        if name.isdigit() or name in ("self", "thread-self"):
            continue
        if os.path.islink(path):
            seen[name] = "link to " + os.readlink(path)
        elif os.path.isdir(path):
            seen[name] = len(os.listdir(path))
        else:
            try:  # without waiting: a root process reading kmsg waits for the kernel's next message
                f = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                try:
                    seen[name] = len(os.read(f, 4096))
                finally:
                    os.close(f)
            except OSError as error:
                seen[name] = error.strerror
    seen["cpu_count()"], seen["affinity"] = os.cpu_count(), len(os.sched_getaffinity(0))
    with open("/proc/cpuinfo", "rb") as f:
        seen["MHz in cpuinfo"] = b"MHz" in f.read()
    with open("/proc/self/stat") as f:
        seen["own stat"] = len(f.read())
    try:  # the same counters through sysinfo(2): the load, free memory, the number of processes
        seen["getloadavg()"] = os.getloadavg()
    except OSError:
        seen["getloadavg()"] = 0
    return seen
"""
# The file systems of a worker's mounts, each with one mount point; less the lab's data below
# /submission, which is the worker's own copy, made for it and read by no other worker.
MOUNTS = """
def file_systems():
    found = {}
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        point, kind = fields[4], fields[fields.index("-") + 1]
        if not point.startswith("/submission/"):
            found.setdefault(kind, point)
    return found
"""
IN_MEMORY = {"tmpfs", "devtmpfs", "proc", "devpts"}  # no page cache that could be empty: nothing to time

COUNTERS = ("loadavg", "stat", "meminfo", "vmstat", "diskstats", "interrupts", "uptime")


def probe_one(folder, pool, hidden, source, call):
    """What `call` (a function defined by `source`) returns in one sandboxed worker of `folder`."""
    worker = Worker(folder, Limits(), True, pool, hidden)
    try:
        assert isinstance(worker.process, Forked) == (pool is not None)
        assert "ok" in worker.ask({"op": "run", "source": source}, 60)
        reply = worker.ask({"op": "probe", "source": f"def probe():\n    return str({call}())\n", "args": {}}, 60)
        return eval(reply["value"]["value"])  # a literal of strings, numbers and None
    finally:
        worker.close()


def run_pair(folder, pool, hidden):
    """Start two workers in folders of `folder`, let the first write, and return what the second
    reads while both live."""
    folders = [folder / "writer", folder / "reader"]
    for made in folders:
        made.mkdir()
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


def refused(seen):
    return {"lock range": "EPERM", "flock": "EPERM", "inotify": "EPERM", "keyring": "EPERM"} == seen


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
@pytest.mark.parametrize("hidden", [(), WITHOUT_PYTORCH], ids=["with-pytorch", "without-pytorch"])
def test_a_worker_reads_nothing_another_one_set(tmp_path, pool, warm, hidden):
    seen = run_pair(tmp_path, pool if warm else None, hidden)
    assert refused(seen), seen


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
@pytest.mark.parametrize("hidden", [(), WITHOUT_PYTORCH], ids=["with-pytorch", "without-pytorch"])
def test_a_worker_cannot_ask_which_pages_are_in_memory(tmp_path, pool, warm, hidden):
    seen = probe_one(tmp_path, pool if warm else None, hidden, RESIDENCY, "residency")
    assert set(seen.values()) == {"EPERM"}, seen


def test_a_plain_process_can_ask_which_pages_are_in_memory():
    """The control: unconfined, each of those calls does its work (io_uring where the machine allows it)."""
    read = subprocess.run([sys.executable, "-c", RESIDENCY + "\nprint(repr(residency()))"],
                          capture_output=True, text=True, check=True)
    seen = eval(read.stdout)
    assert {seen[call] for call in ("preadv2", "pwritev2", "cachestat", "io_setup")} == {"allowed"}, seen


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
@pytest.mark.parametrize("hidden", [(), WITHOUT_PYTORCH], ids=["with-pytorch", "without-pytorch"])
def test_a_worker_sees_no_host_counters_in_proc(tmp_path, pool, warm, hidden):
    """Every entry of /proc but the worker's own is empty, or links to its own; the processor's
    description stays, without its current frequency, and so does what Python reads of the CPUs."""
    seen = probe_one(tmp_path, pool if warm else None, hidden, PROC, "proc_seen")
    assert seen.pop("cpuinfo") > 0 and not seen.pop("MHz in cpuinfo"), seen
    assert seen.pop("own stat") > 0
    assert seen.pop("cpu_count()") in {os.cpu_count(), seen.pop("affinity")}
    assert seen.pop("mounts") == "link to self/mounts" and seen.pop("net") == "link to self/net"
    assert set(COUNTERS) <= set(seen) and set(seen.values()) == {0}, seen


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
@pytest.mark.parametrize("hidden", [(), WITHOUT_PYTORCH], ids=["with-pytorch", "without-pytorch"])
def test_a_worker_opens_no_network_socket(tmp_path, pool, warm, hidden):
    """Not even in its own empty network namespace: the packets it would send there are counted
    with every other namespace's, in counters that later workers could read."""
    seen = probe_one(tmp_path, pool if warm else None, hidden, SOCKETS, "sockets")
    assert seen.pop("AF_UNIX") == "allowed" and set(seen.values()) == {"EPERM"}, seen


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_a_worker_without_pytorch_reads_only_files_held_in_memory(tmp_path, pool, warm):
    """Its system, Python and grader's files are the private copy (autograder/isolation/private_root.py):
    no file of the machine's, whose page cache a worker with PyTorch could have filled, is there."""
    found = probe_one(tmp_path, pool if warm else None, WITHOUT_PYTORCH, MOUNTS, "file_systems")
    assert set(found) <= IN_MEMORY, found


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_a_worker_with_pytorch_reads_the_machines_files(tmp_path, pool, warm):
    """The control: a worker with an oracle reads the machine's own files, from its disk."""
    found = probe_one(tmp_path, pool if warm else None, (), MOUNTS, "file_systems")
    assert set(found) - IN_MEMORY, found


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_a_file_a_worker_with_pytorch_reads_is_not_one_a_worker_without_it_can(tmp_path, pool, warm):
    """The same path, another file: json's source, which both kinds import."""
    where = f"import json, os\ndef where():\n    found = os.stat({SHARED})\n    return (found.st_dev, found.st_ino)\n"
    host = os.stat(json.__file__)
    assert probe_one(tmp_path, pool if warm else None, (), where, "where") == (host.st_dev, host.st_ino)
    assert probe_one(tmp_path, pool if warm else None, WITHOUT_PYTORCH, where, "where")[0] != host.st_dev


def mapped_devices(pid):
    """The devices (major numbers) of the files that the process `pid` maps: 0 for tmpfs."""
    with open(f"/proc/{pid}/maps") as maps:
        return {int(fields[3].split(":")[0], 16) for fields in map(str.split, maps) if len(fields) > 5
                and fields[5].startswith("/")}


def test_the_zygote_without_pytorch_maps_only_files_held_in_memory(pool):
    """A forked worker faults in pages of what its zygote mapped: they must be the copy's too."""
    assert pool.zygote(WITHOUT_PYTORCH) is not None and pool.zygote(()) is not None
    assert mapped_devices(pool.zygotes[WITHOUT_PYTORCH].process.pid) == {0}
    assert mapped_devices(pool.zygotes[()].process.pid) - {0}  # the control: the machine's own files


# Four files of the standard library that no worker imports: the oracle's message names one.
CANDIDATES = [str(Path(json.__file__).parent.parent / name) for name in
              ("this.py", "antigravity.py", "tabnanny.py", "sndhdr.py")]
# The reader's key for each candidate: first how much its own read took from the disk (its count of
# blocks read in, which only a page-cache miss moves), then how long the read took. On the machine's
# own files the count decides, however busy the machine is, where a time alone is lost whenever the
# reader is preempted inside the read; where every candidate is in memory only the time is left.
FIRST_READS = f"""
import os, resource, time
def first_reads():
    taken = []
    for path in {CANDIDATES!r}:
        f = os.open(path, os.O_RDONLY)
        blocks = resource.getrusage(resource.RUSAGE_SELF).ru_inblock
        started = time.perf_counter_ns()
        os.pread(f, 4096, 0)
        taken.append((resource.getrusage(resource.RUSAGE_SELF).ru_inblock - blocks,
                      time.perf_counter_ns() - started))
        os.close(f)
    return taken
def read(index):
    with open({CANDIDATES!r}[index], "rb") as f:
        return len(f.read(4096))
"""


def evict(paths):
    """Drop the pages of `paths` from the page cache, as time or memory pressure would. A page that
    readahead is still filling is locked and would be kept: reading the whole file first waits
    for it."""
    for path in paths:
        f = os.open(path, os.O_RDONLY)
        try:
            while os.read(f, 1 << 16):
                pass
            os.posix_fadvise(f, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(f)


TRIALS = [*range(len(CANDIDATES))] * 2  # the candidate read in each; chance names all eight once in 4**8


def decoded(folder, pool, reader_hidden):
    """For each of TRIALS: the page cache emptied of the candidates, a worker with PyTorch reads
    that one, and a worker of `reader_hidden` names the one whose first read took fewest blocks
    from the disk, and of those the fastest. How many it names right."""
    for name in ("oracle", "reader"):
        (folder / name).mkdir()
    oracle = Worker(folder / "oracle", Limits(), True, pool, ())
    reader = Worker(folder / "reader", Limits(), True, pool, reader_hidden)
    try:
        for worker in (oracle, reader):
            assert "ok" in worker.ask({"op": "run", "source": FIRST_READS}, 60)
        right = 0
        for index in TRIALS:
            evict(CANDIDATES)
            assert "ok" in oracle.ask({"op": "probe", "source": f"def probe():\n    return read({index})\n",
                                       "args": {}}, 60)
            taken = reader.ask({"op": "probe", "source": "def probe():\n    return str(first_reads())\n",
                                "args": {}}, 60)
            keys = eval(taken["value"]["value"])
            right += keys.index(min(keys)) == index
        return right
    finally:
        oracle.close()
        reader.close()


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_a_worker_without_pytorch_times_no_first_read_a_worker_with_it_made(tmp_path, pool, warm):
    """Each guess is as good as chance: the four files it reads are the copy's, all in memory."""
    assert decoded(tmp_path, pool if warm else None, WITHOUT_PYTORCH) < len(TRIALS)


def test_a_worker_with_pytorch_tells_which_file_another_one_read(tmp_path):
    """The control: where both read the machine's files, the file read first is found each time,
    by a count that no load on the machine moves."""
    assert decoded(tmp_path, None, ()) == len(TRIALS)


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
@pytest.mark.parametrize("hidden", [(), WITHOUT_PYTORCH], ids=["with-pytorch", "without-pytorch"])
def test_a_worker_cannot_ask_how_full_the_disks_are(tmp_path, pool, warm, hidden):
    """Its own folders, or the disk below the lab's data that it reads, whose count of free
    blocks every write on the machine moves."""
    (tmp_path / "data.csv").write_text("x\n1\n")
    worker = Worker(tmp_path, Limits(), True, pool if warm else None, hidden)
    try:
        assert "ok" in worker.ask({"op": "run", "source": FREE_SPACE}, 60)
        for path in ("/submission/data.csv", "/tmp", "/"):
            reply = worker.ask({"op": "probe", "source": f"def probe():\n    return free_space({path!r})\n",
                                "args": {}}, 60)
            assert reply["value"]["value"] == "EPERM", (path, reply)
    finally:
        worker.close()


def test_a_copy_left_mounted_by_a_killed_grader_is_unmounted_by_the_next(tmp_path):
    """The copy lives in memory: left behind by each killed run, copies would fill it."""
    ended = subprocess.Popen(["true"])
    ended.wait()
    left, ours = tmp_path / "left", tmp_path / "ours"
    for folder, pid in ((left, ended.pid), (ours, os.getpid())):
        folder.mkdir()
        mount(f"{private_root.SOURCE}{pid}", folder, "tmpfs", 0, "size=1m")
    try:
        private_root.sweep()
        assert not os.path.ismount(left) and os.path.ismount(ours)
    finally:
        for folder in (left, ours):
            if os.path.ismount(folder):
                subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
@pytest.mark.parametrize("hidden", [(), WITHOUT_PYTORCH], ids=["with-pytorch", "without-pytorch"])
def test_a_worker_cannot_ask_for_the_kernel_log_or_event_counters(tmp_path, pool, warm, hidden):
    seen = probe_one(tmp_path, pool if warm else None, hidden, KERNEL_WIDE, "kernel_wide")
    assert set(seen.values()) == {"EPERM"}, seen


def test_a_plain_process_can_ask_for_the_kernel_log_and_event_counters():
    """The control: unconfined (and root), both calls do their work."""
    read = subprocess.run([sys.executable, "-c", KERNEL_WIDE + "\nprint(repr(kernel_wide()))"],
                          capture_output=True, text=True, check=True)
    assert set(eval(read.stdout).values()) == {"allowed"}, read.stdout


def test_a_plain_process_sees_the_host_counters():
    """The control: unconfined, the same probe reads the machine's live counters."""
    read = subprocess.run([sys.executable, "-c", PROC + "\nprint(repr(proc_seen()))"],
                          capture_output=True, text=True, check=True)
    seen = eval(read.stdout)
    assert all(seen[name] > 0 for name in COUNTERS) and seen["sys"] > 0, seen
    assert len(seen["getloadavg()"]) == 3
    assert os.statvfs(tempfile.gettempdir()).f_bfree > 0


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


# What a worker sees of /dev/shm, where the machine's copy lies (autograder/isolation/shared_copy.py).
SHM = f"""
import os
def shm_seen():
    return {{"/dev/shm": sorted(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else [],
            "the copies' folder": os.path.exists({str(shared_copy.copies())!r}),
            "mounted from it": [fields[4] for fields in map(str.split, open("/proc/self/mountinfo"))
                                if {shared_copy.FOLDER!r} in fields[3]]}}
"""


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
@pytest.mark.parametrize("hidden", [(), WITHOUT_PYTORCH], ids=["with-pytorch", "without-pytorch"])
def test_no_worker_sees_dev_shm_and_only_one_without_pytorch_reads_the_copy(tmp_path, pool, warm, hidden):
    """/dev/shm, which holds the machine's copy, is not a worker's: a worker with PyTorch cannot
    reach the copy at all, one without it only through the mounts at the system's paths."""
    seen = probe_one(tmp_path, pool if warm else None, hidden, SHM, "shm_seen")
    assert seen["/dev/shm"] == [] and not seen["the copies' folder"], seen
    assert bool(seen["mounted from it"]) == (hidden == WITHOUT_PYTORCH), seen


def test_grading_processes_share_one_copy_that_only_root_may_enter():
    """Made by the first, reused by the second: the copy costs its time and memory once per machine."""
    show = "from autograder.isolation.sandbox import private_copy\nprint(private_copy().system)"
    found = {subprocess.run([sys.executable, "-c", show], capture_output=True, text=True, check=True).stdout
             for _ in range(2)}
    assert len(found) == 1 and Path(found.pop().strip()).parent == shared_copy.copies()
    assert shared_copy.in_memory(shared_copy.SHARED) and shared_copy.copies().stat().st_mode & 0o777 == 0o700


def test_a_copy_in_use_is_kept_and_the_oldest_unused_ones_go(tmp_path, monkeypatch):
    monkeypatch.setattr(shared_copy, "SHARED", tmp_path)
    shared_copy.copies().mkdir()
    names = ("used", "oldest", "older", "newer", "ours")
    for age, name in enumerate(names):
        (shared_copy.copies() / name).mkdir()
        os.utime(shared_copy.copies() / name, (age, age))
    ended = subprocess.Popen(["true"])
    ended.wait()
    left = [shared_copy.copies() / f"{shared_copy.BUILDING}{pid}-x" for pid in (ended.pid, os.getpid())]
    for folder in left:
        folder.mkdir()
    shared_copy.held(shared_copy.copies() / "used.lock")  # as a running grader holds it
    shared_copy.prune("ours")
    assert sorted(path.name for path in shared_copy.copies().iterdir() if path.is_dir()) == \
        sorted(["used", "newer", "ours", left[1].name])


def test_a_maker_that_loses_the_race_uses_the_winners_copy(tmp_path, monkeypatch):
    monkeypatch.setattr(shared_copy, "SHARED", tmp_path)
    mount("tmpfs", tmp_path, "tmpfs", 0, "size=1m")
    try:
        def make(folder):
            (folder / "mine").touch()
            (shared_copy.copies() / "key").mkdir()  # another process renamed its copy first
            (shared_copy.copies() / "key" / "theirs").touch()

        made = shared_copy.copy("key", lambda: 0, make)
        assert [path.name for path in made.iterdir()] == ["theirs"]
        assert not [path for path in shared_copy.copies().iterdir() if path.name.startswith(".")]
    finally:
        subprocess.run(["umount", "--lazy", str(tmp_path)], check=True)  # the lock it holds keeps it busy


def test_a_grader_makes_its_own_copy_where_dev_shm_is_not_in_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(shared_copy, "SHARED", tmp_path)
    assert shared_copy.copy("key", lambda: 0, pytest.fail) is None


def test_a_grader_makes_its_own_copy_where_dev_shm_is_too_small(tmp_path, monkeypatch):
    monkeypatch.setattr(shared_copy, "SHARED", tmp_path)
    mount("tmpfs", tmp_path, "tmpfs", 0, "size=1m")
    try:
        assert shared_copy.copy("key", lambda: 1 << 20, pytest.fail) is None
    finally:
        subprocess.run(["umount", "--lazy", str(tmp_path)], check=True)  # the lock it holds keeps it busy


# Grades as a process that cannot use /dev/shm: what a worker without PyTorch reads, and from where.
ITS_OWN_COPY = f"""
import sys
from pathlib import Path
from autograder.isolation import shared_copy
shared_copy.SHARED = Path(sys.argv[1])  # not a tmpfs
from autograder.isolation.sandbox import WITHOUT_PYTORCH, Limits, Worker, private_copy
worker = Worker(Path(sys.argv[2]), Limits(), True, None, WITHOUT_PYTORCH)
assert "ok" in worker.ask({{"op": "run", "source": {MOUNTS!r}}}, 60)
reply = worker.ask({{"op": "probe", "source": "def probe():\\n    return str(file_systems())\\n", "args": {{}}}}, 60)
print(reply["value"]["value"])
print(private_copy().system)
worker.close()
"""


def test_without_dev_shm_a_grading_process_makes_its_own_copy_in_memory(tmp_path):
    (tmp_path / "shm").mkdir()
    (tmp_path / "work").mkdir()
    ran = subprocess.run([sys.executable, "-c", ITS_OWN_COPY, str(tmp_path / "shm"), str(tmp_path / "work")],
                         capture_output=True, text=True, check=True)
    found, system = ran.stdout.splitlines()
    assert set(eval(found)) <= IN_MEMORY, found
    assert Path(system).name == "private-root" and not (tmp_path / "shm" / shared_copy.FOLDER).exists()


def test_the_libraries_the_copy_takes_are_those_ldd_finds():
    """The copy runs `ldd` on one object per library it needs from outside (private_root.traced_objects):
    for an extension module, what that finds is what `ldd` finds of it."""
    import _ssl
    module = Path(_ssl.__file__)
    needed, _ = private_root.dynamic_entries(module)
    listed = subprocess.run(["ldd", str(module)], capture_output=True, text=True, check=True).stdout
    assert needed and all(name in listed for name in needed), (needed, listed)
    paths = {words[2] for words in map(str.split, listed.splitlines()) if len(words) > 2 and words[1] == "=>"}
    assert paths <= private_root.libraries_needed([module], Path("/nowhere"))
