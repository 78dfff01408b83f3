"""Due dates and the late policy (autograder/records/lateness.py): the course file is read strictly, with
an error that names the setting; the time handed in comes from nbgrader's timestamp.txt, else the
file's time, said so; the penalty follows the policy to the hour, with its cap, its cutoff and
extensions; and applying it again to a result changes nothing."""
import html
import os
import re
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest

from autograder.cli.progress import summary
from autograder.gradescope.run import results_json
from autograder.grading.grade import Outcome, activity_result
from autograder.grading.roster import Submission
from autograder.records.lateness import (Policy, apply_late, handed_in, lateness, parse_timestamp, penalty, read_course,
                                         untimed_notice)
from autograder.records.report import title_html, title_text, write_html
from autograder.reports.class_report import class_report
from tests.helpers import LABS, all_points
from tests.submissions import handed

LAB = LABS[0]
NAMES = [lab.name for lab in LABS]
DAY, HOUR = 86400, 3600


def course_file(tmp_path, text):
    path = tmp_path / "course.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, said", [
    ("[late]\npenalty = 0.1\nper = 'week'\n", "per is 'week'"),
    ("[late]\npenalty = 10\n", "penalty is 10; use a fraction from 0 to 1"),
    ("[late]\npenalties = 0.1\n", "has no setting penalties"),
    ("[labs.no_such_lab]\ndue = 2026-12-01T10:00:00Z\n", "the course has no lab no_such_lab"),
    (f"[labs.{LAB.name}]\ndue = 'next tuesday'\n", "'next tuesday', which is not a date and time"),
    (f"[labs.{LAB.name}]\ndeadline = 2026-12-01T10:00:00Z\n", "takes due, released and late only"),
    (f"[labs.{LAB.name}]\ndue = 2026-12-01T10:00:00Z\nreleased = 2026-12-02T10:00:00Z\n",
     "released is after its due date"),
    ("timezone = 'Mars/Olympus'\n", "timezone 'Mars/Olympus' is not a time zone"),
    (f"[extensions.s01]\n{LAB.name} = 'two days'\n", "give the extension in hours"),
    ("[deadlines]\n", "no section or setting deadlines"),
    ("[late\n", "is not valid TOML"),
    ("[late]\nmissing_timestamp = 'late'\n", 'missing_timestamp is \'late\'; use "file-time", "on-time", "refuse"'),
])
def test_a_course_file_with_a_mistake_is_refused_naming_it(tmp_path, text, said):
    with pytest.raises(SystemExit) as refusal:
        read_course(course_file(tmp_path, text), NAMES)
    assert said in str(refusal.value) and str(tmp_path / "course.toml") in str(refusal.value)


def test_a_missing_course_file_is_an_error_only_when_given(tmp_path):
    with pytest.raises(SystemExit, match="cannot read the course file"):
        read_course(tmp_path / "nowhere.toml", NAMES)


def test_due_dates_without_an_offset_are_in_the_course_timezone(tmp_path):
    course = read_course(course_file(tmp_path, f"timezone = 'America/New_York'\n[labs.{LAB.name}]\n"
                                               "due = '2026-12-01 23:59'\n"), NAMES)
    assert course.due[LAB.name] == datetime(2026, 12, 2, 4, 59, tzinfo=timezone.utc)
    course = read_course(course_file(tmp_path, f"[labs.{LAB.name}]\ndue = 2026-12-01\n"), NAMES)
    assert course.due[LAB.name] == datetime(2026, 12, 1, 23, 59, 59, tzinfo=timezone.utc), "a day alone: its end"


def test_a_labs_own_policy_starts_from_the_course_policy(tmp_path):
    course = read_course(course_file(tmp_path, f"[late]\npenalty = 0.1\nmax_penalty = 0.3\n"
                                               f"[labs.{LAB.name}]\nlate = {{ per = 'hour' }}\n"), NAMES)
    assert course.policy(LAB.name) == Policy(per="hour", penalty=0.1, max_penalty=0.3)
    assert course.policy("other") == Policy(penalty=0.1, max_penalty=0.3)


