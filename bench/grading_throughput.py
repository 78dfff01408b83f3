"""Grade the same classes with our grader and with plain `nbgrader autograde`, in one run.

    python -m bench.grading_throughput [--count 20] [--jobs 2] [--load 2]   (from the repository root)

Two classes: all solved, and a mix of solved, blank and one-activity-wrong submissions. For
each, the script checks that the two graders agree on which activities pass, then prints, for
each grader, the wall time and the CPU seconds of every process it started (bench/cpu.py), the
ratios, and our grader's time by phase. It also runs one solved submission from start to exit,
warm and cold (`--no-pool`), next to importing torch, sklearn, pandas and matplotlib in a fresh
Python (the import floor); `--count 0` measures that alone. `--load N` keeps N CPU-bound
processes running beside it all.

The machine is shared, so only ratios from the same run mean much; CPU seconds move much less
with the load than wall time does, which is why the CPU ratios are the ones to quote.
"""
import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import nbformat

from bench import cpu
from build_student import build
from tests.helpers import ROOT
from tests.submissions import answer_cell, with_answer

LAB = "pt03_autodiff"
BIN = Path(sys.executable).parent
WRONG_RELU = ("def tanh_vjp(y, v):\n    return v * (1 - y * y)\n\n\n"
              "def relu_vjp(x, v):\n    return np.where(x >= 0, v, 0.0)\n")


def the_class(solved, blank):
    """Variants whose mistakes stay inside one activity, so both graders can agree."""
    missing = {a: with_answer(solved, a, answer_cell(blank, a).source) for a in ("A", "B", "C")}
    return [("solved", solved), ("blank", blank), ("wrong-relu", with_answer(solved, "1c", WRONG_RELU)),
            *((f"missing-{a}", nb) for a, nb in missing.items())]


def run(command, cwd):
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}  # nbgrader calls alembic
    return cpu.run(command, cwd, env)


def course_directory(folder, release, students):
    """An nbgrader course: the release as nbgrader's source, and the class under submitted/."""
    (folder / "nbgrader_config.py").write_text(
        "c = get_config()\nc.CourseDirectory.course_id = 'autodiff'\nc.ExecutePreprocessor.timeout = 600\n")
    shutil.copytree(release / LAB, folder / "source" / LAB)
    run([BIN / "nbgrader", "generate_assignment", LAB, "--force"], folder)
    for student, notebook in students:
        target = folder / "submitted" / student / LAB
        shutil.copytree(release / LAB / "data", target / "data")
        # Each file its own bytes, as in a real class: our grader draws a submission's hidden
        # inputs from its bytes, and copies of one file would share (and cache) them.
        own = copy.deepcopy(notebook)
        own.metadata["bench_student"] = student
        nbformat.write(own, target / f"{LAB}.ipynb")


def nbgrader_passes(folder, student):
    notebook = nbformat.read(folder / "autograded" / student / LAB / f"{LAB}.ipynb", as_version=4)
    return {cell.id.removesuffix("-check"): not any(o.output_type == "error" for o in cell.outputs)
            for cell in notebook.cells if cell.id.endswith("-check")}


def ours(submitted, out, jobs, *extra):
    """(Measured, our grader's time-by-phase line) for grading `submitted`."""
    done = run([sys.executable, "-m", "autograder", "grade", submitted, "--out", out, "--jobs", jobs, *extra], ROOT)
    return done, next((line for line in done.stdout.splitlines() if line.startswith("time by phase")), "")


def seconds(measured, count=1):
    """'12.3 s wall, 20.1 s CPU (1.01 s CPU each)'."""
    each = f" ({measured.cpu / count:.2f} s CPU each)" if count > 1 else ""
    return f"{measured.wall:.1f} s wall, {measured.cpu:.1f} s CPU{each}"


@contextmanager
def load(processes):
    """`processes` CPU-bound Pythons running beside the block, outside what it measures."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def compare(name, students, scratch, jobs):
    """Grade one class both ways; return the number of per-activity disagreements."""
    course = scratch / f"class-{name}"
    course.mkdir()
    course_directory(course, scratch / "release", students)
    mine, phases = ours(course / "submitted", scratch / f"ours-{name}", jobs)
    theirs = run([BIN / "nbgrader", "autograde", LAB, "--force"], course)
    disagreements = 0
    for student, _ in students:
        result = json.loads((scratch / f"ours-{name}" / student / f"{LAB}.json").read_text())
        our_passes = {t["name"]: t["status"] == "passed" for t in result["tests"]}
        if our_passes != nbgrader_passes(course, student):
            disagreements += 1
            print(f"disagree on {student}: ours {our_passes}, nbgrader {nbgrader_passes(course, student)}")
    count = len(students)
    print(f"class '{name}', {count} submissions:")
    print(f"  python -m autograder grade --jobs {jobs}: {seconds(mine, count)}")
    print(f"  nbgrader autograde:                 {seconds(theirs, count)}")
    print(f"  nbgrader / ours: CPU {theirs.cpu / mine.cpu:.2f}x, wall {theirs.wall / mine.wall:.2f}x")
    print(f"  ours, {phases}")
    print(f"  per-activity pass/fail disagreements: {disagreements}")
    return disagreements


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=20, help="submissions per class; 0: one submission's runs only")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--load", type=int, default=0, help="CPU-bound processes to run beside the benchmark")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch, load(args.load):
        scratch = Path(scratch)
        build(scratch / "release")
        build(scratch / "solved", solved=True)
        read = lambda folder: nbformat.read(folder / LAB / f"{LAB}.ipynb", as_version=4)  # noqa: E731
        solved = scratch / "solved" / LAB / f"{LAB}.ipynb"
        floor = run([sys.executable, "-c", "import torch, sklearn, pandas, matplotlib"], ROOT)
        warm, _ = ours(solved, scratch / "one-warm", 1)
        cold, _ = ours(solved, scratch / "one-cold", 1, "--no-pool")
        floor_again = run([sys.executable, "-c", "import torch, sklearn, pandas, matplotlib"], ROOT)
        print(f"CPU counted by: {floor.counted}; {args.load} CPU-bound processes beside the benchmark")
        print(f"import floor (import torch, sklearn, pandas, matplotlib): {seconds(floor)}; after the runs below: "
              f"{seconds(floor_again)}")
        for name, measured in (("warm", warm), ("cold (--no-pool)", cold)):
            print(f"one solved submission, whole command, {name}: {seconds(measured)} = "
                  f"{measured.wall / floor.wall:.2f}x the floor's wall, {measured.cpu / floor.cpu:.2f}x its CPU")
        if args.count == 0:
            return 0
        variants = the_class(read(scratch / "solved"), read(scratch / "release"))
        mixed = [(f"s{i:02d}-{variants[i % len(variants)][0]}", variants[i % len(variants)][1])
                 for i in range(args.count)]
        all_solved = [(f"s{i:02d}-solved", variants[0][1]) for i in range(args.count)]
        disagreements = compare("solved", all_solved, scratch, args.jobs) + compare("mixed", mixed, scratch, args.jobs)
        return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
