"""How tensor_engine is graded: the questions, PyTorch's answers, and the judges.

Each activity's hidden cases are the cross product (itertools.product) of the input classes that
matter for it, named in the module-level dicts below, one dict per factor, with a comment on what
each factor is for and how many cases the product makes. The inputs differ from the visible
checks' (other shapes, axes, seeds, graphs and networks). Expected values are computed here with
PyTorch in float64 (or, for a finite difference with a given step, with the same difference
computed here) and never enter the sandbox. Every case is small: the whole set runs in seconds.
"""
from functools import cache
from itertools import product

import numpy as np
import torch
import torch.nn.functional as F

from autograder.vocabulary import Case, array_problem, as_numbers, describe, first_problem, number, plural

# Activities whose functions call those of earlier ones. When such an activity fails and one of
# these failed too, the grader tries it again on the reference engine. 1a and 1b are graded node
# by node, and 2 on graphs whose operations bring their own backward rules and on plain NumPy
# functions, so none of them depends on another. The training loop (3) runs the student's
# primitives, loss and backward; the network and its gradient check (4) all of that and
# zero_grad; the witness (5) runs on a network the probe builds, with a zero_grad of its own.
DEPENDS = {"3": ("1a", "1b", "2"), "4": ("1a", "1b", "2", "3"), "5": ("1a", "1b", "2")}

# The witness (5) is a comparison with PyTorch; every other activity is graded without it.
USES_PYTORCH = ("5",)

TOL = 1e-9


def t64(array, grad=True):
    return torch.tensor(np.asarray(array, dtype=np.float64), dtype=torch.float64, requires_grad=grad)


def shape_text(shape):
    return str(tuple(shape))


def torch_sum(t, axis=None, keepdims=False):
    if axis is None:
        return t.sum(dim=tuple(range(t.dim())), keepdim=True) if keepdims else t.sum()
    return t.sum(dim=axis, keepdim=keepdims)


TORCH = dict(multiply=torch.mul, matmul=torch.matmul, reduce_sum=torch_sum, exp=torch.exp, log=torch.log,
             relu=torch.relu)  # the student's function names, in PyTorch


def float_problem(got, want, quantity, tol=TOL):
    """None when `got` is a number within `tol` of `want`, else a sentence."""
    if isinstance(got, (bool, np.bool_)) or not isinstance(got, (int, float, np.integer, np.floating)):
        return f"{quantity}: expected a number, got {describe(got)}"
    if not np.isclose(float(got), want, rtol=tol, atol=tol):
        return f"{quantity} is {number(got)}, expected {number(want)}"
    return None


def unchanged(after, sent, quantity):
    return array_problem(after, sent, f"{quantity} (it must not change)", atol=1e-12, rtol=1e-12)


# ---------------------------------------------------------------- 1a: the primitives, node by node
def node_case(title, expression, leaves, stale, rng):
    """`expression` on Tensor leaves holding `leaves` (.grad holding a random earlier gradient
    when `stale`), its backward rule run once with a random out.grad, against PyTorch."""
    priors = {name: rng.normal(size=np.shape(v)) if stale else np.zeros(np.shape(v)) for name, v in leaves.items()}
    twins = {name: t64(v) for name, v in leaves.items()}
    out = eval(expression, dict(TORCH), dict(twins))
    upstream = rng.normal(size=tuple(out.shape))
    grads = torch.autograd.grad(out, list(twins.values()), t64(upstream, grad=False))
    value = out.detach().numpy()
    wanted = [priors[name] + g.numpy() for name, g in zip(leaves, grads)]
    names = list(leaves)
    setting = (f"{title}: {expression} with " + ", ".join(f"{n} of shape {shape_text(np.shape(v))}"
                                                          for n, v in leaves.items())
               + (", .grad already holding an earlier gradient" if stale else ", .grad starting at zero"))

    def judge(answer):
        if answer["kind"] == "input":
            return f"{setting}: it returned one of its inputs; make a new Tensor"
        if answer["kind"] != "Tensor":
            return f"{setting}: expected a new Tensor, got a {answer['kind']}"
        prev = answer["prev"]
        if not isinstance(prev, list) or not all(i in prev for i in range(len(names))):
            return f"{setting}: the new node's _prev must hold its parents ({', '.join(names)}); got {prev}"
        return first_problem(
            array_problem(answer["data"], value, f"{setting}: out.data"),
            *(array_problem(g, w, f"{setting}: {n}.grad after out._backward() with a random out.grad")
              for n, g, w in zip(names, answer["grads"], wanted)),
            *(unchanged(after, leaves[n], f"{setting}: {n}.data") for n, after in zip(names, answer["data_after"])))

    return Case("1a", setting, "node", {"expression": expression, "leaves": leaves, "priors": priors,
                                         "upstream": upstream}, judge)


