"""The paths the grader follows and the files it names: only regular files are graded (no link,
pipe or device is followed or read), a path given twice is graded once, every name of a result
file is safe, bounded and distinct, and no cell of grades.csv is a formula."""
import csv
import os
import random
import re
import sqlite3
import stat
import subprocess
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import pytest

from autograder.grading.batch import safe_grade
from autograder.grading.grade import Options, Outcome, activity_result
from autograder.grading.roster import Submission, find_paths, id_problem, roster
from autograder.grading.submission import SubmissionError, load
from autograder.records.report import write_html, write_json
from autograder.records.results_store import (PLAIN, RESERVED, STEM_BYTES, atomic_write, current_result, file_stem,
                                              notebook_digest, provenance, stored_results, student_folder)
from autograder.records.tables import write_tables
from tests.adversarial.files import FORMULA_STARTS
from tests.helpers import LABS, ROOT, all_points, grade_command, lab_notebook
from tests.submissions import claiming

LAB = LABS[0]
SECRET = b"a course secret of the tests, 32+ bytes long"
INSTRUCTOR = LAB.path.with_suffix(".ipynb")  # full marks if it were graded
BLANK = lab_notebook(ROOT / "release", LAB)
NAME_MAX = 255  # ext4, tmpfs, btrfs, xfs


def paths_found(paths, skipped):
    return [found.path for found in find_paths(paths, skipped)]


def refusal(path):
    with pytest.raises(SubmissionError) as failure:
        load(path)
    return failure.value


def finishes(call):
    """call()'s return value; fails, rather than hanging the suite, if it blocks for minutes."""
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.update(value=call()), daemon=True)
    thread.start()
    thread.join(timeout=300)  # a backstop for a regression that blocks, never reached otherwise
    assert not thread.is_alive(), "blocked"
    return outcome.get("value")


# ------------------------------------------------------------------------- what is read
def test_a_link_to_the_instructor_notebook_is_not_followed(tmp_path):
    link = tmp_path / "mine.ipynb"
    link.symlink_to(INSTRUCTOR)
    error = refusal(link)
    assert error.kind == "not_a_regular_file"
    assert "symbolic link" in str(error) and str(INSTRUCTOR) in str(error)
    assert notebook_digest(link) is None, "never current, so never kept from an earlier run"


def test_a_dangling_link_is_named_a_link(tmp_path):
    link = tmp_path / "gone.ipynb"
    link.symlink_to(tmp_path / "nowhere.ipynb")
    assert refusal(link).kind == "not_a_regular_file"


def test_a_pipe_is_refused_without_waiting_for_a_writer(tmp_path):
    pipe = tmp_path / "pipe.ipynb"
    os.mkfifo(pipe)
    error = finishes(lambda: refusal(pipe))
    assert error.kind == "not_a_regular_file" and "named pipe" in str(error)
    assert finishes(lambda: notebook_digest(pipe)) is None


def test_a_device_is_refused_not_read(tmp_path):
    null = os.stat("/dev/null")
    device = tmp_path / "device.ipynb"
    os.mknod(device, stat.S_IFCHR | 0o600, null.st_rdev)
    error = refusal(device)
    assert error.kind == "not_a_regular_file" and "character device" in str(error)


def test_a_folder_named_like_a_notebook_is_refused(tmp_path):
    folder = tmp_path / "folder.ipynb"
    folder.mkdir()
    assert refusal(folder).kind == "not_a_regular_file"


def test_a_regular_file_still_loads(tmp_path):
    copy = tmp_path / "copy.ipynb"
    copy.write_bytes(BLANK.read_bytes())
    assert load(copy).metadata["course"]["lab"] == LAB.name
    assert notebook_digest(copy) is not None


