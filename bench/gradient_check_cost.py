"""What tensor_engine's networks for gradient_check cost (activity 4's `checked` probe, which runs
apart: every use of the submission's objects crosses the line). They were built of a node per
parameter and the engine's own matmul, add and relu, some thirty crossings per forward pass, and
a checker runs two forward passes per parameter entry; they are now one node whose value and
backward rule the probe computes in NumPy (probes._Bent). The lab's sample (the first catalogued
mistake of each activity, as bench/grader_overhead.py grades it) is graded with the committed
probes and with the network of an earlier revision (read from git), alternately in one process
with a warm pool.

    python -m bench.gradient_check_cost [--rounds 3] [--before REV]     (from the repository root)

Prints the median wall seconds and CPU seconds of every process (the grader, the submission's
workers and the reference workers that run the apart probes: bench/cpu.py's `counted`), and the
ratios committed / before. Both must grade every sample alike, activity by activity.
"""
import argparse
import statistics
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import replace
from functools import partial

import autograder.grading.grade as grade_module
from autograder.grading.grade import Options, grade
from autograder.isolation.sandbox import Pool
from autograder.isolation.warm import lab_imports
from autograder.labs import grading_for
from bench.cpu import counted
from bench.grader_overhead import sample
from course.labs import ROOT, find_labs

LAB = "tensor_engine"
PROBES = "autograder/labs/tensor_engine/probes.py"


def network_at(rev):
    """The text of probes._Bent at revision `rev` of this repository."""
    old = subprocess.run(["git", "show", f"{rev}:{PROBES}"], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout
    return old[old.index("class _Bent:"):old.index("class _Network:")]


def with_network(probes, network):
    return probes[:probes.index("class _Bent:")] + network + probes[probes.index("class _Network:"):]


@contextmanager
def as_before(network):
    real = grade_module.grading_for

    def before(name, seed=None):
        grading = real(name, seed)
        return replace(grading, probes=with_network(grading.probes, network)) if name == LAB else grading

    grade_module.grading_for = before
    try:
        yield
    finally:
        grade_module.grading_for = real


@contextmanager
def as_committed():
    yield


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", default="82df365", help="a revision with the network as it was (default: "
                                                            "the last one before the cut)")
    args = parser.parse_args()
    lab = next(lab for lab in find_labs() if lab.name == LAB)
    variants = {"committed": as_committed, "before": partial(as_before, network_at(args.before))}
    walls, cpus, scores = ({name: [] for name in variants} for _ in range(3))
    pool = Pool.launch(lab_imports)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            paths = sample(lab, scratch)
            grading_for(LAB)  # the lab's cases and imports, before anything is counted
            for round_number in range(args.rounds + 1):  # round 0 warms the zygotes and is not counted
                for name, variant in variants.items():
                    with variant(), counted() as cpu:
                        started = time.perf_counter()
                        got = [[t["score"] for t in grade(path, Options(pool=pool))[0]["tests"]] for path in paths]
                        wall, seconds = time.perf_counter() - started, cpu.seconds()
                    scores[name].append(got)
                    if round_number:
                        walls[name].append(wall)
                        cpus[name].append(seconds)
    finally:
        pool.close()
    assert all(got == scores["committed"][0] for runs in scores.values() for got in runs), "they must grade alike"
    print(f"{LAB}: {len(paths)} mistakes (the first of each activity), median of {args.rounds} rounds")
    median = {name: (statistics.median(walls[name]), statistics.median(cpus[name])) for name in variants}
    for name in ("before", "committed"):
        print(f"  {name + ':':<11} {median[name][0]:.2f} s wall, {median[name][1]:.2f} s CPU (every process)")
    (wall, cpu), (wall0, cpu0) = median["committed"], median["before"]
    print(f"  ratios committed / before: wall {wall / wall0:.2f}, CPU {cpu / cpu0:.2f}")


if __name__ == "__main__":
    main()
