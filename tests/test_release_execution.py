"""Every lab's student notebook fails honestly; the solved one passes under nbgrader validate."""
import subprocess
import sys
from pathlib import Path

import pytest
from nbclient.exceptions import CellExecutionError

from autodiff_check.execute import errors, execute, stdout
from tests.helpers import lab_notebook, read

pytestmark = pytest.mark.slow
NBGRADER = Path(sys.executable).with_name("nbgrader")


def test_release_stops_at_the_first_activity(lab, release_dir):
    notebook = read(lab_notebook(release_dir, lab))
    with pytest.raises(CellExecutionError) as failure:
        execute(notebook, release_dir / lab.name)
    first = next(iter(lab.activities.values()))
    assert failure.value.ename == "NotImplementedError"
    assert f"Complete Activity {first.id}: {first.functions[0]}" in failure.value.evalue
    failed = [cell for cell in notebook.cells if cell.cell_type == "code" and errors(cell)]
    assert len(failed) == 1


@pytest.fixture(scope="module")
def release_run(lab, release_dir):
    """The release executed top to bottom with errors allowed."""
    return execute(read(lab_notebook(release_dir, lab)), release_dir / lab.name, allow_errors=True)


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


def validate(folder, lab):
    result = subprocess.run([str(NBGRADER), "validate", f"{lab.name}.ipynb"], cwd=folder / lab.name,
                            capture_output=True, text=True, timeout=600)
    return result.stdout + result.stderr


def test_nbgrader_validate_passes_the_solved_notebook(lab, solved_dir):
    """Every check cell is graded (the release's failures count them), so a success here is
    every check passing on the solved notebook, executed as nbgrader executes it."""
    assert "Success! Your notebook passes all the tests." in validate(solved_dir, lab)


def test_nbgrader_validate_fails_the_release_on_every_check(lab, release_dir):
    checks = sum(len(activity.checks) for activity in lab.activities.values())
    assert f"VALIDATION FAILED ON {checks} CELL(S)" in validate(release_dir, lab)