@pytest.mark.parametrize("policy, seconds, fraction, why", [
    (Policy(penalty=0.1), -5, "0", ""),
    (Policy(penalty=0.1), 1, "0.1", "1 started day at 10%"),  # a second late starts a day
    (Policy(penalty=0.1), DAY, "0.1", "1 started day at 10%"),
    (Policy(penalty=0.1), DAY + 1, "0.2", "2 started days at 10%"),
    # 0.1 x 3 is 0.30000000000000004 in binary floats, which was said to be the cap of 50%
    (Policy(penalty=0.1, max_penalty=0.5), 49 * HOUR, "0.3", "3 started days at 10%"),
    (Policy(penalty=0.1, max_penalty=0.5), 4 * DAY, "0.4", "4 started days at 10%"),  # a day below the cap
    (Policy(penalty=0.1, max_penalty=0.5), 5 * DAY, "0.5", "5 started days at 10%, the most it can cost"),
    (Policy(penalty=0.1, max_penalty=0.5), 5 * DAY + 1, "0.5",
     "6 started days at 10% would be 60%, and 50% is the most it can cost"),  # a day above it
    # 0.3 x 3 is 0.8999999999999999 in floats, just below a cap of 0.9, which it reaches
    (Policy(penalty=0.3, max_penalty=0.9), 3 * DAY, "0.9", "3 started days at 30%, the most it can cost"),
    (Policy(penalty=0.3, max_penalty=0.9), 2 * DAY, "0.6", "2 started days at 30%"),
    # 0.07 x 3 is 0.21000000000000002 in floats, just above a cap of 0.21
    (Policy(per="hour", penalty=0.07, max_penalty=0.21), 3 * HOUR, "0.21",
     "3 started hours at 7%, the most it can cost"),
    (Policy(per="hour", penalty=0.07, max_penalty=0.21), 2 * HOUR, "0.14", "2 started hours at 7%"),
    (Policy(per="hour", penalty=0.07), 3 * HOUR + 1, "0.28", "4 started hours at 7%"),
    (Policy(per="hour", penalty=0.05), 26 * HOUR + 300, "1",
     "27 started hours at 5% would be 135%, and 100% is the most it can cost"),
    (Policy(per="hour", penalty=0.05, max_penalty=0.5), 3 * HOUR, "0.15", "3 started hours at 5%"),
    (Policy(penalty=0.1, zero_after_hours=72), 72 * HOUR, "0.3", "3 started days at 10%"),  # at the cutoff
    (Policy(penalty=0.1, zero_after_hours=72), 72 * HOUR + 1, "1", "later than the cutoff of 72 h after the due date"),
    (Policy(penalty=0.1, grace_minutes=10), 9 * 60, "0", ""),
    (Policy(penalty=0.1, grace_minutes=10), 10 * 60, "0", ""),  # at the end of the grace period
    (Policy(penalty=0.1, grace_minutes=10), 10 * 60 + 0.5, "0.1", "1 started day at 10%"),
    (Policy(per="none", penalty=0.1), 30 * DAY, "0", "the late policy costs nothing"),
])
def test_the_penalty_follows_the_policy_in_exact_decimals(policy, seconds, fraction, why):
    assert penalty(policy, seconds) == (Decimal(fraction), why)


@pytest.mark.parametrize("text, moment", [
    ("2026-12-01 23:59:07.123456 UTC", datetime(2026, 12, 1, 23, 59, 7, 123456, tzinfo=timezone.utc)),
    ("2026-12-01 10:00:00 America/New_York", datetime(2026, 12, 1, 15, 0, tzinfo=timezone.utc)),
    ("2026-12-01T10:00:00+01:00", datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)),
    ("2026-12-01 10:00:00\n", datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)),
    ("2026-12-01 10:00:00.5 -0500", datetime(2026, 12, 1, 15, 0, 0, 500000, tzinfo=timezone.utc)),
])
def test_nbgrader_timestamps_are_read(text, moment):
    assert parse_timestamp(text) == moment


def in_layout(tmp_path, student="s01"):
    """A notebook in nbgrader's layout, last written long before any time these tests hand it in at,
    as an honest submission is."""
    folder = tmp_path / "submitted" / student / LAB.name
    folder.mkdir(parents=True)
    notebook = folder / f"{LAB.name}.ipynb"
    notebook.write_text("{}")
    os.utime(notebook, (0, 0))
    return folder, notebook


