"""Grading a class of every lab: partial credit by activity, faults contained, the batch always
finishes. Points and activities come from the lab."""
import csv
import hashlib
import re
import subprocess
import sys

import nbformat
import pytest

from autograder.diagnosis.matching import SAYS, candidates, confirm, known_for, replayed_for, stored
from autograder.labs import grading_for
from autograder.measuring.catalogue import patched
from tests.adversarial.common import wrong_answer
from tests.helpers import (CELL_TIMEOUT, LABS, ROOT, all_points, comparable, lab_notebook, nbgrader, read, required_points,
                           results_in)
from tests.submissions import answer_cell, replaced_function, save, with_answer, with_cell_after

pytestmark = pytest.mark.slow

# How a batch is run (one job or two, a whole-submission time limit) is the same code for every
# lab: those re-runs are made for the first lab's batch, which the other tests check for every lab.
FIRST_LAB_ONLY = pytest.mark.parametrize("lab", [LABS[0]], ids=[LABS[0].name], indirect=True, scope="session")

# A student's own comparison with PyTorch and a plot of it, beside honest answers.
TORCH_ASIDE = """import matplotlib.pyplot as plt
import torch

theirs = torch.linspace(-2.0, 2.0, 9, dtype=torch.float64).tanh()
plt.plot(theirs.numpy())
"""


