"""How well and how fast the similarity check (autograder/similarity/) finds copies.

First the measure, on the class of tests/similarity_class.py, one class per disguise and lab:
precision and recall of the similar pairs against the copied ones, where each disguised copy
ranks among all the class's pairs, and the best score a pair of independent authors reaches.
Then the cost: a class of STUDENTS students per lab (drawn from those classes), as the command
meets it, `autograder similarity GRADED` on a results folder of records and their notebooks
(reading the notebooks included), wall and CPU seconds per lab; and the comparison alone (the
answers already read).

    python -m bench.similarity_cost [--students 1000] [--lab LAB]     (from the repository root)
"""
import argparse
import contextlib
import io
import json
import tempfile
import time
from pathlib import Path

from autograder.__main__ import main as autograder
from autograder.labs import course_labs
from autograder.similarity.classwide import lab_similarity
from autograder.similarity.engine import code_fragments, every_hash
from tests.helpers import ROOT, lab_notebook, read
from tests.similarity_class import DISGUISES, LAB_NAMES, crowd, disguised_class
from tests.submissions import save, with_answer


def timed(work):
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def measure(lab):
    """Per disguise: (precision, precision without pairs of two catalogue students, recall,
    [(copied pair, rank, score)], best independent score). Two catalogue students are the same
    solved answer each with a slip: similar in fact, copied from one text, though not by a student."""
    rows = {}
    for kind in DISGUISES:
        students, copies = disguised_class(lab, kind)
        similarity = lab_similarity(lab, students)
        flagged = {(first, second) for first, second, _ in similarity.flagged()}
        ranked = sorted(similarity.best_scores().items(), key=lambda item: -item[1])
        places = {pair: (rank, score) for rank, (pair, score) in enumerate(ranked, 1)}
        found = flagged & copies
        authored = {pair for pair in flagged if not all(s.startswith("mistake") for s in pair)}
        independent = [score for pair, score in ranked if pair not in copies and
                       not any(s.startswith("mistake") for s in pair)]
        rows[kind] = (len(found) / len(flagged) if flagged else 1.0, len(found) / len(authored) if authored else 1.0,
                      len(found) / len(copies),
                      [(pair, *places.get(pair, (None, 0.0))) for pair in sorted(copies)],
                      max(independent, default=0.0))
    return rows


def forget_read_answers():
    """Empty the caches of answers already cut into fragments: each timing reads its class afresh."""
    code_fragments.cache_clear()
    every_hash.cache_clear()


def write_graded(out, lab, students):
    """A results folder of `students` ({student: {activity: answer}}) of `lab`: each record as the
    grader writes what the similarity check reads of it, and its notebook."""
    release = read(lab_notebook(ROOT / "release", lab))
    notebooks = out / "submitted"
    notebooks.mkdir(parents=True)
    for student, answers in students.items():
        notebook = release
        for activity, code in answers.items():
            notebook = with_answer(notebook, activity, code)
        path = save(notebook, notebooks, student)
        (out / student).mkdir()
        (out / student / f"{lab.name}.json").write_text(json.dumps(
            {"status": "graded", "score": 0, "tests": [], "execution_time": 1.0, "output": "",
             "extra_data": {"student": student, "lab": lab.name, "path": str(path)}}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=1000, help="students per lab")
    parser.add_argument("--lab", action="append", choices=LAB_NAMES, help="a lab to measure (default: all)")
    args = parser.parse_args()
    for name in args.lab or LAB_NAMES:
        lab = course_labs()[name]
        print(f"== {name}: precision, recall, where each copy ranks among the class's pairs (rank, score)")
        for kind, (precision, authored, recall, places, independent) in measure(lab).items():
            ranks = ", ".join(f"{pair[0] if pair[1].startswith('copy') else pair[1]} #{rank} {score:.2f}"
                              for pair, rank, score in places)
            print(f"  {kind:24} precision {precision:.2f} ({authored:.2f} without pairs of catalogue students) "
                  f"recall {recall:.2f}   {ranks}   "
                  f"best independent pair {independent:.2f}")
        students = crowd(lab, args.students)
        forget_read_answers()
        similarity, wall, cpu = timed(lambda: lab_similarity(lab, students))
        print(f"  comparison of {args.students} students' answers: wall {wall:.2f} s, CPU {cpu:.2f} s, "
              f"{len(similarity.pairs)} pairs scored, {len(similarity.flagged())} similar")
        with tempfile.TemporaryDirectory() as scratch:
            write_graded(Path(scratch), lab, students)
            forget_read_answers()
            with contextlib.redirect_stdout(io.StringIO()):
                _, wall, cpu = timed(lambda: autograder(["similarity", scratch, "--lab", name]))
        print(f"  `autograder similarity` on {args.students} graded notebooks (reading them included): "
              f"wall {wall:.2f} s, CPU {cpu:.2f} s")


if __name__ == "__main__":
    main()