# ------------------------------------------------------------------------- what is found
def test_linked_folders_are_not_searched_and_linked_notebooks_are_kept_to_be_refused(tmp_path):
    batch = tmp_path / "batch"
    (batch / "alice").mkdir(parents=True)
    (batch / "alice" / "own.ipynb").write_bytes(BLANK.read_bytes())
    (batch / "bob").symlink_to(INSTRUCTOR.parent)  # holds the instructor's .ipynb
    (batch / "carol.ipynb").symlink_to(INSTRUCTOR)
    (batch / "dave.ipynb").symlink_to(INSTRUCTOR.parent)
    skipped = []
    found = paths_found([batch], skipped)
    assert found == [batch / "alice" / "own.ipynb", batch / "carol.ipynb", batch / "dave.ipynb"]
    assert [refusal(path).kind for path in found[1:]] == ["not_a_regular_file"] * 2
    assert skipped == [(batch / "bob", "a link to a folder, which is never followed")]


def test_a_linked_folder_given_is_refused_not_searched(tmp_path):
    link = tmp_path / "linked"
    link.symlink_to(INSTRUCTOR.parent)
    assert paths_found([link], []) == [link]
    assert refusal(link).kind == "not_a_regular_file"


def test_the_same_file_through_any_spelling_is_found_once(tmp_path, monkeypatch):
    batch = tmp_path / "batch"
    batch.mkdir()
    notebook = batch / "a.ipynb"
    notebook.write_bytes(BLANK.read_bytes())
    monkeypatch.chdir(batch)
    spellings = ["a.ipynb", "./a.ipynb", str(notebook), "../batch/a.ipynb", str(batch), "."]
    assert len(find_paths(spellings, [])) == 1


def test_a_file_linked_into_two_students_folders_is_one_submission_each(tmp_path):
    submitted = tmp_path / "submitted"
    for student in ("alice", "bob"):
        (submitted / student / LAB.name).mkdir(parents=True)
    alice = submitted / "alice" / LAB.name / f"{LAB.name}.ipynb"
    alice.write_bytes(BLANK.read_bytes())
    bob = submitted / "bob" / LAB.name / f"{LAB.name}.ipynb"
    os.link(alice, bob)
    assert paths_found([submitted, alice, bob], []) == [alice, bob]
    assert [s.key for s in roster([submitted, alice, bob]).submissions] == [("alice", LAB.name), ("bob", LAB.name)]


def test_two_files_of_one_record_are_graded_once_and_the_other_is_said(tmp_path):
    """Outside nbgrader's layout, two notebooks of one stem and lab; inside it, a second notebook
    in a lab's folder: one record each, from the notebook named for the lab where there is one."""
    for folder in ("x", "y"):
        (tmp_path / "loose" / folder).mkdir(parents=True)
        (tmp_path / "loose" / folder / "a.ipynb").write_bytes(BLANK.read_bytes())
    found = roster([tmp_path / "loose"])
    assert [(s.key, s.path) for s in found.submissions] == [(("a", LAB.name), tmp_path / "loose" / "x" / "a.ipynb")]
    assert found.skipped == [(tmp_path / "loose" / "y" / "a.ipynb", f"another file for a/{LAB.name}, which is graded "
                                                                   f"from {tmp_path / 'loose' / 'x' / 'a.ipynb'}")]
    folder = tmp_path / "submitted" / "alice" / LAB.name
    folder.mkdir(parents=True)
    for name in ("a-copy.ipynb", f"{LAB.name}.ipynb"):
        (folder / name).write_bytes(BLANK.read_bytes())
    (folder / "timestamp.txt").write_text("2026-12-01 10:00:00.000000 UTC")
    # What nbgrader's collect brings with the notebook (its secret, the release's settings and data) is expected.
    (folder / "submission_secret.txt").write_text("0123456789abcdef")
    (folder / "nbgrader_config.py").write_text("c = get_config()\n")
    (folder / "data").mkdir()
    (folder / "data" / "penguins.csv").write_text("species\n")
    (folder / "notes.py").write_text("print(1)\n")
    (tmp_path / "submitted" / "alice" / "empty_lab").mkdir()
    (tmp_path / "submitted" / "alice" / "empty_lab" / "nbgrader_config.py").write_text("c = get_config()\n")
    found = roster([tmp_path / "submitted"])
    assert [(s.key, s.path.name, s.expected) for s in found.submissions] == [
        (("alice", LAB.name), f"{LAB.name}.ipynb", LAB.name)]
    assert sorted((path.name, why.split(",")[0]) for path, why in found.skipped) == [
        ("a-copy.ipynb", f"another file for alice/{LAB.name}"),
        ("empty_lab", "an assignment folder with no notebook in it"), ("nbgrader_config.py", "not a notebook (.ipynb)"),
        ("notes.py", "not a notebook (.ipynb)")]


