"""The student's check before submitting (`python -m autodiff_check`, student/autodiff_check/), the
release cell that runs it, and `python -m autograder check`, the same check with the grader's own
reading of the notebook."""
import json
import os
import subprocess
import sys
import sysconfig

import nbformat
import pytest

from autodiff_check import CHECKING
from autodiff_check.cells import cell_name
from autodiff_check.released import (activity_problems, course_of, locked_problems, release_of, release_problems,
                                     restore)
from autograder.cli.check import grader_reading
from autograder.labs.notebooks import released_cells, student_notebook
from autograder.labs.policy import policy_problems
from build_student import CELLS
from course.check_cell import CHECK_CELL_ID
from course.leaks import find_leaks
from tests.helpers import LABS, ROOT, lab_notebook, read
from tests.submissions import answer_cell, save, with_answer

FIRST = LABS[0]  # the labs are sorted by name
# Run from the notebook's folder: the grader of this checkout too (conftest.py adds its student/).
THIS_CHECKOUT = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ["PYTHONPATH"]])}


def check(path, *args, module="autodiff_check"):
    """`python -m <module> NOTEBOOK` run where a student runs it, in the notebook's folder, with
    this checkout's code."""
    return subprocess.run([sys.executable, "-m", *module.split(), path.name, *args], cwd=path.parent,
                          capture_output=True, text=True, timeout=1200, env=THIS_CHECKOUT)


def test_a_missing_file_is_one_line(tmp_path):
    run = check(tmp_path / "nowhere.ipynb")
    assert run.returncode == 1 and run.stderr.strip().count("\n") == 0, run.stderr
    assert "nowhere.ipynb" in run.stderr and "No such file" in run.stderr


def test_a_file_that_is_not_a_notebook_is_one_line(tmp_path):
    (tmp_path / "essay.ipynb").write_text("my answers are in the email")
    run = check(tmp_path / "essay.ipynb")
    assert run.returncode == 1 and run.stderr.strip().count("\n") == 0, run.stderr
    assert "not a Jupyter notebook" in run.stderr


def locked_code(notebook):
    return [i for i, c in enumerate(notebook.cells) if c.cell_type == "code" and c.metadata["nbgrader"]["locked"]]


def edited_and_deleted(notebook):
    """`notebook` with its first locked code cell edited and its second deleted: (the copy, the
    edited cell's index, the deleted cell's index in the release)."""
    changed = nbformat.from_dict(json.loads(json.dumps(notebook)))
    edited, deleted = locked_code(changed)[:2]
    changed.cells[edited].source += "\n# a line the student added\n"
    del changed.cells[deleted]
    return changed, edited, deleted


def test_an_edited_and_a_deleted_locked_cell_are_named_with_how_to_restore_them(release_dir, lab):
    released = read(lab_notebook(release_dir, lab))
    notebook, edited, deleted = edited_and_deleted(released)
    first_line = next(line for line in released.cells[edited].source.splitlines() if line.strip())
    gone = next(line for line in released.cells[deleted].source.splitlines() if line.strip())
    problems = locked_problems(notebook, release_of(lab.name), "mine.ipynb")
    assert problems == [
        f"cell {edited + 1} (it begins {first_line.strip()[:59] + ('…' if len(first_line.strip()) > 60 else '')!r}) "
        "is a locked cell and was edited: the grader runs the released version (and your edit as code of your own); "
        "undo the edit, or put the released one back with "
        f"`python -m autodiff_check mine.ipynb --restore {released.cells[edited].id}`",
        f"a locked cell is missing, the release's cell {deleted + 1} (it begins "
        f"{gone.strip()[:59] + ('…' if len(gone.strip()) > 60 else '')!r}): put it back with "
        f"`python -m autodiff_check mine.ipynb --restore {released.cells[deleted].id}`"]


def test_restore_puts_an_edited_cell_back_in_place_and_a_deleted_one_where_it_was(release_dir):
    released = read(lab_notebook(release_dir, FIRST))
    notebook, edited, deleted = edited_and_deleted(released)
    first = next(iter(FIRST.activities))
    answer_cell(notebook, first).source = "def mine():\n    return 'kept'\n"
    release = release_of(FIRST.name)
    assert restore(notebook, release, released.cells[edited].id) == edited
    assert restore(notebook, release, released.cells[deleted].id) == deleted
    assert [cell.id for cell in notebook.cells] == [cell.id for cell in released.cells]
    assert [cell.source for cell in notebook.cells if cell.id != f"{first}-answer"] == [
        cell.source for cell in released.cells if cell.id != f"{first}-answer"]
    assert answer_cell(notebook, first).source == "def mine():\n    return 'kept'\n"
    assert locked_problems(notebook, release, "mine.ipynb") == []


