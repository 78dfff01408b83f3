"""Time the notebook tools, each next to its baseline, in one run:

* executing the instructor notebook in a fresh kernel, next to importing its heavy modules;
* `python build_student.py` for all labs, next to `nbgrader generate_assignment` on the same
  notebook.

    python -m bench.notebook_tools     (from the repository root)
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
LAB = "pt03_autodiff"


def timed(command, cwd):
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, capture_output=True, env=env)
    return time.perf_counter() - started


def main():
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        imports = timed([sys.executable, "-c", "import torch, sklearn, pandas, matplotlib"], ROOT)
        lab = ROOT / "source" / LAB
        execute = timed([sys.executable, "-c", "import jupytext; from course.execute import execute; "
                         f"execute(jupytext.read({str(lab / f'{LAB}.py')!r}), {str(lab)!r})"], ROOT)
        build = timed([sys.executable, "build_student.py", "--release", scratch / "release"], ROOT)
        course = scratch / "course"
        (course / "source").mkdir(parents=True)
        shutil.copytree(ROOT / "source" / LAB, course / "source" / LAB)
        (course / "nbgrader_config.py").write_text("c = get_config()\n")
        generate = timed([BIN / "nbgrader", "generate_assignment", LAB, "--force"], course)
        size = sum(p.stat().st_size for p in (ROOT / "release").rglob("*") if p.is_file())
        notebook = (ROOT / "release" / LAB / f"{LAB}.ipynb").stat().st_size
    print(f"import torch, sklearn, pandas, matplotlib:        {imports:6.1f} s")
    print(f"execute the instructor notebook (fresh kernel):   {execute:6.1f} s")
    print(f"python build_student.py (all labs):               {build:6.1f} s")
    print(f"nbgrader generate_assignment (same notebook):     {generate:6.1f} s")
    print(f"release/: {size / 1024:.0f} KiB in all, of which the notebook {notebook / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