def test_the_student_is_found_from_inside_the_submitted_folder(tmp_path, monkeypatch):
    folder = tmp_path / "submitted" / "alice" / LAB.name
    folder.mkdir(parents=True)
    (folder / f"{LAB.name}.ipynb").write_bytes(BLANK.read_bytes())
    monkeypatch.chdir(folder)
    for given in (f"{LAB.name}.ipynb", folder / f"{LAB.name}.ipynb", ".", "..", folder.parent.parent):
        assert [s.key for s in roster([given]).submissions] == [("alice", LAB.name)], given


def test_a_name_of_bytes_that_are_not_utf8_is_refused_with_its_reason(tmp_path):
    """nbgrader could not find an escaped spelling of the name again, so the file is skipped."""
    raw = os.fsencode(tmp_path) + b"/caf\xe9.ipynb"
    (tmp_path / "alice.ipynb").write_bytes(BLANK.read_bytes())
    with open(raw, "wb") as handle:
        handle.write(BLANK.read_bytes())
    found = roster([tmp_path])
    assert [s.student for s in found.submissions] == ["alice"]
    (path, why), = found.skipped
    assert os.fsencode(path) == raw and "not UTF-8" in why and "rename the file" in why


# ------------------------------------------------------------------------- whose record: the root's layout
def hand_in(root, student, folder=LAB.name, content=None, name=None):
    """`student`'s notebook in nbgrader's layout under `root` (the blank release unless `content`)."""
    path = root / student / folder / (name or f"{folder}.ipynb")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(BLANK.read_bytes() if content is None else content)
    return path


def colluding(tmp_path):
    """A class where aa's own lab folder holds folders in nbgrader's layout, one claiming victim's
    record (with its own timestamp.txt) and one a student who does not exist; returns
    (root, victim's own notebook, aa's own notebook)."""
    root = tmp_path / "submitted"
    victim = hand_in(root, "victim", content=INSTRUCTOR.read_bytes())
    mine = hand_in(root, "aa")
    for claimed in ("victim", "ghost"):
        forged = hand_in(mine.parent / "submitted", claimed)
        (forged.parent / "timestamp.txt").write_text("2020-01-01 00:00:00.000000 UTC")
    hand_in(mine.parent / "deeper" / "a" / "b" / "submitted", "victim")
    return root, victim, mine


@pytest.mark.parametrize("given", ["root", "students", "files", "pattern"])
def test_a_folder_inside_ones_own_submission_makes_no_record_of_anyone(tmp_path, given):
    """Attack: submitted/aa/<lab>/submitted/victim/<lab>/<lab>.ipynb, inside aa's own folder, was
    keyed (victim, <lab>) and took victim's record over; the same made a record of a student who
    does not exist. A record's student and lab are the two folders below the root alone."""
    root, victim, mine = colluding(tmp_path)
    paths = {"root": [root], "students": [root / "aa", root / "victim"], "files": [mine, victim],
             "pattern": [*sorted(mine.parent.iterdir()), victim]}[given]  # `grade submitted/aa/lab/* ...`
    found = roster(paths)
    assert [(s.key, s.path, s.nbgrader) for s in found.submissions] == [
        (("aa", LAB.name), mine, True), (("victim", LAB.name), victim, True)]
    nested = [(path, why) for path, why in found.skipped if path.is_relative_to(mine.parent)]
    assert [path for path, _ in nested] == ([mine.parent / "deeper", mine.parent / "submitted"] if given != "files"
                                            else [])
    assert all(why.startswith(f"inside aa's {LAB.name} folder: aa's own files") for _, why in nested)


