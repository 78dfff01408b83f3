"""Questions the grader asks a pt03_autodiff submission, run inside the sandbox.

Each function is executed in a copy of the submission's namespace (so `Tensor`, `backward`
and the student's functions are globals here), calls the student's code on inputs the
grader sent, and returns what came back as plain data. Nothing here knows an expected value
or judges anything: that happens in the grader's own process.
"""
# ruff: noqa: F821 -- the names below come from the submission's namespace
import numpy as _np


def call(function, args):
    """Call a student function; return its result and the arguments afterwards (in-place edits)."""
    if function not in globals():
        raise NameError(f"name '{function}' is not defined")
    result = globals()[function](*args)
    return {"result": result, "args_after": list(args)}


def expand(spec):
    """`spec` with every ["chain", [parent], count] written out as `count` nodes 1.0 * p in a row,
    so that a long chain travels as one entry; node indices count the written-out nodes."""
    full = []
    for op, *operands in spec:
        if op != "chain":
            full.append([op, *operands])
            continue
        parent = operands[0][0]
        for _ in range(operands[1]):
            full.append(["weighted", [parent], [1.0]])
            parent = len(full) - 1
    return full


def packed(arrays):
    """One array per node, as a single flat float64 array with the shapes to cut it by, when each
    is a float64 array (one message instead of thousands of small ones); else the list itself."""
    if not all(type(a) is _np.ndarray and a.dtype == _np.float64 for a in arrays):
        return arrays
    return {"ndims": _np.array([a.ndim for a in arrays], dtype=_np.int64),
            "dims": _np.array([n for a in arrays for n in a.shape], dtype=_np.int64),
            "flat": _np.concatenate([a.ravel() for a in arrays] + [_np.zeros(0)])}


def build_graph(spec):
    """Tensors from a graph spec. Operations carry their own VJPs, so that a graph tests
    `backward` alone, whatever the state of the student's local VJPs."""
    nodes, calls, spec = [], [], expand(spec)

    def counted(index, rule):
        def vjp(v):
            calls.append(index)
            return rule(v)
        return vjp

    for index, (op, *operands) in enumerate(spec):
        if op == "leaf":
            node = Tensor(operands[0], name=f"n{index}")
        else:
            parents = [nodes[i] for i in operands[0]]
            values = [p.value for p in parents]
            if op == "weighted":  # sum_k w_k * p_k, with weights w and broadcasting of scalars
                weights = operands[1]
                value = sum(w * x for w, x in zip(weights, values))
                rule = (lambda ws: lambda v: tuple(w * v for w in ws))(weights)
            elif op == "product":  # p_0 * p_1, both of the output's shape
                value = values[0] * values[1]
                rule = (lambda a, b: lambda v: (v * b, v * a))(values[0], values[1])
            elif op == "square":
                value = values[0] ** 2
                rule = (lambda a: lambda v: (2 * a * v,))(values[0])
            elif op == "total":  # the sum of all entries
                value = values[0].sum()
                rule = (lambda shape: lambda v: (v * _np.ones(shape),))(values[0].shape)
            else:
                raise ValueError(f"unknown graph operation {op}")
            node = Tensor(value, parents, counted(index, rule), f"n{index}")
        nodes.append(node)
    return nodes, calls


def graph_backward(spec, seed, output, omit_seed=False, interior=None):
    """topological_order and two backward calls on one graph, as node indices and arrays; with
    `interior` = [node, seed], a third call from that node. `omit_seed` leaves the seed to
    backward's default."""
    nodes, calls = build_graph(spec)
    out = nodes[output]
    index = {id(node): i for i, node in enumerate(nodes)}
    order = topological_order(out)
    if not isinstance(order, (list, tuple)):
        return {"order_returned": order}
    order = _np.array([index.get(id(node), -1) for node in order], dtype=_np.int64)
    first = backward(out) if omit_seed else backward(out, seed)
    calls_first = _np.array(calls, dtype=_np.int64)
    if not isinstance(first, dict):
        return {"order": order, "first": first}
    first_copies = packed([first.get(node) for node in nodes])  # packing copies the arrays
    if type(first_copies) is list:
        first_copies = [_np.array(a) if type(a) is _np.ndarray else a for a in first_copies]
    second = backward(out) if omit_seed else backward(out, seed)
    second = packed([second.get(node) for node in nodes]) if isinstance(second, dict) else second
    found = {"order": order, "first": first_copies, "second": second, "calls": calls_first}
    if interior is not None:
        node, node_seed = interior
        third = backward(nodes[node]) if node_seed is None else backward(nodes[node], node_seed)
        found["third"] = packed([third.get(n) for n in nodes]) if isinstance(third, dict) else third
    return found