def test_restore_keeps_the_file_as_it_was_and_changes_nothing_else(release_dir, tmp_path):
    released = read(lab_notebook(release_dir, FIRST))
    notebook, edited, _ = edited_and_deleted(released)
    first = next(iter(FIRST.activities))
    answer_cell(notebook, first).source = "def mine():\n    return 'kept'\n"
    path = save(notebook, tmp_path, FIRST.name)
    before = path.read_bytes()
    run = check(path, "--restore", released.cells[edited].id)
    assert run.returncode == 0, run.stderr
    assert f"restored cell {edited + 1} " in run.stdout and f"{path.name}.bak" in run.stdout
    assert (tmp_path / f"{path.name}.bak").read_bytes() == before
    after = read(path)
    assert after.cells[edited].source == released.cells[edited].source
    assert answer_cell(after, first).source == "def mine():\n    return 'kept'\n"
    assert [c for i, c in enumerate(after.cells) if i != edited] == [c for i, c in enumerate(notebook.cells)
                                                                      if i != edited]
    again = check(path, "--restore", released.cells[edited].id)  # a second backup never replaces the first
    assert again.returncode == 0 and (tmp_path / f"{path.name}.bak2").read_bytes() == path.read_bytes()
    assert (tmp_path / f"{path.name}.bak").read_bytes() == before


def test_restore_refuses_a_cell_that_is_not_locked(release_dir, tmp_path):
    path = save(read(lab_notebook(release_dir, FIRST)), tmp_path, FIRST.name)
    before = path.read_bytes()
    first = next(iter(FIRST.activities))
    run = check(path, "--restore", f"{first}-answer")
    assert run.returncode == 1 and f"the release has no locked cell {first}-answer" in run.stderr
    assert path.read_bytes() == before and not list(tmp_path.glob("*.bak*"))


def test_an_answer_that_uses_pytorch_where_the_grader_has_none_is_noted(solved_dir):
    lab = next(lab for lab in LABS if lab.name == "pt03_autodiff")  # every activity is graded with NumPy only
    notebook = read(lab_notebook(solved_dir, lab))
    first = next(iter(lab.activities))
    changed = with_answer(notebook, first, "import torch\n" + answer_cell(notebook, first).source)
    problems = activity_problems(changed, course_of(changed), release_of(lab.name))
    assert len(problems) == 1
    assert problems[0].startswith(f"activity {first} is graded with NumPy only, and its answer uses PyTorch on its "
                                  "line 1 (`import torch`)")


def test_the_solved_notebook_reads_as_the_grader_reads_it(solved_dir, lab):
    notebook = read(lab_notebook(solved_dir, lab))
    release = release_of(lab.name)
    assert locked_problems(notebook, release, "x.ipynb") == activity_problems(notebook, course_of(notebook),
                                                                              release) == []
    assert grader_reading(lab_notebook(solved_dir, lab))(notebook) == []


def test_the_staff_check_adds_the_graders_reading(solved_dir, tmp_path):
    """`autograder check` knows what the student's check cannot: the lab a folder hands a notebook in as."""
    other = next(lab for lab in LABS if lab != FIRST)
    folder = tmp_path / "submitted" / "student-01" / other.name
    folder.mkdir(parents=True)
    path = save(read(lab_notebook(solved_dir, FIRST)), folder, other.name)
    assert grader_reading(path)(read(path)) == [f"this notebook is lab {FIRST.name}, but its folder hands it in as "
                                                f"lab {other.name}: the grader would grade it as neither"]


def test_a_notebook_of_another_release_than_the_package_is_told(release_dir, lab):
    course = read(lab_notebook(release_dir, lab)).metadata["course"]
    assert release_problems(course, release_of(lab.name)) == []
    older = {**course, "release": "0" * 16}  # the notebook of a release the course has since changed
    (said,) = release_problems(older, release_of(lab.name))
    assert said.startswith(f"this notebook and this autodiff_check come from different releases of lab {lab.name}")


def test_the_released_cells_are_what_a_build_writes(lab):
    assert (CELLS / f"{lab.name}.json").read_text(encoding="utf-8") == released_cells(student_notebook(lab)), \
        "run `python build_student.py` and commit student/autodiff_check/labs/"


