"""The class report of a class graded for real (tests/report_class.py: 41 submissions over the three
labs), opened in Chromium: every figure on the page is the one this test computes from the JSON
results on its own (the students' table and the late work too), each lab's section and the
course's are kept as pictures in test-artifacts/class-report/, and the report built from a
gradebook shows a person's manual grade and the records only the gradebook holds."""
import csv
import shutil
import subprocess
import sys

import numpy as np
import pytest

from autograder.labs import course_labs
from autograder.records.results_store import record_path
from tests.helpers import CELL_TIMEOUT, ROOT, grade_command, records_in
from tests.jupyterlab import chromium
from tests.report_class import build_report_class, submissions_in
from tests.report_pages import page_tables

ARTIFACTS = ROOT / "test-artifacts" / "class-report"
SCORED = ("graded", "timeout")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def graded(tmp_path_factory, solved_dir, release_dir):
    folder = tmp_path_factory.mktemp("report-class")
    submitted = build_report_class(folder, solved_dir, release_dir)
    assert len(submissions_in(submitted)) >= 40
    out = folder / "graded"
    run = subprocess.run(grade_command(submitted, "--out", out, "--course", folder / "course.toml",
                                       "--cell-timeout", CELL_TIMEOUT, "--jobs", "2"),
                         cwd=ROOT, capture_output=True, text=True, timeout=3600)
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def number(text):
    """A figure as the page prints it: None for a dash; a percentage as a fraction."""
    text = text.strip()
    if text == "—":
        return None
    return float(text[:-1]) / 100 if text.endswith("%") else float(text)


def same(text, value, places=2):
    """The page's `text` shows `value` rounded to `places` decimals (a percentage to 1 of its own)."""
    shown = number(text)
    if value is None or shown is None:
        return value is None and shown is None
    step = 0.001 if text.strip().endswith("%") else 10 ** -places
    return abs(shown - value) <= step / 2 + 1e-9


def kept(result):
    return 1 - result["extra_data"].get("late", {}).get("penalty", 0.0)


def late_work(result):
    """Handed in after the due date and past the grace period, which is what costs a penalty."""
    late = result["extra_data"].get("late", {})
    return result["status"] in SCORED and late.get("seconds_late", 0) > 0 and late.get("penalty", 0) > 0


def lab_figures(records, lab_name):
    """The figures of one lab, computed here from the results alone."""
    lab = course_labs()[lab_name]
    mine = {s: r for (s, l), r in records.items() if l == lab_name}
    scored = {s: r for s, r in sorted(mine.items()) if r["status"] in SCORED}
    handed = [s for s, r in mine.items() if r["status"] != "wrong_lab"]
    students = {s for s, _ in records}
    activities = {}
    for activity_id, activity in lab.activities.items():
        tests = [next(t for t in r["tests"] if t["name"] == activity_id) for r in scored.values()]
        points = np.array([t["score"] for t in tests], float)
        rest = np.array([sum(t["score"] for t in r["tests"]) for r in scored.values()], float) - points
        spread = points.std() > 0 and rest.std() > 0
        activities[activity_id] = {
            "points": activity.points, "pass": np.mean([t["status"] == "passed" for t in tests]),
            "mean": points.mean(), "untouched": np.mean([t["output"].startswith("not attempted") for t in tests]),
            "difficulty": np.mean(points / activity.points),
            "discrimination": np.corrcoef(points, rest)[0, 1] if spread else None}
    named, unexplained = {}, {}
    for student, result in scored.items():
        for test in result["tests"]:
            if test["status"] == "passed" or test["output"].startswith("not attempted"):
                continue
            diagnosis = result["extra_data"]["diagnoses"].get(test["name"])
            if diagnosis:
                named.setdefault((test["name"], " / ".join(diagnosis["mistakes"])), []).append(student)
            else:
                unexplained.setdefault(test["name"], []).append(student)
    attention = {(s, r["status"]) for s, r in mine.items()
                 if r["status"] != "graded" or r["extra_data"].get("stopped")
                 or r["extra_data"].get("late", {}).get("to_check")}
    times = sorted(((r["execution_time"], s) for s, r in mine.items()), reverse=True)[:5]
    return {"students": len(students), "scored": len(scored), "missing": len(students) - len(handed),
            "late": sum(late_work(r) for r in scored.values()),
            "not_gradable": len(handed) - len(scored),
            "required": [r["extra_data"]["required"] * kept(r) for r in scored.values()],
            "bonus": [r["extra_data"]["bonus"] * kept(r) for r in scored.values()],
            "activities": activities, "named": named, "unexplained": unexplained, "attention": attention,
            "slowest": times, "max_required": sum(a.points for a in lab.activities.values() if not a.optional),
            "max_bonus": sum(a.points for a in lab.activities.values() if a.optional)}