# The .grad of the leaves starts at zero or already holds a gradient from an earlier pass (a rule
# that assigns instead of adding shows only then).
PRIORS = {"fresh .grad": False, "stale .grad": True}
# multiply: operands of one shape, the three broadcasts of the exercise in Section 2, a vector
# broadcast over a square matrix from either side (summing the wrong axis then keeps the shape),
# a 0-d tensor, one tensor used twice, and a plain number on either side (a constant leaf). The
# square case comes first among the broadcasts, so that a wrong reduction is reported by its
# values. Crossed with the priors: 10 x 2 = 20 cases.
MULTIPLY_OPERANDS = {
    "two tensors of one shape": ("multiply(a, b)", (2, 3), (2, 3)),
    "a vector broadcast over the rows of a square matrix": ("multiply(a, b)", (3, 3), (3,)),
    "a vector broadcast on the left of a square matrix": ("multiply(a, b)", (3,), (3, 3)),
    "a row broadcast over 32 rows (exercise a)": ("multiply(a, b)", (32, 10), (10,)),
    "a column and a row broadcast against each other (exercise b)": ("multiply(a, b)", (4, 1), (1, 6)),
    "a leading axis added and an axis stretched (exercise c)": ("multiply(a, b)", (2, 3, 5), (3, 1)),
    "a 0-d tensor broadcast over a matrix": ("multiply(a, b)", (), (2, 4)),
    "one tensor used twice": ("multiply(a, a)", (3, 2), None),
    "a number on the right": ("a * -0.75", (2, 3), None),
    "a number on the left": ("1.25 * a", (4,), None),
}
# matmul: square, non-square, a row times a column (a 1 x 1 result), a column times a row (an
# outer product), and one square tensor used as both operands. Crossed with the priors:
# 5 x 2 = 10 cases.
MATMUL_OPERANDS = {"square matrices": ((3, 3), (3, 3)), "non-square matrices": ((2, 5), (5, 3)),
                   "a row times a column": ((1, 4), (4, 1)), "a column times a row": ((3, 1), (1, 4)),
                   "one square tensor used twice": ((3, 3), None)}
# reduce_sum: a square matrix (a gradient put back along the wrong axis keeps its shape) and a
# 3-d array, each summed over everything, over the first axis, over a middle or last axis by a
# positive index, over the last axis by -1, and over a tuple of axes, with and without keepdims;
# leaves hold stale gradients throughout. Crossed in full: 2 x 5 x 2 = 20 cases.
SUM_INPUTS = {"a square matrix (3, 3)": ((3, 3), 1, (0, 1)), "a 3-d array (2, 3, 4)": ((2, 3, 4), 1, (0, 2))}
SUM_AXES = {"everything": "none", "the first axis": "first", "axis 1": "middle", "axis -1": "last",
            "a tuple of axes": "tuple"}
KEEPDIMS = {"keepdims=False": False, "keepdims=True": True}
# exp, log and relu: each at the inputs where a wrong rule shows (exp: negative, around zero,
# large; log: near 0, around 1, large; relu: mixed signs with entries at exactly +0.0 and -0.0,
# all negative, all positive), on a 0-d tensor and on a matrix, with stale gradients and a
# random upstream gradient of both signs. Crossed: 3 functions x 3 inputs x 2 shapes = 18 cases.
ELEMENTWISE = {
    "exp": {"negative inputs": (-3.0, -0.2), "inputs around zero": (-0.5, 0.5), "large inputs": (2.0, 6.0)},
    "log": {"inputs near 0": (0.01, 0.1), "inputs around 1": (0.6, 1.6), "large inputs": (10.0, 80.0)},
    "relu": {"mixed signs with +0.0 and -0.0": (-1.0, 1.0), "negative inputs": (-2.0, -0.1),
             "positive inputs": (0.1, 2.0)},
}
ELEMENTWISE_SHAPES = {"a 0-d tensor": (), "a (2, 3) matrix": (2, 3)}


def cases_1a(rng):
    cases = []
    for (name, (expression, left, right)), (prior_name, stale) in product(MULTIPLY_OPERANDS.items(), PRIORS.items()):
        leaves = {"a": rng.normal(size=left)} if right is None else {"a": rng.normal(size=left),
                                                                     "b": rng.normal(size=right)}
        cases.append(node_case(f"multiply on {name}, {prior_name}", expression, leaves, stale, rng))
    for (name, (left, right)), (prior_name, stale) in product(MATMUL_OPERANDS.items(), PRIORS.items()):
        expression = "matmul(a, a)" if right is None else "matmul(a, b)"
        leaves = {"a": rng.normal(size=left)} if right is None else {"a": rng.normal(size=left),
                                                                     "b": rng.normal(size=right)}
        cases.append(node_case(f"matmul on {name}, {prior_name}", expression, leaves, stale, rng))
    for (input_name, (shape, middle, pair)), (axis_name, axis_kind), (keep_name, keep) in \
            product(SUM_INPUTS.items(), SUM_AXES.items(), KEEPDIMS.items()):
        axis = {"none": None, "first": 0, "middle": middle, "last": -1, "tuple": pair}[axis_kind]
        cases.append(node_case(f"reduce_sum of {input_name} over {axis_name}, {keep_name}",
                               f"reduce_sum(a, {axis}, {keep})", {"a": rng.normal(size=shape)}, True, rng))
    for function, classes in ELEMENTWISE.items():
        for (input_name, (low, high)), (shape_name, shape) in product(classes.items(), ELEMENTWISE_SHAPES.items()):
            x = rng.uniform(low, high, size=shape)
            if function == "relu" and low < 0 < high:
                x = np.array(0.0) if shape == () else x
                if shape:
                    x.flat[0], x.flat[1] = 0.0, -0.0
            cases.append(node_case(f"{function} on {shape_name} with {input_name}", f"{function}(a)", {"a": x},
                                   True, rng))
    return cases


