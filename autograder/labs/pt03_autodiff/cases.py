"""How pt03_autodiff is graded: the questions, PyTorch's answers, and the judges.

Every case uses inputs the visible checks do not: other shapes and seeds, square and
non-square batches, graphs whose paths to a node have different lengths, long chains. The
expected values are computed here with PyTorch and never enter the sandbox.
"""
from functools import cache

import numpy as np
import torch
import torch.nn.functional as F

from autograder.vocabulary import Case, array_problem, describe, first_problem, unchanged_problem

# Activities whose functions call those of earlier ones. When such an activity fails and one of
# these failed too, the grader tries it again on the reference engine (see grade.py).
DEPENDS = {"3": ("1a", "1b", "2"), "A": ("1a", "1b", "1c", "2"), "B": ("1a", "1b", "1c", "2"),
           "C": ("1a", "1b", "1c", "2")}


def shape_text(shape):
    return str(tuple(shape))


def t64(array, grad=False):
    return torch.tensor(np.asarray(array, dtype=np.float64), dtype=torch.float64, requires_grad=grad)


# ---------------------------------------------------------------- 1a: add, multiply, matmul
def pair_case(activity, function, operation, a, b, v):
    ta, tb = t64(a, True), t64(b, True)
    a_bar, b_bar = (g.numpy() for g in torch.autograd.grad(operation(ta, tb), (ta, tb), t64(v)))
    title = f"{function}(a, b, v) with a of shape {shape_text(np.shape(a))} and b of shape {shape_text(np.shape(b))}"

    def judge(answer):
        result = answer["result"]
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            return f"{title}: expected the pair (a_bar, b_bar), got {describe(result)}"
        return first_problem(
            array_problem(result[0], a_bar, f"{title}: a_bar (first value returned)"),
            array_problem(result[1], b_bar, f"{title}: b_bar (second value returned)"),
            *(unchanged_problem(after, sent, f"{title}: argument {name}")
              for name, after, sent in zip("abv", answer["args_after"], (a, b, v))))

    return Case(activity, title, "call", {"function": function, "args": [a, b, v]}, judge)


def cases_1a(rng):
    cases = []
    for shape in [(), (4,), (3, 2), (3, 3)]:
        a, b, v = (rng.normal(size=shape) for _ in range(3))
        cases.append(pair_case("1a", "add_vjp", torch.add, a, b, v))
        cases.append(pair_case("1a", "multiply_vjp", torch.mul, a, b, v))
    for a_shape, b_shape in [((5,), (5,)), ((3, 5), (5,)), ((5,), (5, 2)), ((2, 5), (5, 3)),
                             ((3, 3), (3, 3)), ((4, 4), (4,)), ((3,), (3, 3)), ((1, 4), (4, 1)), ((4, 1), (1, 3))]:
        a, b = rng.normal(size=a_shape), rng.normal(size=b_shape)
        v = rng.normal(size=np.shape(a @ b))
        cases.append(pair_case("1a", "matmul_vjp", torch.matmul, a, b, v))
    return cases


# ---------------------------------------------------------------- 1b: sum_to_shape
def sum_case(v, shape):
    expected = t64(v).sum_to_size(shape).numpy() if shape else np.asarray(v.sum())
    title = f"sum_to_shape(v, {shape_text(shape)}) with v of shape {shape_text(v.shape)}"

    def judge(answer):
        return first_problem(array_problem(answer["result"], expected, title),
                             unchanged_problem(answer["args_after"][0], v, f"{title}: v"))

    return Case("1b", title, "call", {"function": "sum_to_shape", "args": [v, list(shape)]}, judge)


def cases_1b(rng):
    pairs = [((4, 4), (4,)), ((4, 4), (1, 4)), ((4, 4), (4, 1)), ((5, 3), (3,)), ((3, 5), (3, 1)),
             ((2, 3, 4), (1, 3, 1)), ((2, 3, 4), (3, 4)), ((2, 3, 4), (4,)), ((2, 3, 4), (2, 1, 4)),
             ((3, 3, 3), (3, 1, 3)), ((6,), ()), ((2, 2), ()), ((), ()), ((3, 2), (3, 2)), ((1, 3), (3,))]
    return [sum_case(rng.normal(size=v_shape), shape) for v_shape, shape in pairs]