def check_bins(rows, values):
    """Each bin's count is the number of `values` in it, and every value is in one."""
    bins = [(*map(float, row[0].split("–")), int(row[1])) for row in rows[1:]]
    for place, (low, high, count) in enumerate(bins):
        last = place == len(bins) - 1
        assert count == sum(low <= v < high or (last and v == high) for v in values), (low, high, rows)
    assert sum(count for _, _, count in bins) == len(values)


def check_lab(tables, want, lab_name):
    counts = tables[f"{lab_name}-counts"][1]
    assert [int(c) for c in counts[:5]] == [want[k] for k in ("students", "scored", "missing", "late",
                                                               "not_gradable")], counts
    assert same(counts[5], np.mean(want["required"])) and same(counts[6], np.mean(want["bonus"])), counts
    check_bins(tables[f"{lab_name}-required"], want["required"])
    check_bins(tables[f"{lab_name}-bonus"], want["bonus"])

    rows = tables[f"{lab_name}-activities"][1:]
    assert sorted(row[0].removesuffix(" (optional)") for row in rows) == sorted(want["activities"])
    difficulties = [number(row[5]) for row in rows]
    assert difficulties == sorted(difficulties), "the hardest activity comes first"
    for row in rows:
        figures = want["activities"][row[0].removesuffix(" (optional)")]
        assert number(row[1]) == figures["points"], row
        for cell, key in zip(row[2:], ("pass", "mean", "untouched", "difficulty", "discrimination")):
            assert same(cell, figures[key]), (row, key, figures[key])

    named, unexplained = {}, {}
    for row in tables[f"{lab_name}-mistakes"][1:]:
        activity, mistake, count, who = row
        students = who.split(", ") if who else []
        assert int(count) == len(students), row
        if mistake.startswith("no known mistake named"):
            unexplained[activity] = students
        else:
            names = next(n for a, n in want["named"] if a == activity and mistake.startswith(n))
            named[(activity, names)] = students
    assert named == want["named"]
    assert unexplained == want["unexplained"]

    attention = tables.get(f"{lab_name}-attention", [[]])[1:]
    assert {(row[0], row[1]) for row in attention} == want["attention"]
    slowest = [(number(row[1]), row[0]) for row in tables[f"{lab_name}-slowest"][1:]]
    assert [s for _, s in slowest] == [s for _, s in want["slowest"]]
    assert all(same(t, seconds, 1) for (t, _), (seconds, _) in zip(
        [(row[1], row[0]) for row in tables[f"{lab_name}-slowest"][1:]], want["slowest"]))


def check_students(tables, records):
    """One row per student with each lab's points after the penalty, its lateness and its status
    (which links the feedback, checked apart); the late work is every late record, lab by lab, with how many hours it was late and its penalty."""
    labs = sorted(course_labs())
    rows = {row[0]: row[1:] for row in tables["student-table"][2:]}
    assert sorted(rows) == sorted({s for s, _ in records})
    for student, cells in rows.items():
        for place, lab_name in enumerate(labs):
            required, bonus, late, status = cells[4 * place:4 * place + 4]
            result = records.get((student, lab_name))
            if result is None:
                assert (required, bonus, late, status) == ("—", "—", "—", "missing"), (student, lab_name)
                continue
            extra = result["extra_data"]
            assert status.split(",")[0] == result["status"], (student, lab_name, cells)
            if result["status"] in SCORED:
                assert same(required, extra["required"] * kept(result)), (student, lab_name, required)
                assert same(bonus, extra["bonus"] * kept(result)), (student, lab_name, bonus)
            assert (late != "—") == late_work(result), (student, lab_name, late)
    want = sorted((lab_name, student) for (student, lab_name), result in records.items() if late_work(result))
    in_grace = [key for key, result in records.items()
                if result["extra_data"].get("late", {}).get("seconds_late", 0) > 0 and not late_work(result)]
    assert in_grace, "the class has work handed in after its due date but within the grace period"
    rows = tables["late-work"][1:]
    assert [(row[1], row[0]) for row in rows] == want
    for row in rows:
        result = records[(row[0], row[1])]
        hours = result["extra_data"]["late"]["seconds_late"] / 3600  # whole hours in this class
        assert row[2] == f"{hours:g} h" and row[3].startswith(f"−{100 * result['extra_data']['late']['penalty']:g}%")


