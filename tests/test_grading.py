"""Grading a class: partial credit by activity, faults contained, the batch always finishes."""
import csv
import hashlib
import json
import subprocess
import sys

import nbformat
import pytest

from conftest import LAB, ROOT, read
from submissions import answer_cell, save, with_answer, with_cell_after

pytestmark = pytest.mark.slow
ACTIVITIES = ["1a", "1b", "1c", "2", "3", "A", "B", "C"]
POINTS = {"1a": 3, "1b": 2, "1c": 2, "2": 4, "3": 3, "A": 2, "B": 1, "C": 1}
FULL = sum(POINTS.values())

WRONG_RELU = "def tanh_vjp(y, v):\n    return v * (1 - y * y)\n\n\ndef relu_vjp(x, v):\n    return np.where(x >= 0, v, 0.0)\n"
FAULTS = {  # name: (activity whose answer changes, new answer, activities expected to fail)
    "hang-cell": ("1c", "while True:\n    pass\n", {"1c"}),
    "hang-function": ("1c", "def tanh_vjp(y, v):\n    while True:\n        pass\n\n\n"
                            "def relu_vjp(x, v):\n    return np.where(x > 0, v, 0.0)\n", {"1c"}),
    "exit-cell": ("1b", "import os\nos._exit(1)\n", {"1b"}),
    "sigkill-function": ("1c", "import os, signal\n\n\ndef tanh_vjp(y, v):\n    return v * (1 - y * y)\n\n\n"
                               "def relu_vjp(x, v):\n    os.kill(os.getpid(), signal.SIGKILL)\n", {"1c"}),
    "memory-function": ("1a", "def add_vjp(a, b, v):\n    return v, v\n\n\ndef multiply_vjp(a, b, v):\n"
                              "    waste = np.ones(10**11)\n    return v * b, v * a\n\n\n"
                              "def matmul_vjp(a, b, v):\n    return v @ b.T, a.T @ v\n",
                        {"1a"}),
    "wrong-relu": ("1c", WRONG_RELU, {"1c"}),
    "syntax-error": ("2", "def topological_order(output)\n    return []\n", {"2"}),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory, release_dir, solved_dir):
    """One batch holding every kind of submission, graded with --jobs 2."""
    folder = tmp_path_factory.mktemp("class")
    solved = read(solved_dir / LAB / f"{LAB}.ipynb")
    blank = read(release_dir / LAB / f"{LAB}.ipynb")
    save(solved, folder, "solved")
    save(blank, folder, "blank")
    for activity in ACTIVITIES:
        save(with_answer(solved, activity, answer_cell(blank, activity).source), folder, f"missing-{activity}")
    for name, (activity, source, _) in FAULTS.items():
        save(with_answer(solved, activity, source), folder, name)
    save(with_cell_after(solved, "1a-answer", "print('x' * (100 << 20))"), folder, "output-flood")
    save(with_cell_after(solved, "1a-answer", "hoard = bytearray(64 << 30)"), folder, "memory-cell")
    (folder / "not-json.ipynb").write_text("this is not a notebook")
    (folder / "empty.ipynb").write_bytes(b"")
    stranger = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("def train():\n    return 1\n")])
    stranger.metadata["course"] = {"lab": "pt07_transformers"}
    save(stranger, folder, "other-lab")
    save(nbformat.v4.new_notebook(), folder, "no-lab")
    digests = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}
    out = tmp_path_factory.mktemp("results")
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--out", str(out),
                          "--jobs", "2", "--cell-timeout", "10"], cwd=ROOT, capture_output=True, text=True,
                         timeout=1200)
    results = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    return folder, out, run, results, digests


def scores(result):
    return {test["name"]: test["score"] for test in result["tests"]}


def failing(result):
    return {test["name"] for test in result["tests"] if test["status"] == "failed"}


def test_batch_finishes_with_exit_0_and_a_result_for_everyone(graded):
    folder, out, run, results, _ = graded
    assert run.returncode == 0, run.stderr
    assert set(results) == {p.stem for p in folder.glob("*.ipynb")}
    assert all("status" in result and "tests" in result for result in results.values())


def test_solved_notebook_scores_full_marks(graded):
    result = graded[3]["solved"]
    assert result["status"] == "graded"
    assert scores(result) == POINTS and result["score"] == FULL and result["max_score"] == 14


def test_blank_release_scores_zero_naming_each_missing_activity(graded):
    result = graded[3]["blank"]
    assert result["score"] == 0 and failing(result) == set(ACTIVITIES)
    for test in result["tests"]:
        assert f"Complete Activity {test['name']}" in test["output"]


@pytest.mark.parametrize("activity", ACTIVITIES)
def test_a_missing_activity_loses_exactly_its_points(graded, activity):
    result = graded[3][f"missing-{activity}"]
    assert failing(result) == {activity}
    assert result["score"] == FULL - POINTS[activity]


@pytest.mark.parametrize("name", FAULTS)
def test_a_fault_costs_only_its_activity(graded, name):
    result = graded[3][name]
    assert result["status"] == "graded"
    assert failing(result) == FAULTS[name][2], {t["name"]: t["output"] for t in result["tests"]}