# ---------------------------------------------------------------- 1c: tanh, relu
def unary_case(function, x, v):
    tx = t64(x, True)
    forward = torch.tanh if function == "tanh_vjp" else torch.relu
    (expected,) = torch.autograd.grad(forward(tx), (tx,), t64(v))
    first = np.tanh(x) if function == "tanh_vjp" else x
    name = "y = tanh(x)" if function == "tanh_vjp" else "x"
    title = f"{function}({name.split(' ')[0]}, v) with x = {np.round(x, 3).tolist()}"

    def judge(answer):
        return first_problem(
            array_problem(answer["result"], expected.numpy(), title),
            *(unchanged_problem(after, sent, f"{title}: argument {arg}")
              for arg, after, sent in zip(("first", "v"), answer["args_after"], (first, v))))

    return Case("1c", title, "call", {"function": function, "args": [first, v]}, judge)


def cases_1c(rng):
    inputs = [np.array([-1.5, -0.0, 0.0, 0.25, 3.0]), np.array([[0.0, -2.0, 1.0], [0.5, 0.0, -0.1]]),
              np.array(0.0), np.array(-0.7), rng.normal(size=(3, 3))]
    return [unary_case(function, x, rng.normal(size=x.shape) + 2.0)
            for x in inputs for function in ("tanh_vjp", "relu_vjp")]


# ---------------------------------------------------------------- 2: topological order, backward
def torch_graph(spec):
    nodes = []
    for op, *operands in spec:
        if op == "leaf":
            nodes.append(t64(operands[0], True))
            continue
        parents = [nodes[i] for i in operands[0]]
        if op == "weighted":
            nodes.append(sum(w * p for w, p in zip(operands[1], parents)))
        elif op == "product":
            nodes.append(parents[0] * parents[1])
        elif op == "square":
            nodes.append(parents[0] ** 2)
        elif op == "total":
            nodes.append(parents[0].sum())
    return nodes


def reachable(spec, output):
    seen, todo = set(), [output]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            if spec[node][0] != "leaf":
                todo.extend(spec[node][1])
    return seen


def order_problem(order, spec, output, title):
    if not isinstance(order, (list, tuple)):
        return f"{title}: topological_order returned {describe(order)}, expected a list of nodes"
    if -1 in order:
        return f"{title}: topological_order returned something that is not a node of the graph"
    nodes = reachable(spec, output)
    if sorted(order) != sorted(nodes):
        missing, repeated = nodes - set(order), {n for n in order if order.count(n) > 1}
        return (f"{title}: topological_order must list each of the {len(nodes)} reachable nodes once; "
                f"missing {len(missing)}, repeated {len(repeated)}")
    rank = {node: i for i, node in enumerate(order)}
    for node in order:
        if spec[node][0] != "leaf" and any(rank[p] > rank[node] for p in spec[node][1]):
            return f"{title}: topological_order puts a node before one of its parents"
    return None


def adjoints_problem(got, expected, wanted, what):
    if not isinstance(got, (list, tuple)):
        return f"{what}: backward returned {describe(got)}, expected a dict from node to adjoint"
    for node in sorted(wanted):
        problem = array_problem(got[node], expected[node], f"{what}: adjoint of node {node}")
        if problem:
            return problem
    return None


