"""scalar_engine reproduces the figures of its seed, read from the kernel after the last cell."""
import pytest

from tests.helpers import LABS, instructor_run

pytestmark = pytest.mark.slow

PROBE = """
import json
print(json.dumps({
    "f": f_figures,
    "g_grads": g_grads,
    "g_numeric": g_numeric,
    "table": table,
    "exercise_1": exercise_1,
    "naive": naive_dx,
    "ordered": ordered_dx,
    "parameters": len(params),
    "report": {str(step): list(pair) for step, pair in report.items()},
    "steps": len(history),
    "nodes": last_graph_nodes,
    "boundary": [list(boundary.shape), bool((boundary > 0).any()), bool((boundary < 0).any())],
    "sigmoid": [primitive.data, primitive_x.grad],
    "sigmoid_nodes": sigmoid_nodes,
    "dual": [fx.val, fx.der],
    "gradcheck": bool(gradcheck_passed),
    "grad_fn_chain": grad_fn_chain,
    "torch_accumulated": torch_accumulated,
    "engine_accumulated": engine_accumulated,
}))
"""


@pytest.fixture(scope="module")
def found():
    return instructor_run(next(lab for lab in LABS if lab.name == "scalar_engine"))[1]


def test_f_and_its_gradient(found):
    assert found["f"] == [16.0, 16.0, -16.0]


def test_second_expression_matches_central_differences_to_8_digits(found):
    assert [f"{g:.8f}" for g in found["g_grads"]] == ["-0.08779398", "2.20687722"]
    assert [f"{g:.8f}" for g in found["g_numeric"]] == ["-0.08779398", "2.20687722"]


def test_graph_table(found):
    rows = [line.split() for line in found["table"]]
    assert [row[0] for row in rows] == ["x", "y", "n2", "n3", "n4"]
    assert rows[2][:4] == ["n2", "=", "*", "(x,"] and rows[2][-4:] == ["data", "-6.0", "grad", "-8.0"]
    assert rows[3][2] == "+" and rows[3][-3:] == ["-4.0", "grad", "-8.0"]
    assert rows[4][2] == "**2" and rows[4][-3:] == ["16.0", "grad", "1.0"]
    assert rows[0][-3:] == ["2.0", "grad", "16.0"] and rows[1][-3:] == ["-3.0", "grad", "-16.0"]


def test_exercises_1_and_3(found):
    assert found["exercise_1"] == [11.0, 5.0, 3.0, -1.0]
    assert (found["naive"], found["ordered"]) == (64.0, 32.0)


def test_moons_training(found):
    assert found["parameters"] == 105 and found["steps"] == 100
    assert {step: [round(loss, 4), round(accuracy, 2)] for step, (loss, accuracy) in found["report"].items()} == {
        "0": [0.7159, 0.50], "20": [0.4645, 0.84], "40": [0.1774, 0.94], "60": [0.1385, 0.96],
        "80": [0.0308, 0.99], "99": [0.0154, 1.00]}
    assert found["nodes"] == 20409


def test_decision_boundary_is_drawn(found):
    assert found["boundary"] == [[41, 41], True, True]


def test_sigmoid_primitive(found):
    assert [round(v, 6) for v in found["sigmoid"]] == [0.668188, 0.221713]
    assert found["sigmoid_nodes"] == [2, 9]


def test_dual_numbers(found):
    assert [f"{v:.10f}" for v in found["dual"]] == ["3.2873552872", "5.7560492271"]


def test_pytorch_mapping(found):
    assert found["gradcheck"] is True
    assert found["grad_fn_chain"] == ["PowBackward0", "AddBackward0", "MulBackward0", "AccumulateGrad"]
    assert found["torch_accumulated"][-1] == [6.0, -12.0]
    assert found["engine_accumulated"] == found["torch_accumulated"] == [[2.0, -4.0], [4.0, -8.0], [6.0, -12.0]]