def faults(lab):
    """name: (activity, the answer put in its cell, the part of the feedback that explains it).
    Each fault is given to a different activity in turn, so that the labs' activities share them."""
    kinds = {
        "hang-cell": (lambda a: "while True:\n    pass\n", "time limit"),
        "hang-function": (lambda a: replaced_function(a, "while True:\n    pass"), "time limit"),
        "exit-cell": (lambda a: "import os\nos._exit(1)\n", "exited with status 1"),
        "sigkill-function": (lambda a: replaced_function(a, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"),
                             "killed by signal SIGKILL"),
        "memory-function": (lambda a: replaced_function(a, "import numpy\nwaste = numpy.ones(10**11)\nreturn waste"),
                            "MemoryError"),
        "wrong-answer": (None, None),
        "syntax-error": (lambda a: f"def {a.functions[0]}(x)\n    return x\n", "SyntaxError"),
    }
    activities = list(lab.activities.values())
    made = {}
    for number, (name, (answer, words)) in enumerate(kinds.items()):
        activity = activities[number % len(activities)]
        if answer is None:
            mistake = next(m for m in grading_for(lab.name).mistakes if m.activity == activity.id)
            made[name] = (activity, patched(activity.reference.source, mistake.code), mistake.hint)
        else:
            made[name] = (activity, answer(activity), words)
    return made


def rescue_chain(lab):
    """Activities that are all wrong in one submission: the first need of an activity that calls
    others, that activity and, where the lab has one, a later activity that calls it in turn
    (tensor_engine: 1a, 3 and 4). All three fail and are retried on the correct engine."""
    depends = grading_for(lab.name).depends
    needed = {need for needs in depends.values() for need in needs}
    dependent = next((a for a in depends if a in needed), next(iter(depends)))
    caller = [a for a, needs in depends.items() if dependent in needs][:1]
    return [depends[dependent][0], dependent, *caller]


def steady_mistake(lab):
    """The first catalogued mistake that gave the same token on every case for every seed of its
    fingerprint, so that the batch's seed makes it a candidate, and whose replay names it alone."""
    grading = grading_for(lab.name)
    prints = stored(lab.name)
    for mistake in grading.mistakes:
        cases = prints[mistake.description]["cases"]
        if all(len(tokens) == 1 for tokens in cases):
            fingerprint = tuple(tokens[0] for tokens in cases)
            found = confirm(prints[mistake.description]["sketches"], replayed_for(grading, mistake.activity))
            if mistake in candidates(fingerprint, known_for(grading, mistake.activity)) and found is not None \
                    and found.mistakes == (mistake.description,):
                return mistake
    raise AssertionError(f"{lab.name} has no catalogued mistake whose fingerprint is the same on every seed")


@pytest.fixture(scope="module")
def graded(lab, tmp_path_factory, release_dir, solved_dir):
    """One batch of this lab holding every kind of submission, graded with --jobs 2."""
    folder = tmp_path_factory.mktemp(f"class-{lab.name}")
    solved = read(lab_notebook(solved_dir, lab))
    blank = read(lab_notebook(release_dir, lab))
    save(solved, folder, "solved")
    save(blank, folder, "blank")
    for activity in lab.activities:
        save(with_answer(solved, activity, answer_cell(blank, activity).source), folder, f"missing-{activity}")
    for name, (activity, source, _) in faults(lab).items():
        save(with_answer(solved, activity.id, source), folder, name)
    first = f"{next(iter(lab.activities))}-answer"
    save(with_cell_after(solved, first, "print('x' * (100 << 20))"), folder, "output-flood")
    save(with_cell_after(solved, first, "hoard = bytearray(64 << 30)"), folder, "memory-cell")
    chain = solved
    for activity in rescue_chain(lab):
        chain = with_answer(chain, activity, wrong_answer(lab, activity))
    save(chain, folder, "wrong-chain")
    hung, *later = rescue_chain(lab)  # the first need hangs, and the activities that need it are wrong
    hanging = with_answer(solved, hung, replaced_function(lab.activities[hung], "while True:\n    pass"))
    for activity in later:
        hanging = with_answer(hanging, activity, wrong_answer(lab, activity))
    save(hanging, folder, "hang-chain")
    known = steady_mistake(lab)
    reference = lab.activities[known.activity].reference.source
    save(with_answer(solved, known.activity, patched(reference, known.code)), folder, "known-mistake")
    save(with_cell_after(solved, first, TORCH_ASIDE), folder, "pytorch-extra-cell")
    opening = next(iter(lab.activities.values()))
    save(with_answer(solved, opening.id, f"import torch\n\n{opening.reference.source}\n\n{TORCH_ASIDE}"), folder,
         "pytorch-in-answer")
    (folder / "not-json.ipynb").write_text("this is not a notebook")
    (folder / "empty.ipynb").write_bytes(b"")
    stranger = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("def train():\n    return 1\n")])
    stranger.metadata["course"] = {"lab": "pt07_transformers"}
    save(stranger, folder, "other-lab")
    save(nbformat.v4.new_notebook(), folder, "no-lab")
    digests = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}
    out = tmp_path_factory.mktemp(f"results-{lab.name}")
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--out", str(out),
                          "--jobs", "2", "--cell-timeout", CELL_TIMEOUT], cwd=ROOT, capture_output=True, text=True,
                         timeout=1800)
    return folder, out, run, results_in(out), digests


def scores(result):
    return {test["name"]: test["score"] for test in result["tests"]}


def failing(result):
    return {test["name"] for test in result["tests"] if test["status"] == "failed"}


def test_batch_finishes_with_exit_0_and_a_result_for_everyone(graded):
    folder, out, run, results, _ = graded
    assert run.returncode == 0, run.stderr
    assert set(results) == {p.stem for p in folder.glob("*.ipynb")}
    assert all("status" in result and "tests" in result for result in results.values())


def test_solved_notebook_scores_full_marks_with_bonus_apart(graded, lab):
    result = graded[3]["solved"]
    assert result["status"] == "graded"
    assert scores(result) == {a.id: a.points for a in lab.activities.values()}
    assert result["score"] == all_points(lab) and result["max_score"] == required_points(lab)
    bonus = all_points(lab) - required_points(lab)
    line = f"{required_points(lab)}/{required_points(lab)}" + (f" + {bonus} bonus" if bonus else "")
    assert result["output"].startswith(f"Score: {line}.")
    assert result["extra_data"]["diagnoses"] == {}


