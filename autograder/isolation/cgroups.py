"""A control group per worker: caps the number of processes and the memory of everything the
submission starts, counts the CPU time they use, and finds every one of those processes again
to kill it, including those that left the worker's session. Needs a writable cgroup file system (root on Linux); without
one the grader falls back on per-process rlimits and process groups, and says so (docs/security.md, "Without the sandbox").
"""
import os
import signal
import time
import uuid
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def own_groups():
    """{controller: path of this process's group in that cgroup v1 hierarchy, relative to it}."""
    own = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(","):
                own[controller] = path.lstrip("/")
    except (OSError, ValueError):
        pass
    return own


def _v1_dirs():
    """Where a worker's group goes in each cgroup v1 hierarchy: below the grader's own group,
    so that whatever counts or caps the grader (a benchmark, a service manager, a container)
    counts and caps its workers too; at the hierarchy's root where that folder is not ours."""
    own, found = own_groups(), {}
    for name in ("pids", "memory", "cpuacct"):
        root = CGROUP_ROOT / name
        if (root / "tasks").exists():
            nested = root / own.get(name, "")
            found[name] = nested if os.access(nested / "cgroup.procs", os.W_OK) else root
    return found


def available():
    """True when control groups can be created here."""
    try:
        group = ControlGroup(processes=8, memory_bytes=1 << 30)
    except OSError:
        return False
    group.remove()
    return True


class ControlGroup:
    def __init__(self, processes, memory_bytes):
        self.name = f"autograder-{uuid.uuid4().hex[:12]}"
        self.dirs, self._cpu, self._memory, self.memory_bytes = [], None, None, memory_bytes
        if (CGROUP_ROOT / "cgroup.controllers").exists():  # cgroup v2: one unified tree
            folder = CGROUP_ROOT / self.name
            folder.mkdir()
            self.dirs = [folder]
            self._cpu = (folder / "cpu.stat", self._v2_cpu)
            self._memory = folder / "memory.current"
            self._write(folder / "pids.max", processes)
            self._write(folder / "memory.max", memory_bytes)
        else:
            v1 = _v1_dirs()
            if not {"pids", "memory"} <= set(v1):
                raise OSError("no pids and memory control groups here")
            if "cpuacct" in v1:
                self._cpu = (v1["cpuacct"] / self.name / "cpuacct.usage", lambda text: int(text) / 1e9)
            for root in v1.values():
                folder = root / self.name
                folder.mkdir()
                self.dirs.append(folder)
            self._write(v1["pids"] / self.name / "pids.max", processes)
            self._write(v1["memory"] / self.name / "memory.limit_in_bytes", memory_bytes)
            self._memory = v1["memory"] / self.name / "memory.usage_in_bytes"

    @staticmethod
    def _v2_cpu(text):
        fields = dict(line.split() for line in text.splitlines() if line.strip())
        return int(fields["usage_usec"]) / 1e6

    def cpu_seconds(self):
        """CPU time used so far by every process of the group, or None where it is not counted."""
        if self._cpu is None:
            return None
        path, parse = self._cpu
        try:
            return parse(path.read_text())
        except (OSError, KeyError, ValueError):
            return None

    def memory_in_use(self):
        """Bytes of memory the group's processes hold now, or None where it is not counted."""
        try:
            return None if self._memory is None else int(self._memory.read_text())
        except (OSError, ValueError):
            return None

    def active_seconds(self):
        """{thread id: seconds it has run or waited to run} for every thread in the group, from the
        kernel's /proc/<tid>/schedstat (time on a CPU, time runnable on a run queue). A thread
        that is neither sleeps: what the wall-clock backstop is for (sandbox.WALL_FACTOR). {}
        where the group's threads cannot be listed."""
        found = {}
        for folder in self.dirs[:1]:
            listing = folder / ("cgroup.threads" if (folder / "cgroup.threads").exists() else "tasks")
            try:
                threads = listing.read_text().split()
            except OSError:
                return found
            for tid in threads:
                try:
                    running, waiting = Path(f"/proc/{tid}/schedstat").read_text().split()[:2]
                    found[tid] = (int(running) + int(waiting)) / 1e9
                except (OSError, ValueError):
                    continue  # ended meanwhile
        return found

    @staticmethod
    def _write(path, value):
        path.write_text(f"{value}\n")

    def join(self):
        """Move the calling process in. Runs between fork and exec, so only plain system calls."""
        for folder in self.dirs:
            fd = os.open(folder / "cgroup.procs", os.O_WRONLY)
            try:
                os.write(fd, b"%d\n" % os.getpid())
            finally:
                os.close(fd)

    def pids(self):
        found = set()
        for folder in self.dirs:
            try:
                found |= {int(line) for line in (folder / "cgroup.procs").read_text().split()}
            except OSError:
                pass
        return found

    def kill_all(self):
        """SIGKILL every process in the group until none is left (forks may race the first pass)."""
        for _ in range(100):
            alive = self.pids()
            if not alive:
                return
            for pid in alive:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.02)

    def remove(self):
        self.kill_all()
        for folder in self.dirs:
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except OSError:  # busy until the last killed process is reaped
                    time.sleep(0.02)