def graph_case(title, spec, seed=None, output=-1):
    output = output % len(spec)
    nodes = torch_graph(spec)
    seed_t = torch.ones((), dtype=torch.float64) if seed is None else t64(seed)
    wanted = reachable(spec, output)
    grads = torch.autograd.grad(nodes[output], [nodes[i] for i in sorted(wanted)], seed_t, allow_unused=True)
    expected = {}
    for node, g in zip(sorted(wanted), grads):
        expected[node] = np.zeros(nodes[node].shape) if g is None else g.numpy()
    calls_wanted = sorted(n for n in wanted if spec[n][0] != "leaf")

    def judge(answer):
        problem = order_problem(answer["order"], spec, output, title)
        if problem:
            return problem
        problem = adjoints_problem(answer["first"], expected, wanted, f"{title}, first backward call")
        if problem or "second" not in answer:
            return problem
        if sorted(answer["calls"]) != calls_wanted:
            extra = len(answer["calls"]) - len(calls_wanted)
            return (f"{title}: each node's vjp must be called exactly once per backward call "
                    f"({len(calls_wanted)} calls), but it made {len(answer['calls'])}"
                    + (" (a node was handled more than once)" if extra > 0 else ""))
        return adjoints_problem(answer["second"], expected, wanted,
                                f"{title}, second backward call (adjoints must start from zero each call)")

    return Case("2", title, "graph_backward", {"spec": spec, "seed": seed, "output": output}, judge)


def error_case(title, probe, args, expected="ValueError"):
    def judge(answer):
        if answer != expected:
            return f"{title}: expected backward to raise {expected}, " + (
                "but it returned normally" if answer is None else f"but it raised {answer}")
        return None
    return Case("2", title, probe, args, judge)


def cases_2(rng):
    x = ["leaf", 2.0]
    vector = ["leaf", rng.normal(size=3)]
    doubling = [["leaf", 1.0]] + [["weighted", [i, i], [1.0, 1.0]] for i in range(12)]
    chain = [["leaf", 0.5]] + [["weighted", [i], [1.0]] for i in range(1500)]
    return [
        graph_case("fan-out: L = 3u + u**2 with u = x**2",
                   [x, ["square", [0]], ["weighted", [1], [3.0]], ["square", [1]], ["weighted", [2, 3], [1.0, 1.0]]]),
        graph_case("paths of different lengths from x to the output",
                   [vector, ["square", [0]], ["weighted", [1], [0.5]], ["product", [2, 0]], ["square", [3]],
                    ["weighted", [4, 0, 1], [1.0, -2.0, 3.0]], ["total", [5]]]),
        graph_case("a node used twice by the same operation: x * x and x + x",
                   [vector, ["product", [0, 0]], ["weighted", [0, 0], [1.0, 1.0]], ["product", [1, 2]], ["total", [3]]]),
        graph_case("twelve doublings n + n (4096 paths, 13 nodes)", doubling),
        graph_case("a chain of 1500 operations", chain),
        graph_case("a vector output with an explicit seed",
                   [vector, ["square", [0]], ["product", [1, 0]]], seed=rng.normal(size=3)),
        graph_case("a leaf that is the output itself", [["leaf", 3.0]]),
        graph_case("two leaves, a diamond and a side branch",
                   [vector, ["leaf", rng.normal(size=3)], ["product", [0, 1]], ["square", [0]],
                    ["weighted", [2, 3, 1], [1.0, 1.0, -1.0]], ["product", [4, 2]], ["total", [5]]]),
        error_case("backward of a vector output without a seed", "graph_backward_error",
                   {"spec": [vector, ["square", [0]]], "seed": None, "output": 1}),
        error_case("backward with a seed of the wrong shape", "graph_backward_error",
                   {"spec": [vector, ["square", [0]]], "seed": np.ones((3, 1)), "output": 1}),
        error_case("backward with a scalar seed for a vector output", "graph_backward_error",
                   {"spec": [vector, ["square", [0]]], "seed": 1.0, "output": 1}),
        error_case("backward through a VJP that returns the wrong shape", "broken_vjp_error",
                   {"shape": [2, 3], "wrong_shape": [3]}),  # broadcastable, so only a shape check catches it
    ]


# ---------------------------------------------------------------- 3: classifier_step
def torch_step(X, targets, W, b, lr):
    """PyTorch's answers for one update, written with F.linear to stay independent of the
    notebook's torch_reference."""
    tW, tb = t64(W, True), t64(b, True)
    logits = F.linear(t64(X), tW, tb)
    loss = F.cross_entropy(logits, torch.from_numpy(np.asarray(targets, dtype=np.int64)))
    loss.backward()
    dW, db = tW.grad.numpy(), tb.grad.numpy()
    return {"logits": logits.detach().numpy(), "loss": loss.item(), "dW": dW, "db": db,
            "W": W - lr * dW, "b": b - lr * db}


