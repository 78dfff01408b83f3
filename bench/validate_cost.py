"""What `nbgrader validate` costs on each lab's solved notebook, with the last cell as built (it
does nothing where nbgrader runs the notebook: course/check_cell.py) and as it was (it ran the
student's check, a second run of the whole notebook in a fresh kernel), alternately in one command.

    python -m bench.validate_cost [--rounds 2] [--lab LAB]     (from the repository root)

Prints, per lab, the least wall and CPU seconds of a validate each way (CPU of every process it
starts, its kernels included: bench/cpu.py) and the ratios built / before. Both must pass.
"""
import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat
from nbgrader.utils import compute_checksum

from bench.cpu import run
from build_student import build
from course.check_cell import CHECK_CELL_ID
from course.labs import find_labs

NBGRADER_CLAUSE = ' or os.environ.get("NBGRADER_EXECUTION")'


def as_before(folder, lab):
    """The solved notebook in `folder` with its last cell as it was: the check run under nbgrader too."""
    path = folder / lab.name / f"{lab.name}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    cell = next(c for c in notebook.cells if c.get("id") == CHECK_CELL_ID)
    assert NBGRADER_CLAUSE in cell.source, "the built cell no longer reads NBGRADER_EXECUTION as this bench expects"
    cell.source = cell.source.replace(NBGRADER_CLAUSE, "")
    cell.metadata.nbgrader["checksum"] = compute_checksum(cell)  # as the release it came from had it
    nbformat.write(notebook, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--lab", action="append", help="only these labs (default: every lab)")
    args = parser.parse_args()
    nbgrader = Path(sys.executable).with_name("nbgrader")
    labs = [lab for lab in find_labs() if not args.lab or lab.name in args.lab]
    with tempfile.TemporaryDirectory() as scratch:
        folders = {"built": Path(scratch) / "built", "before": Path(scratch) / "before"}
        build(folders["built"], solved=True)
        shutil.copytree(folders["built"], folders["before"])
        for lab in labs:
            as_before(folders["before"], lab)
            measured = {name: [] for name in folders}
            for _ in range(args.rounds):
                for name, folder in folders.items():
                    done = run([nbgrader, "validate", f"{lab.name}.ipynb"], cwd=folder / lab.name)
                    assert "Success! Your notebook passes all the tests." in done.stdout, (name, done.stdout[-2000:])
                    measured[name].append(done)
            (wall, cpu), (wall0, cpu0) = ((min(m.wall for m in measured[n]), min(m.cpu for m in measured[n]))
                                          for n in folders)
            print(f"{lab.name}: nbgrader validate of the solved notebook (least of {args.rounds}, CPU by "
                  f"{measured['built'][-1].counted})")
            print(f"  last cell as before: wall {wall0:6.1f} s, CPU {cpu0:6.1f} s")
            print(f"  last cell as built:  wall {wall:6.1f} s, CPU {cpu:6.1f} s   ratio wall {wall / wall0:.2f}, "
                  f"CPU {cpu / cpu0:.2f}")


if __name__ == "__main__":
    main()
