"""How well and how fast the similarity check (autograder/reports/similarity/) finds copies.

First the measure, on the class of tests/similarity_class.py, one class per disguise and lab:
precision (of the similar pairs, the copied ones), recall of the copies of the written styles
(each one author's form) and of every copy (the solved form's among them, which the class shares
and which is not expected to be found), where each disguised copy ranks among all the class's
pairs, and the best score a pair of independent students reaches. Then the cost: a class of
STUDENTS students per lab (drawn from those classes): the comparison of their answers (read,
indexed and scored), its scoring against the baseline, the same pairs scored by comparing every
pair of answers in full as a tool without an index does (the ratio is the baseline's time over
the index's, CPU seconds); and `autograder similarity GRADED` on a results folder of records and
their notebooks, as the command meets it (reading the notebooks included). Wall and CPU seconds.

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
from autograder.reports.similarity.classwide import lab_similarity
from autograder.reports.similarity.engine import code_fragments, every_hash, rare_cap, scored, scored_pairs
from tests.helpers import ROOT, lab_notebook, read
from tests.similarity_class import COMMON_FORM_COPY, DISGUISES, LAB_NAMES, crowd, disguised_class, one_text
from tests.submissions import save, with_answer


def timed(work):
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def measure(lab):
    """Per disguise: (precision, [(flagged pair of a catalogue mistake written as another, score)],
    recall of the written styles' copies, recall of every copy, [(copied pair, rank, score)],
    best score of an independent pair). Every pair but a copy and its original is independent
    work, a catalogue pair of one text apart: a flagged one counts against precision all the same."""
    rows = {}
    for kind in DISGUISES:
        students, copies = disguised_class(lab, kind)
        similarity = lab_similarity(lab, students)
        flagged = {(first, second) for first, second, _ in similarity.flagged()}
        ranked = sorted(similarity.best_scores().items(), key=lambda item: -item[1])
        places = {pair: (rank, score) for rank, (pair, score) in enumerate(ranked, 1)}
        styles = copies - {COMMON_FORM_COPY}
        one = one_text(lab)
        rows[kind] = (len(flagged & copies) / len(flagged) if flagged else 1.0,
                      [(pair, places[pair][1]) for pair in sorted(flagged & one)],
                      len(flagged & styles) / len(styles), len(flagged & copies) / len(copies),
                      [(pair, *places.get(pair, (None, 0.0))) for pair in sorted(copies)],
                      max((score for pair, score in ranked if pair not in copies | one), default=0.0))
    return rows


def pair_by_pair(indexes):
    """The baseline: scored_pairs of every activity's index without its look-up, each pair of
    answers compared in full (their fragments intersected)."""
    pairs = []
    for index in indexes.values():
        cap, students = rare_cap(len(index.prints)), sorted(index.prints)
        mass = {student: index.mass(student) for student in students}
        for place, first in enumerate(students):
            for second in students[place + 1:]:
                shared = [f for f in index.prints[first].keys() & index.prints[second].keys()
                          if len(index.holders[f]) <= cap]
                weight = sum(index.weight(f) for f in shared)
                if weight > 0:
                    pairs.append(scored(index, (first, second), weight, len(shared), mass))
    return pairs


def summed(pairs):
    """{(activity, first, second, shared): score} of `pairs`, the score to what adding its weights in
    another order leaves alike."""
    return {(p.activity, p.first, p.second, p.shared): round(p.score, 9) for p in pairs}


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
        print(f"== {name}: precision, recall (written styles' copies; every copy), where each copy ranks "
              f"among the class's pairs (rank, score)")
        for kind, (precision, one, recall, every, places, independent) in measure(lab).items():
            ranks = ", ".join(f"{pair[0] if pair[1].startswith('copy') else pair[1]} "
                              + (f"#{rank} {score:.2f}" if rank else "shares no rare fragment") for pair, rank, score in places)
            print(f"  {kind:24} precision {precision:.2f} recall {recall:.2f}; {every:.2f}   {ranks}   "
                  f"best independent pair {independent:.2f}" +
                  (f"   (flagged, a catalogue pair of one text: {', '.join(f'{a} and {b} {x:.2f}' for (a, b), x in one)})"
                   if one else ""))
        students = crowd(lab, args.students)
        forget_read_answers()
        similarity, wall, cpu = timed(lambda: lab_similarity(lab, students))
        print(f"  comparison of {args.students} students' answers: wall {wall:.2f} s, CPU {cpu:.2f} s, "
              f"{len(similarity.pairs)} pairs scored, {len(similarity.flagged())} similar")
        indexed, index_wall, index_cpu = timed(lambda: [p for i in similarity.indexes.values() for p in scored_pairs(i)])
        baseline, base_wall, base_cpu = timed(lambda: pair_by_pair(similarity.indexes))
        assert summed(indexed) == summed(baseline), "the index missed or added a pair"
        print(f"  scoring, the index: wall {index_wall:.2f} s, CPU {index_cpu:.2f} s; the baseline, every pair "
              f"in full: wall {base_wall:.2f} s, CPU {base_cpu:.2f} s ({base_cpu / max(index_cpu, 1e-9):.0f} times "
              f"the index's CPU), the same {len(baseline)} pairs")
        with tempfile.TemporaryDirectory() as scratch:
            write_graded(Path(scratch), lab, students)
            forget_read_answers()
            with contextlib.redirect_stdout(io.StringIO()):
                _, wall, cpu = timed(lambda: autograder(["similarity", scratch, "--lab", name]))
        print(f"  `autograder similarity` on {args.students} graded notebooks (reading them included): "
              f"wall {wall:.2f} s, CPU {cpu:.2f} s")


if __name__ == "__main__":
    main()
