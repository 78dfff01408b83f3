"""The student notebook fails honestly; the solved one passes, in Jupyter and in nbgrader."""
import subprocess
import sys
from pathlib import Path

import pytest
from nbclient.exceptions import CellExecutionError

from conftest import LAB, read
from course.execute import errors, execute, stdout

pytestmark = pytest.mark.slow
NBGRADER = Path(sys.executable).with_name("nbgrader")


def notebook_path(folder):
    return folder / LAB / f"{LAB}.ipynb"


def test_release_stops_at_the_first_activity(release_dir):
    notebook = read(notebook_path(release_dir))
    with pytest.raises(CellExecutionError) as failure:
        execute(notebook, release_dir / LAB)
    assert failure.value.ename == "NotImplementedError"
    assert "Complete Activity 1a: add_vjp" in failure.value.evalue
    failed = [cell for cell in notebook.cells if cell.cell_type == "code" and errors(cell)]
    assert [cell.id for cell in failed] == ["1a-check"]


@pytest.fixture(scope="module")
def release_run(release_dir):
    """The release executed top to bottom with errors allowed."""
    return execute(read(notebook_path(release_dir)), release_dir / LAB, allow_errors=True)


def test_every_check_fails_on_the_stubs(lab, release_run):
    checks = {cell.id: errors(cell) for cell in release_run.cells if "-check" in cell.id}
    assert sorted(checks) == sorted(f"{a}-check" for a in lab.activities)
    for cell_id, found in checks.items():
        assert found, f"{cell_id} passed on an unfinished notebook"
        assert "passed" not in stdout(next(c for c in release_run.cells if c.id == cell_id))


def test_given_cells_run_unless_they_need_student_code(lab, release_run):
    given = [cell for cell in lab.cells if cell.role == "given" and cell.cell_type == "code"]
    released = {cell.source: cell for cell in release_run.cells if cell.cell_type == "code"}
    for cell in given:
        found = errors(released[cell.source])
        if cell.requires:
            assert found and found[0].ename == "NotImplementedError", cell.label
            assert any(f"Complete Activity {a}:" in found[0].evalue for a in cell.requires), cell.label
        else:
            assert not found, f"{cell.label} fails in the release: {found and found[0].evalue}"


def test_solved_notebook_passes_every_check(lab, solved_dir):
    notebook = execute(read(notebook_path(solved_dir)), solved_dir / LAB)
    for activity in lab.activities:
        check = next(cell for cell in notebook.cells if cell.id == f"{activity}-check")
        assert f"Activity {activity} passed" in stdout(check)


def validate(folder, *options):
    result = subprocess.run([str(NBGRADER), "validate", *options, f"{LAB}.ipynb"], cwd=folder / LAB,
                            capture_output=True, text=True, timeout=600)
    return result.stdout + result.stderr


def test_nbgrader_validate_passes_the_solved_notebook(solved_dir):
    assert "Success! Your notebook passes all the tests." in validate(solved_dir)


def test_nbgrader_validate_fails_the_release_on_every_check(lab, release_dir):
    report = validate(release_dir)
    assert f"VALIDATION FAILED ON {len(lab.activities)} CELL(S)" in report
