"""nbgrader's own tools on the course, in nbgrader course folders of their own set up as the
checkout is (its nbgrader_config.py, results in graded/): in a copy of the checkout, nbgrader's
autograde, generate_assignment and every command not known to be safe there are refused before they
change anything; elsewhere `generate_assignment` gives each student notebook back byte for byte;
the exchange round trip ends with each student reading our scores in their feedback, `nbgrader
export` lists no lab nobody handed in, and a submission that a failed `nbgrader autograde` left
half-written is completed when the grader records it."""
import hashlib
import os
import re
import shutil
import subprocess
import sys

import nbformat
import pytest
from traitlets.config.loader import PyFileConfigLoader

from autograder.grading.grade import Outcome, activity_result
from autograder.records.gradebook import GradebookWriter, held_scores
from tests.helpers import (LABS, ROOT, all_points, grade_command, lab_notebook, nbgrader, nbgrader_export,
                           records_in, required_points)

COURSE_ID = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT / "autograder" / "cli")).load_config().CourseDirectory[
    "course_id"]
# The line of the checkout's nbgrader_config.py that refuses the nbgrader commands unsafe there.
GUARD = 'load_subconfig("autograder/cli/nbgrader_commands.py")'


@pytest.fixture(autouse=True)
def alembic_on_path(monkeypatch):
    """nbgrader runs the `alembic` command found on PATH whenever it opens a gradebook."""
    monkeypatch.setenv("PATH", f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}")


def course_folder(folder, exchange=None, guarded=False):
    """An nbgrader course folder at `folder` whose nbgrader_config.py is the checkout's, loading
    the course's settings from the checkout, with `exchange` as the exchange's root. `guarded`
    keeps the checkout's refusal of the nbgrader commands unsafe in it; without it the folder is a
    course folder of your own, where nbgrader's source/ holds the release."""
    folder.mkdir(parents=True)
    config = (ROOT / "nbgrader_config.py").read_text()
    assert GUARD in config, "the checkout's nbgrader_config.py no longer loads autograder/cli/nbgrader_commands.py"
    settings = ROOT / "autograder" / "cli"
    config = config.replace(GUARD, f"load_subconfig({str(settings / 'nbgrader_commands.py')!r})" if guarded else "")
    config = config.replace('"autograder/cli/nbgrader_config.py"', repr(str(settings / "nbgrader_config.py")))
    assert str(settings / "nbgrader_config.py") in config, (
        "the checkout's nbgrader_config.py no longer loads autograder/cli/nbgrader_config.py")
    if exchange is not None:
        config += f"c.Exchange.root = {str(exchange)!r}\n"
    (folder / "nbgrader_config.py").write_text(config)
    return folder