def test_blank_release_scores_zero_naming_each_missing_activity(graded, lab):
    result = graded[3]["blank"]
    assert result["score"] == 0 and failing(result) == set(lab.activities)
    assert result["extra_data"]["diagnoses"] == {}, "an untouched stub is no known mistake"
    places = [cell.get("id") for cell in read(graded[0] / "blank.ipynb").cells]
    for test in result["tests"]:
        place = places.index(f"{test['name']}-answer") + 1  # as JupyterLab counts cells
        assert test["output"].startswith(f"not attempted: your answer cell, cell {place} (it begins ")
        assert f"Complete Activity {test['name']}:" in test["output"]


def test_a_missing_activity_loses_exactly_its_points(graded, lab):
    for activity in lab.activities.values():
        result = graded[3][f"missing-{activity.id}"]
        assert failing(result) == {activity.id}, {t["name"]: t["output"] for t in result["tests"]}
        assert result["score"] == all_points(lab) - activity.points


def test_a_fault_costs_only_its_activity_and_says_what_happened(graded, lab):
    results = graded[3]
    for name, (activity, _, words) in faults(lab).items():
        result = results[name]
        assert result["status"] == "graded", name
        assert failing(result) == {activity.id}, (name, {t["name"]: t["output"] for t in result["tests"]})
        feedback = result["output"] + next(t["output"] for t in result["tests"] if t["name"] == activity.id)
        assert words in feedback, (name, feedback)


def test_a_hang_costs_its_activity_once(graded, lab):
    """The activities that call one whose answer hung are judged on the correct engine straight
    away, never on the hanging engine again (each run into the loop would cost a whole limit),
    and keep their points: the activity that hung is the only one to lose any."""
    activity, _, _ = faults(lab)["hang-function"]
    tests = {test["name"]: test for test in graded[3]["hang-function"]["tests"]}
    dependents = [a for a, needs in grading_for(lab.name).depends.items() if activity.id in needs]
    assert dependents, "every lab has an activity that calls its second one"
    for dependent in dependents:
        assert "not run on your engine" in tests[dependent]["output"], tests[dependent]
        assert tests[dependent]["score"] == lab.activities[dependent].points
    assert "time limit" in tests[activity.id]["output"]


def test_failed_feedback_counts_the_hidden_checks(graded, lab):
    activity, _, _ = faults(lab)["wrong-answer"]
    output = next(t["output"] for t in graded[3]["wrong-answer"]["tests"] if t["name"] == activity.id)
    total = len(grading_for(lab.name).cases[activity.id])
    assert output.startswith("failed ") and f" of {total} hidden check" in output and "The first failure: " in output
    assert "np.float64(" not in output and "np.int64(" not in output


def test_cells_left_out_are_reported(graded, lab):
    """A cell that ran out of time and one that ended the Python process are named as JupyterLab
    counts them: their place among all the notebook's cells, from 1, and their first line."""
    folder, results = graded[0], graded[3]
    for name, first in (("hang-cell", "while True:"), ("exit-cell", "import os")):
        activity, notebook = faults(lab)[name][0], read(folder / f"{name}.ipynb")
        place = [cell.get("id") for cell in notebook.cells].index(f"{activity.id}-answer") + 1
        assert f"cell {place} (it begins {first!r}) was left out: " in results[name]["output"], results[name]
    assert "time limit" in results["hang-cell"]["output"]


def test_a_wrong_activity_is_not_rescued_by_the_correct_engine(graded, lab):
    """The correct engine replaces only the failed activities an activity calls, never the
    activity itself, even when a later activity calls it and is retried in the same submission."""
    scores = {t["name"]: t["score"] for t in graded[3]["wrong-chain"]["tests"]}
    assert {activity: scores[activity] for activity in rescue_chain(lab)} == dict.fromkeys(rescue_chain(lab), 0)


