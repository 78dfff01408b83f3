"""The GitHub workflows: one grades submitted/ with `make grade` (the test runs that same target),
one runs the test suite as CI does and keeps the tests' screenshots however the tests end."""
import json
import subprocess

import pytest
import yaml

from autograder.labs import course_labs
from tests.helpers import ROOT, all_points
from tests.jupyterlab import ARTIFACTS

WORKFLOW = ROOT / ".github/workflows/grade.yml"
TEST_WORKFLOW = ROOT / ".github/workflows/test.yml"


def steps(workflow=WORKFLOW, job="grade"):
    return yaml.safe_load(workflow.read_text())["jobs"][job]["steps"]


def test_workflow_grades_with_make_grade_and_uploads_graded():
    runs = [step["run"] for step in steps() if "run" in step]
    assert runs == ["make grade"]
    upload = next(step for step in steps() if step.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["with"]["path"] == "graded/"
    makefile = (ROOT / "Makefile").read_text()
    assert "GRADED ?= graded" in makefile and "SUBMITTED ?= submitted" in makefile


def test_test_workflow_runs_ci_and_uploads_the_artifacts_even_on_failure():
    runs = [step["run"] for step in steps(TEST_WORKFLOW, "test") if "run" in step]
    assert runs == ["bash .ci/run"]
    upload = next(step for step in steps(TEST_WORKFLOW, "test") if step.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["with"]["path"] == "test-artifacts/" and upload["if"] == "always()"
    assert upload["with"]["path"] == f"{ARTIFACTS.relative_to(ROOT).parts[0]}/"  # where the screenshots go
    assert "/test-artifacts/" in (ROOT / ".gitignore").read_text().splitlines()


@pytest.mark.slow
def test_make_grade_grades_the_committed_submissions(tmp_path):
    run = subprocess.run(["make", "grade", f"GRADED={tmp_path}"], cwd=ROOT, capture_output=True, text=True,
                         timeout=1200)
    assert run.returncode == 0, run.stdout + run.stderr
    committed = {p.parts[-3] for p in (ROOT / "submitted").glob("*/*/*.ipynb")}
    assert {p.parent.name for p in tmp_path.glob("*/*.json")} == committed
    solved = json.loads((tmp_path / "example-solved" / "pt03_autodiff.json").read_text())
    blank = json.loads((tmp_path / "example-blank" / "pt03_autodiff.json").read_text())
    assert solved["score"] == all_points(course_labs()[solved["extra_data"]["lab"]]) and blank["score"] == 0
    assert (tmp_path / "grades.csv").is_file() and (tmp_path / "gradebook.db").is_file()


def test_nbgrader_reads_the_course_configuration_from_the_root():
    nbgrader = ROOT / ".venv/bin/nbgrader"
    run = subprocess.run([str(nbgrader) if nbgrader.exists() else "nbgrader", "export", "--Application.show_config_json=True"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    course = json.loads(run.stdout)["CourseDirectory"]
    assert course["root"] == str(ROOT)
    assert course["db_url"] == f"sqlite:///{ROOT / 'graded' / 'gradebook.db'}"
    assert course["autograded_directory"] == "graded/autograded"
