"""The class's tables, rebuilt after every run (a subset, an interrupted run, a run that failed)
from every record in the results folder, so that they always show the whole class:

* `grades.csv`: one row per (student, lab), the points earned (required and bonus apart), the
  late penalty and the score after it, when it was handed in, and one column per activity,
  named `<lab> <activity>` (an activity id means something else in each lab), in the course's
  order: the labs by name, each lab's activities in its notebook's order;
* `grades-<lab>.csv`: the same rows for one lab, its activities' columns named by id alone;
* `course.csv`: one row per student, and for each lab its required points, its bonus points
  (both after any late penalty) and its status (`missing` where there is no record);
* `diagnoses.csv`: one row per known mistake the grader named (autograder/diagnosis/matching.py), by lab
  and activity: how many students' answers behave like it, and who, the most common first;
* `canvas.csv`: the course's grades as Canvas's gradebook import reads them (`canvas_sheet`).

Each file is written whole or not at all, and no cell of them is a formula.
"""
import csv
import io
from pathlib import Path

from autograder.labs import course_labs
from autograder.records.lateness import tidy
from autograder.records.results_store import atomic_write, stored_results

MISSING = "missing"
NOT_HANDED_IN = ("wrong_lab",)  # statuses of a record that counts as no submission for its lab
SCORED = ("graded", "timeout")  # statuses of a record whose activities were judged (out of time: in part)