# ---------------------------------------------------------------- 1b: the fused cross-entropy
# Logits of one example, of a square batch (n = K: a transposed gradient keeps its shape), of a
# taller batch and of a binary task; of moderate size or with entries of ±1000 (without the shift
# exp overflows); the loss's out.grad is 1 or another number (a rule that ignores it shows only
# then); logits.grad starts at zero or holds an earlier gradient. Crossed in full:
# 4 x 2 x 2 x 2 = 32 cases. The moderate cases come first.
LOSS_SHAPES = {"one example of 3 classes": (1, 3), "a square batch of 4 examples and 4 classes": (4, 4),
               "6 examples of 3 classes": (6, 3), "5 examples of 2 classes": (5, 2)}
LOSS_SCALES = {"moderate logits": 2.0, "logits of size 1000": 1000.0}
UPSTREAMS = {"out.grad = 1": 1.0, "out.grad = -0.6": -0.6}


def loss_case(logits, labels, upstream, stale, title, rng):
    twin = t64(logits)
    loss = F.cross_entropy(twin, torch.from_numpy(labels))
    (grad,) = torch.autograd.grad(loss, (twin,), t64(upstream, grad=False))
    prior = rng.normal(size=logits.shape) if stale else np.zeros(logits.shape)
    value, wanted = loss.item(), prior + grad.numpy()
    setting = f"cross_entropy on {title}, labels {labels.tolist()}"

    def judge(answer):
        if answer["kind"] != "Tensor":
            return f"{setting}: expected a Tensor, got a {answer['kind']}"
        if answer["prev"] != [0]:
            return (f"{setting}: the loss must be a single node whose _prev is (logits,); its _prev holds "
                    f"{plural(len(answer['prev']), 'entry', 'entries') if isinstance(answer['prev'], list) else answer['prev']}")
        data = as_numbers(answer["data"])
        if data is None or data.shape != ():
            return f"{setting}: the loss's data must be a 0-d array (a scalar), got {describe(answer['data'])}"
        return first_problem(float_problem(float(data), value, f"{setting}: the loss"),
                             array_problem(answer["grad"], wanted, f"{setting}: logits.grad after out._backward()"),
                             unchanged(answer["data_after"], logits, f"{setting}: logits.data"))

    return Case("1b", setting, "loss_node", {"logits": logits, "labels": labels, "prior": prior,
                                             "upstream": np.array(upstream)}, judge)


def cases_1b(rng):
    cases = []
    for (scale_name, scale), (shape_name, shape), (up_name, upstream), (prior_name, stale) in \
            product(LOSS_SCALES.items(), LOSS_SHAPES.items(), UPSTREAMS.items(), PRIORS.items()):
        n, k = shape
        logits = rng.normal(size=shape) * 2.0
        if scale > 100:  # entries of ±1000, and a row whose two largest logits are close
            logits = np.round(logits) * 500.0
            logits.flat[0] = 1000.0
            logits.flat[-1] = -1000.0
        labels = rng.integers(0, k, size=n).astype(np.int64)
        if n > 1:
            labels[0] = labels[-1] = k - 1  # a repeated label
        title = f"{shape_name}, {scale_name}, {up_name}, {prior_name}"
        cases.append(loss_case(logits, labels, upstream, stale, title, rng))
    return cases


# ---------------------------------------------------------------- 2: backward
# A graph is a list of nodes, leaves first; the probe gives every operation a backward rule of
# its own, so that only the student's backward is tested. Graph shapes:
#   a tensor used twice   H = relu(A @ W) enters H * H, and both add to H's gradient;
#   a bias over rows      A @ W + b with b of shape (k,), copied into every row;
#   a column over columns H * c + H with c of shape (n, 1): H used twice, c broadcast;
#   unequal paths         s feeds the output directly and through s * s, short path first, so a
#                         node reached early by a depth-first search is not yet complete;
#   a chain               200 operations in a row, each scaling by -1 or 1 (depth, not width);
#   shared doublings      10 doublings n + n: 1,024 paths through 11 nodes, each rule to run once.
# The root is summed to a scalar, or left a matrix (seeded with ones); the leaves' .grad starts
# at zero or holds a stale gradient that backward must add to. Crossed in full:
# 6 x 2 x 2 = 24 graphs, plus a root that is a leaf itself (its .grad becomes ones).
GRAPHS = {"a tensor used twice": "twice", "a bias broadcast over rows": "bias",
          "a column broadcast over columns": "column", "paths of unequal length": "unequal",
          "a chain of 200 operations": "chain", "10 doublings n + n (1,024 paths, 11 nodes)": "doublings"}
ROOTS = {"a scalar root": "scalar", "a matrix root seeded with ones": "matrix"}
LEAF_PRIORS = {"leaves' .grad starting at zero": False, "leaves' .grad holding an earlier gradient": True}


