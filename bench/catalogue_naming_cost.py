"""What it costs to show that a lab's catalogue is caught and names itself. The suite graded every
catalogued mistake twice: once whole, on the seed its notebook's bytes give, for the catalogue
(tests/test_mistakes.py), and once more, its own activity on the first fingerprint seed, for the
diagnosis (`fingerprints.measure`, with 60 s a case). The catalogue now grades each mistake on a
fingerprint seed (`catalogue.catalogue_seed`) and reads the grader's own diagnosis from that one
grading. Both ways run alternately in one process with one warm pool, the visible checks
included, on the first N mistakes of each lab (all of them by default).

    python -m bench.catalogue_naming_cost [--rounds 1] [--lab LAB ...] [--first N]     (from the repository root)

Prints the wall seconds and CPU seconds of every process (bench/cpu.py's `counted`) for each way,
the ratios now / before, and asserts that both catch the same mistakes and name the same ones.
"""
import argparse
import time
from dataclasses import replace

from autograder.diagnosis.matching import FINGERPRINT_SEEDS
from autograder.grading.batch import warm
from autograder.grading.grade import Options
from autograder.isolation.sandbox import Limits, Pool
from autograder.isolation.warm import lab_imports
from autograder.labs import grading_for
from autograder.measuring import catalogue
from autograder.measuring.fingerprints import measure
from bench.cpu import counted
from bench.ratios import report
from course.labs import find_labs


def before(lab_name, mistakes, options):
    """(caught, named) the old way: the catalogue on its bytes' seeds, then the measure."""
    grading = grading_for(lab_name)
    with warm(replace(options, rejudge=False)) as warmed:
        rows = catalogue._run_mistakes(grading.lab, mistakes, warmed, 2, True, [None] * len(mistakes))
    measured = measure(lab_name, [(m, m.description) for m in mistakes], FINGERPRINT_SEEDS[0],
                       replace(options, limits=Limits(cell_seconds=60)), jobs=2)
    return [row.grader_caught for row in rows], [m.right or m.stopped for m in measured]


def now(lab_name, mistakes, options):
    rows = catalogue.run_catalogue(lab_name, options, jobs=2, only={m.description for m in mistakes})
    return [row.grader_caught for row in rows], [row.mistake.description in row.named or row.stopped for row in rows]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--lab", action="append", help="only these labs (default: every lab)")
    parser.add_argument("--first", type=int, help="only the first N mistakes of each lab")
    args = parser.parse_args()
    ways = {"before": before, "now": now}
    pool = Pool.launch(lab_imports)
    try:
        for lab in find_labs():
            if args.lab and lab.name not in args.lab:
                continue
            mistakes = grading_for(lab.name).mistakes[:args.first]
            options = Options(Limits(cell_seconds=30), pool=pool)
            walls, cpus, verdicts = ({name: [] for name in ways} for _ in range(3))
            for _ in range(args.rounds):
                for name, way in ways.items():
                    with counted() as cpu:
                        started = time.perf_counter()
                        verdicts[name].append(way(lab.name, mistakes, options))
                        walls[name].append(time.perf_counter() - started)
                        cpus[name].append(cpu.seconds())
            assert all(v == verdicts["now"][0] for runs in verdicts.values() for v in runs), \
                f"{lab.name}: the two ways disagree on what is caught or named"
            print(f"{lab.name}: {len(mistakes)} mistakes, median of {args.rounds} round(s)")
            report(walls, cpus, "now", "before", indent="  ")
    finally:
        pool.close()


if __name__ == "__main__":
    main()
