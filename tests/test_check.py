"""`python -m autograder check`: what a student learns before submitting, and the release cell that runs it."""
import subprocess
import sys

import pytest

from autograder.check import structure
from autograder.submission import load
from course.check_cell import CHECK_CELL_ID, CHECKING
from tests.helpers import LABS, ROOT, lab_notebook, read
from tests.submissions import answer_cell, save, with_answer

FIRST = LABS[0]  # the labs are sorted by name


def check(path):
    """`python -m autograder check PATH` run where a student runs it, in the notebook's folder."""
    return subprocess.run([sys.executable, "-m", "autograder", "check", path.name], cwd=path.parent,
                          capture_output=True, text=True, timeout=1200)


def test_a_missing_file_is_one_line(tmp_path):
    run = check(tmp_path / "nowhere.ipynb")
    assert run.returncode == 1 and run.stderr.strip().count("\n") == 0, run.stderr
    assert "nowhere.ipynb" in run.stderr and "No such file" in run.stderr


def test_a_file_that_is_not_a_notebook_is_one_line(tmp_path):
    (tmp_path / "essay.ipynb").write_text("my answers are in the email")
    run = check(tmp_path / "essay.ipynb")
    assert run.returncode == 1 and run.stderr.strip().count("\n") == 0, run.stderr
    assert "not a Jupyter notebook" in run.stderr


def test_an_edited_locked_cell_is_named(tmp_path, solved_dir, lab):
    notebook = read(lab_notebook(solved_dir, lab))
    position, cell = next((i, c) for i, c in enumerate(notebook.cells)
                          if c.cell_type == "code" and c.metadata["nbgrader"]["locked"])
    cell.source += "\n# a line the student added\n"
    path = save(notebook, tmp_path, lab.name)
    problems, _ = structure(path, load(path), lab)
    assert problems == [f"locked cell {position + 1} ({cell.id}) was edited: the grader runs the release's version "
                        "(and your edit as your own code); undo the edit"]


def test_an_answer_that_imports_pytorch_where_the_grader_has_none_is_noted(tmp_path, solved_dir):
    lab = next(lab for lab in LABS if lab.name == "pt03_autodiff")  # every activity is graded with NumPy only
    notebook = read(lab_notebook(solved_dir, lab))
    first = next(iter(lab.activities))
    changed = with_answer(notebook, first, "import torch\n" + answer_cell(notebook, first).source)
    path = save(changed, tmp_path, lab.name)
    problems, _ = structure(path, load(path), lab)
    assert len(problems) == 1
    assert problems[0].startswith(f"activity {first} is graded with NumPy only, and its answer uses PyTorch on its "
                                  "line 1 (`import torch`)")


def test_the_solved_notebook_reads_as_the_grader_reads_it(tmp_path, solved_dir, lab):
    path = lab_notebook(solved_dir, lab)
    assert structure(path, load(path), lab) == ([], [])


def test_the_last_release_cell_is_locked_given_code(lab):
    last = read(lab_notebook(ROOT / "release", lab)).cells[-1]
    assert last.id == CHECK_CELL_ID and last.cell_type == "code"
    flags = last.metadata["nbgrader"]
    assert flags["locked"] and not flags["grade"] and not flags["solution"]
    assert f'notebook="{lab.name}.ipynb"' in last.source and '"-m", "autograder", "check"' in last.source


def run_cell(source, folder, **environment):
    return subprocess.run([sys.executable, "-c", source], cwd=folder, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", **environment})


def test_the_cell_prints_where_to_check_when_it_cannot_run_the_check(tmp_path, lab):
    """In Colab, or in the grader's sandbox, there is no notebook file beside the kernel to check."""
    source = read(lab_notebook(ROOT / "release", lab)).cells[-1].source
    run = run_cell(source, tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == (f"To check before you submit, run `python -m autograder check {lab.name}.ipynb` "
                                  "where the course's grader is installed; the grader runs hidden checks too.")


def test_the_cell_does_nothing_in_the_checks_own_run(release_dir, lab):
    source = read(lab_notebook(release_dir, lab)).cells[-1].source
    run = run_cell(source, release_dir / lab.name, **{CHECKING: "1"})
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")


@pytest.mark.slow
def test_the_blank_release_runs_and_fails_its_first_check(release_dir):
    run = check(lab_notebook(release_dir, FIRST))
    first = next(iter(FIRST.activities.values()))
    assert run.returncode == 1, run.stdout + run.stderr
    line = next(line for line in run.stdout.splitlines() if f" {first.id}-check " in line)
    assert "failed" in line and f"NotImplementedError: Complete Activity {first.id}: {first.functions[0]}" in line
    assert "Run All stops at cell" in run.stdout
    assert run.stdout.splitlines()[-1].startswith("no activity passes its visible checks yet")


@pytest.mark.slow
def test_the_solved_notebook_passes_every_visible_check_and_says_hidden_checks_remain(solved_dir):
    run = check(lab_notebook(solved_dir, FIRST))
    assert run.returncode == 0, run.stdout + run.stderr
    checks = [line for line in run.stdout.splitlines() if "-check " in line]
    assert len(checks) == sum(len(a.checks) for a in FIRST.activities.values())
    assert all(" passed " in line for line in checks), checks
    assert "the notebook runs top to bottom" in run.stdout
    last = run.stdout.splitlines()[-1]
    assert last.startswith(f"the visible checks of {', '.join(list(FIRST.activities)[:-1])} and "
                           f"{list(FIRST.activities)[-1]} pass") and "hidden checks" in last
