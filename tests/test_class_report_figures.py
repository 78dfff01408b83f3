"""The class report's figures (autograder/reports/class_report.py) and Canvas's table, on records written
here by hand, so that each decision shows: who counts as missing, late and not gradable, the item
analysis, the known mistakes and the failures none explains, what needs a person, scores a
gradebook holds, and the page that draws it all without fetching anything."""
import csv
import html
import io
import re
import subprocess
import sys
from types import SimpleNamespace
from urllib.parse import unquote

import numpy as np
import pytest

from autograder.labs import course_labs
from autograder.records.lateness import tidy
from autograder.records.results_store import record_path
from autograder.records.tables import CANVAS_POINTS, canvas_sheet
from autograder.reports.class_report import class_report, histogram, late_work, pearson, with_gradebook
from autograder.reports.report_page import activity_plot, lab_view, render, shown
from tests.helpers import ROOT
from tests.report_pages import page_tables

LAB = "scalar_engine"


def result(student, scores, status="graded", late=0.0, hours_late=0.0, diagnoses=None, untouched=(),
           stopped=(), first_failed=None, seconds=10.0, output="", lab=LAB, grace_minutes=0):
    """A record as the grader writes it; `scores` maps activity ids to points earned."""
    activities = course_labs()[lab].activities
    tests = [{"name": a, "score": scores.get(a, 0), "max_score": activity.points, "output": output,
              "status": "passed" if scores.get(a, 0) == activity.points else "failed",
              "tags": ["optional"] if activity.optional else []} for a, activity in activities.items()]
    if status not in ("graded", "timeout"):
        tests = []
    required = sum(t["score"] for t in tests if not t["tags"])
    bonus = sum(t["score"] for t in tests if t["tags"])
    lost = tidy((required + bonus) * late)
    return {"status": status, "score": required + bonus - lost, "tests": tests, "output": output,
            "execution_time": seconds,
            "extra_data": {"student": student, "lab": lab, "required": required, "bonus": bonus, "penalty_points": lost,
                           "late": {"penalty": late, "seconds_late": hours_late * 3600,
                                    "counts_as_late": hours_late * 60 > grace_minutes},
                           "diagnoses": diagnoses or {}, "not_attempted": list(untouched),
                           "stopped": list(stopped), "first_failed": first_failed or {}}}


FULL = {a: activity.points for a, activity in course_labs()[LAB].activities.items()}
OTHER = "tensor_engine"
OTHER_FULL = {a: activity.points for a, activity in course_labs()[OTHER].activities.items()}


def a_class():
    half = {**FULL, "2": 0, "A": 0}
    records = [
        result("ann", FULL, seconds=30.0),
        result("bob", FULL, late=0.2, hours_late=26),
        result("cat", {**FULL, "1a": 0}, diagnoses={"1a": {"mistakes": ["assigns"], "advice": "add into .grad",
                                                          "matched_on": "tokens"}}),
        result("dan", {**FULL, "1a": 0}, diagnoses={"1a": {"mistakes": ["assigns"], "advice": "add into .grad",
                                                          "matched_on": "tokens"}}),
        result("eve", half, first_failed={"2": "backward on a chain of # nodes"}),
        result("fay", half, first_failed={"2": "backward on a chain of # nodes"}, stopped=["A"]),
        result("gus", {}, untouched=list(FULL)),
        result("hal", {}, status="invalid_notebook", output="the file is not a Jupyter notebook", seconds=0.5),
        result("ivy", {}, status="wrong_lab", output="this notebook is another lab's", seconds=0.5),
        result("jon", half, status="timeout", seconds=600.0),
        result("kim", FULL, lab="tensor_engine"),  # no record of scalar_engine: missing
    ]
    return {(r["extra_data"]["student"], r["extra_data"]["lab"]): r for r in records}


def test_who_counts_as_scored_missing_late_and_not_gradable():
    report = class_report(a_class())[LAB]
    assert (report.students, report.scored, report.missing, report.late, report.not_gradable) == (11, 8, 2, 1, 1)
    full = sum(FULL[a] for a, act in course_labs()[LAB].activities.items() if not act.optional)
    assert report.max_required == full
    assert any(value == pytest.approx(full * 0.8) for value in report.required)  # bob's, after his late penalty