def loss_problem(loss, expected, what):
    if isinstance(loss, np.ndarray) or not isinstance(loss, (float, np.floating)):
        return f"{what}: loss must be a Python float (use .item() or float()), got {describe(loss)}"
    return array_problem(loss, expected, what)


def classifier_case(X, targets, W, b, lr, steps, title):
    expected, W_t, b_t = [], W, b
    for _ in range(steps):
        expected.append(torch_step(X, targets, W_t, b_t, lr))
        W_t, b_t = expected[-1]["W"], expected[-1]["b"]
    keys = ["logits", "loss", "dW", "db", "W", "b"]  # causes before consequences

    def judge(answer):
        results = answer["results"]
        for step, (got, want) in enumerate(zip(results, expected), start=1):
            what = f"{title}, update {step}"
            if not isinstance(got, dict) or sorted(got) != sorted(keys):
                return f"{what}: classifier_step must return a dict with the keys {keys}, got {describe(got)}" + (
                    f" with keys {sorted(map(str, got))}" if isinstance(got, dict) else "")
            problem = first_problem(loss_problem(got["loss"], want["loss"], f"{what}: loss"),
                                    *(array_problem(got[k], want[k], f"{what}: {k}") for k in keys if k != "loss"))
            if problem:
                return problem
        if len(results) < steps:
            return f"{title}: stopped after {len(results)} updates"
        sent = answer["sent_after"]
        return first_problem(*(unchanged_problem(sent[k], v, f"{title}: the {k} passed in")
                               for k, v in (("X", X), ("W", W), ("b", b))))

    args = {"X": X, "targets": targets, "W": W, "b": b, "lr": lr, "steps": steps}
    return Case("3", title, "classifier_steps", args, judge)


def cases_3(rng):
    cases = []
    for batch, features, classes, lr, steps in [(6, 4, 3, 0.1, 2), (3, 3, 3, 0.5, 2), (1, 4, 3, 0.1, 2),
                                                  (10, 2, 4, 0.3, 3), (4, 4, 4, 1.0, 2)]:
        X = rng.normal(size=(batch, features))
        targets = np.arange(batch) % classes
        rng.shuffle(targets)
        W, b = 0.3 * rng.normal(size=(classes, features)), 0.3 * rng.normal(size=classes)
        title = f"classifier_step on {batch} examples, {features} features, {classes} classes, lr {lr}"
        cases.append(classifier_case(X, targets, W, b, lr, steps, title))
    return cases


# ---------------------------------------------------------------- A: mlp_step
def torch_mlp_history(X, targets, params, lr, steps):
    """(loss, parameters after the update) for each of `steps` updates, by PyTorch."""
    leaves = {k: t64(v, True) for k, v in params.items()}
    history = []
    y = torch.as_tensor(targets, dtype=torch.long)
    for _ in range(steps):
        hidden = torch.relu(t64(X) @ leaves["W1"].T + leaves["b1"])
        loss = F.cross_entropy(hidden @ leaves["W2"].T + leaves["b2"], y)
        grads = torch.autograd.grad(loss, list(leaves.values()))
        leaves = {k: (p - lr * g).detach().requires_grad_() for (k, p), g in zip(leaves.items(), grads)}
        history.append((loss.item(), {k: v.detach().numpy() for k, v in leaves.items()}))
    return history