# What a spreadsheet reads as the start of a formula (or, for tab and carriage return, of one
# hidden behind blank space) in a cell of text.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value):
    """`value` for a CSV cell: text that a spreadsheet would run as a formula gets a leading
    quote, which shows it as text; numbers stay numbers."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def activity_order(lab, records):
    """The activity ids of `lab` in its notebook's order (for a lab the course no longer has, in
    the order its results list them)."""
    known = course_labs().get(lab)
    if known is not None:
        return list(known.activities)
    order = []
    for result in records:
        order += [test["name"] for test in result["tests"] if test["name"] not in order]
    return order


def earned(result):
    """(required, bonus) after the late penalty, which takes the same fraction of each."""
    extra = result["extra_data"]
    kept = 1 - extra.get("late", {}).get("penalty", 0.0)
    return tidy(extra.get("required", 0) * kept), tidy(extra.get("bonus", 0) * kept)


def csv_text(header, rows):
    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    writer.writerow(header)
    for row in rows:
        writer.writerow([spreadsheet_safe("" if cell is None else cell) for cell in row])
    return handle.getvalue()


COMMON = ["student", "lab", "status", "required", "max_required", "bonus", "max_bonus", "penalty", "score",
          "submitted", "hours_late"]


def common_cells(student, lab, result):
    extra, late = result["extra_data"], result["extra_data"].get("late", {})
    seconds = late.get("seconds_late")
    return [student, lab, result["status"], extra.get("required", 0), extra.get("max_required", 0),
            extra.get("bonus", 0), extra.get("max_bonus", 0), extra.get("penalty_points", 0), result["score"],
            late.get("submitted"), None if seconds is None else round(seconds / 3600, 2)]


def write_tables(out, people=None):
    """Rewrite every table of the results folder `out` from its records; returns the records
    ({(student, lab): result}). `people` names the students for Canvas (see `canvas_sheet`)."""
    out = Path(out)
    records = stored_results(out)
    labs = sorted({lab for _, lab in records})
    orders = {lab: activity_order(lab, [r for (_, l), r in records.items() if l == lab]) for lab in labs}
    scores = {key: {test["name"]: test["score"] for test in result["tests"]} for key, result in records.items()}
    columns = [(lab, activity) for lab in labs for activity in orders[lab]]
    rows = [common_cells(student, lab, result) + [scores[(student, lab)].get(a) if l == lab else None
                                                  for l, a in columns]
            for (student, lab), result in sorted(records.items())]
    atomic_write(out / "grades.csv", csv_text(COMMON + [f"{lab} {a}" for lab, a in columns], rows))
    for lab in labs:
        if lab not in course_labs():
            continue  # an unrecognised file or a folder named for no lab: grades.csv shows it
        rows = [[cell for position, cell in enumerate(common_cells(student, lab, result)) if position != 1]
                + [scores[(student, lab)].get(a) for a in orders[lab]]
                for (student, name), result in sorted(records.items()) if name == lab]
        atomic_write(out / f"grades-{lab}.csv", csv_text(COMMON[:1] + COMMON[2:] + orders[lab], rows))
    atomic_write(out / "course.csv", course_sheet(records))
    atomic_write(out / "diagnoses.csv", diagnoses_sheet(records))
    atomic_write(out / "canvas.csv", canvas_sheet(records, people or {}))
    return records


def diagnoses_sheet(records):
    """diagnoses.csv: a row per (lab, activity, named mistakes), with the students named so."""
    named = {}
    for (student, lab), result in sorted(records.items()):
        for activity, diagnosis in result["extra_data"].get("diagnoses", {}).items():
            key = (lab, activity, " / ".join(diagnosis["mistakes"]), diagnosis["advice"])
            named.setdefault(key, []).append(student)
    rows = [[*key[:3], len(students), " ".join(students), key[3]]
            for key, students in sorted(named.items(), key=lambda item: (-len(item[1]), item[0]))]
    return csv_text(["lab", "activity", "mistake", "students", "who", "advice"], rows)


CANVAS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_POINTS = "    Points Possible"  # the row Canvas's own export puts first, as it spells it


def canvas_sheet(records, people):
    """canvas.csv: Canvas's gradebook columns, then one column per lab, named by the lab (Canvas
    makes an assignment of that name, or fills the one it already has: rename a column to Canvas's
    'Name (id)' to aim at an existing one), and a row per student with the lab's score after the
    late penalty, required and bonus together (extra credit past the points possible); blank
    where nothing was scored. Canvas finds a student by ID, SIS User ID or SIS Login ID: nbgrader's
    student id is the SIS Login ID, and `people` ({student: {"name", "id", "sis_user_id",
    "section"}}, from nbgrader's students table: `gradebook.canvas_people`) adds the rest."""
    labs = sorted(course_labs())
    students = sorted({student for student, _ in records})
    possible = [sum(a.points for a in course_labs()[lab].activities.values() if not a.optional) for lab in labs]
    rows = [[CANVAS_POINTS, None, None, None, None, *possible]]
    for student in students:
        known = people.get(student, {})
        row = [known.get("name") or student, known.get("id"), known.get("sis_user_id"), student, known.get("section")]
        for lab in labs:
            result = records.get((student, lab))
            row.append(None if result is None or result["status"] not in SCORED
                       else tidy(sum(earned(result))))
        rows.append(row)
    return csv_text(CANVAS + labs, rows)


def course_sheet(records):
    """course.csv: a row per student, three columns per lab of the course."""
    labs = sorted(course_labs())
    students = sorted({student for student, _ in records})
    rows = []
    for student in students:
        row = [student]
        for lab in labs:
            result = records.get((student, lab))
            if result is None or result["status"] in NOT_HANDED_IN:
                row += [None, None, MISSING if result is None else result["status"]]
            else:
                row += [*earned(result), result["status"]]
        rows.append(row)
    header = ["student"] + [f"{lab} {part}" for lab in labs for part in ("required", "bonus", "status")]
    return csv_text(header, rows)


def missing(records):
    """[(student, lab)] of the students of `records` who have no submission for a lab that
    another student handed in: no record, or one of another lab's notebook."""
    handed_in = {key for key, result in records.items() if result["status"] not in NOT_HANDED_IN}
    labs = sorted({lab for _, lab in handed_in if lab in course_labs()})
    students = sorted({student for student, _ in records})
    return [(student, lab) for student in students for lab in labs if (student, lab) not in handed_in]