def test_a_wrong_activity_whose_need_hung_is_not_rescued_either(graded, lab):
    """An activity that is not run on an engine that hung is judged on the correct engine alone,
    with only what hung replaced: when its own code is wrong, it loses its points, and says which
    check failed there."""
    tests = {t["name"]: t for t in graded[3]["hang-chain"]["tests"]}
    _, *later = rescue_chain(lab)
    assert {activity: tests[activity]["score"] for activity in rescue_chain(lab)} == dict.fromkeys(rescue_chain(lab), 0)
    for activity in later:
        assert "failed hidden check " in tests[activity]["output"], tests[activity]
        assert "judged on a correct engine in place of" in tests[activity]["output"], tests[activity]


def test_dependent_activities_are_graded_on_a_correct_engine(graded, lab):
    """Every activity that calls another keeps its points when that other one is missing."""
    for dependent, needs in grading_for(lab.name).depends.items():
        for need in needs:
            test = next(t for t in graded[3][f"missing-{need}"]["tests"] if t["name"] == dependent)
            assert test["score"] == lab.activities[dependent].points, (dependent, need, test["output"])
            assert test["output"].startswith("passed on a correct engine, so you keep its points: with your engine "
                                             "it failed only because your activit"), test["output"]


@pytest.mark.parametrize("name", ["output-flood", "memory-cell", "pytorch-extra-cell", "pytorch-in-answer"])
def test_noise_in_extra_cells_costs_nothing(graded, lab, name):
    assert graded[3][name]["score"] == all_points(lab)


@pytest.mark.parametrize("name", ["pytorch-extra-cell", "pytorch-in-answer"])
def test_pytorch_beside_the_answers_is_free_and_said_to_be(graded, name):
    """Where PyTorch is unavailable to the grading, the feedback says it was used and cost nothing."""
    output = graded[3][name]["output"]
    assert "needed PyTorch" in output and "free in your own cells" in output, output


@pytest.mark.parametrize("name, status", [("not-json", "invalid_notebook"), ("empty", "invalid_notebook"),
                                          ("other-lab", "unknown_lab"), ("no-lab", "unknown_lab")])
def test_broken_files_get_a_clear_status(graded, name, status):
    result = graded[3][name]
    assert result["status"] == status and result["score"] == 0 and result["output"]


def test_submissions_are_never_modified(graded):
    folder, _, _, _, digests = graded
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()} == digests


def test_csv_has_one_row_per_record_with_bonus_apart(graded, lab):
    folder, out, _, results, _ = graded
    rows = list(csv.DictReader((out / "grades.csv").open()))
    assert sorted(row["student"] for row in rows) == sorted(results)
    solved = next(row for row in rows if row["student"] == "solved")
    assert solved["lab"] == lab.name and solved["required"] == solved["max_required"] == str(required_points(lab))
    assert solved["bonus"] == solved["max_bonus"] == str(all_points(lab) - required_points(lab))
    assert solved["score"] == str(all_points(lab)) and solved["penalty"] == "0"
    for activity in lab.activities.values():
        assert solved[f"{lab.name} {activity.id}"] == str(activity.points)
    own = list(csv.DictReader((out / f"grades-{lab.name}.csv").open()))
    assert list(own[0])[-len(lab.activities):] == list(lab.activities), "the lab's activities, in its order"
    assert sorted(row["student"] for row in own) == sorted(name for name, result in results.items()
                                                           if result["extra_data"]["lab"] == lab.name)


def test_feedback_page_per_submission_shows_points_and_failures(graded, lab):
    _, out, _, results, _ = graded
    activity, _, hint = faults(lab)["wrong-answer"]
    page = (out / "wrong-answer" / f"{lab.name}.html").read_text()
    assert f"0 / {activity.points}" in page and hint in page
    assert {p.parent.name for p in out.glob("*/*.html")} == set(results)


