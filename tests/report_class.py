"""A class for the class report (tests/test_class_report.py): fourteen students and the course's
three labs, 41 submissions in nbgrader's layout, drawn from each lab's catalogue of mistakes
(two students making the same one), its variants, and the solved and blank notebooks, with late
work, work handed in within the grace period, a notebook of another lab, broken files, a lab never
handed in, a stub left unanswered, two mistakes at once and one answer that hangs."""
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

from autograder.labs import grading_for
from autograder.measuring.catalogue import patched
from autograder.measuring.fingerprints import variants
from tests.helpers import LABS, lab_notebook, read
from tests.submissions import answer_cell, replaced_function, save, with_answer

DUE = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
COURSE_FILE = "[late]\nper = \"day\"\npenalty = 0.1\ngrace_minutes = 10\n\n" + "".join(
    f"[labs.{lab.name}]\ndue = {DUE.isoformat()}\n\n" for lab in LABS)
STUDENTS = [f"r{number:02d}" for number in range(1, 15)]
# What each student hands in, lab by lab (the same for every lab unless a lab's index says else).
KINDS = {"r01": "solved-in-grace", "r02": "solved-late", "r03": "blank", "r04": "other-lab", "r05": "broken",
         "r06": "mistake-0", "r07": "mistake-0", "r08": "mistake-1", "r09": "mistake-2", "r10": "variant-0",
         "r11": "variant-1", "r12": "two-mistakes", "r13": "missing-last", "r14": "hanging"}
# When a kind is handed in, from the due date; every other an hour before it.
HANDED_AT = {"solved-late": timedelta(hours=30), "solved-in-grace": timedelta(minutes=5)}
NOT_HANDED = {("r05", 2)}  # the student never handed in the third lab
HANGS_IN = {0}  # the hanging answer only in the first lab: each costs a cell's time limit


def first_mistakes(lab):
    """The catalogue's first mistake of each activity, in the notebook's order."""
    mistakes = grading_for(lab.name).mistakes
    return [next(m for m in mistakes if m.activity == a) for a in lab.activities
            if any(m.activity == a for m in mistakes)]


def with_mistake(notebook, lab, mistake):
    return with_answer(notebook, mistake.activity,
                       patched(answer_cell(notebook, mistake.activity).source, mistake.code))


def notebook_for(kind, index, solved, blank, other):
    lab = LABS[index]
    firsts = first_mistakes(lab)
    if kind.startswith("solved") or (kind == "hanging" and index not in HANGS_IN):
        return solved
    if kind == "blank":
        return blank
    if kind == "other-lab":
        return other
    if kind.startswith("mistake-"):
        return with_mistake(solved, lab, firsts[int(kind.rpartition("-")[2])])
    if kind.startswith("variant-"):
        by = {m.description: m for m in grading_for(lab.name).mistakes}
        written = variants(lab.name)
        # Two variants of different activities.
        picked = [written[0], next(v for v in written if by[v.of].activity != by[written[0].of].activity)]
        variant = picked[int(kind.rpartition("-")[2])]
        activity = by[variant.of].activity
        return with_answer(solved, activity, patched(answer_cell(solved, activity).source, variant.code))
    if kind == "two-mistakes":
        return with_mistake(with_mistake(solved, lab, firsts[0]), lab, firsts[-1])
    if kind == "missing-last":
        last = list(lab.activities)[-1]
        return with_answer(solved, last, answer_cell(blank, last).source)
    if kind == "hanging":
        second = list(lab.activities.values())[1]
        return with_answer(solved, second.id, replaced_function(second, "while True:\n    pass"))
    return None  # broken


def build_report_class(folder, solved_dir, release_dir):
    """The class's submitted/ folder and course file under `folder`; returns the submitted/ folder."""
    submitted = Path(folder) / "submitted"
    for index, lab in enumerate(LABS):
        solved, blank = read(lab_notebook(solved_dir, lab)), read(lab_notebook(release_dir, lab))
        other = read(lab_notebook(solved_dir, LABS[(index + 1) % len(LABS)]))
        for student in STUDENTS:
            if (student, index) in NOT_HANDED:
                continue
            kind = KINDS[student]
            target = submitted / student / lab.name
            target.mkdir(parents=True, exist_ok=True)
            notebook = notebook_for(kind, index, solved, blank, other)
            if notebook is None:  # a file cut short: half of a notebook's JSON
                text = read(lab_notebook(release_dir, lab))
                (target / f"{lab.name}.ipynb").write_text(str(dict(text))[:500] if index else "not a notebook")
            else:
                save(notebook, target, lab.name)
            moment = DUE + HANDED_AT.get(kind, timedelta(hours=-1))
            (target / "timestamp.txt").write_text(moment.strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
            written = (moment - timedelta(minutes=1)).timestamp()  # saved before it was handed in, as it is honestly
            os.utime(target / f"{lab.name}.ipynb", (written, written))
    (Path(folder) / "course.toml").write_text(COURSE_FILE)
    return submitted


def submissions_in(submitted):
    return sorted(Path(submitted).glob("*/*/*.ipynb"))
