"""The student release: reproducible, leak-proof, valid for nbgrader."""
import filecmp
import re
import subprocess
import sys

import nbformat
import pytest
from nbgrader.nbgraderformat import MetadataValidator

from build_student import build, main as build_main
from conftest import LAB, ROOT, read
from course.leaks import fold


def release_notebook(folder):
    return read(folder / LAB / f"{LAB}.ipynb")


def test_two_builds_are_byte_identical(tmp_path, release_dir):
    build(tmp_path)
    assert filecmp.cmp(tmp_path / LAB / f"{LAB}.ipynb", release_dir / LAB / f"{LAB}.ipynb", shallow=False)


def test_committed_release_is_current():
    result = subprocess.run([sys.executable, "build_student.py", "--check"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_check_names_a_stale_file(tmp_path, release_dir, capsys):
    stale = tmp_path / "release"
    build(stale)
    notebook = stale / LAB / f"{LAB}.ipynb"
    notebook.write_text(notebook.read_text().replace("Activity 1a", "Activity 1x", 1))
    assert build_main(["--check", "--release", str(stale)]) == 1
    assert str(notebook) in capsys.readouterr().err


def test_check_names_a_missing_file(tmp_path, capsys):
    assert build_main(["--check", "--release", str(tmp_path / "nothing")]) == 1
    assert f"{LAB}.ipynb" in capsys.readouterr().err


def test_release_ships_the_data_beside_the_notebook(release_dir):
    assert (release_dir / LAB / "data" / "penguins.csv").read_bytes() == (ROOT / "data/penguins.csv").read_bytes()


def test_no_line_of_any_reference_cell_reaches_the_release(lab, release_dir):
    text = "\n".join(fold(line) for cell in release_notebook(release_dir).cells
                     for line in cell.source.splitlines())
    checked = 0
    for cell in lab.cells:
        if cell.role != "reference":
            continue
        for line in map(fold, cell.source.splitlines()):
            # signatures, bare returns and short fragments of wrapped prose are shared by necessity
            if line.startswith("def ") or len(line) < 12 or line.startswith("return ") and " " not in line[7:]:
                continue
            checked += 1
            assert line not in text, f"{line!r} from {cell.label} is in the release"
    assert checked > 60  # the lab's solutions and answers were all looked at


def test_release_has_no_outputs_and_only_nbgrader_metadata(release_dir):
    notebook = release_notebook(release_dir)
    for cell in notebook.cells:
        assert set(cell.metadata) <= {"nbgrader", "deletable", "editable"}, cell.id
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.id
    assert set(notebook.metadata) == {"kernelspec", "language_info", "course"}


def test_nbgrader_metadata_is_valid_and_carries_the_activities(lab, release_dir):
    notebook = release_notebook(release_dir)
    MetadataValidator().validate_nb(notebook)
    grading = {cell.id: cell.metadata.nbgrader for cell in notebook.cells}
    for activity in lab.activities.values():
        answer = grading[f"{activity.id}-answer"]
        assert answer["solution"] and not answer["grade"] and not answer["locked"]
        check = grading[f"{activity.id}-check"]
        assert check["grade"] and check["grade_id"].startswith(activity.id)
        assert check["points"] == (0 if activity.optional else activity.points)  # bonus: extra credit
    given = [g for key, g in grading.items() if not key.endswith(("-answer", "-check"))]
    assert given and all(g["locked"] and not g["grade"] and not g["solution"] for g in given)
    assert all(cell.metadata.get("editable") is False for cell in notebook.cells
               if not cell.id.endswith("-answer"))


def test_cell_ids_are_unique_and_stable(release_dir):
    ids = [cell.id for cell in release_notebook(release_dir).cells]
    assert len(ids) == len(set(ids))
    assert ids[:1] == [c.id for c in read(ROOT / "release" / LAB / f"{LAB}.ipynb").cells][:1]


def test_solved_notebook_differs_from_the_release_only_in_answer_cells(lab, release_dir, solved_dir):
    release, solved = release_notebook(release_dir), release_notebook(solved_dir)
    assert [c.id for c in release.cells] == [c.id for c in solved.cells]
    for before, after in zip(release.cells, solved.cells):
        if before.id.endswith("-answer"):
            assert after.source == lab.activities[before.id[:-len("-answer")]].reference.source
        else:
            assert after == before


# Each fixture is the real lab with one realistic slip; the build must refuse it and say where.
LEAKY = {
    "reference cell lost its tag": (
        '# %% tags=["reference"] activity="1c"', "# %%", r"stub of activity 1c must be directly followed"),
    "solution line pasted into a given cell": (
        "        return sum_to_shape(adjoint, self.value.shape)",
        "        return sum_to_shape(adjoint, self.value.shape)\n        # return v * b, v * a",
        r"release cell \d+ \(code-\w+\) contains 'return v \* b, v \* a'"),
    "solution function copied into a given cell": (
        "def as_tensor(value):",
        "def tanh_vjp(y, v):\n    return v * (1.0 - y * y)\n\n\ndef as_tensor(value):",
        r"release cell \d+ \(code-\w+\) defines tanh_vjp"),
    "instructor answer lost its tag": (
        '# %% [markdown] tags=["reference"]\n# **Instructor answers.**', "# %% [markdown]\n# **Instructor answers.**",
        r"release cell \d+ \(markdown-\w+\) contains instructor-only text"),
    "instructor answer pasted into the discussion": (
        "# 4. Why does `tanh` keep its output rather than its input?",
        "# 4. Why does `tanh` keep its output rather than its input?\n"
        "# 4. $\\tanh'(x) = 1 - \\tanh(x)^2$ is immediate from the output the forward pass already",
        r"release cell \d+ \(markdown-\w+\) contains .*is immediate from the output"),
}


@pytest.mark.parametrize("slip", LEAKY)
def test_leaky_source_fails_the_build_naming_the_cell(tmp_path, capsys, slip):
    old, new, message = LEAKY[slip]
    text = (ROOT / "source" / LAB / f"{LAB}.py").read_text()
    assert old in text
    source = tmp_path / "source" / LAB / f"{LAB}.py"
    source.parent.mkdir(parents=True)
    source.write_text(text.replace(old, new, 1))
    out = tmp_path / "release"
    assert build_main(["--source", str(tmp_path / "source"), "--release", str(out)]) == 2
    assert re.search(message, capsys.readouterr().err)
    assert not out.exists(), "a refused build must write nothing"


def test_hidden_checks_stay_out_of_the_release(release_dir):
    """The grader's own checks and probes (autograder/labs/<lab>/) share no line with the release."""
    text = "\n".join(fold(line) for cell in release_notebook(release_dir).cells for line in cell.source.splitlines())
    checked = 0
    for path in sorted((ROOT / "autograder" / "labs" / LAB).glob("*.py")):
        for line in map(fold, path.read_text().splitlines()):
            if len(line) < 25 or line.startswith(("#", "def ", "import ", "from ", '"""', "return ")):
                continue
            checked += 1
            assert line not in text, f"{path.name}: {line!r} is in the release"
    assert checked > 200
