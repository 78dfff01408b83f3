"""What the sandbox costs: grade the solved notebook with and without bubblewrap, alternating.

    python -m bench.sandbox_cost [--rounds 5]     (from the repository root)
"""
import argparse
import statistics
import tempfile
import time
from pathlib import Path

from autograder.grading.grade import Options, grade
from build_student import build

LAB = "pt03_autodiff"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as scratch:
        build(Path(scratch), solved=True)
        notebook = Path(scratch) / LAB / f"{LAB}.ipynb"
        grade(notebook)  # warm the caches (PyTorch's answers, imported modules) before timing
        times = {True: [], False: []}
        for _ in range(rounds):
            for sandboxed in (True, False):
                started = time.perf_counter()
                result, _ = grade(notebook, Options(sandboxed=sandboxed))
                times[sandboxed].append(time.perf_counter() - started)
                assert result["score"] == 18, result
    inside, outside = statistics.median(times[True]), statistics.median(times[False])
    print(f"median grading time of the solved notebook over {rounds} rounds:")
    print(f"  with bubblewrap:                  {inside:.2f} s")
    print(f"  without bubblewrap:               {outside:.2f} s")
    print(f"  sandbox cost: {inside - outside:+.2f} s per submission ({inside / outside:.2f}x)")


if __name__ == "__main__":
    main()
