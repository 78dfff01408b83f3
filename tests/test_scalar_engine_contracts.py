"""scalar_engine's judges compare what the contracts say, as they say it (autograder/labs/
scalar_engine/contracts.py): far tails by relative error, parents as an ordered tuple with
multiplicity, every label, what must not change bit for bit; and the expected gradients of a
backward that meets gradients already held anywhere are what the notebook's engine computes."""
import math

import numpy as np
import pytest

from autograder.labs.scalar_engine.cases import cases, torch_held

SEED = 5


@pytest.fixture(scope="module")
def hidden():
    return cases(SEED)


def case_titled(hidden, activity, *words):
    return next(case for case in hidden[activity] if all(word in case.title for word in words))


def node_answer(case, data, grads, prev=None, op=None):
    known = list(case.args["values"])
    return {"kind": "Value", "data": data, "prev": prev if prev is not None else list(range(len(known))),
            "op": op, "grads": grads, "inputs_after": [case.args["values"][n] for n in known]}


def test_a_sigmoid_clipped_to_0_on_its_far_negative_tail_fails_where_an_absolute_tolerance_passed_it(hidden):
    case = case_titled(hidden, "A", "sigmoid at |input| 40, negative", "starting at 0")
    x, upstream = case.args["values"]["a"], case.args["upstream"]
    s = math.exp(x) / (1 + math.exp(x))
    assert case.judge(node_answer(case, s, [s * (1 - s) * upstream], op="sigmoid")) is None
    said = case.judge(node_answer(case, 0.0, [s * (1 - s) * upstream], op="sigmoid"))
    assert said and "out.data is 0" in said


def test_an_exact_tanh_slope_passes_where_the_notebooks_formula_rounds_to_0(hidden):
    """1 - t^2 is 0 in float64 at |x| = 20; 1 / cosh(x)^2 is 1.7e-17, the truth: both pass."""
    case = case_titled(hidden, "1b", "tanh at |input| 20, positive", "starting at 0")
    x, upstream = case.args["values"]["a"], case.args["upstream"]
    for slope in (1 - math.tanh(x) ** 2, 1 / math.cosh(x) ** 2):
        assert case.judge(node_answer(case, math.tanh(x), [slope * upstream], op="tanh")) is None


def test_parents_are_compared_in_order_with_multiplicity_and_labels_every_time(hidden):
    pair = case_titled(hidden, "1a", "multiply on two different Values", "starting at 0")
    a, b, upstream = pair.args["values"]["a"], pair.args["values"]["b"], pair.args["upstream"]
    right = node_answer(pair, a * b, [b * upstream, a * upstream], op="*")
    assert pair.judge(right) is None
    assert "in argument order" in pair.judge({**right, "prev": [1, 0]})
    assert "label it '*'" in pair.judge({**right, "op": "mul"})
    twice = case_titled(hidden, "1a", "add on one Value used twice", "starting at 0")
    a, upstream = twice.args["values"]["a"], twice.args["upstream"]
    right = node_answer(twice, 2 * a, [2 * upstream], prev=[0, 0], op="+")
    assert twice.judge(right) is None
    assert "one entry per operand" in twice.judge({**right, "prev": [0]})


def test_an_input_changed_by_a_rounding_is_reported(hidden):
    case = case_titled(hidden, "1a", "add on two different Values", "starting at 0")
    a, b, upstream = case.args["values"]["a"], case.args["values"]["b"], case.args["upstream"]
    answer = node_answer(case, a + b, [upstream, upstream], op="+")
    answer["inputs_after"] = [np.nextafter(a, math.inf), b]
    assert "a.data (the inputs must not change)" in case.judge(answer)


def engine_backward(spec, held, repeat):
    """The notebook's backward, written out: add the seed to the root, then each node's rule in
    reverse order adds slope times the node's whole .grad into its parents'."""
    values = []
    for op, *operands in spec:
        parents = [values[i] for i in operands[0]] if op != "leaf" else []
        values.append(operands[0] if op == "leaf" else parents[0] * parents[1] if op == "product"
                      else parents[0] ** 2 if op == "square" else sum(w * p for w, p in zip(operands[1], parents)))
    grads = list(held)
    for _ in range(repeat):
        grads[-1] += 1.0
        for index in reversed(range(len(spec))):
            op, *operands = spec[index]
            if op == "leaf":
                continue
            parents = operands[0]
            slopes = ([values[parents[1]], values[parents[0]]] if op == "product" else [2 * values[parents[0]]]
                      if op == "square" else operands[1])
            for parent, slope in zip(parents, slopes):
                grads[parent] += slope * grads[index]
    return grads


@pytest.mark.parametrize("repeat", [1, 2])
def test_backward_meeting_held_gradients_is_expected_as_the_engine_computes_it(repeat):
    spec = [["leaf", 0.7], ["leaf", -1.1], ["product", [0, 1]], ["square", [2]], ["weighted", [3, 2], [1.0, 0.5]],
            ["weighted", [4, 4], [1.0, 0.5]], ["square", [5]]]
    held = [0.3, -0.2, 0.5, 1.1, -0.4, 0.25, 0.6]
    assert np.allclose(torch_held(spec, held, repeat)[1], engine_backward(spec, held, repeat), rtol=1e-12, atol=0)
