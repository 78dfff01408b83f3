"""The time a submission claims is a claim (autograder/records/lateness.py): nbgrader's timestamp.txt is
the student's file, so any bytes in it cost at most its own record, and the claim is weighed
against what the grader sees (the notebook's modification time, the time it was put in its
folder, the release, the run's time). A disagreement is said in the run's summary, the class
report and the student's feedback. The batch here records its results without running any
notebook: grading is not what is tested, the writing of every record beside the attacks is."""
import os
import sys
from datetime import datetime, timedelta, timezone

import pytest
from nbgrader.utils import parse_utc

from autograder.__main__ import main
from autograder.cli import commands
from autograder.grading.grade import Outcome, activity_result
from autograder.labs import course_labs
from autograder.records.gradebook import held_scores, naive_utc
from autograder.records.lateness import (NO_TIMESTAMP, TIMESTAMP_BYTES, TO_CHECK, TOLERANCE, Course, apply_late, lateness,
                                         read_claim, read_course)
from autograder.records.results_store import REPORT, record_path
from course.folder import ENVIRONMENT
from tests.helpers import LABS, ROOT, all_points, records_in
from tests.submissions import handed

LAB = LABS[0]
NOW = datetime.now(timezone.utc).replace(microsecond=0)
DUE = NOW - timedelta(days=3)  # every honest hand-in here is in the past of the run
GOOD = "2026-12-01 10:00:00.000000 UTC"

# What a student can write in timestamp.txt that is no time at all, or none a calendar holds in UTC.
UNREADABLE = {
    "overflow": b"9999-12-31 23:59:59 -23:59",  # year 10000 in UTC
    "underflow": b"0001-01-01 00:00:00 +23:59",
    "no-such-day": b"2026-02-30 10:00:00 UTC",
    "offset-too-big": b"2026-12-01 10:00:00 +25:00",
    "nan": b"NaN",
    "minus-inf": b"-inf",
    "year-10000": b"10000-01-01 00:00:00 UTC",
    "utf-16": GOOD.encode("utf-16"),
    "binary": bytes(range(256))[:TIMESTAMP_BYTES],
    "nul": b"2026-12-01\x0010:00:00 UTC",
    "terminal-escape": b"2026-12-01 10:00\x1b[2J UTC",
    "huge": GOOD.encode() + b" " * 1_000_000,  # a good line, and far more than nbgrader writes
    "empty": b"",
    "zone-path": b"2026-12-01 10:00:00 ../../../etc/passwd",
    "zone-long": b"2026-12-01 10:00:00 " + b"Z" * 150,
}


def in_layout(folder, student, claim=None, written=None):
    """`student`'s notebook of LAB under `folder` in nbgrader's layout, last written at `written`
    (an aware datetime), with `claim` (bytes) as its timestamp.txt where given."""
    target = folder / "submitted" / student / LAB.name
    target.mkdir(parents=True)
    notebook = target / f"{LAB.name}.ipynb"
    notebook.write_bytes((ROOT / "release" / LAB.name / f"{LAB.name}.ipynb").read_bytes())
    if claim is not None:
        (target / "timestamp.txt").write_bytes(claim)
    moment = (written or DUE - timedelta(hours=1)).timestamp()
    os.utime(notebook, (moment, moment))
    return notebook


def stamp(moment):
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f UTC").encode()


def course(released=None):
    return Course(due={LAB.name: DUE}, released={LAB.name: released} if released else {})


@pytest.mark.parametrize("kind", sorted(UNREADABLE))
def test_a_timestamp_that_is_no_time_is_refused_saying_why_and_the_notebooks_time_counts(tmp_path, kind):
    notebook = in_layout(tmp_path, "s01", UNREADABLE[kind])
    claim, why = read_claim(notebook.parent)
    assert claim is None and why.startswith("timestamp.txt could not be read (") and len(why) < 300, why
    late = lateness(course(), handed("s01", notebook))
    assert late["submitted"] == (DUE - timedelta(hours=1)).isoformat() and late["penalty"] == 0.0
    assert late["source"].startswith("the notebook file's modification time; timestamp.txt could not be read")
    [check] = late["to_check"]
    assert check.startswith("timestamp.txt could not be read") and check.endswith("so the notebook's own times count")


@pytest.mark.parametrize("make", [os.mkfifo, os.mkdir, lambda path: os.symlink("/dev/zero", path)],
                         ids=["pipe", "folder", "link-to-a-device"])
