"""What one hanging answer costs a submission: grade pt03_autodiff's solved notebook and the same
notebook with `while True` in `relu_vjp` (activity 1c, which A, B and C call), in one command.

    python -m bench.hang_cost [--cell-timeout 10] [--rounds 2]     (from the repository root)

The figure that matters is the extra CPU the hanging notebook costs over the solved one, counted
in cell limits: each time a worker runs into the loop it spends one whole limit. CPU is read
from /proc/stat (every core's busy time, so the sandboxed workers, which the grading command does
not reap itself, are counted too); run it on an otherwise quiet machine, and trust the ratio
more than the seconds. Wall time is printed beside it.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from build_student import build
from tests.helpers import ROOT
from tests.submissions import with_answer

LAB = "pt03_autodiff"
HANGING_RELU = ("def tanh_vjp(y, v):\n    return v * (1.0 - y * y)\n\n\n"
                "def relu_vjp(x, v):\n    while True:\n        pass\n")


def busy_seconds():
    """Every core's non-idle time since boot, in seconds."""
    fields = [int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def grade_once(notebook, out, cell_timeout):
    """(wall seconds, CPU seconds, result) of grading `notebook` alone with --jobs 1."""
    cpu, started = busy_seconds(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(notebook), "--out", str(out), "--jobs",
                           "1", "--cell-timeout", str(cell_timeout), "--regrade"], cwd=ROOT, capture_output=True,
                          text=True)
    wall, cpu = time.perf_counter() - started, busy_seconds() - cpu
    if done.returncode != 0:
        raise SystemExit(f"grading {notebook} failed:\n{done.stdout}\n{done.stderr}")
    (result,) = [json.loads(path.read_text()) for path in Path(out).glob("*/*.json")]
    return wall, cpu, result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cell-timeout", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        build(scratch / "solved", solved=True)
        solved = nbformat.read(scratch / "solved" / LAB / f"{LAB}.ipynb", as_version=4)
        notebooks = {"solved": scratch / "solved.ipynb", "hanging-relu": scratch / "hanging-relu.ipynb"}
        nbformat.write(solved, notebooks["solved"])
        nbformat.write(with_answer(solved, "1c", HANGING_RELU), notebooks["hanging-relu"])
        measured = {name: [] for name in notebooks}
        for _ in range(args.rounds):  # alternating, so that a change in the machine's load hits both
            for name, notebook in notebooks.items():
                measured[name].append(grade_once(notebook, scratch / f"out-{name}", args.cell_timeout))
    for name, runs in measured.items():
        wall, cpu = min(run[0] for run in runs), min(run[1] for run in runs)
        scores = {test["name"]: test["score"] for test in runs[-1][2]["tests"]}
        charged = min(run[2]["extra_data"]["cpu_seconds"] for run in runs)
        print(f"{name:>13}: wall {wall:6.1f} s, CPU {cpu:6.1f} s, of which the submission's workers {charged:.1f} s "
              f"(least of {args.rounds}); scores {scores}")
    extra_wall = min(r[0] for r in measured["hanging-relu"]) - min(r[0] for r in measured["solved"])
    extra_cpu = min(r[1] for r in measured["hanging-relu"]) - min(r[1] for r in measured["solved"])
    print(f"the hanging answer's extra cost: CPU {extra_cpu:.1f} s = {extra_cpu / args.cell_timeout:.2f} cell limits, "
          f"wall {extra_wall:.1f} s = {extra_wall / args.cell_timeout:.2f} cell limits "
          f"(cell limit {args.cell_timeout:g} s)")
    ratio = min(r[1] for r in measured["hanging-relu"]) / min(r[1] for r in measured["solved"])
    print(f"CPU ratio, hanging / solved: {ratio:.2f}x")


if __name__ == "__main__":
    main()