def graph_spec(kind, rng):
    spec = []

    def put(*entry):
        spec.append(list(entry))
        return len(spec) - 1

    if kind == "twice":
        A, W = put("leaf", rng.normal(size=(3, 4))), put("leaf", rng.normal(size=(4, 2)))
        H = put("relu", [put("matmul", [A, W])])
        last = put("add", [put("mul", [H, H]), put("scale", [H], -1.5)])
    elif kind == "bias":
        A, W, b = (put("leaf", rng.normal(size=s)) for s in [(4, 3), (3, 3), (3,)])
        last = put("relu", [put("add", [put("matmul", [A, W]), b])])
    elif kind == "column":
        H, c = put("leaf", rng.normal(size=(3, 4))), put("leaf", rng.normal(size=(3, 1)))
        last = put("add", [put("mul", [H, c]), H])
    elif kind == "unequal":
        x = put("leaf", rng.normal(size=(2, 3)))
        s = put("scale", [x], 0.5)
        square = put("mul", [s, s])
        deeper = put("scale", [put("scale", [square], 2.0)], 0.5)
        last = put("add", [s, deeper])
    elif kind == "chain":
        last = put("leaf", rng.normal(size=(2, 2)))
        for step in range(200):
            last = put("scale", [last], -1.0 if step % 2 else 1.0)
    else:
        last = put("leaf", rng.normal(size=(2, 2)))
        for _ in range(10):
            last = put("add", [last, last])
    return spec, last


def torch_graph(spec):
    nodes = []
    for op, *rest in spec:
        if op == "leaf":
            nodes.append(t64(rest[0]))
            continue
        parents = [nodes[i] for i in rest[0]]
        nodes.append({"add": lambda: parents[0] + parents[1], "mul": lambda: parents[0] * parents[1],
                      "matmul": lambda: parents[0] @ parents[1], "relu": lambda: torch.relu(parents[0]),
                      "rowsum": lambda: parents[0].sum(dim=1, keepdim=True), "total": lambda: parents[0].sum(),
                      "scale": lambda: rest[1] * parents[0]}[op]())
    return nodes


def graph_case(title, spec, priors):
    nodes = torch_graph(spec)
    root = nodes[-1]
    grads = torch.autograd.grad(root, nodes[:-1], torch.ones_like(root), allow_unused=True) if len(nodes) > 1 else ()
    wanted = []
    for node, grad, prior in zip(nodes[:-1], grads, priors):
        g = np.zeros(tuple(node.shape)) if grad is None else grad.numpy()
        wanted.append(g + (prior if prior is not None else 0.0))
    wanted.append(np.ones(tuple(root.shape)) + (priors[-1] if priors[-1] is not None else 0.0))
    rules = [i for i, (op, *_) in enumerate(spec) if op != "leaf"]
    names = [f"leaf {i}" + (" (its .grad held an earlier gradient)" if priors[i] is not None and np.any(priors[i])
                            else "") if op == "leaf" else f"node {i} ({op})" for i, (op, *_) in enumerate(spec)]
    names[-1] = "the root" if spec[-1][0] != "leaf" else "the root, a leaf"
    sent = [entry[1] for entry in spec if entry[0] == "leaf"]
    title = f"backward on {title}"

    def judge(answer):
        got = answer["grads"]
        for name, g, w in zip(names, got, wanted):
            problem = array_problem(g, w, f"{title}: the .grad of {name} after backward")
            if problem:
                return problem
        calls = answer["calls"]
        if sorted(calls) != rules:
            repeated = sorted({i for i in calls if calls.count(i) > 1})
            missing = sorted(set(rules) - set(calls))
            detail = (f"the rule of node {repeated[0]} ran {calls.count(repeated[0])} times" if repeated
                      else f"the rule of node {missing[0]} never ran")
            return f"{title}: backward must call each node's _backward exactly once; {detail}"
        leaf_data = [d for d, entry in zip(answer["data_after"], spec) if entry[0] == "leaf"]
        return first_problem(*(unchanged(d, s, f"{title}: a leaf's data") for d, s in zip(leaf_data, sent)))

    return Case("2", title, "graph", {"spec": spec, "priors": priors}, judge)


def cases_2_graphs(rng):
    cases = []
    for (graph_name, kind), (root_name, root), (prior_name, stale) in \
            product(GRAPHS.items(), ROOTS.items(), LEAF_PRIORS.items()):
        spec, last = graph_spec(kind, rng)
        if root == "scalar":
            spec.append(["total", [last]])
        priors = [rng.normal(size=np.shape(entry[1])) if entry[0] == "leaf" and stale else
                  (np.zeros(np.shape(entry[1])) if entry[0] == "leaf" else None) for entry in spec]
        cases.append(graph_case(f"{graph_name}, {root_name}, {prior_name}", spec, priors))
    leaf = rng.normal(size=(2, 3))
    cases.append(graph_case("a root that is a leaf itself", [["leaf", leaf]], [np.zeros((2, 3))]))
    return cases