def test_a_timestamp_that_is_no_regular_file_is_never_read(tmp_path, make):
    notebook = in_layout(tmp_path, "s01")
    make(notebook.parent / "timestamp.txt")
    assert read_claim(notebook.parent) == (None, "timestamp.txt is not a regular file")
    assert lateness(course(), handed("s01", notebook))["to_check"] == [
        "timestamp.txt is not a regular file, so the notebook's own times count"]


def test_without_a_timestamp_the_notebooks_time_counts_undisputed(tmp_path):
    notebook = in_layout(tmp_path, "s01")
    assert read_claim(notebook.parent) == (None, None)
    late = lateness(course(), handed("s01", notebook))
    assert late["source"] == "the notebook file's modification time; no timestamp.txt beside it"
    assert late["submitted"] == (DUE - timedelta(hours=1)).isoformat() and "to_check" not in late


def test_a_claim_three_weeks_before_the_notebook_was_written_is_said_and_the_later_time_counts(tmp_path):
    written = DUE + timedelta(hours=26)
    notebook = in_layout(tmp_path, "s01", stamp(written - timedelta(weeks=3)), written)
    late = lateness(course(), handed("s01", notebook))
    assert late["claimed"] == (written - timedelta(weeks=3)).isoformat()
    assert late["submitted"] == written.isoformat() and late["seconds_late"] == 26 * 3600
    assert late["source"] == "the notebook file's modification time, later than timestamp.txt's claim"
    [check] = late["to_check"]
    assert "but the notebook was last written 504 h later" in check and check.endswith("which counts")
    result = apply_late(activity_result("s01", notebook, LAB, {a: Outcome(True, "fine") for a in LAB.activities}, [],
                                        "graded", 0.0), late)
    assert result["output"].splitlines()[2] == f"{TO_CHECK}: {check}."


def test_a_claim_in_year_one_is_shown_as_such(tmp_path):
    notebook = in_layout(tmp_path, "s01", b"0001-01-01 00:00:00 UTC")
    [check] = lateness(course(), handed("s01", notebook))["to_check"]
    assert check.startswith("timestamp.txt says 0001-01-01 00:00 UTC, but the notebook was last written")


def test_a_claim_within_the_tolerance_of_the_last_write_is_taken(tmp_path):
    claim = DUE - timedelta(hours=1)
    notebook = in_layout(tmp_path, "s01", stamp(claim), claim + TOLERANCE - timedelta(minutes=1))
    late = lateness(course(), handed("s01", notebook))
    assert (late["submitted"], late["source"]) == (claim.isoformat(), "timestamp.txt") and "to_check" not in late


def test_a_claim_after_the_notebook_arrived_counts_from_its_arrival(tmp_path):
    notebook = in_layout(tmp_path, "s01", b"9999-12-31 23:59:59 UTC")
    arrived = datetime.fromtimestamp(min(notebook.stat().st_ctime, notebook.parent.stat().st_ctime), timezone.utc)
    late = lateness(course(), handed("s01", notebook), now=NOW + timedelta(hours=1))
    assert late["submitted"] == arrived.isoformat() and late["source"].startswith("the time the notebook was put in")
    [check] = late["to_check"]
    assert "9999-12-31 23:59 UTC, in the future of this grading run, after the notebook was put in its folder" in check


def test_a_modification_time_later_than_the_notebooks_arrival_is_not_used(tmp_path):
    claim = DUE - timedelta(hours=1)
    notebook = in_layout(tmp_path, "s01", stamp(claim), NOW + timedelta(days=30))
    late = lateness(course(), handed("s01", notebook))
    assert (late["submitted"], late["source"]) == (claim.isoformat(), "timestamp.txt")
    [check] = late["to_check"]
    assert "so it was set by hand and is not used" in check


def test_a_claim_before_the_release_is_said(tmp_path):
    released = DUE - timedelta(days=7)
    claim = released - timedelta(days=1)
    notebook = in_layout(tmp_path, "s01", stamp(claim), claim - timedelta(hours=1))
    late = lateness(course(released=released), handed("s01", notebook))
    assert late["to_check"] == [f"timestamp.txt says {claim:%Y-%m-%d %H:%M} UTC, before the lab was released "
                                f"({released:%Y-%m-%d %H:%M} UTC)"]
    assert late["penalty"] == 0.0


def test_a_release_time_is_read_from_the_course_file(tmp_path):
    path = tmp_path / "course.toml"
    path.write_text(f"[labs.{LAB.name}]\nreleased = 2026-11-01T09:00:00Z\ndue = 2026-11-20T12:00:00Z\n")
    assert read_course(path, course_labs()).released == {LAB.name: datetime(2026, 11, 1, 9, tzinfo=timezone.utc)}


