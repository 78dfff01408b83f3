"""What the leak check costs a build of the release: `build_student.build` of every lab, with the
leak finder as committed (each source split into lines once, each source's code shapes kept) and
as it was (ast.get_source_segment, which splits the whole source again for every statement it
quotes, and every shape made again for every notebook), alternately in one process.

    python -m bench.leak_check_cost [--rounds 5]     (from the repository root)

Prints the median wall and CPU seconds of a build each way, and the ratios committed / before.
Both ways must write the same files.
"""
import argparse
import ast
import filecmp
import statistics
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from build_student import build
from course import leaks


@contextmanager
def committed():
    leaks.code_shapes.cache_clear()  # a build in a fresh process starts with nothing kept
    yield


@contextmanager
def before():
    segment, shapes = leaks.segment, leaks.code_shapes
    leaks.segment = lambda lines, node: ast.get_source_segment("".join(lines), node)
    leaks.code_shapes = shapes.__wrapped__
    try:
        yield
    finally:
        leaks.segment, leaks.code_shapes = segment, shapes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    ways = {"committed": committed, "before": before}
    walls, cpus = ({name: [] for name in ways} for _ in range(2))
    with tempfile.TemporaryDirectory() as scratch:
        for round_number in range(args.rounds + 1):
            for name, way in ways.items():
                out = Path(scratch) / f"{name}-{round_number}"
                with way():
                    started, cpu = time.perf_counter(), time.process_time()
                    build(out)
                    if round_number:  # round 0 warms the imports and the labs' parsing
                        walls[name].append(time.perf_counter() - started)
                        cpus[name].append(time.process_time() - cpu)
            same = filecmp.dircmp(Path(scratch) / f"committed-{round_number}", Path(scratch) / f"before-{round_number}")
            assert not (same.diff_files or same.left_only or same.right_only), "the two builds differ"
    (wall, cpu), (wall0, cpu0) = ((statistics.median(walls[n]), statistics.median(cpus[n])) for n in ways)
    print(f"a build of every lab, median of {args.rounds} rounds")
    print(f"  before:    {wall0:.2f} s wall, {cpu0:.2f} s CPU")
    print(f"  committed: {wall:.2f} s wall, {cpu:.2f} s CPU")
    print(f"  ratios: wall {wall / wall0:.2f}, CPU {cpu / cpu0:.2f}")


if __name__ == "__main__":
    main()
