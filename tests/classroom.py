"""A class as a teaching assistant meets it, in nbgrader's layout (submitted/<student>/<lab>/), and
what every record of it must say: six students across the course's labs, with a student who
never handed in a lab, a notebook of one lab in another's folder, a stray file, an unreadable
notebook, one answer that hangs, and nbgrader's timestamp.txt files against due dates, with an
extension, a cap and a cutoff. The scaling tests grade it every way there is (`--jobs 2`, a Dask
cluster, PostgreSQL, interrupted and resumed, re-graded in part) and check the same record."""
import csv
import os
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from autograder.labs import grading_for
from autograder.measuring.catalogue import patched
from autograder.records.results_store import record_path
from tests.helpers import (CELL_TIMEOUT, LABS, all_points, grade_command, lab_notebook, nbgrader_export, read,
                           records_in, required_points)
from tests.submissions import answer_cell, replaced_function, save, with_answer

DUE = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
# The first lab: 10% a started day, at most 50%, nothing after 72 h; the second: 5% a started hour
# (the same cap and cutoff), due a day later; the third has no due date.
COURSE_FILE = f"""
[late]
per = "day"
penalty = 0.1
max_penalty = 0.5
zero_after_hours = 72

[labs.{LABS[0].name}]
due = {DUE.isoformat()}

[labs.{LABS[1].name}]
due = "{(DUE + timedelta(days=1)).strftime('%Y-%m-%d %H:%M')}"
late = {{ per = "hour", penalty = 0.05 }}

[extensions.s03]
{LABS[1].name} = 48
"""


@dataclass(frozen=True)
class Handed:
    """What one student put in one lab's folder, and when (hours after that lab's due date, or
    None: no timestamp.txt, the file's modification time set to `mtime_hours` instead)."""
    student: str
    lab: int  # position in LABS
    kind: str  # solved, blank, missing-last, wrong, hanging, other-lab, not-a-notebook
    hours: float = None
    mtime_hours: float = None
    penalty: float = 0.0  # the fraction the policy takes


HANDED = [
    Handed("s01", 0, "solved", -2), Handed("s01", 1, "solved", -1), Handed("s01", 2, "solved", 5),
    Handed("s02", 0, "solved", 26, penalty=0.2), Handed("s02", 1, "blank", 0.5, penalty=0.05),
    Handed("s02", 2, "missing-last", 1),
    Handed("s03", 0, "wrong", -5), Handed("s03", 1, "solved", 30), Handed("s03", 2, "solved", 0),
    Handed("s04", 0, "missing-last", 80, penalty=1.0), Handed("s04", 1, "wrong", 3, penalty=0.15),
    Handed("s04", 2, "hanging", 2),
    Handed("s05", 0, "other-lab", -1), Handed("s05", 1, "solved", 20, penalty=0.5), Handed("s05", 2, "blank", -3),
    Handed("s06", 0, "solved", mtime_hours=-3), Handed("s06", 1, "not-a-notebook", -1),
]
STRAY = ("s03", 0, "answers.py")
MISSING = [("s05", LABS[0].name), ("s06", LABS[2].name)]  # no notebook of the lab: a wrong lab's, or none


def due_of(lab_index):
    return DUE + timedelta(days=lab_index) if lab_index < 2 else None


def notebook_of(handed, solved_dir, release_dir):
    lab = LABS[handed.lab]
    solved, blank = read(lab_notebook(solved_dir, lab)), read(lab_notebook(release_dir, lab))
    activities = list(lab.activities.values())
    if handed.kind == "solved":
        return solved
    if handed.kind == "blank":
        return blank
    if handed.kind == "missing-last":
        return with_answer(solved, activities[-1].id, answer_cell(blank, activities[-1].id).source)
    if handed.kind == "wrong":
        mistake = grading_for(lab.name).mistakes[0]
        return with_answer(solved, mistake.activity, patched(lab.activities[mistake.activity].reference.source,
                                                             mistake.code))
    if handed.kind == "hanging":  # the second activity's first function loops for ever
        return with_answer(solved, activities[1].id, replaced_function(activities[1], "while True:\n    pass"))
    if handed.kind == "other-lab":
        return read(lab_notebook(solved_dir, LABS[(handed.lab + 1) % len(LABS)]))
    return None  # not-a-notebook


