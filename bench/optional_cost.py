"""What a lab's optional activities add to grading one submission: the solved notebook against
the same notebook with the optional answers left as their stubs (their hidden checks then stop
at the first call), graded alternately in one process, warm pool as in a batch.

    python -m bench.optional_cost [--rounds 5] [--lab LAB ...]     (from the repository root)
"""
import argparse
import statistics
import tempfile
import time
from pathlib import Path

import nbformat

from autograder.grade import Options, grade
from autograder.sandbox import Pool
from autograder.warm import lab_imports
from course.labs import find_labs
from course.release import solved_notebook, student_notebook


def variants(lab, folder):
    """Paths of the solved notebook and of the one with only the required activities done."""
    release = student_notebook(lab)
    solved = solved_notebook(lab, release)
    required = nbformat.from_dict(solved)
    stubs = {cell.id: cell.source for cell in release.cells}
    for cell in required.cells:
        if cell.id.endswith("-answer") and lab.activities[cell.id.removesuffix("-answer")].optional:
            cell.source = stubs[cell.id]
    paths = {"solved": folder / "solved.ipynb", "required only": folder / "required.ipynb"}
    nbformat.write(solved, paths["solved"])
    nbformat.write(required, paths["required only"])
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--lab", action="append", help="only these labs (default: every lab)")
    args = parser.parse_args()
    labs = [lab for lab in find_labs() if not args.lab or lab.name in args.lab]
    pool = Pool.launch(lab_imports())
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for lab in labs:
                paths = variants(lab, Path(scratch))
                times = {name: [] for name in paths}
                probes = {name: [] for name in paths}
                for round_number in range(args.rounds + 1):  # round 0 warms caches and zygotes
                    for name, path in paths.items():
                        started = time.perf_counter()
                        result, _ = grade(path, Options(pool=pool))
                        if round_number:
                            times[name].append(time.perf_counter() - started)
                            probes[name].append(result["extra_data"]["phases"]["probes"])
                optional = sorted(a.id for a in lab.activities.values() if a.optional)
                solved, required = (statistics.median(times[name]) for name in paths)
                print(f"{lab.name}: optional {', '.join(optional)}; median of {args.rounds} rounds")
                print(f"  solved {solved:.2f} s (probes {statistics.median(probes['solved']):.2f} s), "
                      f"required only {required:.2f} s (probes {statistics.median(probes['required only']):.2f} s), "
                      f"ratio {solved / required:.2f}")
    finally:
        if pool is not None:
            pool.close()


if __name__ == "__main__":
    main()