@pytest.mark.parametrize("below", [("deeper",), ("submitted",), ("submitted", "victim"),
                                   ("submitted", "victim", LAB.name),
                                   ("submitted", "victim", LAB.name, f"{LAB.name}.ipynb")])
def test_a_path_given_inside_a_lab_folder_is_that_students_own_files(tmp_path, below):
    """However deep into a student's lab folder a given path reaches, the outermost submitted
    folder is the root: what is there is that student's own files, never a record."""
    _, _, mine = colluding(tmp_path)
    given = mine.parent.joinpath(*below)
    with pytest.raises(SystemExit, match=f"no notebooks to grade; skipped: {re.escape(str(given))} \\(inside aa's "
                                         f"{LAB.name} folder"):
        roster([given])


def test_a_course_kept_below_a_folder_named_submitted_is_refused_saying_where(tmp_path):
    """The price of the outermost root: every record is skipped, loudly, rather than one taken."""
    root = tmp_path / "submitted" / "course" / "submitted"
    hand_in(root, "alice")
    with pytest.raises(SystemExit, match=f"no notebooks to grade; skipped: .*{re.escape(str(root / 'alice'))} "
                                         "\\(inside course's submitted folder"):
        roster([root])


@pytest.mark.parametrize("place, why", [
    (("x.ipynb",), "in no student's folder"),
    (("alice", "x.ipynb"), "in alice's folder but in no lab folder"),
])
def test_a_notebook_above_a_lab_folder_is_skipped_with_the_layout_said(tmp_path, place, why):
    root = tmp_path / "submitted"
    hand_in(root, "bob")
    (root / "alice").mkdir()
    stray = root.joinpath(*place)
    stray.write_bytes(BLANK.read_bytes())
    found = roster([root])
    assert [s.key for s in found.submissions] == [("bob", LAB.name)]
    assert found.skipped == [(stray, f"{why}: nbgrader's layout is submitted/<student>/<lab>/<lab>.ipynb")]


def test_a_plain_folder_s_records_are_its_stems_and_its_submitted_folders_layouts(tmp_path):
    """In a plain folder a file's stem names its student, whatever folders it is in, and it has no
    nbgrader hand-in time; a folder named submitted in it is a root of nbgrader's layout, which
    is never searched below its lab folders (so no student's folder there is taken for a root)."""
    plain = tmp_path / "batch"
    loose = hand_in(plain / "x" / "y", "z", name="bob.ipynb")
    root, victim, mine = colluding(plain)
    found = roster([plain])
    assert [(s.key, s.path, s.nbgrader) for s in found.submissions] == [
        (("aa", LAB.name), mine, True), (("bob", LAB.name), loose, False), (("victim", LAB.name), victim, True)]


@pytest.mark.parametrize("name", ["..", ".", "", ".hidden", "tab\there", "line\nbreak", "nul\x00", "\x1b[31mred",
                                  "del\x7f", "c1\x85", "a/b", "caf\udce9"])
def test_ids_that_cannot_be_a_folder_name_as_they_are_are_refused(name):
    assert id_problem(name)


@pytest.mark.parametrize("name", ["alice", "bob_pt03", "student-07", "a.b", "=1+1", "José", "-rf", "a b", "L" * 234])
def test_ids_that_are_a_folder_name_as_they_are_are_kept(name):
    assert id_problem(name) is None


@pytest.mark.parametrize("filename", ["...ipynb", "..ipynb", ".ipynb", ".hidden.ipynb", "tab\t.ipynb",
                                      "esc\x1b.ipynb"])
