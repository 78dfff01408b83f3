"""tensor_engine reproduces the figures of its seeds, read from what its instructor notebook
prints when the suite executes it (the same run that shows every check passing)."""
import re

import pytest

from autodiff_check.execute import stdout
from tests.helpers import LABS, instructor_run

pytestmark = pytest.mark.slow
LAB = next(lab for lab in LABS if lab.name == "tensor_engine")

# Optional B's speed-up is printed in a cell the stored copy keeps without outputs; read it here.
PROBE = """
import json
print(json.dumps({"speed_up": speed_up, "timed": [quiet_seconds, recording_seconds]}))
"""


@pytest.fixture(scope="module")
def cells():
    return [cell for cell in instructor_run(LAB)[0].cells if cell.cell_type == "code"]


@pytest.fixture(scope="module")
def printed(cells):
    return "\n".join(stdout(cell) for cell in cells)


def test_gradient_check_table(printed):
    """Seed: A 4.7e-11, W 1.8e-10, b 1.4e-10, c 2.4e-10, every gradient of its leaf's shape."""
    rows = re.findall(r"^(\w): shape (\(.*?\))\s+grad shape (\(.*?\))\s+relative error (\S+)$", printed, re.MULTILINE)
    assert rows == [("A", "(4, 3)", "(4, 3)", "4.7e-11"), ("W", "(3, 5)", "(3, 5)", "1.8e-10"),
                    ("b", "(5,)", "(5,)", "1.4e-10"), ("c", "(4, 1)", "(4, 1)", "2.4e-10")]


def test_fused_and_composed_cross_entropy(printed):
    """Seed: loss 1.8135350476 with 2 nodes against 17; gradients equal to about 3e-17."""
    assert "fused:    loss 1.8135350476, 2 nodes" in printed
    assert "composed: loss 1.8135350476, 17 nodes" in printed
    gap = float(re.search(r"largest difference between the two gradients: (\S+)", printed).group(1))
    assert 0 < gap < 1e-16 and f"{gap:.0e}" == "3e-17"


def test_exercise_4_broadcast_shapes(printed):
    assert "grad of A (32, 10), every entry 1; grad of B (10,), every entry 32" in printed
    assert "grad of A (4, 1), every entry 6; grad of B (1, 6), every entry 4" in printed
    assert "grad of A (2, 3, 5), every entry 1; grad of B (3, 1), every entry 10" in printed


def test_digits(printed):
    """Seed: the four epoch lines (val acc 0.967, 0.964, 0.958, 0.964) and test accuracy 0.967."""
    assert "1077 training, 360 validation and 360 test images of 64 pixels" in printed
    lines = re.findall(r"^epoch (\d+): last batch loss (\S+), validation accuracy (\S+)$", printed, re.MULTILINE)
    assert lines == [("10", "0.1730", "0.967"), ("20", "0.0405", "0.964"), ("30", "0.0576", "0.958"),
                     ("40", "0.0118", "0.964")]
    assert "test accuracy: 0.967" in printed


def test_spiral_oracles(printed):
    """Seed 004: finite differences near 1e-9 (3.34e-09), PyTorch near 1e-16 (5.90e-17) with an
    identical loss (0.00e+00)."""
    worst = float(re.search(r"gradient_check, worst error against central differences: (\S+)", printed).group(1))
    loss_gap = float(re.search(r"torch_witness, loss gap: +(\S+)", printed).group(1))
    grad_gap = float(re.search(r"torch_witness, largest gradient gap: +(\S+)", printed).group(1))
    assert 1e-10 < worst < 1e-8
    assert loss_gap == 0.0
    assert 0 < grad_gap < 1e-15


def test_spiral_training_reaches_the_ceiling(printed):
    """Seed 004: 0.9933 training accuracy with a [2, 64, 64, 3] ReLU network and plain gradient
    descent; here the ceiling of this generator, 298 of 300 points, and at least 0.99."""
    steps = dict(re.findall(r"^step +(\d+): loss \S+, training accuracy (\S+)$", printed, re.MULTILINE))
    assert list(steps) == ["1", "100", "250", "500", "1000"]
    assert float(steps["1000"]) >= 0.99 and steps["1000"] == "0.9933"


def test_spiral_plots_are_drawn(cells):
    plot = next(cell for cell in cells if "decision regions" in cell.source)
    assert any("image/png" in output.get("data", {}) for output in plot.outputs)


