"""The record of a class graded in one run (tests/classroom.py): one record per (student, lab) in
every file, late penalties as the course file says, a wrong lab's notebook graded as nothing,
and a closing summary that names every status, the missing work and the skipped files."""
import pytest

from tests.classroom import HANDED, MISSING, STRAY, check_record, expected_records
from tests.helpers import LABS, records_in

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def said(uninterrupted):
    return (uninterrupted.parent / f"{uninterrupted.name}-run.txt").read_text()


def test_every_record_of_the_class_holds_one_row_per_student_and_lab(uninterrupted, tmp_path):
    check_record(uninterrupted, f"sqlite:///{uninterrupted / 'gradebook.db'}", tmp_path)


def test_a_notebook_of_another_lab_is_graded_as_neither(uninterrupted):
    (student, lab), = [(student, lab) for (student, lab), want in expected_records().items()
                       if want.status == "wrong_lab"]
    result = records_in(uninterrupted)[(student, lab)]
    other = result["extra_data"]["found_lab"]
    assert other != lab and f"lab {other}" in result["output"] and f"as lab {lab}" in result["output"]
    assert result["tests"] == [] and result["score"] == 0
    assert not (uninterrupted / "autograded" / student / lab).exists()


def test_the_time_handed_in_comes_from_timestamp_txt_else_the_files_time(uninterrupted):
    records = records_in(uninterrupted)
    for handed in HANDED:
        late = records[(handed.student, LABS[handed.lab].name)]["extra_data"]["late"]
        if handed.hours is None:
            assert late["source"].startswith("the notebook file's modification time; no timestamp.txt"), late
        else:
            assert late["source"] == "timestamp.txt", late


def test_the_summary_counts_each_status_and_names_what_was_not_graded(said):
    expected = expected_records()
    statuses = {}
    for want in expected.values():
        statuses[want.status] = statuses.get(want.status, 0) + 1
    assert "statuses: " + ", ".join(f"{status} {count}" for status, count in sorted(statuses.items())) in said
    not_graded = said.split("not graded (", 1)[1].split("\n", 1)[1]
    for (student, lab), want in expected.items():
        if want.status != "graded":
            assert f"  {student}/{lab}: {want.status}: " in not_graded, (student, lab)


def test_the_summary_lists_the_missing_work_the_skipped_files_and_the_late_ones(said):
    missing = said.split("missing (", 1)[1].split("\nskipped", 1)[0]
    assert sorted(line.strip() for line in missing.splitlines()[1:]) == sorted(f"{s}/{lab}" for s, lab in MISSING)
    student, lab_index, name = STRAY
    skipped = said.split("skipped (", 1)[1]
    assert f"submitted/{student}/{LABS[lab_index].name}/{name}: not a notebook" in skipped
    late = said.split("handed in late (", 1)[1].split("\nmissing", 1)[0]
    for handed in HANDED:
        if handed.penalty:
            assert f"{handed.student}/{LABS[handed.lab].name}: Handed in" in late, handed


def test_a_log_shows_one_line_per_finished_submission(said):
    lines = [line for line in said.splitlines() if line.startswith("[") and "/" in line.split()[0]]
    finished = [line for line in lines if "still running" not in line]
    assert len(finished) == len(expected_records())
    assert finished[-1].startswith(f"[{len(finished)}/{len(finished)} ")
