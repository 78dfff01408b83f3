"""The instructor notebook runs top to bottom and reproduces the figures the lab reports."""
import json

import jupytext
import nbformat
import pytest

from course.execute import execute, stdout

pytestmark = pytest.mark.slow

# Read from the kernel after the last cell, rather than parsed from printed text.
PROBE = """
import json
print(json.dumps({
    "x_bar": float(backward(fan_L)[fan_x]),
    "premature_x_bar": float(early[fan_x]),
    "split": [len(ytrain), len(yval), len(ytest)],
    "train_loss": [curves["NumPy train"][0], curves["NumPy train"][-1]],
    "updates": len(curves["NumPy train"]),
    "val_accuracy": float(val_accuracy),
    "mlp_loss": [mlp_curves["NumPy"][0], mlp_curves["NumPy"][-1]],
    "mlp_updates": len(mlp_curves["NumPy"]),
    "mlp_accuracy": float(mlp_accuracy),
}))
"""


@pytest.fixture(scope="module")
def probed(lab):
    notebook = jupytext.read(lab.path)
    notebook.cells.append(nbformat.v4.new_code_cell(PROBE))
    execute(notebook, lab.folder)
    return notebook


def figures(notebook):
    return json.loads(stdout(notebook.cells[-1]))


def test_every_check_cell_prints_its_success_line(lab, probed):
    for activity in lab.activities.values():
        for check in activity.checks:
            assert f"Activity {activity.id} passed" in stdout(probed.cells[check.index])


def test_fan_out_example_gives_44_and_premature_pass_12(probed):
    found = figures(probed)
    assert found["x_bar"] == 44.0
    assert found["premature_x_bar"] == 12.0


def test_split_sizes(probed):
    assert figures(probed)["split"] == [205, 68, 69]


def test_linear_classifier_figures(probed):
    found = figures(probed)
    assert found["updates"] == 60
    assert [round(x, 4) for x in found["train_loss"]] == [1.0986, 0.2137]
    assert round(found["val_accuracy"], 3) == 0.956


def test_mlp_figures(probed):
    found = figures(probed)
    assert found["mlp_updates"] == 200
    assert [round(x, 4) for x in found["mlp_loss"]] == [1.1324, 0.0588]
    assert round(found["mlp_accuracy"], 3) == 0.985
