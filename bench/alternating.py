"""The loop the grading benches share: each lab's solved notebook graded under several gradings
(functions like `grading_for`, one of them the real one), alternately in one process with a warm
pool as in a batch, so that a noisy machine slows every variant alike."""
import argparse
import statistics
import tempfile
import time
from pathlib import Path

import autograder.grading.grade
from autograder.grading.grade import Options, grade
from autograder.isolation.sandbox import Pool
from autograder.isolation.warm import lab_imports
from autograder.labs import grading_for
from build_student import build
from course.labs import find_labs


def arguments(doc):
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--lab", action="append", help="only these labs (default: every lab)")
    return parser.parse_args()


def alternate(args, gradings, cpu=None):
    """Yield (lab, {name: median seconds}) per lab, for `gradings` {name: grading function}.
    Round 0 warms caches and zygotes and is not counted; every grading must give the solved
    notebook all its points, or the comparison would be of different work. `cpu`, a dict, gets
    {lab name: {name: median CPU seconds}}: the workers' as the grader counts a submission's, and
    this process's own (drawing the cases, judging), which the wall time alone would hide on a
    loaded machine."""
    labs = [lab for lab in find_labs() if not args.lab or lab.name in args.lab]
    pool = Pool.launch(lab_imports)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            build(Path(scratch), solved=True)
            for lab in labs:
                notebook = Path(scratch) / lab.name / f"{lab.name}.ipynb"
                full = sum(a.points for a in lab.activities.values())
                times = {name: [] for name in gradings}
                used = {name: [] for name in gradings}
                for round_number in range(args.rounds + 1):
                    for name, grading in gradings.items():
                        autograder.grading.grade.grading_for = grading
                        started, own = time.perf_counter(), time.process_time()
                        result, _ = grade(notebook, Options(pool=pool))
                        if round_number:
                            times[name].append(time.perf_counter() - started)
                            used[name].append(time.process_time() - own + result["extra_data"]["cpu_seconds"])
                        assert result["score"] == full, (name, result["output"])
                if cpu is not None:
                    cpu[lab.name] = {name: statistics.median(seconds) for name, seconds in used.items()}
                yield lab, {name: statistics.median(seconds) for name, seconds in times.items()}
    finally:
        autograder.grading.grade.grading_for = grading_for
        if pool is not None:
            pool.close()