def test_the_time_comes_from_timestamp_txt_else_from_the_file_said_so(tmp_path):
    folder, notebook = in_layout(tmp_path)
    (folder / "timestamp.txt").write_text("2026-12-01 10:00:00.000000 UTC")
    assert handed_in(notebook, nbgrader=True) == (datetime(2026, 12, 1, 10, tzinfo=timezone.utc), "timestamp.txt",
                                                  None)
    (folder / "timestamp.txt").write_text("yesterday, about noon")
    moment, source, refused = handed_in(notebook, nbgrader=True)
    assert moment == datetime.fromtimestamp(0, timezone.utc)
    assert source.startswith("the notebook file's modification time; timestamp.txt could not be read")
    (folder / "timestamp.txt").unlink()
    (folder / "timestamp.txt").symlink_to("/etc/hostname")
    assert handed_in(notebook, nbgrader=True)[1].endswith("timestamp.txt is not a regular file"), \
        "a link is never followed"
    loose = tmp_path / "loose.ipynb"
    loose.write_text("{}")
    (tmp_path / "timestamp.txt").write_text("2026-12-01 10:00:00.000000 UTC")
    assert handed_in(loose, nbgrader=False)[1] == "the notebook file's modification time", "outside nbgrader's layout"


def a_result(student="s01"):
    """A result of a fixed grading time, so that two of them are equal whenever they are made."""
    outcomes = {activity: Outcome(True, "fine") for activity in LAB.activities}
    return {**activity_result(student, f"/somewhere/{student}.ipynb", LAB, outcomes, ["your cell 3 raised NameError"],
                              "graded", 0.0), "execution_time": 1.0}


