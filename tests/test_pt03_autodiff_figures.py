"""pt03_autodiff reproduces the figures the lab reports, read from the kernel after the last cell."""
import pytest

from tests.helpers import LABS, instructor_run

pytestmark = pytest.mark.slow

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
def found():
    return instructor_run(next(lab for lab in LABS if lab.name == "pt03_autodiff"))[1]


def test_fan_out_example_gives_44_and_premature_pass_12(found):
    assert found["x_bar"] == 44.0
    assert found["premature_x_bar"] == 12.0


def test_split_sizes(found):
    assert found["split"] == [205, 68, 69]


def test_linear_classifier_figures(found):
    assert found["updates"] == 60
    assert [round(x, 4) for x in found["train_loss"]] == [1.0986, 0.2137]
    assert round(found["val_accuracy"], 3) == 0.956


def test_mlp_figures(found):
    assert found["mlp_updates"] == 200
    assert [round(x, 4) for x in found["mlp_loss"]] == [1.1324, 0.0588]
    assert round(found["mlp_accuracy"], 3) == 0.985