# ---------------------------------------------------------------- 2: numerical_grad
# f() is a NumPy expression of one to three arrays, written so that its second derivatives are
# large (exp(2A) and cubes): a one-sided difference, off by about h f''/2, then misses by far more
# than the tolerance, while a central one stays within it. One expression takes a single array;
# the others several, one of them broadcast. The step is the default 1e-6 (compared with PyTorch's
# exact gradient, within 1e-7 absolute), 1e-4 or 1e-2 (compared with the central difference itself,
# computed here, within 1e-8: this also checks that h is used). Crossed in full: 3 x 3 = 9 cases.
EXPRESSIONS = {
    "sum(exp(2A)) of one array": ("exp(2 * A).sum()", {"A": (2, 3)}),
    "sum(exp(2A) * B) + sum(B^3) with B broadcast over rows": ("(exp(2 * A) * B).sum() + (B * B * B).sum()",
                                                               {"A": (3, 2), "B": (2,)}),
    "sum(A @ W)^2 / 4 + sum(c^3) of three arrays": ("((A @ W).sum() ** 2) / 4 + (c * c * c).sum()",
                                                     {"A": (2, 3), "W": (3, 2), "c": (2, 1)}),
}
STEPS = {"the default step": None, "h = 1e-4": 1e-4, "h = 1e-2": 1e-2}


def central(expression, arrays, h):
    """The central differences of the expression, computed here, entry by entry."""
    held = {name: np.array(value, dtype=np.float64) for name, value in arrays.items()}

    def f():
        return float(eval(expression, {}, {"exp": np.exp, **held}))

    found = []
    for array in held.values():
        slopes = np.zeros(array.shape)
        for index in np.ndindex(*array.shape):
            kept = array[index]
            array[index] = kept + h
            up = f()
            array[index] = kept - h
            down = f()
            array[index] = kept
            slopes[index] = (up - down) / (2 * h)
        found.append(slopes)
    return found


def numeric_case(title, expression, arrays, h):
    if h is None:
        twins = {name: t64(value) for name, value in arrays.items()}
        out = eval(expression, {}, {"exp": torch.exp, **twins})
        wanted, tol = [g.numpy() for g in torch.autograd.grad(out, list(twins.values()))], 1e-7
    else:
        wanted, tol = central(expression, arrays, h), 1e-8
    names = list(arrays)
    title = f"numerical_grad of {title} with {'h = ' + number(h) if h else 'the default h'}"

    def judge(answer):
        result = answer["result"]
        if not isinstance(result, (list, tuple)) or len(result) != len(names):
            return f"{title}: expected a list of {plural(len(names), 'array')}, one per input, got {describe(result)}"
        return first_problem(
            *(array_problem(got, want, f"{title}: the estimate for {name} (a central difference is within "
                                       f"{number(tol)} of {'the exact gradient' if h is None else 'this'})",
                            atol=tol, rtol=0.0)
              for name, got, want in zip(names, result, wanted)),
            *(unchanged(after, arrays[name], f"{title}: the array {name} afterwards (put every entry back)")
              for name, after in zip(names, answer["after"])))

    return Case("2", title, "numeric", {"expression": expression, "arrays": arrays, "h": h}, judge)


def cases_2_numeric(rng):
    cases = []
    for (name, (expression, shapes)), (step_name, h) in product(EXPRESSIONS.items(), STEPS.items()):
        arrays = {key: rng.uniform(-0.3, 1.0, size=shape) for key, shape in shapes.items()}
        cases.append(numeric_case(name, expression, arrays, h))
    return cases


# ---------------------------------------------------------------- 3: zero_grad, sgd_step, train_epoch
# zero_grad and sgd_step alone, on one parameter or on three of different shapes (sgd_step at two
# learning rates): 2 + 2 x 2 = 6 cases. Then train_epoch on a linear model or a network with one
# ReLU layer; 12 examples in batches of 4 (equal batches), 10 examples in batches of 4 (a smaller
# last batch) or 5 examples in a batch of 8 (one batch); parameters whose .grad is fresh or stale
# (a missing zero_grad shows from the first batch then). Crossed in full: 2 x 3 x 2 = 12 epochs,
# compared update by update (every batch loss, then the parameters) with a float64 PyTorch copy.
PARAMETER_SETS = {"one parameter": [(3, 2)], "three parameters of different shapes": [(2, 3), (3,), (1, 4)]}
RATES = {"lr 0.1": 0.1, "lr 1.5": 1.5}
MODELS = {"a linear model [3, 3]": [3, 3], "a network [3, 4, 2] with a ReLU layer": [3, 4, 2]}
BATCHING = {"12 examples in batches of 4": (12, 4), "10 examples in batches of 4 (the last one smaller)": (10, 4),
            "5 examples in one batch of 8": (5, 8)}
STALE = {"fresh .grad": False, "stale .grad": True}


def zero_case(title, datas, grads):
    title = f"zero_grad on {title}"

    def judge(answer):
        return first_problem(
            *(array_problem(g, np.zeros(np.shape(d)), f"{title}: parameter {i}'s .grad after zero_grad")
              for i, (g, d) in enumerate(zip(answer["grads"], datas))),
            *(unchanged(after, d, f"{title}: parameter {i}'s .data") for i, (after, d) in
              enumerate(zip(answer["datas"], datas))))

    return Case("3", title, "zero", {"datas": datas, "grads": grads}, judge)