def files(folder):
    return {path.relative_to(folder): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def as_student(home, exchange):
    """A student's options: the course and the exchange, and an exchange cache of their own, where
    submit keeps the secret that fetch_feedback finds their feedback by."""
    return [f"--course={COURSE_ID}", f"--Exchange.root={exchange}", f"--Exchange.cache={home / 'cache'}"]


def succeeds(run):
    assert run.returncode == 0, run.stdout + run.stderr
    return run


def record_full_marks(course, student, lab):
    """Record, as `make grade` does, every activity of `student`'s submission of `lab` passed."""
    db_url = f"sqlite:///{course / 'graded' / 'gradebook.db'}"
    outcomes = {activity: Outcome(True, "fine") for activity in lab.activities}
    result = activity_result(student, lab_notebook(course / "submitted" / student, lab), lab, outcomes, [], "graded",
                             0.0)
    writer = GradebookWriter(db_url, course / "graded")
    writer.prepare([lab.name])
    writer.record(student, lab.name, result, {})
    writer.close()
    return db_url


@pytest.fixture(scope="module")
def checkout_course(tmp_path_factory):
    """The checkout's course folder for the first lab as an instructor has it after a `make
    grade`: its nbgrader_config.py with the refusal, the instructor notebooks in source/, the
    release, and alice's submission, graded. The tests using it must change nothing in it."""
    lab = LABS[0]
    course = course_folder(tmp_path_factory.mktemp("checkout") / "course", guarded=True)
    shutil.copytree(ROOT / "source" / lab.name, course / "source" / lab.name)
    shutil.copytree(ROOT / "release" / lab.name, course / "release" / lab.name)
    shutil.copytree(ROOT / "release" / lab.name, course / "submitted" / "alice" / lab.name)
    (course / "graded").mkdir()
    record_full_marks(course, "alice", lab)
    return course


def snapshot(folder):
    """Every file and folder under `folder`: its modification time and, for a file, its bytes' hash."""
    return {path.relative_to(folder): (path.stat().st_mtime_ns,
                                       path.is_dir() or hashlib.sha256(path.read_bytes()).hexdigest())
            for path in sorted(folder.rglob("*"))}


def refused(run, command, instead):
    """`run` stopped at the course's refusal of `nbgrader command`, which names what to run instead."""
    said = run.stdout + run.stderr
    assert run.returncode != 0, said
    assert f"nbgrader {command}: refused in this course folder, before it changed anything" in said, said
    assert instead in said, said
    return said


def test_nbgrader_autograde_is_refused_in_the_checkout_whatever_the_spelling_and_changes_nothing(checkout_course,
                                                                                                   tmp_path):
    """nbgrader's autograde there copied the reference solutions into graded/autograded/ and left
    gradebook rows, and it would score the optional activities 0 (their check cells carry 0 points:
    nbgrader's total for a full solution is the required points, the grader's all of them)."""
    lab = LABS[0]
    course = checkout_course
    cells = [cell.metadata.nbgrader for cell in nbformat.read(course / "release" / lab.name / f"{lab.name}.ipynb",
                                                                as_version=4).cells]
    assert sum(cell.get("points", 0) for cell in cells if cell["grade"]) == required_points(lab) < all_points(lab)
    before = snapshot(course)
    for run in (lambda: nbgrader("autograde", lab.name, cwd=course),
                lambda: subprocess.run([sys.executable, "-m", "nbgrader", "autograde", "--force", lab.name], cwd=course,
                                       capture_output=True, text=True, timeout=600),
                lambda: nbgrader("autograde", f"--CourseDirectory.root={course}", lab.name, cwd=tmp_path)):
        said = refused(run(), "autograde", "grade with `make grade`")
        assert "scores each optional activity 0 points" in said
        assert snapshot(course) == before


def test_generate_assignment_and_every_command_not_known_safe_are_refused_in_the_checkout(checkout_course):
    """generate_assignment --force deleted release/<lab>/ before failing on the instructor
    notebook; a command nobody checked (here one writing the gradebook's labs) is refused as
    well, and the refusals leave the folder as it was."""
    lab = LABS[0]
    course = checkout_course
    before = snapshot(course)
    refused(nbgrader("generate_assignment", "--force", lab.name, cwd=course), "generate_assignment", "`make release`")
    refused(nbgrader("db", "assignment", "add", lab.name, cwd=course), "db assignment add",
            "the gradebook's labs, cells and grades are the grader's to write")
    assert snapshot(course) == before
    assert files(course / "release" / lab.name) == files(ROOT / "release" / lab.name)


def test_generate_assignment_gives_the_release_back_byte_for_byte(lab, tmp_path):
    course = course_folder(tmp_path / "course")
    shutil.copytree(ROOT / "release" / lab.name, course / "source" / lab.name)
    succeeds(nbgrader("generate_assignment", lab.name, cwd=course))
    assert files(course / "release" / lab.name) == files(ROOT / "release" / lab.name)


def test_generate_assignment_refuses_an_instructor_notebook_and_releases_nothing(tmp_path):
    lab = LABS[0]
    course = course_folder(tmp_path / "course")
    (course / "source" / lab.name).mkdir(parents=True)
    shutil.copyfile(lab.path.with_suffix(".ipynb"), course / "source" / lab.name / f"{lab.name}.ipynb")
    run = nbgrader("generate_assignment", lab.name, cwd=course)
    assert run.returncode != 0 and "is an instructor notebook of this course" in run.stdout + run.stderr
    assert not (course / "release" / lab.name).exists()


def test_generate_assignment_still_clears_the_solutions_of_other_nbgrader_notebooks(tmp_path):
    course = course_folder(tmp_path / "course")
    cell = nbformat.v4.new_code_cell("def f():\n    ### BEGIN SOLUTION\n    return 42\n    ### END SOLUTION",
                                     metadata={"nbgrader": {"solution": True, "grade": False, "locked": False,
                                                            "grade_id": "f", "schema_version": 3}})
    (course / "source" / "other").mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), course / "source" / "other" / "other.ipynb")
    succeeds(nbgrader("generate_assignment", "other", cwd=course))
    released = (course / "release" / "other" / "other.ipynb").read_text()
    assert "return 42" not in released and "raise NotImplementedError()" in released