def test_a_file_whose_stem_cannot_be_an_id_is_skipped_with_its_reason(tmp_path, filename):
    """Attack: `...ipynb` was stored in the gradebook as student `..` while its folders were
    escaped, so nbgrader's own commands, which build paths from the id, looked one level up."""
    plain = tmp_path / "batch"
    plain.mkdir()
    (plain / filename).write_bytes(BLANK.read_bytes())
    (plain / "alice.ipynb").write_bytes(BLANK.read_bytes())
    found = roster([plain])
    assert [s.student for s in found.submissions] == ["alice"]
    (path, why), = found.skipped
    assert path == plain / filename
    assert why.startswith(f"the student id {Path(filename).stem!r} cannot be stored as it is")
    assert why.endswith("rename the file (a plain folder's file names are its student ids) to the student's id")


@pytest.mark.parametrize("student", ["..hidden", ".x", "tab\there", "esc\x1b"])
def test_a_student_folder_whose_name_cannot_be_an_id_is_skipped_with_its_reason(tmp_path, student):
    root = tmp_path / "submitted"
    odd, alice = hand_in(root, student), hand_in(root, "alice")
    found = roster([root])
    assert [s.path for s in found.submissions] == [alice]
    assert found.skipped == [(odd, f"the student id {student!r} cannot be stored as it is, since "
                                   f"{id_problem(student)}: rename the student's folder to the student's id")]


DEEP = 1500  # folders, each one letter: deeper than Python's recursion limit, within the file system's path limit


@pytest.fixture
def deep_folder(tmp_path):
    """A factory of folders DEEP levels below the one it is given, each removed again bottom up:
    pytest's own clean-up (shutil.rmtree) recurses, and would fail on them in a later session."""
    made = []

    def make(top):
        deep = top
        for _ in range(DEEP):  # one by one: mkdir(parents=True) would itself recurse too deep
            deep = deep / "d"
            deep.mkdir()
        made.append((top, deep))
        return deep

    yield make
    for top, deep in made:
        while deep != top:
            for entry in deep.iterdir():
                entry.unlink()
            deep.rmdir()
            deep = deep.parent


@pytest.mark.parametrize("layout", [False, True])
def test_no_depth_of_folders_stops_the_roster(tmp_path, deep_folder, layout):
    """Attack: folders nested deeper than Python's recursion limit, in a plain folder or in a
    student's lab folder; the roster finds everything else as before."""
    given = tmp_path / ("submitted" if layout else "plain")
    good = hand_in(given, "ann") if layout else given / "ann.ipynb"
    good.parent.mkdir(parents=True, exist_ok=True)
    good.write_bytes(BLANK.read_bytes())
    deep = deep_folder(good.parent)
    (deep / "zed.ipynb").write_bytes(BLANK.read_bytes())
    found = roster([given])
    if layout:
        assert [s.path for s in found.submissions] == [good]
        assert found.skipped == [(good.parent / "d", f"inside ann's {LAB.name} folder: ann's own files, never "
                                  f"searched for a submission (only the notebooks directly in a lab folder are "
                                  f"graded; nbgrader's layout is submitted/<student>/<lab>/<lab>.ipynb)")]
    else:
        assert [s.path for s in found.submissions] == [good, deep / "zed.ipynb"]


NESTED = b"[" * 100_000


@pytest.mark.parametrize("layout", [False, True])
def test_a_file_the_reader_cannot_parse_stops_no_roster(tmp_path, layout):
    """Attack: a .ipynb of 100,000 nested `[` in a plain folder stopped the roster with
    RecursionError before anything was graded; in nbgrader's layout it was a grader_error."""
    if layout:
        given = tmp_path / "submitted"
        bad, good = hand_in(given, "mallory", content=NESTED), hand_in(given, "ann")
    else:
        given = tmp_path / "plain"
        given.mkdir()
        bad, good = given / "mallory.ipynb", given / "ann.ipynb"
        bad.write_bytes(NESTED)
        good.write_bytes(BLANK.read_bytes())
    found = roster([given])
    assert [(s.student, s.path) for s in found.submissions] == [("ann", good), ("mallory", bad)]
    mallory = found.submissions[1]
    result, _ = safe_grade(mallory.path, Options(), mallory.expected)
    assert result["status"] == "invalid_notebook" and "RecursionError" in result["output"]