def test_a_known_mistake_is_named_wherever_the_student_and_the_class_read(graded, lab, tmp_path):
    _, out, _, results, _ = graded
    known = steady_mistake(lab)
    result = results["known-mistake"]
    assert failing(result) == {known.activity}
    said = f"{SAYS} {known.advice}"
    assert said in next(t["output"] for t in result["tests"] if t["name"] == known.activity)
    diagnosis = result["extra_data"]["diagnoses"]
    assert list(diagnosis) == [known.activity] and diagnosis[known.activity]["mistakes"] == [known.description]
    # The longest stretch of the advice that HTML writes as it is, whichever quotes a page escapes.
    shown = max(re.split(r"[\'\"&<>]", said), key=len)
    assert shown in (out / "known-mistake" / f"{lab.name}.html").read_text()
    rows = list(csv.DictReader((out / "diagnoses.csv").open()))
    assert any((row["lab"], row["activity"], row["mistake"]) == (lab.name, known.activity, known.description)
               and "known-mistake" in row["who"].split() for row in rows), rows
    passing = {name: r["extra_data"]["diagnoses"] for name, r in results.items() if r.get("tests")
               and set(r["extra_data"].get("diagnoses", {})) - failing(r)}
    assert passing == {}, "a diagnosis on an activity that passed"
    course = [f"--CourseDirectory.root={out}", f"--CourseDirectory.db_url=sqlite:///{out / 'gradebook.db'}"]
    run = nbgrader("generate_feedback", lab.name, "--student=known-mistake", *course, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert shown in (out / "feedback" / "known-mistake" / lab.name / f"{lab.name}.html").read_text()


@FIRST_LAB_ONLY
def test_jobs_1_gives_the_same_results(graded, lab, tmp_path):
    folder = graded[0]
    subset = tmp_path / "subset"
    subset.mkdir()
    names = ["solved", "blank", f"missing-{next(iter(lab.activities))}", "wrong-answer"]
    for name in names:
        (subset / f"{name}.ipynb").write_bytes((folder / f"{name}.ipynb").read_bytes())
    out = tmp_path / "out"
    subprocess.run([sys.executable, "-m", "autograder", "grade", str(subset), "--out", str(out), "--jobs", "1"],
                   cwd=ROOT, check=True, capture_output=True, timeout=900)
    for name in names:
        assert comparable(results_in(out)[name]) == comparable(graded[3][name])


@FIRST_LAB_ONLY
def test_whole_submission_time_limit(graded, lab, tmp_path):
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(graded[0] / "hang-cell.ipynb"),
                          "--out", str(out), "--timeout", "8", "--cell-timeout", "60"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    result = results_in(out)["hang-cell"]
    assert result["status"] == "timeout"
    assert all("time limit" in test["output"] for test in result["tests"] if test["status"] == "failed")


def test_gradebook_holds_every_graded_submission(graded, lab):
    from nbgrader.api import Gradebook

    _, out, _, results, _ = graded
    activity, _, _ = faults(lab)["wrong-answer"]
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}") as gradebook:
        recorded = {s.student_id: s for s in gradebook.assignment_submissions(lab.name)}
        graded_names = {name for name, result in results.items() if result["extra_data"]["lab"] == lab.name}
        assert set(recorded) == graded_names
        assert recorded["solved"].score == all_points(lab) and recorded["solved"].max_score == required_points(lab)
        assert recorded["wrong-answer"].score == all_points(lab) - activity.points


def test_nbgrader_export_and_generate_feedback_work_on_the_gradebook(graded, lab, tmp_path):
    _, out, _, _, _ = graded
    activity, _, hint = faults(lab)["wrong-answer"]
    course = [f"--CourseDirectory.root={out}", f"--CourseDirectory.db_url=sqlite:///{out / 'gradebook.db'}"]
    exported = tmp_path / "export.csv"
    run = nbgrader("export", *course, f"--to={exported}", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    rows = {row["student_id"]: row for row in csv.DictReader(exported.open()) if row["assignment"] == lab.name}
    assert float(rows["solved"]["score"]) == all_points(lab) and float(rows["blank"]["score"]) == 0
    run = nbgrader("generate_feedback", lab.name, "--student=wrong-answer", *course, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    page = (out / "feedback" / "wrong-answer" / lab.name / f"{lab.name}.html").read_text()
    assert hint in page