def mlp_case(rng, batch, hidden, steps, lr):
    X, targets = rng.normal(size=(batch, 4)), np.arange(batch) % 3
    params = {"W1": 0.5 * rng.normal(size=(hidden, 4)), "b1": 0.1 * rng.normal(size=hidden),
              "W2": 0.5 * rng.normal(size=(3, hidden)), "b2": 0.1 * rng.normal(size=3)}
    expected = torch_mlp_history(X, targets, params, lr, steps)
    names = sorted(params)
    title = f"mlp_step on {batch} examples with {hidden} hidden units"

    def judge(answer):
        for step, (got, (loss, after)) in enumerate(zip(answer["history"], expected), start=1):
            got_loss, got_params = got
            problem = loss_problem(got_loss, loss, f"{title}: loss of update {step}")
            if problem:
                return problem
            if not isinstance(got_params, dict) or sorted(got_params) != names:
                return (f"{title}: the parameters must come back as a dict with keys {names}, "
                        f"got {describe(got_params)}")
            problem = first_problem(*(array_problem(got_params[k], after[k], f"{title}: {k} after update {step}")
                                      for k in names))
            if problem:
                return problem
        if "bad" in answer:
            return f"{title}: mlp_step must return (loss, params), got {describe(answer['bad'])}"
        return None if len(answer["history"]) == steps else f"{title}: stopped after {len(answer['history'])} updates"

    return Case("A", title, "mlp_steps", {"X": X, "targets": targets, "params": params, "lr": lr, "steps": steps},
                judge)


def cases_A(rng):
    return [mlp_case(rng, 12, 16, 3, 0.1), mlp_case(rng, 5, 7, 2, 0.5)]


# ---------------------------------------------------------------- B: grad, C: jacobian
def torch_function(expression):
    return eval(f"lambda t: {expression}", {"const": lambda v: torch.tensor(v, dtype=torch.float64)})


def grad_case(expression, x):
    tx = t64(x, True)
    out = torch_function(expression)(tx)
    # An output that ignores t is a constant: its gradient is zero.
    expected = torch.autograd.grad(out, (tx,))[0].numpy() if out.requires_grad else np.zeros(x.shape)
    title = f"grad(lambda t: {expression}) at x of shape {shape_text(x.shape)}"

    def judge(answer):
        if answer["x_changed"]:
            return f"{title}: the input array was modified"
        return array_problem(answer["result"], expected, title)

    return Case("B", title, "grad_of", {"expression": expression, "x": x}, judge)


def cases_B(rng):
    vector, matrix = rng.normal(size=4), rng.normal(size=(2, 3))
    cases = [grad_case(e, vector) for e in ("(t * t).sum()", "t.tanh().sum()", "(t.relu() * t).sum() + (t * 3.0).sum()",
                                            "const(7.0)", "(t * t * t).sum()")]
    cases.append(grad_case("(t.tanh() * t).sum()", matrix))

    def judge(answer):
        if answer != "ValueError":
            return "grad of a function with a vector result: expected ValueError, " + (
                "but it returned normally" if answer is None else f"but it raised {answer}")
        return None

    cases.append(Case("B", "grad of a vector-valued function", "grad_error", {"expression": "t * t", "x": vector},
                      judge))
    return cases


def jacobian_case(expression, x):
    expected = torch.autograd.functional.jacobian(torch_function(expression), t64(x)).numpy()
    title = f"jacobian(lambda t: {expression}, x) with x of shape {shape_text(x.shape)}"
    return Case("C", title, "jacobian_of", {"expression": expression, "x": x},
                lambda answer: array_problem(answer["result"], expected, title))


def cases_C(rng):
    A = np.round(rng.normal(size=(3, 2)), 3).tolist()
    B = np.round(rng.normal(size=(3, 2)), 3).tolist()
    return [jacobian_case("t * t", rng.normal(size=3)),
            jacobian_case("(t * t).sum()", rng.normal(size=3)),
            jacobian_case("const([3.0, 4.0, 5.0])", rng.normal(size=2)),
            jacobian_case(f"const({A}) @ t", rng.normal(size=2)),
            jacobian_case(f"const({B}) @ t", rng.normal(size=(2, 4))),
            jacobian_case("t.tanh() * 2.0", rng.normal(size=(2, 3)))]


@cache
def cases():
    """Every case of the lab, by activity, computed once per grading run."""
    rng = np.random.default_rng(20261129)
    return {"1a": cases_1a(rng), "1b": cases_1b(rng), "1c": cases_1c(rng), "2": cases_2(rng),
            "3": cases_3(rng), "A": cases_A(rng), "B": cases_B(rng), "C": cases_C(rng)}