def test_a_notebook_of_another_lab_claiming_the_folder_s_lab_is_that_other_lab(tmp_path):
    """Attack: a notebook of one lab whose metadata claims another, defining one of the other's
    functions, was graded as the other (0 points, status graded). In that lab's folder it is
    wrong_lab; outside the layout it is the lab its structure says."""
    lab, other = LABS[-1], LABS[0]
    content = nbformat.writes(claiming(lab, other)).encode()
    in_folder = hand_in(tmp_path / "submitted", "mallory", other.name, content)
    plain = tmp_path / "plain" / "mallory.ipynb"
    plain.parent.mkdir()
    plain.write_bytes(content)
    (handed,), (loose,) = roster([in_folder]).submissions, roster([plain]).submissions
    assert (handed.key, handed.expected, loose.key) == (("mallory", other.name), other.name, ("mallory", lab.name))
    result, _ = safe_grade(handed.path, Options(), handed.expected)
    assert result["status"] == "wrong_lab" and result["extra_data"]["found_lab"] == lab.name


# ------------------------------------------------------------------------- result file names
def odd_names():
    """Names a student or a folder can have, and names made to collide after escaping or cutting."""
    chosen = ["alice", "..", ".", "...", ".hidden", "a/b", "../../etc/passwd", "=1+1", "%2E%2E", "%", "~", "a~b",
              "José", "josé", "Jose\u0301", "tab\there", "line\nbreak", "\x1b[31mred", "CON", "-rf", "a" * 300,
              "a" * 301, "é" * 200, "é" * 201, "a" * (STEM_BYTES - 17) + "%", "a" * (STEM_BYTES - 17) + "%25",
              "x" * STEM_BYTES, "x" * (STEM_BYTES + 1), "\udce9", "\udce9" * 300]
    rng = random.Random(22)
    alphabet = "ab.%~/-_ \t\n=é\u0301\U0001F600\udcff"
    chosen += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 400))) for _ in range(2000)]
    return list(dict.fromkeys(chosen))


def test_file_stems_are_plain_bounded_and_distinct():
    names = odd_names()
    stems = [file_stem(name) for name in names]
    assert len(set(stems)) == len(names)
    allowed = {chr(byte) for byte in PLAIN} | {"%", "~"}
    for name, stem in zip(names, stems):
        assert set(stem) <= allowed and not stem.startswith(".") and len(stem.encode()) <= STEM_BYTES, (name, stem)
        assert file_stem(name) == stem, "the same name always gives the same stem"


@pytest.mark.parametrize("name", ["alice", "bob_pt03", "student-07", "a.b"])
def test_a_plain_name_is_its_own_stem(name):
    assert file_stem(name) == name


@pytest.mark.parametrize("name", [*sorted(RESERVED), "grades.csv", "course.csv", f"grades-{LAB.name}.csv",
                                  "GRADES.CSV"])
def test_a_student_named_like_the_results_folders_own_files_gets_a_folder_of_their_own(name):
    folder = student_folder(name)
    assert folder.startswith("%"), "the results folder's own names start with a letter"
    assert folder not in {student_folder(other) for other in odd_names()}


def a_result(name, passed=True):
    outcomes = {activity: Outcome(passed, "fine" if passed else "wrong") for activity in LAB.activities}
    result = activity_result(name, f"/somewhere/{name}.ipynb", LAB, outcomes, [], "graded", time.monotonic())
    result["extra_data"].update(provenance(result, "0" * 64, SECRET))
    return result


