"""Where the test suite's CPU goes: each test's CPU seconds, counting every process it starts (its
gradings' sandboxed workers, zygotes, kernels, JupyterLab and Chromium, Dask clusters, the CPU
hogs of the cold re-runs), setup included, summed by test function and by module.

    python -m bench.suite_cpu [--top 30] [PYTEST ARGS...]     (from the repository root, as root)

It runs `python -m pytest -p bench.suite_cpu PYTEST ARGS` (`-n 3 --dist loadscope` as `make test`,
when no `-n` is given). As a plugin, each pytest process (the controller and every xdist worker)
moves itself into a cgroup v1 cpuacct group of its own, which every process it starts then
inherits (the grader nests its workers' groups below it), and writes one line per test: the
group's CPU seconds over the test's setup, call and teardown. A process of one test that lives on
into the next (a session's warm pool) is counted in whichever test is running. This counts what
`/usr/bin/time` misses (the sandboxed workers, which nobody waits for) and nothing that runs
beside the suite.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from bench.cpu import CPUACCT, _join, _own_cpuacct, remove

OUT = "SUITE_CPU_OUT"  # the folder the plugin writes its lines to


def pytest_configure(config):
    folder = os.environ.get(OUT)
    if folder is None:
        return
    home, group = _own_cpuacct(), CPUACCT / f"suite-{uuid.uuid4().hex[:12]}"
    group.mkdir()
    _join(group)
    who = os.environ.get("PYTEST_XDIST_WORKER", "controller")
    config._suite_cpu = (group, open(Path(folder) / f"{who}.jsonl", "a"), home)
    config._suite_cpu[1].write(json.dumps({"group": str(group)}) + "\n")


def pytest_unconfigure(config):
    counting = getattr(config, "_suite_cpu", None)
    if counting is not None:
        counting[1].close()
        _join(counting[2])  # back where it came from; `main` removes the group once it is empty


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    counting = getattr(item.config, "_suite_cpu", None)
    if counting is None:
        yield
        return
    group, lines, _ = counting
    used = lambda: int((group / "cpuacct.usage").read_text()) / 1e9  # noqa: E731
    cpu, wall = used(), time.perf_counter()
    yield
    lines.write(json.dumps({"test": item.nodeid, "cpu": used() - cpu, "wall": time.perf_counter() - wall}) + "\n")
    lines.flush()


def tables(rows, top):
    """The largest test functions (their parameters summed) and modules, by CPU seconds."""
    by_test, by_module = collections.Counter(), collections.Counter()
    walls, counts = collections.Counter(), collections.Counter()
    for row in rows:
        name = re.sub(r"\[.*", "", row["test"])
        by_test[name] += row["cpu"]
        walls[name] += row["wall"]
        counts[name] += 1
        by_module[row["test"].partition("::")[0]] += row["cpu"]
    print(f"{len(rows)} tests, {sum(by_test.values()):.0f} s of CPU, {sum(walls.values()):.0f} s of their own wall time")
    print(f"{'CPU s':>8} {'wall s':>8} {'runs':>5}  test")
    for name, seconds in by_test.most_common(top):
        print(f"{seconds:8.0f} {walls[name]:8.0f} {counts[name]:5d}  {name}")
    print(f"{'CPU s':>8}  module")
    for name, seconds in by_module.most_common(top):
        print(f"{seconds:8.0f}  {name}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--top", type=int, default=30)
    args, pytest_args = parser.parse_known_args()
    if os.geteuid() != 0 or not (CPUACCT / "tasks").exists():
        raise SystemExit(f"counting a test's CPU needs root and a cgroup v1 cpuacct hierarchy at {CPUACCT}")
    if not any(arg == "-n" or arg.startswith("-n") and arg[2:].isdigit() for arg in pytest_args):
        pytest_args = ["-n", "3", "--dist", "loadscope", *pytest_args]
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run([sys.executable, "-m", "pytest", "-p", "bench.suite_cpu", *pytest_args],
                              env={**os.environ, OUT: folder})
        rows = [json.loads(line) for path in Path(folder).glob("*.jsonl") for line in path.read_text().splitlines()]
    for row in rows:
        if "group" in row:
            remove(Path(row["group"]))
    tables([row for row in rows if "test" in row], args.top)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