def graph_backward_error(spec, seed, output):
    """The name of the exception backward raises on a graph, or None."""
    nodes, _ = build_graph(spec)
    try:
        backward(nodes[output], seed)
    except Exception as error:  # which exception it was is the answer
        return type(error).__name__
    return None


def broken_vjp_error(shape, wrong_shape):
    """backward over a node whose VJP returns the wrong shape must raise ValueError."""
    leaf = Tensor(_np.ones(shape))
    bad = Tensor(leaf.value * 2, (leaf,), lambda v: (_np.ones(wrong_shape),), "bad")
    try:
        backward(bad, _np.ones(shape))
    except Exception as error:
        return type(error).__name__
    return None


def snapshot(value):
    """A copy of the arrays in a result, taken before later calls can change them in place."""
    if type(value) is _np.ndarray:
        return _np.array(value)
    if type(value) is dict:
        return {key: snapshot(item) for key, item in value.items()}
    if type(value) in (list, tuple):
        return type(value)(snapshot(item) for item in value)
    return value


def classifier_steps(X, targets, W, b, lr, steps):
    """`steps` successive classifier_step calls, each from the previous result, and the
    arrays first passed in, as they are afterwards."""
    sent = {"X": X, "W": W, "b": b}
    results = []
    for _ in range(steps):
        result = classifier_step(X, targets, W, b, lr)
        results.append(snapshot(result))
        if not isinstance(result, dict) or "W" not in result or "b" not in result:
            break
        W, b = result["W"], result["b"]
    return {"results": results, "sent_after": sent}


def mlp_steps(X, targets, params, lr, steps):
    """Losses and parameters after each of `steps` mlp_step calls, and the parameter arrays
    first passed in, as they are afterwards."""
    history, sent = [], dict(params)
    for _ in range(steps):
        answer = mlp_step(X, targets, params, lr)
        if not isinstance(answer, (tuple, list)) or len(answer) != 2:
            return {"history": history, "bad": answer, "sent_after": sent}
        history.append(snapshot(answer))
        params = answer[1]
    return {"history": history, "sent_after": sent}


def as_graph_function(expression, constants=None):
    """A function of one Tensor from an expression in t (and the named constant arrays, as
    Tensors), as in the grader's own copy."""
    named = {name: Tensor(value) for name, value in (constants or {}).items()}
    return eval(f"lambda t: {expression}", {"const": Tensor, "Tensor": Tensor, **named})


def _drawn(seed, shapes):
    """Arrays of the given shapes, drawn in order from default_rng(seed): inputs too large to
    send, which the grader draws the same way."""
    generator = _np.random.default_rng(seed)
    return {name: generator.standard_normal(shape) for name, shape in shapes.items()}


def grad_drawn(expression, seed, shapes):
    """grad of the expression at x, both drawn from `seed` (`shapes` names x, then the constants)."""
    drawn = _drawn(seed, shapes)
    x = drawn.pop("x")
    return {"result": grad(as_graph_function(expression, drawn))(x)}


def jacobian_drawn(expression, seed, shapes):
    """jacobian of the expression at x, both drawn from `seed` (`shapes` names x, then the constants)."""
    drawn = _drawn(seed, shapes)
    x = drawn.pop("x")
    return {"result": jacobian(as_graph_function(expression, drawn), x)}


def grad_of(expression, x):
    x_before = x.copy()
    result = grad(as_graph_function(expression))(x)
    return {"result": result, "x_changed": x_before.tolist() != x.tolist()}


def grad_error(expression, x):
    try:
        grad(as_graph_function(expression))(x)
    except Exception as error:
        return type(error).__name__
    return None


def jacobian_of(expression, x):
    return {"result": jacobian(as_graph_function(expression), x)}
