"""Time the notebook tools, each next to its baseline, in one run:

* executing each instructor notebook in a fresh kernel, and grading its solved version, next
  to importing the heavy modules the labs use;
* `python build_student.py` for all labs, next to `nbgrader generate_assignment` on each lab.

    python -m bench.notebook_tools [--lab LAB ...]     (from the repository root; every lab
                                                        when none is named)
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from build_student import build as build_release
from course.labs import find_labs

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def timed(command, cwd):
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, capture_output=True, env=env)
    return time.perf_counter() - started


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lab", action="append", help="a lab of source/ (repeatable)")
    names = parser.parse_args(argv).lab or [lab.name for lab in find_labs()]
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        build_release(scratch / "solved", solved=True)
        imports = timed([sys.executable, "-c", "import torch, sklearn, pandas, matplotlib"], ROOT)
        print(f"import torch, sklearn, pandas, matplotlib:     {imports:6.1f} s   (the baseline)")
        for name in names:
            lab = ROOT / "source" / name
            execute = timed([sys.executable, "-c", "import jupytext; from autodiff_check.execute import execute; "
                             f"execute(jupytext.read({str(lab / f'{name}.py')!r}), {str(lab)!r})"], ROOT)
            grade = timed([sys.executable, "-m", "autograder", "grade", scratch / "solved" / name / f"{name}.ipynb",
                           "--out", scratch / "graded" / name], ROOT)
            print(f"{name}: execute the instructor notebook {execute:6.1f} s ({execute / imports:.1f}x the imports); "
                  f"grade its solved notebook {grade:5.1f} s ({grade / imports:.1f}x)")
        build = timed([sys.executable, "build_student.py", "--release", scratch / "release"], ROOT)
        print(f"python build_student.py (all labs):            {build:6.1f} s")
        for name in names:
            course = scratch / "course" / name
            (course / "source").mkdir(parents=True)
            shutil.copytree(ROOT / "source" / name, course / "source" / name)
            (course / "nbgrader_config.py").write_text("c = get_config()\n")
            generate = timed([BIN / "nbgrader", "generate_assignment", name, "--force"], course)
            print(f"nbgrader generate_assignment {name}: {generate:6.1f} s")
    for name in names:
        notebook = (ROOT / "release" / name / f"{name}.ipynb").stat().st_size
        folder = sum(p.stat().st_size for p in (ROOT / "release" / name).rglob("*") if p.is_file())
        print(f"release/{name}/: {folder / 1024:.0f} KiB, of which the notebook {notebook / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