def test_activities_come_hardest_first_with_their_item_analysis():
    records = a_class()
    report = class_report(records)[LAB]
    difficulties = [a.difficulty for a in report.activities]
    assert difficulties == sorted(difficulties)
    scored = [r for (s, lab), r in sorted(records.items()) if lab == LAB and r["status"] in ("graded", "timeout")]
    two = next(a for a in report.activities if a.id == "2")
    points = np.array([next(t["score"] for t in r["tests"] if t["name"] == "2") for r in scored], float)
    rest = np.array([sum(t["score"] for t in r["tests"]) for r in scored], float) - points
    assert two.discrimination == pytest.approx(np.corrcoef(points, rest)[0, 1])
    assert two.pass_rate == pytest.approx(np.mean(points == FULL["2"]))
    assert two.mean_points == pytest.approx(points.mean())
    assert two.not_attempted_rate == pytest.approx(1 / len(scored))  # gus left every stub


def test_discrimination_is_undefined_where_nothing_varies():
    assert pearson([1, 1, 1], [0, 1, 2]) is None
    assert pearson([2], [3]) is None
    assert pearson([0, 1, 2], [0, 2, 4]) == pytest.approx(1.0)


def test_named_mistakes_are_counted_with_their_students_and_the_rest_by_first_failing_check():
    report = class_report(a_class())[LAB]
    first = next(a for a in report.activities if a.id == "1a")
    assert [(m.names, m.advice, m.students) for m in first.mistakes] == [("assigns", "add into .grad", ["cat", "dan"])]
    assert first.undiagnosed == 0
    two = next(a for a in report.activities if a.id == "2")
    assert two.mistakes == [] and two.undiagnosed_students == ["eve", "fay", "jon"]  # gus never attempted it
    assert two.first_failed[0] == ("backward on a chain of # nodes", 2)


def test_what_needs_a_person_is_every_record_not_scored_out_of_time_or_stopped():
    report = class_report(a_class())[LAB]
    assert [(item.student, item.status) for item in report.attention] == [
        ("fay", "graded"), ("hal", "invalid_notebook"), ("ivy", "wrong_lab"), ("jon", "timeout")]
    assert "activity A" in report.attention[0].reason
    assert report.slowest[0] == ("jon", 600.0, "timeout")


def test_histogram_bins_cover_every_score_once():
    values = [0, 0.5, 3, 11.99, 12]
    bins = histogram(values, 12)
    assert bins[0][0] == 0 and bins[-1][1] == 12
    assert sum(count for _, _, count in bins) == len(values)
    assert bins[-1][2] == 2  # the last bin holds the full score too
    assert len(histogram(range(1000), 999)) <= 20


def test_a_gradebook_s_manual_score_replaces_the_grader_s_and_its_own_records_are_added():
    records = a_class()
    held = {("cat", LAB): {"points": {**FULL}, "penalty": 0.0, "seconds_late": 0.0},
            ("zed", LAB): {"points": {"1a": FULL["1a"]}, "penalty": 0.2, "seconds_late": 7200.0}}
    merged = with_gradebook(records, held)
    assert records[("cat", LAB)]["tests"][0]["score"] == 0  # the records given are left as they were
    report = class_report(merged)[LAB]
    assert report.scored == 9 and report.late == 2
    assert [(student, standing.penalty) for student, _, standing in late_work({LAB: report})] == [
        ("bob", 0.2), ("zed", pytest.approx(0.2 / FULL["1a"]))]
    first = next(a for a in report.activities if a.id == "1a")
    # Full marks now for cat (a person's), as for ann, bob, eve, fay, jon and zed; none for dan and gus.
    assert first.mean_points == pytest.approx(np.mean([FULL["1a"]] * 7 + [0, 0]))


def test_from_a_gradebook_late_work_that_earned_nothing_keeps_its_penalty():
    records = a_class()
    records[("gus", LAB)] = result("gus", {}, untouched=list(FULL), late=0.1, hours_late=3)
    held = {("gus", LAB): {"points": {}, "penalty": 0.0, "seconds_late": 3 * 3600.0}}  # 10% of nothing
    gus = class_report(with_gradebook(records, held))[LAB].standings["gus"]
    assert (gus.late, gus.penalty, gus.penalty_points) == (True, 0.1, 0.0)