@pytest.mark.parametrize("length", [234, 255, 1000, 10_000])
def test_results_of_a_long_name_are_written_and_found_again(tmp_path, length):
    name, result = "n" * length, a_result("n" * length)
    written = [write_json(tmp_path, result), write_html(tmp_path, result)]
    assert all(path.parent.parent == tmp_path and path.is_file() for path in written)
    submission = Submission(name, LAB.name, tmp_path / f"{name[:200]}.ipynb")
    assert current_result(tmp_path, submission, "0" * 64, SECRET) == result
    assert stored_results(tmp_path) == {(name, LAB.name): result}
    assert max(len(os.fsencode(path.name)) for path in tmp_path.rglob("*")) <= NAME_MAX


def test_a_result_the_grader_failed_to_make_is_graded_again_by_the_next_run(tmp_path):
    """A grader_error is the grader's fault (a bug, a race under load), never the student's: the
    next run grades that submission again, where a graded result of the same notebook is kept."""
    submission = Submission("s01", LAB.name, tmp_path / "s01.ipynb")
    for status, current in (("graded", True), ("grader_error", False)):
        result = a_result("s01")
        result["status"] = status
        write_json(tmp_path, result)
        assert (current_result(tmp_path, submission, "0" * 64, SECRET) == result) is current, status


def test_whole_file_writing_works_at_the_name_limit(tmp_path):
    target = tmp_path / ("n" * (NAME_MAX - len(".json")) + ".json")
    atomic_write(target, "{}\n")
    assert target.read_text() == "{}\n" and os.listdir(tmp_path) == [target.name]


