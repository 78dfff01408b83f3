"""`make new-lab NAME=<lab>` writes a complete lab. In a copy of the repository (never in this
one) the new lab releases, grades 0 blank and full marks solved, has every catalogued mistake
caught, is refused by name without its grading files, and passes the suite's tests of it."""
import json
import os
import re
import shutil
import subprocess

import pytest

from authoring.new_lab import NameRefused, check_name
from tests.helpers import LABS, ROOT

NAME = "demo_lab"  # no test id below contains it: `pytest -k demo_lab` in the copy must not select this file
ENV = {key: value for key, value in os.environ.items() if key not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}


def run(command, cwd, timeout):
    """Run `command` in `cwd`; its CompletedProcess, with stdout and stderr as text."""
    return subprocess.run(command, check=False, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout)


def said(result):
    return f"exit {result.returncode}\n--- stdout\n{result.stdout[-4000:]}\n--- stderr\n{result.stderr[-4000:]}"


def copy_repository(target):
    """Copy the working tree's files (tracked, and new ones not ignored) with their timestamps,
    and link the set-up .venv, so that make finds the set-up done."""
    listed = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], ROOT, 60)
    assert listed.returncode == 0, said(listed)
    for name in filter(None, listed.stdout.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is not copied
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    (target / ".venv").symlink_to(ROOT / ".venv")


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """A copy of the repository in which `make new-lab NAME=demo_lab` has run."""
    if shutil.which("make") is None or shutil.which("git") is None:
        pytest.fail("needs make and git: install them (apt-get install make git)")
    top = run(["git", "rev-parse", "--show-toplevel"], ROOT, 60)
    if top.returncode or os.path.realpath(top.stdout.strip()) != os.path.realpath(ROOT):
        pytest.fail("needs a git checkout of the course: run the suite from a clone, not a copy without .git")
    if not (ROOT / ".venv" / ".installed").is_file() or run(["make", "-q", ".venv/.installed"], ROOT, 60).returncode:
        pytest.fail("needs the set-up of `make` (.venv) done and current: run `make test`, which does it first")
    copy = tmp_path_factory.mktemp("scaffold") / "repo"
    copy_repository(copy)
    installed = (copy / ".venv" / ".installed").stat().st_mtime_ns
    assert run(["make", "-q", ".venv/.installed"], copy, 60).returncode == 0, \
        "make would set up .venv again in the copy: were the timestamps kept?"
    made = run(["make", "new-lab", f"NAME={NAME}"], copy, 600)
    assert made.returncode == 0, said(made)
    assert "-m venv" not in made.stdout and "pip install" not in made.stdout, made.stdout
    assert (copy / ".venv" / ".installed").stat().st_mtime_ns == installed
    return copy


def python(copy):
    return str(copy / ".venv" / "bin" / "python")


@pytest.mark.parametrize("name, reason", [("Lab1", "not a lab name"), ("my-lab", "not a lab name"),
                                          ("4lab", "not a lab name"), ("class", "not a lab name"),
                                          ("", "not a lab name"), ("numpy", "already importable"),
                                          (LABS[0].name, "is taken"), ("vocabulary", "is taken")])
def test_a_name_that_cannot_be_a_new_lab_is_refused_with_the_reason(name, reason):
    with pytest.raises(NameRefused, match=reason):
        check_name(name)


@pytest.mark.slow
def test_make_new_lab_writes_a_lab_that_releases(copy):
    for path in (f"source/{NAME}/{NAME}.py", f"source/{NAME}/{NAME}.ipynb", f"release/{NAME}/{NAME}.ipynb",
                 *(f"autograder/labs/{NAME}/{part}.py" for part in ("cases", "probes", "mistakes", "variants", "strangers", "contracts")),
                 f"autograder/labs/{NAME}/fingerprints.json"):
        assert (copy / path).is_file(), path
    released = run(["make", "release"], copy, 600)
    assert released.returncode == 0, said(released)
    checked = run([python(copy), "build_student.py", "--check"], copy, 600)
    assert checked.returncode == 0, said(checked)


@pytest.mark.slow
def test_make_new_lab_refuses_bad_names_and_writes_nothing(copy):
    before = sorted(p.name for p in (copy / "source").iterdir())
    usage = run(["make", "new-lab"], copy, 60)
    assert usage.returncode != 0 and "usage: make new-lab NAME=" in usage.stderr, said(usage)
    for name, reason in ((NAME, "is taken"), ("Bad-Name", "not a lab name")):
        refused = run(["make", "new-lab", f"NAME={name}"], copy, 120)
        assert refused.returncode != 0 and reason in refused.stderr, said(refused)
    assert sorted(p.name for p in (copy / "source").iterdir()) == before


@pytest.mark.slow
def test_blank_notebook_scores_zero_and_solved_one_full_marks(copy, tmp_path):
    solved = run([python(copy), "build_student.py", "--solved", str(tmp_path / "solved")], copy, 600)
    assert solved.returncode == 0, said(solved)
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    shutil.copy2(copy / "release" / NAME / f"{NAME}.ipynb", submissions / "blank.ipynb")
    shutil.copy2(tmp_path / "solved" / NAME / f"{NAME}.ipynb", submissions / "solved.ipynb")
    graded = run([python(copy), "-m", "autograder", "grade", str(submissions), "--out", str(tmp_path / "out"),
                  "--jobs", "2"], copy, 900)
    assert graded.returncode == 0, said(graded)
    blank, full = (json.loads((tmp_path / "out" / name / f"{NAME}.json").read_text()) for name in ("blank", "solved"))
    assert (blank["status"], blank["score"], blank["max_score"]) == ("graded", 0, 2), blank
    assert (full["status"], full["score"], full["max_score"]) == ("graded", 2, 2), full
    assert [test["status"] for test in full["tests"]] == ["passed"], full


CATALOGUE = f"""
import json
from autograder.grading.grade import Options
from autograder.isolation.sandbox import Limits, choose_sandbox
from autograder.measuring.catalogue import run_catalogue
rows = run_catalogue({NAME!r}, Options(Limits(cell_seconds=30), choose_sandbox("auto")), jobs=2)
print(json.dumps([dict(mistake=r.mistake.description, activity=r.mistake.activity, hint=r.mistake.hint,
                       grader=r.grader_caught, visible=r.visible_caught, lost=r.lost, intact=r.others_intact,
                       named=r.mistake.description in r.named or r.stopped, message=r.grader_message) for r in rows]))
"""


@pytest.mark.slow
def test_the_grader_catches_every_catalogued_mistake(copy):
    result = run([python(copy), "-c", CATALOGUE], copy, 900)
    assert result.returncode == 0, said(result)
    rows = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(rows) == 3 and {row["activity"] for row in rows} == {"1"}, rows
    for row in rows:
        what = f"{row['mistake']}: {row['message']}"
        assert row["grader"] and row["hint"] in row["message"], what
        assert row["lost"] == 2 and row["intact"], what
        assert row["visible"], f"the visible check misses {row['mistake']}"
        assert row["named"], f"the grader's diagnosis does not name {row['mistake']} (its fingerprints: `make new-lab`)"


@pytest.mark.slow
def test_without_its_grading_files_the_lab_is_refused_by_name(copy, tmp_path):
    solved = run([python(copy), "build_student.py", "--solved", str(tmp_path / "solved")], copy, 600)
    assert solved.returncode == 0, said(solved)
    grading, aside = copy / "autograder" / "labs" / NAME, tmp_path / "grading-aside"
    shutil.move(grading, aside)
    try:
        graded = run([python(copy), "-m", "autograder", "grade", str(tmp_path / "solved" / NAME / f"{NAME}.ipynb"),
                      "--out", str(tmp_path / "out")], copy, 600)
    finally:
        shutil.move(aside, grading)
    assert graded.returncode == 0, said(graded)
    result = json.loads((tmp_path / "out" / NAME / f"{NAME}.json").read_text())
    assert result["status"] == "lab_not_gradable", result
    assert f"autograder/labs/{NAME}/cases.py is missing" in result["output"], result["output"]


@pytest.mark.slow
def test_the_suite_passes_for_the_new_lab(copy, tmp_path):
    """The copy's own tests, restricted to the new lab by the lab name in their ids. Grading a
    class, the mistake catalogue and the adversarial corpus are left out here: the tests above
    grade this lab directly, and the suite runs those over every lab of the real course."""
    # Also left out: the leak fixtures built from a reference formula with a square (the scaffold's
    # lab has none), the Gradescope runs, whose attacks need four activities (it has one), and the
    # dependency coverage, which compares what dependents feed (its one activity has none).
    selection = (f"{NAME} and not test_grading and not test_mistakes and not test_adversarial and not test_gradescope"
                 " and not formula and not two_reference_lines and not test_contract_coverage")
    result = run([python(copy), "-m", "pytest", "-q", "-k", selection, "-p", "no:cacheprovider",
                  f"--basetemp={tmp_path / 'inner'}"], copy, 2400)
    assert result.returncode == 0, said(result)
    summary = result.stdout.strip().splitlines()[-1]
    passed = int(re.search(r"(\d+) passed", summary).group(1))
    assert passed >= 10 and not re.search(r"failed|error", summary), summary
    print(f"suite restricted to {NAME}: {summary}")