def test_canvas_sheet_follows_canvas_s_columns_and_leaves_unscored_records_blank():
    records = a_class()
    people = {"ann": {"name": "Lee, Ann", "id": "4411"}}
    rows = list(csv.reader(io.StringIO(canvas_sheet(records, people))))
    labs = sorted(course_labs())
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *labs]
    assert rows[1][0] == CANVAS_POINTS
    by_login = {row[3]: row for row in rows[2:]}
    column = 5 + labs.index(LAB)
    assert by_login["ann"][:2] == ["Lee, Ann", "4411"]
    assert float(by_login["bob"][column]) == pytest.approx(0.8 * sum(FULL.values()))
    assert by_login["hal"][column] == by_login["ivy"][column] == by_login["kim"][column] == ""


def test_the_page_is_self_contained_and_draws_each_lab():
    page = render(a_class())
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert not re.search(r"<(script|link|img)\b", page)
    assert page.count("<svg") == 2 * 3  # per lab: scores, activities, grading time
    for lab in ("scalar_engine", "tensor_engine"):
        assert f'id="lab-{lab}"' in page and f'href="#lab-{lab}"' in page


def test_the_plots_are_drawn_here_as_svg_with_their_bars_and_text():
    report = class_report(a_class())[LAB]
    view = lab_view(report)
    drawn = view["score_svg"]
    assert drawn.startswith('<svg xmlns="http://www.w3.org/2000/svg" role="img"') and "<title>Histograms of" in drawn
    # One bar per bin that holds a student, each as tall as its count.
    heights = {colour: [float(h) for h in re.findall(rf'height="([\d.]+)" fill="{colour}"', drawn)]
               for colour in ("#3a6ea5", "#c07a20")}
    for colour, bins in (("#3a6ea5", view["required_bins"]), ("#c07a20", view["bonus_bins"])):
        counts = [count for _, _, count in bins if count]
        assert len(heights[colour]) == len(counts)
        assert [h / max(heights[colour]) for h in heights[colour]] == pytest.approx(
            [c / max(counts) for c in counts], abs=0.01)
    assert ">students</text>" in drawn and f">required points (of {shown(report.max_required)})</text>" in drawn
    assert len(re.findall('fill="#6b7785"', view["time_svg"])) == sum(1 for *_, count in view["time_bins"] if count)
    assert lab_view(report) == view  # the same records, the same bytes
    # An activity's id is text in the SVG, escaped.
    odd = SimpleNamespace(activities=[SimpleNamespace(id="<b>&", optional=True, pass_rate=0.5)])
    assert ">&lt;b&gt;&amp; (optional)</text>" in activity_plot(odd) and "<b>" not in activity_plot(odd)


def test_the_page_does_without_matplotlib():
    drawn = subprocess.run([sys.executable, "-c", "import sys; from autograder.reports.report_page import render; "
                            "from tests.test_class_report_figures import a_class; render(a_class()); "
                            "print('matplotlib' in sys.modules)"],
                           cwd=ROOT, capture_output=True, text=True, check=True)
    assert drawn.stdout.strip() == "False"


def with_feedback(records, out):
    """`out` as a results folder holding each record's HTML feedback page (its content is no matter here)."""
    for student, lab in records:
        path = record_path(out, student, lab, ".html")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("<p>feedback</p>")
    return out


def linked_files(page, page_folder):
    """The files the page's links (other than to its own sections) lead to, from `page_folder`."""
    hrefs = [html.unescape(href) for href in re.findall(r'href="([^"#][^"]*)"', page)]
    assert not [href for href in hrefs if ":" in href], "a link is relative, never a scheme a name could choose"
    return {(page_folder / unquote(href)).resolve() for href in hrefs}


def test_late_work_names_who_was_late_for_which_lab_by_how_long_and_what_it_cost():
    records = a_class()
    records[("kim", OTHER)] = result("kim", OTHER_FULL, late=0.5, hours_late=50.25, lab=OTHER)
    tables = page_tables(render(records))
    lost = tidy(0.5 * sum(OTHER_FULL.values()))
    assert tables["late-work"][1:] == [["bob", LAB, "26 h", "−20% (3.20 points)", ""],
                                       ["kim", OTHER, "50 h 15 min", f"−50% ({shown(lost)} points)", ""]]
    late = {row[0].rpartition("(")[2].removesuffix(")"): int(row[4]) for row in tables["course-table"][1:]}
    assert late == {LAB: 1, OTHER: 1}