def read_tables(page):
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('table[id]')].map(t =>
        [t.id, [...t.rows].map(r => [...r.cells].map(c => c.innerText.trim().split(/\\s+/).join(' ')))]))""")


def test_every_figure_on_the_page_is_the_one_the_results_give(graded):
    records = records_in(graded)
    page_file = graded / "report.html"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(page_file.as_uri())
        tables = read_tables(page)
        for lab_name in sorted(course_labs()):
            page.locator(f"#lab-{lab_name}").screenshot(path=ARTIFACTS / f"{lab_name}.png")
        for section in ("course", "late", "students"):
            page.locator(f"#{section}").screenshot(path=ARTIFACTS / f"{section}.png")
        # Three plots per lab, and a histogram of similar work's pair scores where pairs were scored
        # (each has its table of counts).
        similar_work = page.locator("table[id$='-similarity-scores']").count()
        assert page.locator("svg").count() == 3 * len(course_labs()) + similar_work
        links = page.eval_on_selector_all("#course-table a", "links => links.map(a => a.getAttribute('href'))")
        feedback = page.eval_on_selector_all("#student-table tbody a", "links => links.map(a => a.href)")
    assert links == [f"#lab-{lab_name}" for lab_name in sorted(course_labs())]
    # Every record's feedback page, from the students' table, as the browser resolves each link.
    assert sorted(feedback) == sorted(record_path(graded, s, l, ".html").as_uri() for s, l in records)
    check_students(tables, records)
    for lab_name in sorted(course_labs()):
        want = lab_figures(records, lab_name)
        check_lab(tables, want, lab_name)
        row = next(r for r in tables["course-table"][1:] if r[0].endswith(f"({lab_name})"))
        assert [int(c) for c in row[1:6]] == [want[k] for k in ("students", "scored", "missing", "late",
                                                                 "not_gradable")]
        assert int(row[8]) == len(want["attention"])
    # The page this test read is the one the grade run wrote: the same tables as the report command's.
    again = graded.parent / "again.html"
    subprocess.run([sys.executable, "-m", "autograder", "report", graded, "--out", again], cwd=ROOT, check=True,
                   capture_output=True, timeout=600)
    assert page_tables(again.read_text()) == page_tables(page_file.read_text())


def test_canvas_csv_has_each_student_s_score_after_the_late_penalty(graded):
    records = records_in(graded)
    rows = list(csv.DictReader((graded / "canvas.csv").open()))
    assert rows[0]["Student"].strip() == "Points Possible"
    by_login = {row["SIS Login ID"]: row for row in rows[1:]}
    assert sorted(by_login) == sorted({s for s, _ in records})
    for (student, lab_name), result in records.items():
        cell = by_login[student][lab_name]
        if result["status"] in SCORED:
            extra = result["extra_data"]
            assert float(cell) == pytest.approx((extra["required"] + extra["bonus"]) * kept(result), abs=0.01)
        else:
            assert cell == "", (student, lab_name)


def test_a_gradebook_s_manual_grade_and_its_own_records_reach_the_report(graded, tmp_path):
    from nbgrader.api import Gradebook

    out = tmp_path / "graded"
    shutil.copytree(graded, out)
    db_url = f"sqlite:///{out / 'gradebook.db'}"
    records = records_in(out)
    lab_name = sorted(course_labs())[0]
    failed = sorted((s, t["name"]) for (s, l), r in records.items() if l == lab_name and r["status"] == "graded"
                    for t in r["tests"] if t["status"] == "failed" and "optional" not in t["tags"])
    student, activity = failed[0]
    with Gradebook(db_url) as gradebook:  # a teaching assistant gives the points by hand
        grade = gradebook.find_grade(f"{activity}-check", lab_name, lab_name, student)
        grade.manual_score = course_labs()[lab_name].activities[activity].points
        gradebook.db.commit()
    gone = next(s for (s, l), r in sorted(records.items()) if l == lab_name and r["status"] == "graded"
                and s != student)
    record_path(out, gone, lab_name, ".json").unlink()  # its result file lost; the gradebook still holds it

    page = tmp_path / "report.html"
    run = subprocess.run([sys.executable, "-m", "autograder", "report", out, "--db", db_url, "--out", page],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    tables = page_tables(page.read_text())
    changed = dict(records)
    result = changed[(student, lab_name)]
    test = next(t for t in result["tests"] if t["name"] == activity)
    test["score"] = test["max_score"]
    result["extra_data"]["required"] += test["max_score"]
    want = lab_figures(changed, lab_name)
    row = next(r for r in tables[f"{lab_name}-activities"][1:] if r[0] == activity)
    assert same(row[3], want["activities"][activity]["mean"]), row
    counts = tables[f"{lab_name}-counts"][1]
    assert int(counts[1]) == want["scored"]  # the lost file's record is still scored, from the gradebook
    assert same(counts[5], np.mean(want["required"])), counts
