"""What naming the known mistake costs (autograder/diagnosis/matching.py): a mixed class of each lab (the
solved and blank notebooks, and per activity one catalogued mistake and one of the lab's
variants) graded with diagnosis on and off, alternately in one process with a warm pool as in a
batch, so that a noisy machine slows both alike. Prints the medians over rounds of the class's
wall time and of its CPU time (the workers' control groups, as the grader counts a submission's
time, plus this process's own, where the matching runs), and their ratios.

    python -m bench.diagnosis_cost [--rounds 5] [--lab LAB ...]     (from the repository root)
"""
import statistics
import tempfile
import time
from pathlib import Path

import nbformat

from autograder.grading.grade import Options, grade
from autograder.isolation.sandbox import Pool
from autograder.isolation.warm import lab_imports
from autograder.labs import grading_for
from autograder.measuring.catalogue import mistaken
from autograder.measuring.fingerprints import variant_answers
from bench.alternating import arguments
from autograder.labs.notebooks import solved_notebook, student_notebook
from build_student import build
from course.labs import find_labs


def mixed_class(lab, folder, scratch):
    """The class's notebooks, written into `folder`."""
    grading = grading_for(lab.name)
    solved = solved_notebook(lab, student_notebook(lab))
    answers = [next(m for m in grading.mistakes if m.activity == a) for a in lab.activities]
    answers += [next((v for v, _ in variant_answers(lab.name) if v.activity == a), None) for a in lab.activities]
    paths = [scratch / "solved" / lab.name / f"{lab.name}.ipynb", scratch / "release" / lab.name / f"{lab.name}.ipynb"]
    for number, answer in enumerate(filter(None, answers)):
        path = folder / f"{lab.name}-wrong-{number:02d}.ipynb"
        nbformat.write(mistaken(lab, solved, answer)[1], path)
        paths.append(path)
    return paths


def grade_class(paths, options):
    """(wall seconds, CPU seconds, diagnoses made) for grading `paths` one after another."""
    wall, own = time.perf_counter(), time.process_time()
    workers, named = 0.0, 0
    for path in paths:
        result, _ = grade(path, options)
        workers += result["extra_data"].get("cpu_seconds", 0.0)
        named += len(result["extra_data"].get("diagnoses", {}))
    return time.perf_counter() - wall, workers + time.process_time() - own, named


def main():
    args = arguments(__doc__)
    pool = Pool.launch(lab_imports)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            scratch = Path(scratch)
            build(scratch / "solved", solved=True)
            build(scratch / "release")
            for lab in find_labs():
                if args.lab and lab.name not in args.lab:
                    continue
                folder = scratch / f"class-{lab.name}"
                folder.mkdir()
                paths = mixed_class(lab, folder, scratch)
                runs = {True: [], False: []}
                for round_number in range(args.rounds + 1):  # round 0 warms caches and is not counted
                    for diagnose in ((True, False) if round_number % 2 else (False, True)):
                        measured = grade_class(paths, Options(pool=pool, diagnose=diagnose))
                        if round_number:
                            runs[diagnose].append(measured)
                on, off = ({part: statistics.median(run[part] for run in runs[flag]) for part in (0, 1)}
                           for flag in (True, False))
                print(f"{lab.name}: a class of {len(paths)} notebooks, {runs[True][0][2]} activities named; "
                      f"median of {args.rounds} rounds")
                print(f"  wall: diagnosis on {on[0]:.2f} s, off {off[0]:.2f} s, ratio {on[0] / off[0]:.3f}")
                print(f"  CPU:  diagnosis on {on[1]:.2f} s, off {off[1]:.2f} s, ratio {on[1] / off[1]:.3f}")
    finally:
        pool.close()


if __name__ == "__main__":
    main()