def recorded_without_running(submissions, options, jobs, on_result, on_start=lambda submission: None):
    """Stands in for batch.grade_all: every activity of every submission passes, with no notebook run."""
    for submission in submissions:
        on_start(submission)
        lab = course_labs()[submission.lab]
        outcomes = {activity: Outcome(True, "fine") for activity in lab.activities}
        on_result(submission, activity_result(submission.student, submission.path, lab, outcomes, [], "graded", 0.0),
                  {})


def test_a_batch_with_every_attack_beside_honest_students_writes_every_record_and_says_the_disputes(
        tmp_path, monkeypatch, capsys):
    """One run, with the gradebook: each unreadable claim, a far past and a far future one, and a
    claim three weeks before the notebook was written, beside an honest student on time and one
    late. Every record is written and recorded; the summary, the class report and the feedback
    say each dispute; the honest records say none."""
    honest = {"honest-on-time": DUE - timedelta(hours=1), "honest-late": DUE + timedelta(hours=26)}
    for student, moment in honest.items():
        in_layout(tmp_path, student, stamp(moment), moment - timedelta(minutes=2))
    for kind, claim in UNREADABLE.items():
        in_layout(tmp_path, kind, claim)
    in_layout(tmp_path, "far-past", b"0001-01-01 00:00:00 UTC")
    in_layout(tmp_path, "far-future", b"9999-12-31 23:59:59 UTC")
    written = DUE + timedelta(hours=26)
    in_layout(tmp_path, "three-weeks", stamp(written - timedelta(weeks=3)), written)
    honest_secret = "ab" * 64  # what nbgrader's submit writes
    (tmp_path / "submitted" / "honest-on-time" / LAB.name / "submission_secret.txt").write_text(honest_secret)
    (tmp_path / "submitted" / "huge" / LAB.name / "submission_secret.txt").write_bytes(b"s" * 1_000_000)
    (tmp_path / "course.toml").write_text(f"[late]\npenalty = 0.1\n[labs.{LAB.name}]\ndue = {DUE.isoformat()}\n")
    (tmp_path / "secret").write_bytes(b"s" * 32)
    monkeypatch.setattr(commands, "grade_all", recorded_without_running)
    # What the command sets for its own process, undone for the tests after this one.
    monkeypatch.setitem(sys.modules, "rfc3987_syntax", sys.modules.get("rfc3987_syntax"))
    monkeypatch.setenv(ENVIRONMENT, os.environ.get(ENVIRONMENT, str(ROOT)))
    out = tmp_path / "graded"
    command = ["grade", str(tmp_path / "submitted"), "--out", str(out), "--course", str(tmp_path / "course.toml"),
               "--secret-file", str(tmp_path / "secret"), "--sandbox", "none", "--no-pool", "--jobs", "1"]
    code = main(command)
    said = capsys.readouterr()
    assert code == 0, said.err
    records = records_in(out)
    disputed = {*UNREADABLE, "far-past", "far-future", "three-weeks"}
    assert set(records) == {(student, LAB.name) for student in {*honest, *disputed}}
    for (student, _), result in records.items():
        assert result["status"] == "graded" and result["extra_data"]["required"] + result["extra_data"]["bonus"] == \
            all_points(LAB), student
    assert records[("honest-on-time", LAB.name)]["score"] == all_points(LAB)
    assert records[("honest-late", LAB.name)]["score"] == pytest.approx(all_points(LAB) * 0.8)
    assert records[("three-weeks", LAB.name)]["score"] == pytest.approx(all_points(LAB) * 0.8), "late, as written"
    summary = said.out[said.out.index("hand-in times for a person to check"):]
    report = (out / REPORT).read_text()
    needs = report[report.index(f'id="{LAB.name}-attention"'):]  # the lab's "What needs a person" table
    needs = needs[:needs.index("</table>")]
    for student in disputed:
        checks = records[(student, LAB.name)]["extra_data"]["late"]["to_check"]
        assert f"  {student}/{LAB.name}: " in summary, student
        assert f"<tr><td>{student}</td>" in needs and "hand-in time: " in needs, student
        assert TO_CHECK in record_path(out, student, LAB.name, ".html").read_text(), student
        assert checks, student
    assert f"{len(disputed)})" in summary.splitlines()[0]
    for student in honest:
        assert "to_check" not in records[(student, LAB.name)]["extra_data"]["late"], student
        assert TO_CHECK not in record_path(out, student, LAB.name, ".html").read_text(), student
        assert f"<tr><td>{student}</td>" not in needs, student
    three_weeks = records[("three-weeks", LAB.name)]["extra_data"]["late"]["to_check"][0]
    assert "the notebook was last written 504 h later" in three_weeks
    assert "504 h later" in summary and "504 h later" in report
    assert "504 h later" in record_path(out, "three-weeks", LAB.name, ".html").read_text()
    held = held_scores(f"sqlite:///{out / 'gradebook.db'}")
    assert set(held) == set(records), "every record is in the gradebook"
    assert held[("three-weeks", LAB.name)]["seconds_late"] == 26 * 3600, "the time that counted, not the claim"
    assert held[("overflow", LAB.name)]["seconds_late"] == 0
    written = {path: path.stat().st_mtime_ns for path in out.glob("*/*.json")}
    assert main(command) == 0, "a run again keeps every record"
    again = capsys.readouterr().out
    assert f"{len(records)} already had a current result" in again
    assert again[again.index("hand-in times for a person to check"):].splitlines()[0] == summary.splitlines()[0]
    assert {path: path.stat().st_mtime_ns for path in out.glob("*/*.json")} == written, "each lateness is as it was"
    autograded = out / "autograded"
    for (student, _), result in records.items():
        kept = (autograded / student / LAB.name / "timestamp.txt").read_text()
        assert parse_utc(kept) == naive_utc(result["extra_data"]["late"]["submitted"]), "the time that counted"
    assert (autograded / "honest-on-time" / LAB.name / "submission_secret.txt").read_text() == honest_secret
    assert not (autograded / "huge" / LAB.name / "submission_secret.txt").exists(), "of a size submit never writes"


