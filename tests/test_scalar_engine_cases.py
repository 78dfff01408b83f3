"""scalar_engine's expected values for the logistic loss are exact: the loss and its gradient
computed in plain Python with a stable formula pass every loss case, at margins on both sides of
20 (where torch.nn.functional.softplus turns into the identity, e^-20 away from the true value,
and once failed the reference for the seeds that drew a score there) and for many seeds. The
graphs' expected values, which take a shortcut through chains of +-1, are PyTorch's node by node."""
import math
import random
import struct

import numpy as np
import pytest

from autograder.labs.scalar_engine.cases import EXTRA_GRAPHS, cases, cases_2, loss_case, loss_cases, torch_graph


def stable_answer(scores, targets):
    """The loss as logistic_loss returns it and the scores' .grad, in float64 without overflow."""
    margins = [-z * t for z, t in zip(scores, targets)]
    terms = [m + math.log1p(math.exp(-m)) if m > 0 else math.log1p(math.exp(m)) for m in margins]
    logistic = [1 / (1 + math.exp(-m)) if m >= 0 else math.exp(m) / (1 + math.exp(m)) for m in margins]
    n = len(scores)
    return {"kind": "Value", "loss": sum(terms) / n, "grads": [-t * s / n for t, s in zip(targets, logistic)]}


@pytest.mark.parametrize("margin", [19.9, 20.0, 20.001, 20.5, 25.0, 33.0, 36.0, 709.0, 710.0, 1000.0])
def test_the_expected_loss_is_exact_at_margins_past_softplus_threshold(margin):
    for scores, targets in [([-margin], [1.0]), ([margin, 0.3], [-1.0, 1.0])]:
        case = loss_case(scores, targets, f"margin {margin}")
        assert case.judge(stable_answer(scores, np.array(targets))) is None


def rejected(loss_cases):
    return [said for case in loss_cases if case.probe == "loss_of"
            for said in [case.judge(stable_answer(case.args["scores"], case.args["targets"]))] if said is not None]


@pytest.mark.parametrize("seed", [10932295209482665981, 2405875930906139466])
def test_the_seeds_that_drew_a_margin_just_past_20_accept_the_exact_answer(seed):
    assert rejected(cases(seed)["3"]) == []


def test_every_seeds_loss_cases_accept_the_exact_answer():
    seeds = [random.getrandbits(64) for _ in range(200)]  # new ones every run; a failure names them
    failed = {seed: said for seed in seeds for said in rejected(loss_cases(np.random.default_rng(seed)))}
    assert failed == {}


def node_by_node(spec, prior):
    """PyTorch's twin of a graph built one tensor per node: what torch_graph's shortcut for
    +-1 chains must equal to the last bit."""
    import torch

    nodes = []
    for op, *operands in spec:
        if op == "leaf":
            nodes.append(torch.tensor(float(operands[0]), dtype=torch.float64, requires_grad=True))
            continue
        parents = [nodes[i] for i in operands[0]]
        if op == "weighted":
            terms = [w * p for w, p in zip(operands[1], parents)]
            nodes.append(terms[0] if len(terms) == 1 else torch.stack(terms).sum())
        elif op == "product":
            nodes.append(parents[0] * parents[1])
        else:
            nodes.append(parents[0] ** 2)
    grads = torch.autograd.grad(nodes[-1], nodes[:-1]) if len(nodes) > 1 else ()
    grads = [g.item() + (prior if op == "leaf" else 0.0) for g, (op, *_) in zip(grads, spec)]
    return [n.item() for n in nodes], grads + [1.0 + (prior if spec[-1][0] == "leaf" else 0.0)]


def drawn_graphs(seed):
    """(spec, prior) of every graph cases_2 judges against torch_graph for `seed`."""
    return [(case.args["spec"], case.args["prior"]) for case in cases_2(np.random.default_rng(seed))
            if case.probe == "graph_backward" and "held" not in case.args]


def bits(numbers):
    return [struct.pack("<d", x) for x in numbers]


# Chains that end at the root, start at a leaf that another node also reads, branch after a run,
# pass a signed zero along, and a root that is a leaf.
EDGE_GRAPHS = [
    ([["leaf", 0.5], ["weighted", [0], [-1.0]], ["weighted", [1], [1.0]]], 0.25),
    ([["leaf", 0.0], ["weighted", [0], [-1.0]], ["weighted", [1], [-1.0]], ["product", [2, 1]]], 0.0),
    ([["leaf", -0.0], ["weighted", [0], [-1.0]], ["weighted", [1], [-1.0]], ["weighted", [2], [-1.0]],
      ["square", [3]]], 0.0),
    ([["leaf", 1.5], ["weighted", [0], [-1.0]], ["product", [0, 1]], ["weighted", [2], [1.0]],
      ["weighted", [3], [-1.0]], ["weighted", [4, 4], [1.0, 2.0]]], 1.0),
    ([["leaf", 0.75], ["weighted", [0], [1.0]], ["weighted", [1], [2.0]], ["weighted", [2], [-1.0]],
      ["square", [3]]], 0.0),
    ([["leaf", 2.0]], 0.5),
]


@pytest.mark.parametrize("seed", [0, 2405875930906139466])
def test_the_chains_shortcut_gives_pytorchs_values_and_gradients_to_the_last_bit(seed):
    graphs = drawn_graphs(seed) + EDGE_GRAPHS + [(spec, 0.0) for spec in EXTRA_GRAPHS.values()]
    assert any(len(spec) > 1500 for spec, _ in graphs)
    for spec, prior in graphs:
        mine, theirs = torch_graph(spec, prior), node_by_node(spec, prior)
        assert (bits(mine[0]), bits(mine[1])) == (bits(theirs[0]), bits(theirs[1])), spec[:6]