def step_case(title, datas, grads, lr):
    title = f"sgd_step on {title}, lr {number(lr)}"

    def judge(answer):
        return first_problem(
            *(array_problem(after, d - lr * g, f"{title}: parameter {i}'s .data after the step (data - lr * grad)")
              for i, (after, d, g) in enumerate(zip(answer["datas"], datas, grads))),
            *(unchanged(after, g, f"{title}: parameter {i}'s .grad") for i, (after, g) in
              enumerate(zip(answer["grads"], grads))))

    return Case("3", title, "step", {"datas": datas, "grads": grads, "lr": lr}, judge)


def torch_epoch(arrays, X, y, order, batch_size, lr):
    leaves = [t64(w) for w in arrays]
    losses = []
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        h = t64(X[rows], grad=False)
        for j in range(0, len(leaves), 2):
            h = F.linear(h, leaves[j].T, leaves[j + 1])
            h = torch.relu(h) if j + 2 < len(leaves) else h
        loss = F.cross_entropy(h, torch.from_numpy(y[rows]))
        grads = torch.autograd.grad(loss, leaves)
        leaves = [(leaf - lr * g).detach().requires_grad_() for leaf, g in zip(leaves, grads)]
        losses.append(loss.item())
    return losses, [leaf.detach().numpy() for leaf in leaves]


def epoch_case(title, arrays, stale, X, y, order, batch_size, lr):
    losses, params = torch_epoch(arrays, X, y, order, batch_size, lr)
    title = f"train_epoch with {title}, lr {number(lr)}"

    def judge(answer):
        got = answer["losses"]
        if not isinstance(got, list) or len(got) != len(losses):
            return f"{title}: expected a list of {plural(len(losses), 'batch loss', 'batch losses')}, got {describe(got)}"
        for number_, (g, w) in enumerate(zip(got, losses), start=1):
            problem = float_problem(g, w, f"{title}: the loss of batch {number_} of {len(losses)} (before its update)")
            if problem:
                return problem
        return first_problem(*(array_problem(g, w, f"{title}: parameter {i} after the epoch")
                               for i, (g, w) in enumerate(zip(answer["params"], params))))

    return Case("3", title, "epoch", {"arrays": arrays, "stale": stale, "X": X, "y": y, "order": order,
                                      "batch_size": batch_size, "lr": lr}, judge)


def network_arrays(sizes, rng, bias=0.2):
    arrays = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        arrays += [rng.normal(size=(fan_in, fan_out)) * np.sqrt(2.0 / fan_in), bias * rng.normal(size=fan_out)]
    return arrays


def cases_3(rng):
    cases = []
    for name, shapes in PARAMETER_SETS.items():
        cases.append(zero_case(name, [rng.normal(size=s) for s in shapes], [rng.normal(size=s) for s in shapes]))
    for (name, shapes), (rate_name, lr) in product(PARAMETER_SETS.items(), RATES.items()):
        cases.append(step_case(name, [rng.normal(size=s) for s in shapes], [rng.normal(size=s) for s in shapes], lr))
    for (model_name, sizes), (batch_name, (n, batch)), (stale_name, stale) in \
            product(MODELS.items(), BATCHING.items(), STALE.items()):
        arrays = network_arrays(sizes, rng)
        grads = [rng.normal(size=np.shape(a)) if stale else np.zeros(np.shape(a)) for a in arrays]
        X, y = rng.normal(size=(n, sizes[0])), rng.integers(0, sizes[-1], size=n).astype(np.int64)
        lr = float(rng.choice([0.3, 0.8]))
        cases.append(epoch_case(f"{model_name}, {batch_name}, {stale_name}", arrays, grads, X, y,
                                rng.permutation(n).astype(np.int64), batch, lr))
    return cases


# ---------------------------------------------------------------- 4: the MLP and its two checkers
# init_mlp: networks without a hidden layer, with one and with two, each from its own seed:
# 3 cases (shapes, order [W1, b1, W2, b2, ...], He scale, zero biases, zero .grad).
INIT_SIZES = {"[2, 3] (no hidden layer)": ([2, 3], 5), "[3, 5, 2]": ([3, 5, 2], 6), "[4, 6, 5, 3]": ([4, 6, 5, 3], 7)}
# mlp_forward: the same three depths, with biases away from zero; the logits, then every
# parameter's gradient through cross_entropy: 3 cases.
# gradient_check: a correct network (with .grad fresh, or stale: it must clear it) at the default
# step and at h = 1e-4 (a one-sided difference fails there), a network whose gradient for its
# first or its last parameter is scaled (the worst error is then known exactly), and the
# notebook's MLP: 2 x 2 + 2 + 1 = 7 cases.
FORWARD_SIZES = {"[2, 3] (no hidden layer)": [2, 3], "[3, 4, 3]": [3, 4, 3], "[2, 5, 4, 3]": [2, 5, 4, 3]}
CHECK_STALE = {"fresh .grad": False, "stale .grad (it must be cleared first)": True}
CHECK_STEPS = {"the default step": None, "h = 1e-4": 1e-4}


