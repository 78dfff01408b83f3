"""Questions the grader asks a scalar_engine submission, run inside the sandbox.

Each function runs in a copy of the submission's namespace (so `Value`, `MLP`, `Dual`, `MyReLU`
and the student's functions are globals here), calls the student's code on inputs the grader
sent, and returns plain data: floats, lists, dicts, arrays. A Value is never sent back as it
is; its numbers are read out here. Nothing in this file knows an expected value or judges.
"""
# ruff: noqa: F821 -- the names below come from the submission's namespace
import numpy as _np


def _plain(number):
    """A number as a float; anything else is returned as it is (the grader names its type)."""
    if isinstance(number, (int, float, _np.integer, _np.floating)) and not isinstance(number, bool):
        return float(number)
    return number


def _kind(thing):
    return type(thing).__name__


def _parents(node, known):
    """Which of `known` the entries of node._prev are (their positions; -1 for anything else)."""
    prev = getattr(node, "_prev", None)
    if not isinstance(prev, (tuple, list, set, frozenset)):
        return _kind(prev)
    return [next((i for i, leaf in enumerate(known) if leaf is p), -1) for p in prev]


def local(expression, values, prior, upstream):
    """One node made by `expression` from fresh leaves, whose .grad start at `prior`; its
    backward rule is run once with out.grad = upstream. Activities 1a, 1b and A."""
    leaves = {key: Value(v) for key, v in values.items()}
    known = list(leaves.values())
    for leaf in known:
        leaf.grad = prior
    out = eval(expression, globals(), {**leaves})
    if not isinstance(out, Value):
        return {"kind": _kind(out)}
    if any(out is leaf for leaf in known):
        return {"kind": "input"}
    reply = {"kind": "Value", "data": _plain(out.data), "prev": _parents(out, known), "op": getattr(out, "_op", None)}
    out.grad = upstream
    out._backward()
    reply["grads"] = [_plain(leaf.grad) for leaf in known]
    reply["inputs_after"] = [_plain(leaf.data) for leaf in known]
    return reply


def _rule(node, parents, slopes, index, calls):
    def rule():
        calls.append(index)
        for parent, slope in zip(parents, slopes):
            parent.grad += slope * node.grad
    return rule


def _graph(spec, calls):
    """Values from a graph spec. Operations bring their own backward rules, so that a graph
    tests topological_order and backward alone, whatever the student's primitives do."""
    nodes = []
    for index, (op, *operands) in enumerate(spec):
        if op == "leaf":
            nodes.append(Value(operands[0]))
            continue
        parents = [nodes[i] for i in operands[0]]
        data = [p.data for p in parents]
        if op == "weighted":  # sum_k w_k p_k
            value, slopes = sum(w * d for w, d in zip(operands[1], data)), list(operands[1])
        elif op == "product":
            value, slopes = data[0] * data[1], [data[1], data[0]]
        elif op == "square":
            value, slopes = data[0] ** 2, [2 * data[0]]
        else:
            raise ValueError(f"unknown graph operation {op}")
        node = Value(value, parents, op)
        node._backward = _rule(node, parents, slopes, index, calls)
        nodes.append(node)
    return nodes


def graph_backward(spec, prior, held=None, repeat=1):
    """topological_order and backward on one graph (its last node the root), with every leaf's
    .grad starting at `prior` (or every node's at its entry of `held`), backward called `repeat`
    times on the same root: the order as node indices, every .grad, and the rules called."""
    calls = []
    nodes = _graph(spec, calls)
    for node in nodes:
        if not node._prev:
            node.grad = prior
    for node, grad in zip(nodes, held or ()):
        node.grad = grad
    root = nodes[-1]
    where = {id(node): i for i, node in enumerate(nodes)}
    ordered = topological_order(root)
    listed = [where.get(id(n), -1) for n in ordered] if isinstance(ordered, (list, tuple)) else _kind(ordered)
    for _ in range(repeat):
        backward(root)
    return {"order": listed, "grads": [_plain(n.grad) for n in nodes], "calls": calls,
            "data_after": [_plain(n.data) for n in nodes]}


def loss_of(scores, targets):
    """logistic_loss on leaves holding `scores`, then backward through it."""
    leaves = [Value(z) for z in scores]
    loss = logistic_loss(leaves, targets)
    if not isinstance(loss, Value):
        return {"kind": _kind(loss)}
    backward(loss)
    return {"kind": "Value", "loss": _plain(loss.data), "grads": [_plain(s.grad) for s in leaves]}


def train_steps(sizes, weights, stale, X, targets, lr, steps):
    """An MLP of `sizes` with the given parameters (in parameters() order) and .grad = stale,
    then `steps` calls of train_step; after each, the loss and every parameter and .grad."""
    model = MLP(sizes, _np.random.default_rng(0))
    for p, w in zip(model.parameters(), weights):
        p.data, p.grad = float(w), stale
    history = []
    for _ in range(steps):
        loss = train_step(model, X, targets, lr)
        current = model.parameters()
        history.append({"kind": _kind(loss), "loss": _plain(loss.data) if isinstance(loss, Value) else None,
                        "params": [_plain(p.data) for p in current], "grads": [_plain(p.grad) for p in current]})
    return history


def dual(expression, values):
    """A Dual expression on Duals built from (val, der) pairs."""
    leaves = {name: Dual(*pair) for name, pair in values.items()}
    out = eval(expression, globals(), {**leaves})
    if not isinstance(out, Dual):
        return {"kind": _kind(out)}
    return {"kind": "Dual", "val": _plain(out.val), "der": _plain(out.der),
            "inputs_after": [[_plain(d.val), _plain(d.der)] for d in leaves.values()]}


def custom_relu(x, upstream, shared, transposed=False):
    """MyReLU.apply on x (plus x itself when `shared`), then backward with `upstream`: output,
    input gradient, x afterwards. `transposed`: x reaches MyReLU as the transpose of a
    contiguous leaf (a non-contiguous view), and the gradient is read back through it."""
    import torch

    if transposed:
        leaf = torch.tensor(_np.ascontiguousarray(_np.asarray(x).T), dtype=torch.float64, requires_grad=True)
        tx = leaf.t()
    else:
        leaf = tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    out = MyReLU.apply(tx)
    if not isinstance(out, torch.Tensor):
        return {"kind": _kind(out)}
    reply = {"kind": "Tensor", "out": out.detach().numpy().copy()}
    (out + tx if shared else out).backward(torch.as_tensor(upstream, dtype=torch.float64))
    reply["grad"] = None if leaf.grad is None else (leaf.grad.t() if transposed else leaf.grad).numpy().copy()
    reply["x_after"] = tx.detach().numpy().copy()
    return reply


def custom_relu_changed(x):
    """MyReLU.apply on a copy h of a leaf, h negated in place, then backward with ones: the
    leaf's gradient, or the error backward raised."""
    import torch

    leaf = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    h = leaf * 1.0
    out = MyReLU.apply(h)
    with torch.no_grad():
        h.neg_()
    try:
        out.backward(torch.ones_like(leaf))
    except RuntimeError as error:
        return {"kind": "raised", "error": f"{type(error).__name__}: {str(error)[:300]}"}
    return {"kind": "Tensor", "grad": None if leaf.grad is None else leaf.grad.numpy().copy()}


def custom_relu_gradcheck(x):
    """torch.autograd.gradcheck of MyReLU at x, as True or False."""
    import torch

    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    return bool(torch.autograd.gradcheck(MyReLU.apply, (tx,), raise_exception=False))