@pytest.mark.slow
def test_nbgrader_round_trip_ends_with_our_scores_in_each_students_feedback(solved_dir, tmp_path):
    """The first lab through nbgrader's exchange, with the commands docs/graders.md gives, in a course
    folder that refuses those the checkout refuses: alice hands in a solved notebook, bob the one
    he fetched. Both are the same OS user, told apart as nbgrader's own tests do: `--student` on
    submit and fetch_feedback, and a home folder (assignments, exchange cache) each. What submit
    and collect leave is an honest hand-in: its claimed time stands, undisputed."""
    lab = LABS[0]
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    course = course_folder(tmp_path / "course", exchange, guarded=True)
    shutil.copytree(ROOT / "release" / lab.name, course / "release" / lab.name)  # as `make release` writes it
    succeeds(nbgrader("release_assignment", lab.name, cwd=course))
    points = {"alice": all_points(lab), "bob": 0}
    for student in points:
        home = tmp_path / student
        home.mkdir()
        succeeds(nbgrader("fetch_assignment", lab.name, *as_student(home, exchange), cwd=home))
        if points[student]:
            shutil.copyfile(lab_notebook(solved_dir, lab), lab_notebook(home, lab))
        succeeds(nbgrader("submit", lab.name, f"--student={student}", *as_student(home, exchange), cwd=home))
    # Both submissions are owned by this one OS user, which collect would call a cheating attempt.
    succeeds(nbgrader("collect", lab.name, "--CollectApp.check_owner=False", cwd=course))
    succeeds(subprocess.run(grade_command(course / "submitted", "--out", course / "graded"), cwd=ROOT,
                            capture_output=True, text=True, timeout=1800))
    for (student, _), result in records_in(course / "graded").items():
        late = result["extra_data"]["late"]
        assert (late["source"], late.get("to_check")) == ("timestamp.txt", None), (student, late)
    succeeds(nbgrader("generate_feedback", lab.name, cwd=course))
    succeeds(nbgrader("release_feedback", lab.name, cwd=course))
    for student, earned in points.items():
        home = tmp_path / student
        succeeds(nbgrader("fetch_feedback", lab.name, f"--student={student}", *as_student(home, exchange), cwd=home))
        [page] = (home / lab.name / "feedback").glob(f"*/{lab.name}.html")
        page = page.read_text()
        assert f"Score: {earned:.1f} / {required_points(lab):.1f}" in page, student
        assert earned or re.search(r"not attempted: your answer cell, cell \d+ \(it begins .*\), is still the stub",
                                   page), "the grader's message"
    exported = nbgrader_export(course / "graded", f"sqlite:///{course / 'graded' / 'gradebook.db'}", tmp_path)
    assert [(row["student_id"], row["assignment"], float(row["score"])) for row in exported] == [
        (student, lab.name, float(earned)) for student, earned in points.items()]


@pytest.mark.slow
def test_nbgrader_export_lists_only_labs_someone_handed_in(release_dir, tmp_path):
    """s1 hands in the first lab, s2 the second, and s3 a notebook of the first lab in the third
    lab's folder, which has nothing to grade: nbgrader lists s1 and s2 under each of the first two
    labs (the one who did not hand a lab in missed it) and the third lab not at all."""
    handed = {("s1", LABS[0]): LABS[0], ("s2", LABS[1]): LABS[1], ("s3", LABS[2]): LABS[0]}
    for (student, folder), lab in handed.items():
        target = tmp_path / "submitted" / student / folder.name
        target.mkdir(parents=True)
        shutil.copyfile(lab_notebook(release_dir, lab), target / f"{folder.name}.ipynb")
    out = tmp_path / "graded"
    succeeds(subprocess.run(grade_command(tmp_path / "submitted", "--out", out), cwd=ROOT, capture_output=True,
                            text=True, timeout=1800))
    exported = nbgrader_export(out, f"sqlite:///{out / 'gradebook.db'}", tmp_path)
    assert [(row["assignment"], row["student_id"]) for row in exported] == [
        (lab.name, student) for lab in LABS[:2] for student in ("s1", "s2")]


def test_a_submission_a_failed_autograde_left_half_written_is_completed_when_we_record(tmp_path):
    """The failure as a teaching assistant meets it: `nbgrader db assignment add`, then `nbgrader
    autograde` before any release, which fails having written alice's submission with none of its
    notebook and grade rows. Our record of alice then fills them in instead of failing with
    MissingEntry run after run."""
    lab = LABS[0]
    course = course_folder(tmp_path / "course")
    shutil.copytree(ROOT / "release" / lab.name, course / "submitted" / "alice" / lab.name)
    succeeds(nbgrader("db", "assignment", "add", lab.name, cwd=course))
    failed = nbgrader("autograde", lab.name, cwd=course)
    assert failed.returncode != 0 and "No notebooks found" in failed.stdout + failed.stderr
    assert held_scores(f"sqlite:///{course / 'graded' / 'gradebook.db'}") == {}, (
        "the submission nbgrader left has no notebook to hold grades")
    db_url = record_full_marks(course, "alice", lab)
    points = {activity.id: float(activity.points) for activity in lab.activities.values()}
    assert held_scores(db_url)[("alice", lab.name)]["points"] == points
    exported = nbgrader_export(course / "graded", db_url, tmp_path)
    assert [(row["student_id"], float(row["score"])) for row in exported] == [("alice", float(all_points(lab)))]