def init_case(title, sizes, seed):
    generator = np.random.default_rng(seed)
    wanted = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        wanted += [generator.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in), np.zeros(fan_out)]
    names = [f"{'W' if i % 2 == 0 else 'b'}{i // 2 + 1}" for i in range(len(wanted))]
    title = f"init_mlp({sizes}, np.random.default_rng({seed})) for {title}"

    def judge(answer):
        if answer["kind"] != "list":
            return f"{title}: expected the list [W1, b1, W2, b2, ...], got a {answer['kind']}"
        params = answer["params"]
        if len(params) != len(wanted):
            return f"{title}: expected {plural(len(wanted), 'parameter')} [{', '.join(names)}], got {len(params)}"
        for name, p, w in zip(names, params, wanted):
            if p["kind"] != "Tensor":
                return f"{title}: {name} must be a Tensor, got a {p['kind']}"
            problem = first_problem(
                array_problem(p["data"], w, f"{title}: {name} (order W1, b1, W2, ...; W ~ N(0, 2 / fan_in) of shape "
                              "(fan_in, fan_out), drawn layer by layer; b zero)", atol=1e-12, rtol=1e-12),
                array_problem(p["grad"], np.zeros(w.shape), f"{title}: {name}.grad"))
            if problem:
                return problem
        return None

    return Case("4", title, "init", {"sizes": sizes, "seed": seed}, judge)


def torch_network(arrays, X, y, no_relu=False):
    leaves = [t64(w) for w in arrays]
    h = t64(X, grad=False)
    for j in range(0, len(leaves), 2):
        h = h @ leaves[j] + leaves[j + 1]
        if j + 2 < len(leaves) and not no_relu:
            h = torch.relu(h)
    loss = F.cross_entropy(h, torch.from_numpy(y))
    return h.detach().numpy(), loss.item(), [g.numpy() for g in torch.autograd.grad(loss, leaves)]


def forward_case(title, arrays, X, y):
    logits, _, grads = torch_network(arrays, X, y)
    title = f"mlp_forward for {title} on {len(X)} examples"

    def judge(answer):
        if answer["kind"] != "Tensor":
            return f"{title}: expected the logits as a Tensor, got a {answer['kind']}"
        return first_problem(
            array_problem(answer["data"], logits, f"{title}: the logits (relu after every layer but the last)"),
            *(array_problem(g, w, f"{title}: the gradient of parameter {i} after cross_entropy(...).backward()")
              for i, (g, w) in enumerate(zip(answer["grads"], grads))))

    return Case("4", title, "forward_pass", {"arrays": arrays, "X": X, "y": y}, judge)


def worst_error(grads, scaled, factor):
    """The worst |numeric - engine| / max(1, |engine|) when the engine's gradient of parameter
    `scaled` is `factor` times the true one (numeric = true)."""
    g = grads[scaled]
    return float(np.max(np.abs(g - factor * g) / np.maximum(1.0, np.abs(factor * g))))


def check_case(title, arrays, stale, X, y, h, scaled=-1, factor=1.0):
    _, _, grads = torch_network(arrays, X, y)
    title = f"gradient_check on {title}"
    faulty = scaled >= 0

    def judge(answer):
        result = answer["result"]
        if isinstance(result, (bool, np.bool_)) or not isinstance(result, (int, float, np.floating)):
            return f"{title}: expected the worst error as a float, got {describe(result)}"
        if faulty:
            problem = float_problem(result, worst_error(grads, scaled, factor),
                                    f"{title}: the worst error over every entry of every parameter", tol=1e-6)
        else:
            problem = None if result < 1e-7 else (f"{title}: returned {number(result)} for a correct network; "
                                                  "central differences agree with it to better than 1e-7")
        return problem or first_problem(*(unchanged(after, a, f"{title}: parameter {i}'s .data after the check")
                                          for i, (after, a) in enumerate(zip(answer["after"], arrays))))

    return Case("4", title, "checked", {"arrays": arrays, "stale": stale, "X": X, "y": y, "h": h,
                                        "no_relu": False, "scaled": scaled, "factor": factor}, judge)


def mlp_check_case(sizes, seed, X, y):
    title = f"gradient_check on the notebook's MLP({sizes}, np.random.default_rng({seed}))"

    def judge(answer):
        result = answer["result"]
        if isinstance(result, (bool, np.bool_)) or not isinstance(result, (int, float, np.floating)):
            return f"{title}: expected the worst error as a float, got {describe(result)}"
        if not result < 1e-7:
            return f"{title}: returned {number(result)} for a correct network, expected below 1e-7"
        return first_problem(*(unchanged(after, before, f"{title}: parameter {i}'s .data after the check")
                               for i, (after, before) in enumerate(zip(answer["after"], answer["before"]))))

    return Case("4", title, "checked_mlp", {"sizes": sizes, "seed": seed, "X": X, "y": y}, judge)