def test_an_extension_moves_the_due_date_and_the_feedback_says_so(tmp_path):
    folder, notebook = in_layout(tmp_path)
    due = datetime(2026, 12, 1, 12, tzinfo=timezone.utc)
    (folder / "timestamp.txt").write_text((due + timedelta(hours=30)).strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
    text = f"[late]\npenalty = 0.1\n[labs.{LAB.name}]\ndue = {due.isoformat()}\n"
    late = lateness(read_course(course_file(tmp_path, text), NAMES), handed("s01", notebook))
    assert (late["penalty"], late["seconds_late"]) == (0.2, 30 * HOUR)
    assert late["said"].startswith("Handed in 30 h late") and "\u221220%: 2 started days at 10%" in late["said"]
    granted = read_course(course_file(tmp_path, text + f"[extensions.s01]\n{LAB.name} = 36\n"), NAMES)
    late = lateness(granted, handed("s01", notebook))
    assert (late["penalty"], late["seconds_late"]) == (0.0, 0.0)
    assert "on time" in late["said"] and "with an extension of 36 h" in late["said"]
    assert lateness(granted, handed("s02", notebook))["penalty"] == 0.2, "an extension is the student's alone"


def test_applying_the_penalty_again_replaces_it(tmp_path):
    late = {"submitted": "2026-12-02T18:00:00+00:00", "source": "timestamp.txt", "penalty": 0.25,
            "reason": "handed in 30 h late: 25% an hour", "said": "Handed in 30 h late: \u221225%"}
    result = apply_late(a_result(), late)
    assert result["score"] == all_points(LAB) * 0.75 and result["extra_data"]["penalty_points"] == all_points(LAB) / 4
    assert result["output"].splitlines()[1] == late["said"] and "NameError" in result["output"]
    again = apply_late(apply_late(a_result(), {**late, "penalty": 0.5, "said": "Handed in: \u221250%"}), late)
    assert again == result
    on_time = apply_late(result, {"submitted": late["submitted"], "source": "timestamp.txt"})
    assert on_time["score"] == all_points(LAB) and "Handed in" not in on_time["output"]
    assert on_time["output"] == a_result()["output"], "the score line as grading wrote it"


# Every hand-in here is before the run: a claim after the notebook arrived would count from its arrival.
DUE = datetime.now(timezone.utc).replace(second=0, microsecond=0) - timedelta(days=20)


def handed_late(tmp_path, student, after, policy="[late]\npenalty = 0.1\nmax_penalty = 0.5\nzero_after_hours = 168\n"
                "grace_minutes = 10\n"):
    """The lateness of `student`'s notebook, claimed handed in `after` (a timedelta) past DUE."""
    folder, notebook = in_layout(tmp_path, student)
    (folder / "timestamp.txt").write_text((DUE + after).strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
    course = read_course(course_file(tmp_path, f"{policy}[labs.{LAB.name}]\ndue = {DUE.isoformat()}\n"), NAMES)
    return lateness(course, handed(student, notebook))


def points_said(output):
    """The number a score line ends with: the points after any penalty."""
    return float(re.fullmatch(r"Score: .*[ :]([0-9.]+)\.", output.splitlines()[0]).group(1))


@pytest.mark.parametrize("after, line", [
    (timedelta(hours=49), "Score: 14/14 + 4 bonus, \u221230% (handed in 49 h late: 3 started days at 10%): 12.6."),
    (timedelta(days=5), "Score: 14/14 + 4 bonus, \u221250% (handed in 120 h late: 5 started days at 10%, the most it "
                        "can cost): 9."),
    (timedelta(days=9), "Score: 14/14 + 4 bonus, \u2212100% (handed in 216 h late: later than the cutoff of 168 h "
                        "after the due date): 0."),
    (timedelta(hours=-2), "Score: 14/14 + 4 bonus."),
])
def test_the_feedback_gives_the_points_after_the_penalty_as_the_score_does(tmp_path, after, line):
    result = apply_late(a_result(), handed_late(tmp_path, "s01", after))
    assert result["output"].splitlines()[0] == line
    assert result["score"] == (points_said(result["output"]) if after > timedelta(0) else all_points(LAB))
    page = write_html(tmp_path / "out", result).read_text()
    assert f"{html.escape(line.removeprefix('Score: ').removesuffix('.'))} points" in page and "Score:" not in page


@pytest.mark.parametrize("fraction", [0.07, 0.14, 0.21, 0.3, 0.35, 0.9, 1.0])
def test_the_score_said_and_the_score_agree_to_the_hundredth(fraction):
    result = apply_late(a_result(), {"penalty": fraction, "reason": "handed in late", "said": "Handed in late"})
    earned = all_points(LAB)
    assert points_said(result["output"]) == result["score"] == pytest.approx(earned * (1 - fraction), abs=0.005)
    assert result["score"] + result["extra_data"]["penalty_points"] == pytest.approx(earned, abs=1e-9)


def test_handed_in_within_the_grace_period_is_on_time_said_so_and_never_counted_late(tmp_path):
    within = handed_late(tmp_path, "s01", timedelta(minutes=5))
    assert within["said"] == (f"Handed in 5 min after the due date ({DUE + timedelta(minutes=5):%Y-%m-%d %H:%M} UTC, "
                              f"from timestamp.txt; due {DUE:%Y-%m-%d %H:%M} UTC), within the 10-minute grace period: "
                              "on time")
    at_its_end = handed_late(tmp_path, "s02", timedelta(minutes=10))
    after = handed_late(tmp_path, "s03", timedelta(minutes=10, seconds=1))
    on_time = handed_late(tmp_path, "s04", timedelta(minutes=-1))
    assert [late["counts_as_late"] for late in (within, at_its_end, after, on_time)] == [False, False, True, False]
    assert [late["penalty"] for late in (within, at_its_end, after, on_time)] == [0.0, 0.0, 0.1, 0.0]
    assert on_time["said"].startswith(f"Handed in on time ({DUE - timedelta(minutes=1):%Y-%m-%d %H:%M} UTC")
    results = {student: apply_late(a_result(student), late)
               for student, late in (("s01", within), ("s02", at_its_end), ("s03", after), ("s04", on_time))}
    assert "on time" in results["s01"]["output"].splitlines()[1] and results["s01"]["score"] == all_points(LAB)
    lines = summary({f"{student}/{LAB.name}": result for student, result in results.items()}, 4, [], [], "out")
    assert lines[lines.index("handed in late (1):") + 1].startswith(f"  s03/{LAB.name}: Handed in 11 min late")
    report = class_report({(student, LAB.name): result for student, result in results.items()})
    assert report[LAB.name].late == 1


def test_activity_titles_show_their_inline_code_as_code_without_backticks(tmp_path):
    titled = next(activity for activity in LAB.activities.values() if "`" in activity.title)
    page = write_html(tmp_path, a_result()).read_text()
    assert "`" not in page
    assert title_html(titled.name) in page and "<code>" in title_html(titled.name)
    assert title_text("2 · `topological_order` and `backward`") == "2 · topological_order and backward"
    assert title_html("`a<b`") == "<code>a&lt;b</code>"
    named = {test["extra_data"]["activity"]: test["name"] for test in results_json(a_result(), LAB, "none")["tests"]}
    assert named[titled.id] == title_text(titled.name) and "`" not in "".join(named.values())


@pytest.mark.parametrize("setting, late_hours, submitted, penalty_taken", [
    ("file-time", 30, 30, 0.2),
    ("on-time", 30, 0, 0.0),  # counts as handed in at the due date
    ("on-time", -3, -3, 0.0),  # handed in before it: that time stands
])
def test_without_a_timestamp_the_course_file_decides_what_counts(tmp_path, setting, late_hours, submitted,
                                                                 penalty_taken):
    course = read_course(course_file(tmp_path, f"[late]\npenalty = 0.1\nmissing_timestamp = '{setting}'\n"
                                               f"[labs.{LAB.name}]\ndue = {DUE.isoformat()}\n"), NAMES)
    _, notebook = in_layout(tmp_path)
    loose = tmp_path / "loose" / "s02.ipynb"
    loose.parent.mkdir()
    loose.write_text("{}")
    for path in (notebook, loose):
        moment = (DUE + timedelta(hours=late_hours)).timestamp()
        os.utime(path, (moment, moment))
    for submission in (handed("s01", notebook), Submission("s02", LAB.name, loose)):
        late = lateness(course, submission)
        assert late["penalty"] == penalty_taken and late["counts_as_late"] == (penalty_taken > 0), submission
        assert late["submitted"] == (DUE + timedelta(hours=submitted)).isoformat(), submission
        assert "to_check" not in late


def test_on_time_for_a_missing_timestamp_never_covers_one_that_cannot_be_read(tmp_path):
    course = read_course(course_file(tmp_path, f"[late]\npenalty = 0.1\nmissing_timestamp = 'on-time'\n"
                                               f"[labs.{LAB.name}]\ndue = {DUE.isoformat()}\n"), NAMES)
    folder, notebook = in_layout(tmp_path)
    (folder / "timestamp.txt").write_text("yesterday, about noon")
    moment = (DUE + timedelta(hours=30)).timestamp()
    os.utime(notebook, (moment, moment))
    late = lateness(course, handed("s01", notebook))
    assert late["penalty"] == 0.2 and late["to_check"][0].startswith("timestamp.txt could not be read")


def test_missing_timestamp_is_read_per_lab_over_the_course(tmp_path):
    text = f"[late]\nmissing_timestamp = 'on-time'\n[labs.{LAB.name}]\nlate = {{ missing_timestamp = 'refuse' }}\n"
    course = read_course(course_file(tmp_path, text), NAMES)
    assert course.policy(LAB.name).missing_timestamp == "refuse"
    assert course.policy("other").missing_timestamp == "on-time"
    assert read_course(course_file(tmp_path, ""), NAMES).default.missing_timestamp == "file-time"


def test_grade_says_how_many_lack_a_timestamp_where_they_are_many_or_all_of_a_lab(tmp_path):
    course = read_course(course_file(tmp_path, f"[labs.{LAB.name}]\ndue = {DUE.isoformat()}\n"), NAMES)
    submissions = []
    for number in range(5):
        folder, notebook = in_layout(tmp_path, f"s{number}")
        if number >= 3:
            (folder / "timestamp.txt").write_text("2026-12-01 10:00:00 UTC")
        submissions.append(handed(f"s{number}", notebook))
    [line] = untimed_notice(course, submissions)
    assert line.startswith(f"{LAB.name}: 3 of 5 submissions have no timestamp.txt")
    assert 'missing_timestamp is "file-time": each counts as handed in when its notebook file was last written' in line
    assert '"file-time", "on-time", "refuse"' in line
    assert untimed_notice(course, submissions[2:]) == [], "one of three: a few, said after grading as before"
    assert len(untimed_notice(course, submissions[:1])) == 1, "all of a lab's"
    assert untimed_notice(read_course(course_file(tmp_path, ""), NAMES), submissions) == [], "no due date: no matter"