def test_the_released_cells_hold_no_reference_solution_nor_hidden_data(lab):
    held = json.loads((CELLS / f"{lab.name}.json").read_text(encoding="utf-8"))
    notebook = nbformat.v4.new_notebook(cells=[nbformat.from_dict(cell) for cell in held["cells"]])
    assert find_leaks(lab, notebook) == []
    assert not [path for path in CELLS.iterdir() if path.suffix != ".json"], "only the released cells"


def test_the_leak_finder_would_see_a_solution_in_the_released_cells(solved_dir):
    """The control of the test above: the same cells with one reference solution in place of its stub."""
    held = json.loads((CELLS / f"{FIRST.name}.json").read_text(encoding="utf-8"))
    first = f"{next(iter(FIRST.activities))}-answer"
    solution = next(cell for cell in read(lab_notebook(solved_dir, FIRST)).cells if cell.id == first)
    cells = [solution if cell["id"] == first else nbformat.from_dict(cell) for cell in held["cells"]]
    assert find_leaks(FIRST, nbformat.v4.new_notebook(cells=cells))


def test_the_notebook_says_which_activities_are_graded_with_numpy_only(release_dir, lab):
    """As the activities' texts say (the lab-interface tests tie those to the lab's USES_PYTORCH)."""
    course = read(lab_notebook(release_dir, lab)).metadata["course"]
    assert [(a["id"], a["optional"]) for a in course["activities"]] == [(a.id, a.optional)
                                                                        for a in lab.activities.values()]
    assert policy_problems(lab, {a["id"] for a in course["activities"] if not a["numpy_only"]}) == []


def test_the_last_release_cell_is_locked_given_code(lab):
    last = read(lab_notebook(ROOT / "release", lab)).cells[-1]
    assert last.id == CHECK_CELL_ID and last.cell_type == "code"
    flags = last.metadata["nbgrader"]
    assert flags["locked"] and not flags["grade"] and not flags["solution"]
    assert f'notebook="{lab.name}.ipynb"' in last.source and '"-m", "autodiff_check", notebook' in last.source


def run_cell(source, folder, **environment):
    return subprocess.run([sys.executable, "-c", source], cwd=folder, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "student"), **environment})