def witness_case(title, arrays, stale, X, y, no_relu=False, scaled=-1, factor=1.0):
    _, true_loss, true_grads = torch_network(arrays, X, y)
    _, seen_loss, seen_grads = torch_network(arrays, X, y, no_relu)
    if scaled >= 0:
        seen_grads[scaled] = factor * seen_grads[scaled]
    loss_gap = abs(seen_loss - true_loss)
    grad_gap = max(float(np.max(np.abs(s - t))) for s, t in zip(seen_grads, true_grads))
    correct = not no_relu and scaled < 0
    title = f"torch_witness on {title}"

    def judge(answer):
        result = answer["result"]
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            return f"{title}: expected the pair (loss_gap, grad_gap), got {describe(result)}"
        for name, got, want in zip(("loss_gap", "grad_gap"), result, (loss_gap, grad_gap)):
            if isinstance(got, (bool, np.bool_)) or not isinstance(got, (int, float, np.floating)):
                return f"{title}: {name} must be a float, got {describe(got)}"
            if correct and not got < 1e-12:
                return f"{title}: {name} is {number(got)} for a correct network; the two agree to about 1e-16"
            if not correct and not np.isclose(float(got), want, rtol=1e-6, atol=1e-9):
                return f"{title}: {name} is {number(got)}, expected {number(want)}"
        return first_problem(*(unchanged(after, a, f"{title}: parameter {i}'s .data after the witness")
                               for i, (after, a) in enumerate(zip(answer["after"], arrays))))

    return Case("5", title, "witnessed", {"arrays": arrays, "stale": stale, "X": X, "y": y, "no_relu": no_relu,
                                          "scaled": scaled, "factor": factor}, judge)


def spiral_points(points_per_class, rng):
    """A small three-arm spiral (the notebook's generator, with the grader's seeds)."""
    radius = np.linspace(0.05, 1.0, points_per_class)
    angles = [2 * np.pi * k / 3 + 4.0 * radius + rng.normal(0.0, 0.2, points_per_class) for k in range(3)]
    X = np.concatenate([np.column_stack([radius * np.cos(a), radius * np.sin(a)]) for a in angles])
    return X, np.repeat(np.arange(3), points_per_class).astype(np.int64)


def cases_4(rng):
    cases = [init_case(name, sizes, seed) for name, (sizes, seed) in INIT_SIZES.items()]
    for name, sizes in FORWARD_SIZES.items():
        X, y = spiral_points(3, rng)
        X = np.column_stack([X, rng.normal(size=(len(X), sizes[0] - 2))]) if sizes[0] > 2 else X
        cases.append(forward_case(name, network_arrays(sizes, rng), X, y))
    X, y = spiral_points(3, rng)
    sizes = [2, 5, 3]
    for (stale_name, stale), (step_name, h) in product(CHECK_STALE.items(), CHECK_STEPS.items()):
        arrays = network_arrays(sizes, rng)
        grads = [rng.normal(size=np.shape(a)) if stale else np.zeros(np.shape(a)) for a in arrays]
        cases.append(check_case(f"a correct network {sizes}, {stale_name}, {step_name}", arrays, grads, X, y, h))
    for which, (index, factor) in {"the last": (3, 1.5), "the first": (0, 0.5)}.items():
        arrays = network_arrays(sizes, rng)
        cases.append(check_case(f"a network {sizes} whose gradient for {which} parameter is multiplied by "
                                f"{number(factor)}", arrays, [np.zeros(np.shape(a)) for a in arrays], X, y, None,
                                index, factor))
    cases.append(mlp_check_case([2, 4, 3], 8, X, y))
    return cases


# ---------------------------------------------------------------- 5: torch_witness
# A correct network with fresh or stale .grad, one whose hidden layers skip their ReLU (a wrong
# forward pass: both gaps known), and one whose last or first parameter's gradient is scaled (a
# wrong backward pass): 5 cases.
def cases_5(rng):
    cases = []
    X, y = spiral_points(3, rng)
    sizes = [2, 4, 4, 3]
    for stale_name, stale in CHECK_STALE.items():
        arrays = network_arrays(sizes, rng)
        grads = [rng.normal(size=np.shape(a)) if stale else np.zeros(np.shape(a)) for a in arrays]
        cases.append(witness_case(f"a correct network {sizes}, {stale_name}", arrays, grads, X, y))
    zeros = [np.zeros(np.shape(a)) for a in network_arrays(sizes, np.random.default_rng(0))]
    cases.append(witness_case(f"a network {sizes} whose hidden layers skip their ReLU (a wrong forward pass)",
                              network_arrays(sizes, rng), zeros, X, y, no_relu=True))
    for which, (index, factor) in {"the last": (5, 2.0), "the first": (0, 0.25)}.items():
        cases.append(witness_case(f"a network {sizes} whose gradient for {which} parameter is multiplied by "
                                  f"{number(factor)} (a wrong backward pass)", network_arrays(sizes, rng), zeros,
                                  X, y, scaled=index, factor=factor))
    return cases


@cache
def cases():
    """Every hidden check, by activity. Deterministic: the same inputs on every run."""
    rng = np.random.default_rng(20261130)
    return {"1a": cases_1a(rng), "1b": cases_1b(rng), "2": cases_2_graphs(rng) + cases_2_numeric(rng),
            "3": cases_3(rng), "4": cases_4(rng), "5": cases_5(rng)}
