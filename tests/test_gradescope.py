"""Every lab's Gradescope bundle: what it holds, that setup.sh installs the pinned environment,
and that its run_autograder, run in a folder laid out as Gradescope's /autograder, grades a
solved, a blank and a wrong submission exactly as `python -m autograder grade` does."""
import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from autograder.gradescope.bundle import bundle_bytes
from tests.helpers import LABS, ROOT, all_points, grade_command, lab_notebook, read, results_in
from tests.submissions import save, variants

pytestmark = pytest.mark.slow  # each bundle is checked by the grader's lab check, which computes PyTorch's answers
SCRIPTS = ("setup.sh", "run_autograder")


@pytest.fixture(scope="module")
def bundle(lab, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"gradescope-{lab.name}") / "autograder.zip"
    run = subprocess.run([sys.executable, "-m", "autograder", "gradescope", lab.name, "--out", str(out)], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def names(bundle):
    with zipfile.ZipFile(bundle) as archive:
        return {entry.filename: entry.external_attr >> 16 for entry in archive.infolist()}


def member(bundle, name):
    with zipfile.ZipFile(bundle) as archive:
        return archive.read(name)


def test_the_scripts_are_at_the_root_and_executable(bundle):
    modes = names(bundle)
    for script in SCRIPTS:
        assert modes[script] & 0o111 == 0o111, f"{script} must be executable, as Gradescope runs it"


def test_the_bundle_carries_the_grader_and_this_lab_alone(bundle, lab):
    held = set(names(bundle))
    needed = {"autograder/grade.py", "autograder/worker.py", "autograder/gradescope/run.py", "course/labs.py",
              "autograder/policy.py", "autograder/unavailable/__init__.py",
              f"source/{lab.name}/{lab.name}.py", f"release/{lab.name}/{lab.name}.ipynb",
              *(f"autograder/labs/{lab.name}/{part}.py" for part in ("cases", "probes", "mistakes")),
              f"autograder/labs/{lab.name}/fingerprints.json",
              *(f"data/{name}" for name in lab.data_files)}
    assert needed <= held, sorted(needed - held)
    others = [other.name for other in LABS if other is not lab]
    assert not [name for name in held if any(f"/{other}/" in f"/{name}" for other in others)]
    assert not [name for name in held if "__pycache__" in name or name.startswith(("tests/", "submitted/"))]


def test_setup_installs_the_pinned_requirements(bundle):
    assert member(bundle, "requirements.txt") == (ROOT / "requirements.txt").read_bytes()
    setup = member(bundle, "setup.sh").decode()
    assert "pip install" in setup and "-r requirements.txt" in setup
    checked = subprocess.run(["bash", "-n"], input=setup, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr


def test_the_same_sources_give_the_same_bundle(bundle, lab):
    assert bundle_bytes(lab) == bundle.read_bytes()


def gradescope_folder(bundle, folder, uploads=()):
    """`folder` laid out as Gradescope lays out /autograder: the bundle unpacked in source/ (modes
    kept), run_autograder copied beside it, `uploads` ((name, file) pairs) in submission/, an empty
    results/. In place of the venv setup.sh would build, venv/bin/python runs this environment's
    Python."""
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(folder / "source")
        for entry in archive.infolist():
            (folder / "source" / entry.filename).chmod(entry.external_attr >> 16 & 0o777)
    shutil.copy2(folder / "source" / "run_autograder", folder / "run_autograder")
    (folder / "submission").mkdir()
    (folder / "results").mkdir()
    (folder / "venv" / "bin").mkdir(parents=True)
    python = folder / "venv" / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    for name, path in uploads:
        shutil.copy2(path, folder / "submission" / name)
    return folder


def start_autograder(folder):
    """Gradescope's step for one submission, started (its log in the folder); see `finish`."""
    with open(folder / "run_autograder.log", "w") as log:
        return subprocess.Popen([str(folder / "run_autograder")], cwd=folder, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, env={**os.environ, "AUTOGRADER_BASE": str(folder)})


def finish(process, folder):
    """Wait for the run started in `folder`; its results.json."""
    try:
        assert process.wait(timeout=1800) == 0, (folder / "run_autograder.log").read_text()
    finally:
        process.kill()  # only if the wait failed: the run has ended otherwise
    return json.loads((folder / "results" / "results.json").read_text())


# Running the bundle is the same code for every lab, and each run costs a PyTorch start-up:
# the runs are made for the first lab; every lab's bundle is checked for what it holds above.
FIRST_LAB_ONLY = pytest.mark.parametrize("lab", [LABS[0]], ids=[LABS[0].name], indirect=True, scope="session")


@FIRST_LAB_ONLY
def test_without_a_notebook_it_says_what_to_upload(bundle, lab, tmp_path):
    folder = gradescope_folder(bundle, tmp_path / "autograder")
    (folder / "submission" / "answers.txt").write_text("my answers")
    results = finish(start_autograder(folder), folder)
    assert results["score"] == 0 and results["tests"] == []
    assert f"upload your notebook, {lab.name}.ipynb" in results["output"] and "answers.txt" in results["output"]


@FIRST_LAB_ONLY
def test_run_autograder_grades_as_the_grade_command(bundle, lab, release_dir, solved_dir, tmp_path):
    """Each submission in a Gradescope folder of its own, uploaded as <lab>.ipynb as a student
    would; the same three notebooks graded by `python -m autograder grade` in one batch."""
    made = dict(variants(lab, read(lab_notebook(solved_dir, lab)), read(lab_notebook(release_dir, lab))))
    wrong = next(name for name in made if name.startswith("wrong-")).removeprefix("wrong-")  # its activity
    chosen = {"solved": made["solved"], "blank": made["blank"], "wrong": made[f"wrong-{wrong}"]}
    batch, out = tmp_path / "batch", tmp_path / "graded"
    batch.mkdir()
    folders = {name: gradescope_folder(bundle, tmp_path / name, [(f"{lab.name}.ipynb", save(notebook, batch, name))])
               for name, notebook in chosen.items()}
    # Gradescope grades each submission in a container of its own: the three runs and the batch
    # run side by side, as most of each run is starting Python and importing PyTorch.
    started = {name: start_autograder(folder) for name, folder in folders.items()}
    try:
        run = subprocess.run(grade_command(batch, "--out", out, "--jobs", "2"), cwd=ROOT, capture_output=True,
                             text=True, timeout=1800)
    finally:
        on_gradescope = {name: finish(process, folders[name]) for name, process in started.items()}
    assert run.returncode == 0, run.stdout + run.stderr
    graded = results_in(out)
    for name, results in on_gradescope.items():
        ours = graded[name]
        assert results["stdout_visibility"] == "hidden"
        for key in ("score", "output", "visibility", "tests"):
            assert results[key] == ours[key], (name, key)
        assert results["extra_data"]["status"] == ours["status"] == "graded"
        assert results["extra_data"]["max_score"] == ours["max_score"]
        for key in ("required", "bonus", "summary", "lab_version", "grader_version", "diagnoses"):
            assert results["extra_data"][key] == ours["extra_data"][key], (name, key)
    assert on_gradescope["solved"]["score"] == all_points(lab) and on_gradescope["blank"]["score"] == 0
    assert {test["name"] for test in on_gradescope["wrong"]["tests"] if test["status"] == "failed"} == {wrong}