def test_a_submission_inside_the_grace_period_is_on_time():
    records = a_class()
    records[("ann", LAB)] = result("ann", FULL, hours_late=0.1, grace_minutes=10)  # 6 min past its due date
    report = class_report(records)[LAB]
    assert report.late == 1 and not report.standings["ann"].late
    tables = page_tables(render(records))
    assert [row[0] for row in tables["late-work"][1:]] == ["bob"]
    ann = next(row for row in tables["student-table"] if row[0] == "ann")
    assert ann[3] == "—"


def test_the_students_table_has_each_student_s_labs_after_the_penalty_with_status_and_feedback(tmp_path):
    records = a_class()
    # A student whose folder name the results folder escapes (results_store.file_stem).
    records[("José", LAB)] = result("José", {}, status="invalid_notebook", output="the file is not a notebook")
    out = with_feedback(records, tmp_path / "graded")
    page_folder = tmp_path / "pages"
    page = render(records, out, page_folder=page_folder)
    rows = page_tables(page)["student-table"]
    assert rows[1] == ["Required (of 12)", "Bonus (of 4)", "Late", "Status",
                       "Required (of 15)", "Bonus (of 10)", "Late", "Status"]
    body = {row[0]: row[1:] for row in rows[2:]}
    assert list(body) == sorted({student for student, _ in records})
    assert body["bob"][:4] == ["9.60", "3.20", "26 h: −20% (3.20 points)", "graded"]
    assert body["ann"] == ["12", "4", "—", "graded", "—", "—", "—", "missing"]
    assert body["fay"][3] == "graded, to check"  # a check of activity A did not finish
    assert body["hal"][:4] == ["—", "—", "—", "invalid_notebook, to check"]
    assert body["kim"][:4] == ["—", "—", "—", "missing"] and body["kim"][7] == "graded"
    # Every record's status links its feedback page, the escaped folder's too, as the attention table does.
    table = re.search(r'<table id="student-table">.*?</table>', page, re.S).group()
    assert linked_files(table, page_folder) == {record_path(out, s, l, ".html").resolve() for s, l in records}
    attention = re.search(r'<table id="scalar_engine-attention">.*?</table>', page, re.S).group()
    assert record_path(out, "José", LAB, ".html").resolve() in linked_files(attention, page_folder)


def test_a_table_with_no_rows_is_a_sentence_saying_nothing():
    everyone_passes = {(student, LAB): result(student, FULL) for student in ("ann", "bob")}
    for page in (render(everyone_passes), render({})):
        assert not re.search(r"<tbody>\s*</tbody>", page), "a table with its headers and no row"
    page = render(everyone_passes)
    for name in (f"{LAB}-mistakes", f"{LAB}-attention", "late-work"):
        assert re.search(f'<p id="{name}">Nothing: ', page), name
    for name in ("course-table", "late-work", "student-table"):
        assert re.search(f'<p id="{name}">Nothing: ', render({})), name


def test_student_controlled_text_is_escaped_in_the_page(tmp_path):
    odd = '<img src=x onerror="alert(1)">&amp;'  # a folder name is the student's to choose
    records = a_class()
    records[(odd, LAB)] = result(odd, FULL, late=0.1, hours_late=2)
    records[(odd, OTHER)] = result(odd, {}, status="invalid_notebook", output="<script>alert(2)</script>", lab=OTHER)
    page = render(records, with_feedback(records, tmp_path / "graded"))
    assert "<img" not in page and "<script" not in page
    tables = page_tables(page)
    assert odd in [row[0] for row in tables["student-table"]]
    assert [row[0] for row in tables["late-work"][1:]] == sorted(["bob", odd])
    assert [row[2] for row in tables[f"{OTHER}-attention"][1:] if row[0] == odd] == ["<script>alert(2)</script>"]
    assert linked_files(page, tmp_path / "graded") >= {record_path(tmp_path / "graded", odd, LAB, ".html").resolve()}