def test_pytorch_mapping(printed):
    assert "PowBackward0\n  AddBackward0\n    MulBackward0\n      AccumulateGrad" in printed
    assert "after backward #3: w.grad = [6.0, -12.0]" in printed
    assert "a.grad after two passes / after one: [2.0, 2.0]" in printed
    assert "a third pass raises RuntimeError: Trying to backward through the graph a second time" in printed
    assert "version of e after:  1" in printed and "modified by an inplace operation" in printed
    assert "gradient of sum(relu(x)) at x = [1, -2, 3]: [0.0, 1.0, 0.0]" in printed


def test_adam_beats_sgd_on_the_spiral(printed, cells):
    """Seed 004, extension 1: at equal steps Adam's loss lies below constant-rate SGD's."""
    rows = re.findall(r"^step +(\d+): SGD loss (\S+), Adam loss (\S+)$", printed, re.MULTILINE)
    assert rows == [("1", "1.0664", "1.0664"), ("50", "0.2219", "0.0498"), ("100", "0.1026", "0.0238"),
                    ("300", "0.0427", "0.0132")]
    assert all(float(adam) < float(sgd) for step, sgd, adam in rows if step != "1")
    assert "first step with a loss below 0.05: SGD 238, Adam 50" in printed
    plot = next(cell for cell in cells if "Adam, lr 0.01" in cell.source)
    assert any("image/png" in output.get("data", {}) for output in plot.outputs)


def test_no_grad_keeps_no_tape(printed):
    """Seed 004, extension 2, in figures a second run reproduces: the grid's logits keep 15 nodes
    reachable with the tape and none but themselves under no_grad, and the pass needs less memory."""
    rows = re.findall(r"^(with the tape|under no_grad) +nodes reachable from the logits +(\d+), "
                      r"peak memory +(\S+) MiB$", printed, re.MULTILINE)
    assert [(name, nodes) for name, nodes, _ in rows] == [("with the tape", "15"), ("under no_grad", "1")]
    assert float(rows[1][2]) < 0.6 * float(rows[0][2])


def test_no_grad_speed_up_is_measured_but_not_stored():
    """Seed 004, extension 2: the speed-up is printed for the student and not graded; the
    instructor copy keeps no output of that cell, since a clock's figure changes every run."""
    notebook, figures = instructor_run(LAB)
    quiet, recording = figures["timed"]
    assert 0 < quiet and 0 < recording and figures["speed_up"] == recording / quiet
    timed = [cell for cell in notebook.cells if "timing" in cell.metadata.get("tags", [])]
    assert [cell.source.splitlines()[0] for cell in timed] == ["def fastest_pass(context, repeats=5):"]
    assert timed[0].outputs == [] and "speed-up of {speed_up:.1f}x" in timed[0].source


def test_forward_and_reverse_passes_are_counted(printed):
    """Seed 004, extension 3: forward mode wins where outputs outnumber inputs, reverse mode where
    inputs outnumber outputs, by the count of passes."""
    assert "wide: R^40 -> R^1: forward mode 40 passes; reverse mode 1 forward + 1 backward passes" in printed
    assert "tall: R^2 -> R^40: forward mode 2 passes; reverse mode 1 forward + 40 backward passes" in printed


def test_newton_converges_quadratically(printed):
    """Seed 004, extension 4: Hessian-vector products give Newton steps."""
    rows = re.findall(r"^step (\d): \|gradient\| after Newton (\S+), after gradient descent (\S+)$", printed,
                      re.MULTILINE)
    assert [step for step, _, _ in rows] == ["1", "2", "3", "4"]
    assert float(rows[-1][1]) < 1e-8 and float(rows[-1][2]) > 1.0


def test_cnn_on_digits(printed):
    """Seed 004, extension 5: a small CNN built on conv2d; at least 0.95 test accuracy."""
    accuracy = float(re.search(r"CNN test accuracy: (\S+)", printed).group(1))
    assert accuracy >= 0.95 and f"{accuracy:.3f}" == "0.961"


def test_the_tape_is_drawn(printed, cells):
    """Seed 004, extension 6: the graph of a two-layer MLP's loss, drawn by Graphviz."""
    assert "the graph of the MLP's loss: 11 nodes, 10 edges" in printed
    drawing = next(cell for cell in cells if "graphviz.Source" in cell.source)
    assert any("image/svg+xml" in output.get("data", {}) for output in drawing.outputs), \
        "Graphviz's dot program is missing: run the set-up (bash tools/install-debian.sh dot graphviz ...)"
