"""What reading the selected cell costs the JupyterLab tests. A test walks to a cell with the arrow
keys and reads the status bar's "Cell 13/49" after every press, hundreds of times a walk
(tests/jupyterlab.py, NotebookTab.show). The read looked for that text in the whole page; it
now looks among the status bar's items only. Both ways run tests/test_jupyterlab.py in a pytest
of their own, alternately, each process counted (bench/cpu.py): the browser, the kernels, the
server and pytest.

    python -m bench.jupyterlab_walk_cost [--rounds 1] [-k EXPRESSION]     (from the repository root)

`-k` picks the tests (default: pt03_autodiff's and the last cell's). Prints each way's median
wall seconds and CPU seconds and the ratios now / before.
"""
import argparse
import os
import re
import sys

from bench.cpu import run
from bench.ratios import report

WAY = "BENCH_JUPYTERLAB_WALK"


def pytest_configure(config):
    """Loaded with `-p bench.jupyterlab_walk_cost`: the way before, where the environment asks for it."""
    if os.environ.get(WAY) != "before":
        return
    from tests.jupyterlab import NotebookTab

    def active(self):
        text = self.page.get_by_text(re.compile(r"^Cell \d+/\d+$")).inner_text()
        return int(re.fullmatch(r"Cell (\d+)/\d+", text.strip()).group(1)) - 1

    NotebookTab.active = active


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("-k", default="pt03 or last_cell")
    args = parser.parse_args()
    walls, cpus = {"before": [], "now": []}, {"before": [], "now": []}
    for _ in range(args.rounds):
        for way in walls:
            measured = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "bench.jupyterlab_walk_cost",
                            "-q", "tests/test_jupyterlab.py", "-k", args.k], cwd=".", env={**os.environ, WAY: way})
            walls[way].append(measured.wall)
            cpus[way].append(measured.cpu)
            print(f"{way}: {measured.wall:.1f} s wall, {measured.cpu:.1f} s CPU ({measured.counted}); "
                  f"{measured.stdout.strip().splitlines()[-1]}", flush=True)
    print(f"median of {args.rounds} round(s):")
    report(walls, cpus, "now", "before")


if __name__ == "__main__":
    main()
