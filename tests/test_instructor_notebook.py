"""Every lab's instructor notebook runs top to bottom in a fresh kernel from its own folder,
every check prints its success line, and re-executing it changes no byte of the .ipynb."""
import filecmp

import jupytext
import pytest

from authoring.instructor import refresh
from autodiff_check.execute import stdout
from tests.helpers import instructor_run

pytestmark = pytest.mark.slow


def test_every_check_cell_prints_its_success_line(lab):
    executed, _ = instructor_run(lab)
    for activity in lab.activities.values():
        for check in activity.checks:
            assert f"Activity {activity.id} passed" in stdout(executed.cells[check.index]), check.label


def test_executing_an_unchanged_lab_twice_writes_identical_bytes(lab, tmp_path):
    first, second = tmp_path / "first.ipynb", tmp_path / "second.ipynb"
    jupytext.write(instructor_run(lab)[0], first)
    refresh(lab, second)
    assert filecmp.cmp(first, second, shallow=False), \
        f"{lab.name}: two executions differ (timings, memory addresses or split streams in the outputs?)"
