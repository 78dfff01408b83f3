"""Run a command and count the CPU seconds of every process it starts, as the kernel counts them.

The command runs in a control group of its own (cgroup v1's cpuacct, where the grader nests its
workers' groups: autograder/isolation/cgroups.py), so the count takes in the grader, its zygotes, the
sandboxed workers that no process waits for, and nbgrader's kernels alike, and nothing that
runs beside it. Where no such group can be made, the count is what the command's own process
tree reports to its parent (getrusage of the children), which misses the grader's sandboxed
workers: `Measured.counted` says which it is.

`counted()` counts a block of this process instead: the process itself and all it starts there
(a cluster, and the commands sent to it), read as often as wanted; it needs the group.
"""
import os
import resource
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from autograder.isolation.cgroups import own_groups

CPUACCT = Path("/sys/fs/cgroup/cpuacct")


@dataclass(frozen=True)
class Measured:
    wall: float
    cpu: float
    counted: str  # "control group" or "children's rusage"
    stdout: str


def _group():
    if os.geteuid() != 0 or not (CPUACCT / "tasks").exists():
        return None
    folder = CPUACCT / f"bench-{uuid.uuid4().hex[:12]}"
    try:
        folder.mkdir()
    except OSError:
        return None
    return folder


def run(command, cwd, env=None):
    """Run `command` to its end; SystemExit naming it when it fails."""
    group = _group()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()

    def enter():  # between fork and exec: the command and all it starts are counted in `group`
        fd = os.open(group / "cgroup.procs", os.O_WRONLY)
        os.write(fd, b"%d\n" % os.getpid())
        os.close(fd)

    try:
        done = subprocess.run([str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True,
                              preexec_fn=enter if group is not None else None)
        wall = time.perf_counter() - started
        if group is not None:
            cpu, counted = int((group / "cpuacct.usage").read_text()) / 1e9, "control group"
        else:
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            counted = "children's rusage"
    finally:
        if group is not None:
            for _ in range(100):
                try:
                    group.rmdir()
                    break
                except OSError:  # a process of the command may still be on its way out
                    time.sleep(0.05)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, command))} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return Measured(wall, cpu, counted, done.stdout)


class Counted:
    """A cpuacct group that this process joined: .seconds() is the CPU time of every process in it
    and in the groups below it, since it was made."""

    def __init__(self, folder):
        self.folder = folder

    def seconds(self):
        return int((self.folder / "cpuacct.usage").read_text()) / 1e9


def _own_cpuacct():
    """This process's cpuacct group, as a folder of the hierarchy."""
    return CPUACCT / own_groups().get("cpuacct", "")


def _join(folder):
    (folder / "cgroup.procs").write_text(f"{os.getpid()}\n")


@contextmanager
def counted():
    """Move this process into a fresh cpuacct group for the block, so that every process it starts
    from then on, and every process those start, is counted there; the grader makes its sandbox
    groups below its own (autograder/isolation/cgroups.py), so they are counted too. On leaving, this
    process goes back where it was and the group is removed once its processes are gone."""
    group = _group()
    if group is None:
        raise SystemExit(f"counting CPU needs a cgroup v1 cpuacct hierarchy at {CPUACCT} and root to make a group "
                         f"there (running as uid {os.geteuid()})")
    home = _own_cpuacct()
    try:
        _join(group)
        yield Counted(group)
    finally:
        _join(home)
        remove(group)


def remove(group):
    """The cpuacct group `group` and the groups below it, once the processes in them are gone."""
    left = sorted((p for p in group.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
    for folder in [*left, group]:  # the deepest first: a group with groups below it cannot go
        for _ in range(100):
            try:
                folder.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:  # a process in it may still be on its way out
                time.sleep(0.05)
        else:
            print(f"bench/cpu.py: could not remove {folder}: processes are still in it", file=sys.stderr)