def build_class(folder, solved_dir, release_dir):
    """The class's submitted/ folder and course file under `folder`; returns the submitted/ folder."""
    submitted = Path(folder) / "submitted"
    for handed in HANDED:
        lab = LABS[handed.lab]
        target = submitted / handed.student / lab.name
        target.mkdir(parents=True, exist_ok=True)
        notebook = notebook_of(handed, solved_dir, release_dir)
        path = target / f"{lab.name}.ipynb"
        if notebook is None:
            path.write_text("this is not a notebook")
        else:
            save(notebook, target, lab.name)
        base = due_of(handed.lab) or DUE
        if handed.hours is not None:
            moment = base + timedelta(hours=handed.hours)
            (target / "timestamp.txt").write_text(moment.strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
            written = (moment - timedelta(minutes=1)).timestamp()  # saved before it was handed in, as it is honestly
            os.utime(path, (written, written))
        else:
            moment = (base + timedelta(hours=handed.mtime_hours)).timestamp()
            os.utime(path, (moment, moment))
    student, lab_index, name = STRAY
    (submitted / student / LABS[lab_index].name / name).write_text("def relu_vjp(x, v):\n    return v\n")
    (Path(folder) / "course.toml").write_text(COURSE_FILE)
    return submitted


def grade_class(submitted, *args, given=None):
    """The command that grades the class `submitted` (or the paths `given` in it): with its course
    file, and a cell limit that keeps the one hanging answer cheap."""
    return grade_command(*(given or [submitted]), "--course", Path(submitted).parent / "course.toml",
                         "--cell-timeout", CELL_TIMEOUT, *args)


@dataclass(frozen=True)
class Expected:
    status: str
    required: float = 0  # points earned, before the penalty
    bonus: float = 0
    penalty: float = 0.0

    @property
    def earned(self):
        return self.required + self.bonus


def expected_records():
    """{(student, lab name): Expected} of the whole class."""
    records = {}
    for handed in HANDED:
        lab = LABS[handed.lab]
        activities = list(lab.activities.values())
        if handed.kind in ("other-lab", "not-a-notebook"):
            records[(handed.student, lab.name)] = Expected("wrong_lab" if handed.kind == "other-lab"
                                                           else "invalid_notebook")
            continue
        lost = {"solved": [], "blank": activities, "missing-last": activities[-1:], "hanging": activities[1:2],
                "wrong": [lab.activities[grading_for(lab.name).mistakes[0].activity]]}[handed.kind]
        records[(handed.student, lab.name)] = Expected(
            "graded", required_points(lab) - sum(a.points for a in lost if not a.optional),
            all_points(lab) - required_points(lab) - sum(a.points for a in lost if a.optional), handed.penalty)
    return records


def tidy(value):
    value = round(value, 2)
    return int(value) if value == int(value) else value


def worth(expected):
    return tidy(expected.earned * (1 - expected.penalty))


def check_record(out, db_url, scratch, only=None):
    """Every record of the results folder `out` (JSON, feedback, grades.csv, the lab and course
    sheets, and the gradebook at `db_url` as `nbgrader export` gives it) holds the class as it
    should be, one row per (student, lab); `only` restricts the records expected to be there (an
    interrupted run). Returns the records."""
    expected = expected_records()
    if only is not None:
        expected = {key: value for key, value in expected.items() if key in only}
    records = records_in(out)
    assert sorted(records) == sorted(expected)
    for (student, lab), result in records.items():
        want = expected[(student, lab)]
        said = (student, lab, result["status"], result["score"], result["output"])
        assert (result["status"], result["score"]) == (want.status, worth(want)), said
        assert result["extra_data"].get("late", {}).get("penalty", 0.0) == want.penalty, said
        page = record_path(out, student, lab, ".html").read_text()
        assert f"<strong>{student}</strong>, {lab}" in page
        if want.penalty:
            assert f"\u2212{want.penalty:.0%}" in result["output"] and f"\u2212{want.penalty:.0%}" in page, said
    with (Path(out) / "grades.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(row["student"], row["lab"]) for row in rows] == sorted(expected)
    for row in rows:
        want = expected[(row["student"], row["lab"])]
        assert (row["status"], float(row["score"])) == (want.status, worth(want)), row
    for lab in LABS:
        sheet = Path(out) / f"grades-{lab.name}.csv"
        mine = sorted(student for student, name in expected if name == lab.name)
        if not mine:
            continue
        with sheet.open(newline="") as handle:
            rows = list(csv.DictReader(handle))
        assert [row["student"] for row in rows] == mine
        assert list(rows[0])[-len(lab.activities):] == list(lab.activities)
    with (Path(out) / "course.csv").open(newline="") as handle:
        sheet = {row["student"]: row for row in csv.DictReader(handle)}
    assert sorted(sheet) == sorted({student for student, _ in expected})
    for student, row in sheet.items():
        for lab in LABS:
            want = expected.get((student, lab.name))
            status = row[f"{lab.name} status"]
            if want is None:
                assert status == "missing" and row[f"{lab.name} required"] == "", (student, lab.name, row)
            elif want.status == "graded":
                kept = 1 - want.penalty
                assert status == "graded", (student, lab.name, row)
                assert float(row[f"{lab.name} required"]) == tidy(want.required * kept), (student, lab.name, row)
                assert float(row[f"{lab.name} bonus"]) == tidy(want.bonus * kept), (student, lab.name, row)
            else:
                assert status == want.status, (student, lab.name, row)
    exported = {(row["student_id"], row["assignment"]): row for row in nbgrader_export(out, db_url, scratch)}
    recorded = sorted({student for (student, _), want in expected.items() if want.status == "graded"})
    # nbgrader lists every student under every assignment, and a lab is one once a record of it is graded.
    given = sorted({lab for (_, lab), want in expected.items() if want.status == "graded"})
    assert sorted(exported) == sorted((s, lab) for s in recorded for lab in given)
    for key, row in exported.items():
        want = expected.get(key)
        if want is None or want.status != "graded":
            assert (float(row["raw_score"]), row["timestamp"]) == (0.0, ""), (key, row)
            continue
        penalty = tidy(want.earned * want.penalty)
        assert (float(row["raw_score"]), float(row["late_submission_penalty"])) == (want.earned, penalty), (key, row)
        assert tidy(float(row["score"])) == tidy(want.earned - penalty), (key, row)
        assert row["timestamp"], (key, row)
    return records