def test_the_cell_says_how_to_install_the_check_where_it_is_not_installed(tmp_path, lab):
    source = read(lab_notebook(ROOT / "release", lab)).cells[-1].source
    run = run_cell("import sys\nsys.modules['autodiff_check'] = None  # not installed\n" + source, tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == ("To check before you submit, install the course's check where this kernel runs, "
                                  "from the course folder: `pip install -r requirements-student.txt`; then run this "
                                  "cell again.")


def test_the_cell_prints_the_command_where_the_saved_notebook_is_not_beside_it(tmp_path, lab):
    """In Colab, or in the grader's sandbox, there is no notebook file beside the kernel to check."""
    source = read(lab_notebook(ROOT / "release", lab)).cells[-1].source
    run = run_cell(source, tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == (f"To check before you submit, run `python -m autodiff_check {lab.name}.ipynb` in "
                                  "the folder of your saved notebook; the grader runs hidden checks too.")


@pytest.mark.parametrize("environment", [{CHECKING: "1"}, {"NBGRADER_EXECUTION": "validate"},
                                         {"NBGRADER_EXECUTION": "autograde"}], ids=["check", "validate", "autograde"])
def test_the_cell_does_nothing_in_the_checks_own_run_or_nbgraders(release_dir, lab, environment):
    """The check's own run, and nbgrader's validate and autograde, run every check already."""
    source = read(lab_notebook(release_dir, lab)).cells[-1].source
    run = run_cell(source, release_dir / lab.name, **environment)
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")


# The student's environment: the third-party packages of this one (the lines of a .pth add folders
# and do not run the .pth files in them, so the grader's editable install is not picked up), the
# student package of this checkout, and nothing of the grader, the course's tools or nbgrader.
BLOCKER = '''\
import importlib.abc
import sys


class Absent(importlib.abc.MetaPathFinder):
    """What a student's machine has not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("autograder", "course", "nbgrader"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Absent())
'''


@pytest.fixture(scope="module")
def student_python(tmp_path_factory):
    folder = tmp_path_factory.mktemp("student-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", folder / "venv"], check=True)
    python = folder / "venv" / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (folder / "venv" / site).mkdir(parents=True, exist_ok=True)
    (folder / "venv" / site / "third_party.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (folder / "venv" / site / "student.pth").write_text(str(ROOT / "student") + "\n")
    (folder / "venv" / site / "absent.py").write_text(BLOCKER)
    (folder / "venv" / site / "absent.pth").write_text("import absent\n")
    return python


def in_student_environment(python, *args, cwd):
    return subprocess.run([str(python), *args], cwd=cwd, capture_output=True, text=True, timeout=1200,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(cwd)})


@pytest.mark.slow
def test_the_check_needs_only_the_students_notebook_and_the_student_package(student_python, tmp_path, release_dir):
    imports = in_student_environment(student_python, "-c", (
        "import importlib.util, sys\n"
        "from jupyter_client.kernelspec import KernelSpecManager\n"
        "for name in ('autograder', 'course', 'nbgrader'):\n"
        "    try:\n        __import__(name)\n    except ModuleNotFoundError:\n        pass\n"
        "    else:\n        sys.exit(name + ' is importable')\n"
        "import autodiff_check\n"
        "print(autodiff_check.__file__)\n"
        "print(KernelSpecManager().get_kernel_spec('python3').argv[0])\n"), cwd=tmp_path)
    assert imports.returncode == 0, imports.stdout + imports.stderr
    package, kernel = imports.stdout.split()
    assert package == str(ROOT / "student" / "autodiff_check" / "__init__.py")
    assert kernel == str(student_python), "the check's kernel runs the student's python"

    folder = tmp_path / "alone"
    folder.mkdir()
    released = read(lab_notebook(release_dir, FIRST))
    path = save(released, folder, FIRST.name)  # the notebook alone: no source/, no data, no grader
    run = in_student_environment(student_python, "-m", "autodiff_check", path.name, cwd=folder)
    assert run.returncode == 1, run.stdout + run.stderr
    checks = [cell.id for cell in released.cells if cell.metadata["nbgrader"]["grade"]]
    shown = {cell_id: next(line for line in run.stdout.splitlines() if check_name(released, cell_id) in line
                           and line.startswith("  ") and not line.startswith("  !")) for cell_id in checks}
    first = next(iter(FIRST.activities.values()))
    assert "failed" in shown[f"{first.id}-check"]
    assert f"NotImplementedError: Complete Activity {first.id}: {first.functions[0]}" in shown[f"{first.id}-check"]
    assert all("passed" not in line for line in shown.values())
    assert run.stdout.splitlines()[-1] == ("no activity passes its visible checks yet; the grader also runs hidden "
                                           "checks on other inputs")

    notebook, edited, deleted = edited_and_deleted(released)
    save(notebook, folder, FIRST.name)
    run = in_student_environment(student_python, "-m", "autodiff_check", path.name, cwd=folder)
    said = run.stdout
    assert f"! cell {edited + 1} (it begins " in said and "is a locked cell and was edited" in said
    assert f"! a locked cell is missing, the release's cell {deleted + 1} (it begins " in said
    restored = in_student_environment(student_python, "-m", "autodiff_check", path.name, "--restore",
                                      released.cells[deleted].id, cwd=folder)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert read(path).cells[deleted].source == released.cells[deleted].source
    assert len(read(path).cells) == len(released.cells)


@pytest.mark.slow
def test_the_staff_check_passes_the_solved_notebook_and_says_hidden_checks_remain(solved_dir):
    run = check(lab_notebook(solved_dir, FIRST), module="autograder check")
    assert run.returncode == 0, run.stdout + run.stderr
    solved = read(lab_notebook(solved_dir, FIRST))
    names = [check_name(solved, cell.id) for cell in solved.cells if cell.metadata["nbgrader"]["grade"]]
    checks = [line for line in run.stdout.splitlines()
              if any(name in line for name in names) and line.startswith("  ") and not line.startswith("  !")]
    assert len(checks) == len(names) == sum(len(a.checks) for a in FIRST.activities.values())
    assert all(" passed " in line for line in checks), checks
    assert "the notebook runs top to bottom" in run.stdout
    last = run.stdout.splitlines()[-1]
    assert last.startswith(f"the visible checks of {', '.join(list(FIRST.activities)[:-1])} and "
                           f"{list(FIRST.activities)[-1]} pass") and "hidden checks" in last


def check_name(notebook, cell_id):
    """How the check names the cell `cell_id` of `notebook`: as every message names a cell."""
    return cell_name(notebook.cells, [cell.get("id") for cell in notebook.cells].index(cell_id))
