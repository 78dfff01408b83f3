"""Due dates and the late policy (autograder/lateness.py): the course file is read strictly, with
an error that names the setting; the time handed in comes from nbgrader's timestamp.txt, else the
file's time, said so; the penalty follows the policy to the hour, with its cap, its cutoff and
extensions; and applying it again to a result changes nothing."""
import os
from datetime import datetime, timedelta, timezone

import pytest

from autograder.grade import Outcome, activity_result
from autograder.lateness import Policy, apply_late, handed_in, lateness, parse_timestamp, penalty, read_course
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


@pytest.mark.parametrize("policy, seconds, fraction", [
    (Policy(penalty=0.1), -5, 0.0),
    (Policy(penalty=0.1), 1, 0.1),  # a second late starts a day
    (Policy(penalty=0.1), DAY, 0.1),
    (Policy(penalty=0.1), DAY + 1, 0.2),
    (Policy(penalty=0.1, max_penalty=0.25), 5 * DAY, 0.25),
    (Policy(per="hour", penalty=0.05), 26 * HOUR + 300, 1.0),
    (Policy(per="hour", penalty=0.05, max_penalty=0.5), 3 * HOUR, 0.15),
    (Policy(penalty=0.1, zero_after_hours=72), 72 * HOUR, 0.3),
    (Policy(penalty=0.1, zero_after_hours=72), 72 * HOUR + 1, 1.0),
    (Policy(penalty=0.1, grace_minutes=10), 9 * 60, 0.0),
    (Policy(penalty=0.1, grace_minutes=10), 11 * 60, 0.1),
    (Policy(per="none", penalty=0.1), 30 * DAY, 0.0),
])
def test_the_penalty_follows_the_policy(policy, seconds, fraction):
    assert penalty(policy, seconds)[0] == pytest.approx(fraction)


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


def a_result():
    """A result of a fixed grading time, so that two of them are equal whenever they are made."""
    outcomes = {activity: Outcome(True, "fine") for activity in LAB.activities}
    return {**activity_result("s01", "/somewhere/s01.ipynb", LAB, outcomes, ["your cell 3 raised NameError"], "graded",
                              0.0), "execution_time": 1.0}


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
            "said": "Handed in 30 h late: \u221225%"}
    result = apply_late(a_result(), late)
    assert result["score"] == all_points(LAB) * 0.75 and result["extra_data"]["penalty_points"] == all_points(LAB) / 4
    assert result["output"].splitlines()[1] == late["said"] and "NameError" in result["output"]
    again = apply_late(apply_late(a_result(), {**late, "penalty": 0.5, "said": "Handed in: \u221250%"}), late)
    assert again == result
    on_time = apply_late(result, {"submitted": late["submitted"], "source": "timestamp.txt"})
    assert on_time["score"] == all_points(LAB) and "Handed in" not in on_time["output"]