def test_refusing_submissions_without_a_timestamp_costs_those_records_alone_and_is_said_before_grading(
        tmp_path, monkeypatch, capsys):
    """A class downloaded from an LMS, three notebooks with no timestamp.txt beside one handed in
    through nbgrader, under missing_timestamp = "refuse": `grade` says so before grading, each of
    the three gets a result saying why, the fourth is graded, and once the course file counts
    them on time instead, the next run grades the three, and them alone."""
    for student in ("lms-1", "lms-2", "lms-3"):
        in_layout(tmp_path, student, written=DUE + timedelta(hours=26))
    in_layout(tmp_path, "nbgrader", stamp(DUE - timedelta(hours=1)), DUE - timedelta(hours=1, minutes=2))
    course_file = tmp_path / "course.toml"
    policy = f"[late]\npenalty = 0.1\nmissing_timestamp = '{{}}'\n[labs.{LAB.name}]\ndue = {DUE.isoformat()}\n"
    course_file.write_text(policy.format("refuse"))
    (tmp_path / "secret").write_bytes(b"s" * 32)
    monkeypatch.setattr(commands, "grade_all", recorded_without_running)
    monkeypatch.setenv(ENVIRONMENT, os.environ.get(ENVIRONMENT, str(ROOT)))
    out = tmp_path / "graded"
    command = ["grade", str(tmp_path / "submitted"), "--out", str(out), "--course", str(course_file),
               "--secret-file", str(tmp_path / "secret"), "--sandbox", "none", "--no-pool", "--jobs", "1",
               "--no-gradebook"]
    code = main(command)
    said = capsys.readouterr()
    assert code == 0, said.err
    notice = said.err.index(f"autograder: {LAB.name}: 3 of 4 submissions have no timestamp.txt")
    assert 'missing_timestamp is "refuse": none of them is graded' in said.err
    assert notice < said.err.index("[1/4"), "said before grading"
    records = records_in(out)
    assert records[("nbgrader", LAB.name)]["status"] == "graded"
    assert records[("nbgrader", LAB.name)]["score"] == all_points(LAB)
    for student in ("lms-1", "lms-2", "lms-3"):
        result = records[(student, LAB.name)]
        assert (result["status"], result["score"]) == (NO_TIMESTAMP, 0), student
        assert result["output"].startswith("Not graded: there is no timestamp.txt beside this notebook"), student
        page = record_path(out, student, LAB.name, ".html").read_text()
        assert "missing_timestamp is &quot;refuse&quot;" in page and "Nothing in this file was graded" not in page
        assert f"  {student}/{LAB.name}: {NO_TIMESTAMP}: Not graded" in said.out, student
    course_file.write_text(policy.format("on-time"))
    assert main(command) == 0
    again = capsys.readouterr()
    assert "1 already had a current result" in again.out and "[3/3 " in again.err, "the three graded, alone"
    assert 'missing_timestamp is "on-time": each counts as handed in on time' in again.err
    for student in ("lms-1", "lms-2", "lms-3"):
        result = records_in(out)[(student, LAB.name)]
        assert (result["status"], result["score"]) == ("graded", all_points(LAB)), student
        assert result["extra_data"]["late"]["submitted"] == DUE.isoformat(), "on time: at the due date, at the latest"