def test_a_name_with_path_components_stays_in_the_folder(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    for name in ("..", ".", "../../escaped", "/abs"):
        write_json(out, a_result(name))
    assert {path.parent.parent for path in out.glob("*/*")} == {out} and not (tmp_path / "escaped.json").exists()
    assert len(list(out.rglob("*"))) == 8 and not any(path.name.startswith(".") for path in out.rglob("*"))
    assert sorted(stored_results(out)) == sorted((name, LAB.name) for name in ("..", ".", "../../escaped", "/abs"))


# ------------------------------------------------------------------------- grades.csv
def test_csv_cells_are_never_formulas_and_numbers_stay_numbers(tmp_path):
    names = ["=1+1", "+SUM(A1)", "-2+3", "@cmd", "\t=hidden", "\r=hidden", "plain", "'quoted", "1e3"]
    for name in names:
        write_json(tmp_path, a_result(name))
    write_tables(tmp_path)
    for table in ("grades.csv", f"grades-{LAB.name}.csv", "course.csv"):
        with (tmp_path / table).open(newline="") as handle:
            rows = list(csv.DictReader(handle))
        assert sorted(row["student"] for row in rows) == sorted(
            "'" + name if name.startswith(FORMULA_STARTS) else name for name in names), table
        for row in rows:
            assert not any(cell.startswith(FORMULA_STARTS) for cell in row.values()), row
    with (tmp_path / "grades.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            assert {a: row[f"{LAB.name} {a}"] for a in LAB.activities} == {
                a: str(value.points) for a, value in LAB.activities.items()}


# ------------------------------------------------------------------------- a whole batch
@pytest.mark.slow
def test_a_batch_of_odd_paths_gets_a_result_for_each_and_runs_again(tmp_path):
    batch, out = tmp_path / "batch", tmp_path / "out"
    batch.mkdir()
    blank = BLANK.read_bytes()
    odd = {"blank": "blank.ipynb", "=1+1": "=1+1.ipynb", "L" * 234: "L" * 234 + ".ipynb"}
    for filename in odd.values():
        (batch / filename).write_bytes(blank)
    (batch / "...ipynb").write_bytes(blank)  # its id would be "..", which nbgrader would read as the folder above
    (batch / "linked.ipynb").symlink_to(INSTRUCTOR)
    os.mkfifo(batch / "pipe.ipynb")
    os.mknod(batch / "device.ipynb", stat.S_IFCHR | 0o600, os.stat("/dev/null").st_rdev)
    spelt_again = [batch / "blank.ipynb", os.path.join(batch, "..", batch.name, "blank.ipynb")]
    run = subprocess.run(grade_command(batch, *spelt_again, "--out", out, "--jobs", "2"), cwd=ROOT,
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{batch / '...ipynb'}: the student id '..' cannot be stored as it is" in run.stdout
    results = {student: result for (student, _), result in stored_results(out).items()}
    assert {name: result["status"] for name, result in results.items()} == {
        **{name: "graded" for name in odd}, **dict.fromkeys(("linked", "pipe", "device"), "not_a_regular_file")}
    assert all(result["score"] == 0 for result in results.values()), "the instructor's notebook was not graded"
    assert sorted(entry.name for entry in out.iterdir() if entry.is_dir()) == sorted(
        ["autograded", *map(student_folder, results)])
    assert len(list((out / "autograded").iterdir())) == len(odd)
    # Where nbgrader's commands look for a student, the id itself, as the gradebook holds it.
    assert sorted(path.name for path in (out / "autograded").iterdir()) == sorted(odd)
    with sqlite3.connect(out / "gradebook.db") as gradebook:
        assert sorted(row[0] for row in gradebook.execute("SELECT id FROM student")) == sorted(odd)
    assert max(len(os.fsencode(path.name)) for path in out.rglob("*")) <= NAME_MAX
    with (out / "grades.csv").open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert len(rows) == 1 + len(results)
    assert not any(cell.startswith(FORMULA_STARTS) for row in rows for cell in row)
    again = subprocess.run(grade_command(batch, "--out", out), cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"{len(odd)} already had a current result" in again.stdout


@pytest.mark.slow
def test_two_colluding_students_take_over_no_record_in_any_table(tmp_path):
    """aa's lab folder holds nbgrader's layout claiming victim's record (with a forged
    timestamp.txt) and a student who does not exist: victim's record is victim's own graded
    notebook and hand-in time, and nothing of the fake reaches the results, the gradebook,
    autograded/ or canvas.csv. One batch grades the whole class."""
    root, victim, mine = colluding(tmp_path)
    (victim.parent / "timestamp.txt").write_text("2026-12-01 10:00:00.000000 UTC")
    written = datetime(2026, 12, 1, 9, 59, tzinfo=timezone.utc).timestamp()  # as nbgrader's submit leaves it
    os.utime(victim, (written, written))
    out = tmp_path / "out"
    run = subprocess.run(grade_command(root, "--out", out, "--jobs", "2"), cwd=ROOT, capture_output=True, text=True,
                         timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    records = stored_results(out)
    assert sorted(records) == [("aa", LAB.name), ("victim", LAB.name)]
    theirs = records[("victim", LAB.name)]
    assert (theirs["status"], theirs["score"], theirs["extra_data"]["path"]) == ("graded", all_points(LAB), str(victim))
    assert theirs["extra_data"]["late"]["submitted"] == "2026-12-01T10:00:00+00:00"
    assert records[("aa", LAB.name)]["score"] == 0 and records[("aa", LAB.name)]["extra_data"]["path"] == str(mine)
    assert f"{mine.parent / 'submitted'}: inside aa's {LAB.name} folder" in run.stdout
    with sqlite3.connect(out / "gradebook.db") as gradebook:
        assert sorted(row[0] for row in gradebook.execute("SELECT id FROM student")) == ["aa", "victim"]
    assert sorted(path.name for path in (out / "autograded").iterdir()) == ["aa", "victim"]
    with (out / "canvas.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))[1:]  # after Canvas's points-possible row
    assert sorted(row["SIS Login ID"] for row in rows) == ["aa", "victim"]