def test_fault_messages_say_what_happened(graded):
    results = graded[3]
    output = {name: {t["name"]: t["output"] for t in results[name]["tests"]} for name in FAULTS}
    assert "time limit" in output["hang-function"]["1c"]
    assert "killed by signal SIGKILL" in output["sigkill-function"]["1c"]
    assert "MemoryError" in output["memory-function"]["1a"]
    assert "relu_vjp" in output["wrong-relu"]["1c"] and "expected" in output["wrong-relu"]["1c"]
    assert "left out" in results["hang-cell"]["output"] and "time limit" in results["hang-cell"]["output"]
    assert "exited with status 1" in results["exit-cell"]["output"]
    assert "SyntaxError" in results["syntax-error"]["output"]


def test_dependent_activity_is_graded_on_a_correct_engine(graded):
    result = graded[3]["missing-2"]
    three = next(t for t in result["tests"] if t["name"] == "3")
    assert three["score"] == 3 and "correct engine" in three["output"]


@pytest.mark.parametrize("name", ["output-flood", "memory-cell"])
def test_noise_in_extra_cells_costs_nothing(graded, name):
    assert graded[3][name]["score"] == FULL


@pytest.mark.parametrize("name, status", [("not-json", "invalid_notebook"), ("empty", "invalid_notebook"),
                                          ("other-lab", "unknown_lab"), ("no-lab", "unknown_lab")])
def test_broken_files_get_a_clear_status(graded, name, status):
    result = graded[3][name]
    assert result["status"] == status and result["score"] == 0 and result["output"]


def test_submissions_are_never_modified(graded):
    folder, _, _, _, digests = graded
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()} == digests


def test_csv_has_one_row_per_submission(graded):
    folder, out, _, results, _ = graded
    rows = list(csv.DictReader((out / "grades.csv").open()))
    assert sorted(row["submission"] for row in rows) == sorted(results)
    solved = next(row for row in rows if row["submission"] == "solved")
    assert solved["score"] == str(FULL) and solved["2"] == "4"


def test_feedback_page_per_submission_shows_points_and_failures(graded):
    _, out, _, results, _ = graded
    page = (out / "wrong-relu.html").read_text()
    assert "0 / 2" in page and "relu_vjp" in page and "3 / 3" in page
    assert {p.stem for p in out.glob("*.html")} == set(results)


def test_jobs_1_gives_the_same_results(graded, tmp_path):
    folder = graded[0]
    subset = tmp_path / "subset"
    subset.mkdir()
    names = ["solved", "blank", "missing-2", "wrong-relu"]
    for name in names:
        (subset / f"{name}.ipynb").write_bytes((folder / f"{name}.ipynb").read_bytes())
    out = tmp_path / "out"
    subprocess.run([sys.executable, "-m", "autograder", "grade", str(subset), "--out", str(out), "--jobs", "1"],
                   cwd=ROOT, check=True, capture_output=True, timeout=600)
    for name in names:
        serial = json.loads((out / f"{name}.json").read_text())
        parallel = graded[3][name]
        for result in (serial, parallel):
            result.pop("execution_time")
            result["extra_data"].pop("path")
        assert serial == parallel


def test_whole_submission_time_limit(graded, tmp_path):
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(graded[0] / "hang-cell.ipynb"),
                          "--out", str(out), "--timeout", "8", "--cell-timeout", "60"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    result = json.loads((out / "hang-cell.json").read_text())
    assert result["status"] == "timeout"
    assert all("time limit" in test["output"] for test in result["tests"] if test["status"] == "failed")


def test_gradebook_holds_every_graded_submission(graded):
    from nbgrader.api import Gradebook

    _, out, _, results, _ = graded
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}") as gradebook:
        recorded = {s.student_id: s for s in gradebook.assignment_submissions(LAB)}
        graded_names = {name for name, result in results.items() if result["extra_data"]["lab"] == LAB}
        assert set(recorded) == graded_names
        assert recorded["solved"].score == FULL and recorded["solved"].max_score == 14
        assert recorded["wrong-relu"].score == FULL - 2


def nbgrader(*args, cwd):
    command = [str(ROOT / ".venv/bin/nbgrader") if (ROOT / ".venv/bin/nbgrader").exists() else "nbgrader", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)


def test_nbgrader_export_and_generate_feedback_work_on_the_gradebook(graded, tmp_path):
    _, out, _, _, _ = graded
    course = [f"--CourseDirectory.root={out}", f"--CourseDirectory.db_url=sqlite:///{out / 'gradebook.db'}"]
    exported = tmp_path / "export.csv"
    run = nbgrader("export", *course, f"--to={exported}", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    rows = {row["student_id"]: row for row in csv.DictReader(exported.open())}
    assert float(rows["solved"]["score"]) == FULL and float(rows["blank"]["score"]) == 0
    run = nbgrader("generate_feedback", LAB, "--student=wrong-relu", *course, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    page = (out / "feedback" / "wrong-relu" / LAB / f"{LAB}.html").read_text()
    assert "relu_vjp" in page
