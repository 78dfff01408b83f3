"""How pt03_autodiff is graded: the questions, PyTorch's answers, and the judges.

Each activity's hidden cases are generated from the input classes that matter for it, named in
the module-level dicts below (one dict per factor, mapping a class's name to what builds it).
The cases are the cross product of the classes (itertools.product), so no combination is left
out by a hand-written list. Where the full product would be too many cases for the grading time
(the lab keeps to about twice its former 74 cases), the factors that matter together are crossed
completely and the others are laid over that product as a covering design: every pair of
classes of two different factors occurs in at least one case (see `covering`). Each activity's
comment says which factors are crossed and which are paired, and why.

Beside the classes, every function's declared contract (contracts.py) supplies boundaries: zero,
+-1e-12, subnormals, +-1e12, relu's kink and tanh's +-1, backward's seed, the learning rate's 0.
`boundary_rows` lists them, each case plants its row's boundary in its arguments and carries the
labels (Case.drawn), and tests/test_contracts.py shows every boundary is asked whatever the seed.
Where magnitudes vary, values are judged against the sum of the magnitudes that went into each
entry (`bounded_problem`), not an absolute 1e-9 that would pass 0 for 1e-17.

The inputs differ from the visible checks' (other shapes, seeds and graphs). The expected
values are computed here with PyTorch in float64 and never enter the sandbox.
"""
import math
from collections import Counter
from itertools import combinations, product

import numpy as np
import torch
import torch.nn.functional as F

from autograder.labs.vocabulary import (
                                        Case,
                                        array_problem,
                                        as_numbers,
                                        describe,
                                        first_problem,
                                        listing,
                                        number,
                                        plural,
                                        unchanged_problem,
                                        )

from . import contracts as declared

# Activities whose functions call those of earlier ones. When such an activity fails and one of
# these failed too, the grader tries it again on the reference engine (see grade.py).
DEPENDS = {"3": ("1a", "1b", "2"), "A": ("1a", "1b", "1c", "2"), "B": ("1a", "1b", "1c", "2"),
           "C": ("1a", "1b", "1c", "2")}

# Every activity builds the engine, so every one is graded in a worker without PyTorch.
USES_PYTORCH = ()


def covering(factors, full):
    """Rows {factor: class name} of a covering design over `factors` ({factor: {class: ...}}).

    The factors named in `full` are crossed completely (itertools.product). Every other factor
    is then filled in, row by row, with the class that completes the most pairs of classes not
    yet seen together (ties go to the class used least so far, then to the first listed), and
    rows are added until every pair of classes of two different factors occurs in some row.
    Deterministic, so that the cases are the same on every run."""
    names = list(factors)
    needed = [frozenset({(f, a), (g, b)}) for f, g in combinations(names, 2) for a in factors[f] for b in factors[g]]
    covered, used = set(), {}

    def score(row, name, level):
        gain = sum(frozenset({(name, level), (other, row[other])}) not in covered for other in row)
        return gain, -used.get((name, level), 0)

    def fill(row):
        for name in names:
            if name not in row:
                row[name] = max(factors[name], key=lambda level, name=name: score(row, name, level))
        covered.update(frozenset({(f, row[f]), (g, row[g])}) for f, g in combinations(names, 2))
        for name in names:
            used[(name, row[name])] = used.get((name, row[name]), 0) + 1
        return row

    rows = [fill(dict(zip(full, levels))) for levels in product(*(factors[name] for name in full))]
    for pair in needed:
        if pair not in covered:
            rows.append(fill(dict(pair)))
    assert all(pair in covered for pair in needed)
    return [{name: row[name] for name in names} for row in rows]


def boundary_rows(function):
    """[{argument: (boundary name, value)}]: every declared boundary of every numeric argument of
    `function`, as few rows as the longest list. Each argument starts its list at another row,
    so that one row rarely plants the same boundary in every argument at once."""
    contract = next(c for c in declared.CONTRACTS if c.function == function)
    lists = {arg.name: list(arg.values.boundaries().items()) for arg in contract.args if arg.values is not None}
    count = max(len(found) for found in lists.values())
    return [{name: found[(row + 2 * place) % len(found)] for place, (name, found) in enumerate(lists.items())}
            for row in range(count)]


def labels(function, row):
    return tuple(declared.drawn(function, argument, name) for argument, (name, _) in row.items())


def planted(rng, row, argument, shape, values=declared.REALS, scale=1.0):
    """An array of `shape` drawn from `values`, with the row's boundary for `argument` planted."""
    return values.draw(rng, shape, scale=scale, boundary=row[argument][1])


def bounded_problem(got, expected, bound, quantity, *, rtol=0.0, floor=1e-13):
    """array_problem with an absolute tolerance per entry of `floor` times `bound`, the sum of the
    magnitudes that went into the entry (what rounding can cost it), instead of one absolute 1e-9:
    an entry of 1e-17 answered with 0 fails, an entry that cancels to nearly 0 is not held to more
    digits than its terms carry. 1e-320 leaves the last subnormal digits to rounding order."""
    return array_problem(got, expected, quantity, atol=floor * np.abs(np.asarray(bound, dtype=np.float64)) + 1e-320,
                         rtol=rtol)


def with_small(rng, values):
    """`values` with entries 1 and 2 set to a positive and a negative number between 1e-8 and 1e-4,
    where it has four entries or more: the magnitudes of the softmax gradients and products that
    activities 3, A, B and C feed these functions, which ordinary normal draws almost never hold."""
    values = np.array(values, dtype=np.float64)
    if values.size >= 4:
        values.flat[1], values.flat[2] = 10.0 ** rng.uniform(-8, -4), -(10.0 ** rng.uniform(-8, -4))
    return values


def shape_text(shape):
    return str(tuple(shape))


def vjp(output, inputs, v, **options):
    """torch.autograd.grad(output, inputs, v) as the gradient of sum(output * v): the same numbers
    bit for bit (the product hands each entry v * 1.0 back), without an explicit grad_outputs,
    whose first use imports sympy, 0.45 s of CPU in every grading process."""
    return torch.autograd.grad((output * v).sum(), inputs, **options)


def t64(array, grad=False):
    return torch.tensor(np.asarray(array, dtype=np.float64), dtype=torch.float64, requires_grad=grad)


def mixed_signs(values):
    """`values` with its last two entries made negative and positive, when it has two."""
    values = np.array(values, dtype=np.float64)
    if values.size >= 2:
        values.flat[-1], values.flat[-2] = -abs(values.flat[-1]), abs(values.flat[-2])
    return values


# ---------------------------------------------------------------- 1a: add, multiply, matmul
# add_vjp and multiply_vjp receive operands of one shape (broadcasting is undone by 1b's
# sum_to_shape in the Tensor class). Crossed in full: 2 functions x 6 shapes = 12 cases.
ELEMENTWISE_FUNCTIONS = {"add_vjp": torch.add, "multiply_vjp": torch.mul}
ELEMENTWISE_SHAPES = {"a scalar": (), "a vector": (4,), "a vector of length 1": (1,), "a square matrix": (3, 3),
                      "a non-square matrix": (2, 3), "a matrix with a size-1 axis": (3, 1)}
# matmul_vjp: a (m, n) or (n,) times b (n, k) or (n,). The rank pairing says which operand is a
# matrix; the sizes (m, n, k) make the matrices square, non-square, or give them size-1
# dimensions (outer: the result's; inner: the summed one). Vector @ vector sees only n.
# Crossed in full: 4 pairings x 5 sizes = 20 cases.
MATMUL_RANKS = {"vector @ vector": (1, 1), "matrix @ vector": (2, 1), "vector @ matrix": (1, 2),
                "matrix @ matrix": (2, 2)}
MATMUL_SIZES = {"square": (3, 3, 3), "non-square": (2, 5, 3), "size-1 outer dimensions": (1, 4, 1),
                "a size-1 inner dimension": (4, 1, 3), "a single row on the left (a batch of one)": (1, 3, 4)}


def pair_case(activity, function, operation, a, b, v, drawn=()):
    a, b, v = (np.asarray(x) for x in (a, b, v))  # 0-d arrays, never NumPy scalars, as the engine passes them
    ta, tb = t64(a, True), t64(b, True)
    a_bar, b_bar = (g.numpy() for g in vjp(operation(ta, tb), (ta, tb), t64(v)))
    # The same rule on the magnitudes bounds what each entry's terms add up to.
    pa, pb = t64(np.abs(a), True), t64(np.abs(b), True)
    a_bound, b_bound = (g.numpy() for g in vjp(operation(pa, pb), (pa, pb), t64(np.abs(v))))
    title = f"{function}(a, b, v) with a of shape {shape_text(np.shape(a))} and b of shape {shape_text(np.shape(b))}"
    if drawn:
        title += " holding " + ", ".join(sorted({label.split(": ", 1)[1] for label in drawn}))

    def judge(answer):
        result = answer["result"]
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            return f"{title}: expected the pair (a_bar, b_bar), got {describe(result)}"
        return first_problem(
            bounded_problem(result[0], a_bar, a_bound, f"{title}: a_bar (first value returned)"),
            bounded_problem(result[1], b_bar, b_bound, f"{title}: b_bar (second value returned)"),
            *(unchanged_problem(after, sent, f"{title}: argument {name}")
              for name, after, sent in zip("abv", answer["args_after"], (a, b, v))))

    return Case(activity, title, "call", {"function": function, "args": [a, b, v]}, judge, drawn=drawn)


def cases_1a(rng):
    cases = []
    for function, shape in product(ELEMENTWISE_FUNCTIONS, ELEMENTWISE_SHAPES.values()):
        a, b, v = (with_small(rng, rng.normal(size=shape)) for _ in range(3))
        cases.append(pair_case("1a", function, ELEMENTWISE_FUNCTIONS[function], a, b, v))
    for (a_rank, b_rank), (m, n, k) in product(MATMUL_RANKS.values(), MATMUL_SIZES.values()):
        a = with_small(rng, rng.normal(size=(m, n) if a_rank == 2 else (n,)))
        b = with_small(rng, rng.normal(size=(n, k) if b_rank == 2 else (n,)))
        v = with_small(rng, rng.normal(size=np.shape(a @ b)))
        cases.append(pair_case("1a", "matmul_vjp", torch.matmul, a, b, v))
    # The contract's boundaries (zero, +-1e-12, subnormals, +-1e12), planted in a, b and v, the
    # shapes taken in turn: a student's clipping or epsilon shows where magnitudes are extreme.
    for function in ELEMENTWISE_FUNCTIONS:
        shapes = list(ELEMENTWISE_SHAPES.values())
        for index, row in enumerate(boundary_rows(function)):
            shape = shapes[index % len(shapes)]
            a, b, v = (planted(rng, row, name, shape) for name in "abv")
            cases.append(pair_case("1a", function, ELEMENTWISE_FUNCTIONS[function], a, b, v, labels(function, row)))
        # Planted in all three at once, a boundary may meet only the others' (1e12 times 1e-12 is
        # ordinary), which hides a clip or a flush; so each also meets ordinary values alone.
        alone = [(name, row) for name in "abv" for row in boundary_rows(function)]
        for index, (name, row) in enumerate(alone):
            shape = shapes[index % len(shapes)]
            a, b, v = (planted(rng, row, name, shape) if other == name else with_small(rng, rng.normal(size=shape))
                       for other in "abv")
            cases.append(pair_case("1a", function, ELEMENTWISE_FUNCTIONS[function], a, b, v,
                                   (declared.drawn(function, name, row[name][0]),)))
    # Each rank pairing is its own branch of code, so each meets every boundary (the sizes in turn).
    sizes = list(MATMUL_SIZES.values())
    for pairing, (a_rank, b_rank) in enumerate(MATMUL_RANKS.values()):
        for index, row in enumerate(boundary_rows("matmul_vjp")):
            m, n, k = sizes[(pairing + index) % len(sizes)]
            a = planted(rng, row, "a", (m, n) if a_rank == 2 else (n,))
            b = planted(rng, row, "b", (n, k) if b_rank == 2 else (n,))
            v = planted(rng, row, "v", np.shape(a @ b))
            cases.append(pair_case("1a", "matmul_vjp", torch.matmul, a, b, v, labels("matmul_vjp", row)))
    return cases


# ---------------------------------------------------------------- 1b: sum_to_shape
# v has the target's axes, possibly preceded by axes broadcasting prepended ("leading"). Each
# target axis is kept ("k", same length in v) or stretched ("s": length 1 in the target, longer
# in v). The lengths make v's axes all different, all equal (a square v, where summing the
# wrong axis still gives the right shape), or of length 1 (leading axes of length 1, or else a
# kept axis of length 1 in both). Leading axes x targets are crossed in full (27: every
# reduction combined with every prepending, scalar target included); the lengths are paired
# with both (crossing them too would make 81 cases). A class that does not apply to a row
# (length 1 where v has no leading or kept axis) leaves the lengths distinct, and repeated
# shapes are dropped.
SUM_LEADING = {"equal rank": 0, "one axis fewer": 1, "two axes fewer": 2}
SUM_TARGETS = {"a scalar": "", "a vector": "k", "a stretched vector (1,)": "s", "a matrix": "kk",
               "a matrix stretched along axis 0": "sk", "a matrix stretched along axis 1": "ks",
               "a matrix stretched along both axes": "ss", "a 3-d target stretched in the middle": "ksk",
               "a 3-d target stretched at both ends": "sks"}
SUM_LENGTHS = {"distinct lengths": "distinct", "equal lengths (a square v)": "equal",
               "length-1 axes in v": "ones"}


def sum_shapes(leading, pattern, lengths):
    """(shape of v, target shape) for one combination of the 1b classes."""
    distinct = iter([2, 3, 4, 5, 6, 7])
    v_shape = [3 if lengths == "equal" else next(distinct) for _ in range(leading)]
    target = []
    for kind in pattern:
        size = 3 if lengths == "equal" else next(distinct)
        v_shape.append(size)
        target.append(1 if kind == "s" else size)
    if lengths == "ones":
        if leading:
            v_shape[:leading] = [1] * leading
        elif "k" in pattern:
            axis = pattern.index("k")
            v_shape[axis] = target[axis] = 1
    return tuple(v_shape), tuple(target)


def sum_case(v, sent, drawn=()):
    shape = tuple(sent)
    expected = t64(v).sum_to_size(shape).numpy() if shape else np.asarray(v.sum())
    bound = t64(np.abs(v)).sum_to_size(shape).numpy() if shape else np.asarray(np.abs(v).sum())
    title = f"sum_to_shape(v, {shape_text(shape)}) with v of shape {shape_text(np.shape(v))}"
    if drawn:
        title += " holding " + drawn[0].split(": ", 1)[1]

    def judge(answer):
        # Up to 144 entries summed into one: 1e-12 of their magnitudes leaves any order of summing.
        return first_problem(bounded_problem(answer["result"], expected, bound, title, floor=1e-12),
                             unchanged_problem(answer["args_after"][0], v, f"{title}: v"))

    return Case("1b", title, "call", {"function": "sum_to_shape", "args": [v, sent]}, judge, drawn=drawn)


# The boundary cases take these (v, target) pairs in turn: a prepended axis and a stretched one
# at once, a full reduction, a square v, and nothing to do.
SUM_BOUNDARY_PAIRS = [((2, 3, 4), (1, 3, 1)), ((3, 4), ()), ((3, 3), (3,)), ((4, 3), (4, 1)), ((1, 5), (1, 5)),
                      ((2, 1, 3), (1, 3)), ((1, 4), (4,))]


def with_one_sum_of_boundary(rng, v, shape, boundary):
    """`v` with every entry that sums into one (random) entry of the target set to `boundary`.
    Planted among ordinary entries, a tiny value is a rounding of their sum, so an answer that
    drops it (or flushes it to zero) would still pass; alone in its sum it is the whole answer."""
    target = np.zeros(shape, dtype=bool)
    target.flat[rng.integers(target.size)] = True
    v = np.array(v, dtype=np.float64)
    v[np.broadcast_to(target, v.shape)] = boundary
    return v


def cases_1b(rng):
    factors = {"target": SUM_TARGETS, "leading": SUM_LEADING, "lengths": SUM_LENGTHS}
    pairs = []
    for row in covering(factors, full=("target", "leading")):
        pair = sum_shapes(SUM_LEADING[row["leading"]], SUM_TARGETS[row["target"]], SUM_LENGTHS[row["lengths"]])
        if pair not in pairs:
            pairs.append(pair)
    cases = [sum_case(with_small(rng, rng.normal(size=v_shape)), list(shape)) for v_shape, shape in pairs]
    # The Tensor class passes the target as a tuple (value.shape), the cases above as a list; a
    # 0-d adjoint reaches it as a NumPy scalar when a product of 0-d arrays made it.
    for index, row in enumerate(boundary_rows("sum_to_shape")):
        v_shape, shape = SUM_BOUNDARY_PAIRS[index % len(SUM_BOUNDARY_PAIRS)]
        v = with_one_sum_of_boundary(rng, planted(rng, row, "v", v_shape), shape, row["v"][1])
        cases.append(sum_case(v, tuple(shape), labels("sum_to_shape", row)))
    cases.append(sum_case(np.float64(rng.normal()), ()))
    cases.append(sum_case(with_small(rng, rng.normal(size=(3, 1000))), (1, 1000)))  # an axis of 1000: B's and C's
    return cases


# ---------------------------------------------------------------- 1c: tanh, relu
# The input x takes every shape class; the zero classes put relu's kink (x exactly 0.0, or
# -0.0, which compares equal to 0 but has its sign bit set) into x, or keep x away from 0;
# arrays of two or more entries always hold both signs. The adjoint v is all positive, or has
# negative entries too (and is negative when it has a single entry). Shapes x zeros are
# crossed in full (18); functions and adjoints are paired with them and with each other
# (the full product would be 72 cases).
UNARY_FUNCTIONS = {"tanh_vjp": torch.tanh, "relu_vjp": torch.relu}
UNARY_SHAPES = {"a scalar": (), "a vector": (5,), "a vector of length 1": (1,), "a square matrix": (3, 3),
                "a non-square matrix": (2, 3), "a single row (a batch of one)": (1, 4)}
UNARY_ZEROS = {"an entry at +0.0": 0.0, "an entry at -0.0": -0.0, "no entry at 0": None}
UNARY_ADJOINTS = {"a positive adjoint": "positive", "an adjoint with negative entries": "negative"}


def unary_case(function, first, v, drawn=()):
    """A case of tanh_vjp(y, v) or relu_vjp(x, v); `first` is what the function receives."""
    # 0-d arrays, as Tensor.relu passes them; Tensor.tanh passes np.tanh of a 0-d array, a NumPy scalar.
    first = first if isinstance(first, np.float64) else np.asarray(first)
    v = np.asarray(v)
    if function == "tanh_vjp":
        # PyTorch's own rule on the y sent, so that the truth is not one tanh rounding away.
        expected = torch.ops.aten.tanh_backward(t64(v), t64(first)).numpy()
    else:
        tx = t64(first, True)
        (expected,) = vjp(torch.relu(tx), (tx,), t64(v))
        expected = expected.numpy()
    name = "y" if function == "tanh_vjp" else "x"
    shown = [float(f"{entry:.3g}") for entry in np.ravel(first)]
    title = f"{function}({name}, v) with {name} of shape {shape_text(first.shape)}, entries {shown}"
    if drawn:
        title += ", and v holding " + drawn[-1].split(": ", 1)[1]

    def judge(answer):
        # tanh: 1 - y**2 costs up to a few roundings of 1, whatever way it is written, so the
        # floor is 1e-14 |v|; relu passes v unchanged or stops it, so there is no floor at all.
        floor = 1e-14 if function == "tanh_vjp" else 0.0
        return first_problem(
            bounded_problem(answer["result"], expected, np.abs(v), title, rtol=1e-12, floor=floor),
            *(unchanged_problem(after, sent, f"{title}: argument {arg}")
              for arg, after, sent in zip((name, "v"), answer["args_after"], (first, v))))

    return Case("1c", title, "call", {"function": function, "args": [first, v]}, judge, drawn=drawn)


def cases_1c(rng):
    factors = {"shape": UNARY_SHAPES, "zeros": UNARY_ZEROS, "function": UNARY_FUNCTIONS, "adjoint": UNARY_ADJOINTS}
    cases = []
    for row in covering(factors, full=("shape", "zeros")):
        shape, zero = UNARY_SHAPES[row["shape"]], UNARY_ZEROS[row["zeros"]]
        x = mixed_signs(with_small(rng, rng.normal(size=shape)))
        if zero is not None:
            x.flat[0] = zero
        if UNARY_ADJOINTS[row["adjoint"]] == "positive":
            v = with_small(rng, rng.uniform(0.5, 2.0, size=shape))
            if v.size >= 4:
                v.flat[2] = abs(v.flat[2])
        else:
            v = -mixed_signs(with_small(rng, rng.normal(size=shape))) if x.size >= 2 \
                else -rng.uniform(0.5, 2.0, size=shape)
        cases.append(unary_case(row["function"], np.tanh(x) if row["function"] == "tanh_vjp" else x, v))
    # The contracts' boundaries: y at and next to +-1 and 0 for tanh (where 1 - y**2 cancels or a
    # student clips), x at, just above and just below relu's kink, and v tiny, subnormal or 1e12.
    shapes = list(UNARY_SHAPES.values())
    for function, first, ranges in (("tanh_vjp", "y", declared.TANH_OUTPUTS), ("relu_vjp", "x", declared.RELU_INPUTS)):
        for index, row in enumerate(boundary_rows(function)):
            shape = shapes[index % len(shapes)]
            sent = planted(rng, row, first, shape, ranges)
            sent = np.float64(sent) if function == "tanh_vjp" and shape == () else sent
            cases.append(unary_case(function, sent, planted(rng, row, "v", shape), labels(function, row)))
    # An adjoint of both signs and small entries, as B's and C's products send tanh_vjp.
    x = rng.normal(size=(2, 3))
    cases.append(unary_case("tanh_vjp", np.tanh(x), with_small(rng, rng.normal(size=(2, 3)))))
    return cases


# ---------------------------------------------------------------- 2: topological order, backward
# A graph is built from a leaf x (and a second leaf y) by stages, each present or not:
#   a repeated operand  c * c, then c + 0.5 c written as one operation with c twice;
#   a chain             1500 operations in a row (a recursive topological_order must fail);
#   fan-out             u = c feeds a = 3u and b = u**2, then a + b (the Section 5 diamond);
#   unequal paths       s = c reaches the output directly and through 0.5 * s**2, the short
#                       path listed first, so that an order of depth-first discovery fails.
# The four stages are crossed in full (16 graphs, from none to all of them). The nodes (scalar
# or vector), the leaves (one or two: c starts as x * y) and the seed (the default one, on a
# scalar output, or an explicit random seed on the output as it is) are paired with the stages
# and with each other: crossing them as well would make 128 graphs, half with 1500-node chains.
GRAPH_STAGES = {"a repeated operand": "repeated", "a chain of 1500 operations": "chain", "fan-out": "fan-out",
                "paths of unequal length": "unequal"}
GRAPH_NODES = {"scalar nodes": (), "vector nodes": (3,)}
GRAPH_LEAVES = {"one leaf": 1, "two leaves": 2}
GRAPH_SEEDS = {"the default seed": False, "an explicit seed": True}
# Two graphs the stages do not make: a leaf that is the output (nothing to combine), and sharing
# taken to the extreme, twelve doublings n + n: 4096 paths through 13 nodes, each VJP run once.
EXTRA_GRAPHS = {"a leaf that is the output itself": [["leaf", 3.0]],
                "twelve doublings n + n (4096 paths, 13 nodes)":
                    [["leaf", 1.0]] + [["weighted", [i, i], [1.0, 1.0]] for i in range(12)]}


def torch_graph(sent):
    """PyTorch's twin of a graph as it is sent (probes.expand), one tensor per written-out node.
    A ["chain", [parent], count] entry is one tensor 1.0 * parent standing for all `count` nodes:
    multiplying by 1.0 is exact, so each node of the chain has that tensor's value and, having one
    child, its adjoint. Built node by node, a chain of 1500 cost most of a submission's cases."""
    nodes = []
    for op, *operands in sent:
        if op == "leaf":
            nodes.append(t64(operands[0], True))
            continue
        parents = [nodes[i] for i in operands[0]]
        if op == "chain":
            nodes.extend([1.0 * parents[0]] * operands[1])
        elif op == "weighted":
            terms = [w * p for w, p in zip(operands[1], parents)]
            nodes.append(terms[0] if len(terms) == 1 else sum(terms[1:], terms[0]))
        elif op == "product":
            nodes.append(parents[0] * parents[1])
        elif op == "square":
            nodes.append(parents[0] ** 2)
        elif op == "total":
            nodes.append(parents[0].sum())
    return nodes


def graph_spec(rng, stages, shape, leaves, explicit_seed):
    """(spec, sent, seed) of a graph with the given stages (see GRAPH_STAGES): `spec` has one
    entry per node; `sent`, what the probe receives, writes the chain as one entry ["chain",
    [parent], 1500], which probes.expand writes out again."""
    def leaf():
        value = rng.uniform(0.5, 1.2, size=shape) * rng.choice([-1.0, 1.0], size=shape)
        return ["leaf", float(value) if shape == () else value]

    spec, sent = [], []

    def add(*node):
        spec.append(list(node))
        sent.append(list(node))
        return len(spec) - 1

    current = add(*leaf())
    if leaves == 2:
        add(*leaf())
        current = add("product", [0, 1])
    if "repeated" in stages:
        current = add("product", [current, current])
        current = add("weighted", [current, current], [1.0, 0.5])
    if "chain" in stages:
        sent.append(["chain", [current], 1500])
        for _ in range(1500):
            spec.append(["weighted", [current], [1.0]])
            current = len(spec) - 1
    if "fan-out" in stages:
        a = add("weighted", [current], [3.0])
        b = add("square", [current])
        current = add("weighted", [a, b], [1.0, 1.0])
    if "unequal" in stages:
        deep = add("weighted", [add("square", [current])], [0.5])
        current = add("weighted", [current, deep], [-2.0, 1.0])
    if "long first" in stages:  # the same paths, the long one listed first
        deep = add("weighted", [add("square", [current])], [0.5])
        current = add("weighted", [deep, current], [1.0, -2.0])
    if explicit_seed:
        return spec, sent, np.asarray(rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape))
    if shape != ():
        add("total", [current])
    return spec, sent, None


def reachable(spec, output):
    seen, todo = set(), [output]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            if spec[node][0] != "leaf":
                todo.extend(spec[node][1])
    return seen


def order_problem(answer, spec, output, title):
    if "order_returned" in answer:
        return f"{title}: topological_order returned {describe(answer['order_returned'])}, expected a list of nodes"
    order = [int(node) for node in answer["order"]]
    if -1 in order:
        return f"{title}: topological_order returned something that is not a node of the graph"
    nodes = reachable(spec, output)
    if sorted(order) != sorted(nodes):
        missing, repeated = nodes - set(order), [n for n, count in Counter(order).items() if count > 1]
        return (f"{title}: topological_order must list each of the graph's {plural(len(nodes), 'reachable node')} "
                f"exactly once, but it left out {len(missing)} and listed {len(repeated)} more than once")
    rank = {node: i for i, node in enumerate(order)}
    for node in order:
        if spec[node][0] != "leaf" and any(rank[p] > rank[node] for p in spec[node][1]):
            return f"{title}: topological_order puts a node before one of its parents"
    return None


def unpacked(adjoints):
    """The list of adjoints, one per node, from what probes.packed sent."""
    if not (isinstance(adjoints, dict) and sorted(adjoints) == ["dims", "flat", "ndims"]):
        return adjoints
    dims, arrays, start = iter(int(n) for n in adjoints["dims"]), [], 0
    for ndim in adjoints["ndims"]:
        shape = tuple(next(dims) for _ in range(int(ndim)))
        size = math.prod(shape)  # NumPy's prod costs ten times as much on a tuple, for 1500 nodes a case
        arrays.append(adjoints["flat"][start:start + size].reshape(shape))
        start += size
    return arrays


def packed_as_expected(got, layout, wanted_flat, tolerance):
    """True when `got` is probes.packed's one flat array, cut by the expected shapes (`layout`:
    ndims, dims) and within `tolerance` of `wanted_flat`: the whole graph's answer is right without
    cutting it into 1500 arrays. Anything else, right or wrong, is left to the node-by-node comparison."""
    if layout is None or not (isinstance(got, dict) and sorted(got) == ["dims", "flat", "ndims"]):
        return False
    flat = got["flat"]
    return (all(isinstance(got[key], np.ndarray) for key in got) and flat.dtype == np.float64
            and flat.shape == wanted_flat.shape and np.array_equal(got["ndims"], layout[0])
            and np.array_equal(got["dims"], layout[1]) and bool((np.abs(flat - wanted_flat) <= tolerance).all()))


def adjoints_problem(got, expected, what):
    """`expected`: (the nodes in order, their adjoints by node, all of them in one flat array, the
    packed layout of every node's adjoint when every node is reachable, else None, and the
    tolerances by node and flat)."""
    nodes, by_node, wanted_flat, layout, (bounds, tolerance) = expected
    if packed_as_expected(got, layout, wanted_flat, tolerance):
        return None
    got = unpacked(got)
    if not isinstance(got, (list, tuple)):
        return f"{what}: backward returned {describe(got)}, expected a dict from node to adjoint"
    numbers = [as_numbers(got[node]) for node in nodes]
    if all(n is not None and n.shape == by_node[node].shape for n, node in zip(numbers, nodes)):
        # One comparison for the whole graph (a chain has 1500 nodes); node by node only to
        # find the first wrong adjoint, with the same tolerances.
        flat = np.concatenate([n.ravel() for n in numbers] + [np.zeros(0)])
        if (np.abs(flat - wanted_flat) <= tolerance).all():
            return None
    for node in nodes:
        problem = array_problem(got[node], by_node[node], f"{what}: adjoint of node {node}", rtol=1e-9,
                                atol=bounds[node])
        if problem:
            return problem
    return None


def graph_expectation(nodes, spec, output, seed):
    """What backward(nodes[output], seed) must return, laid out for adjoints_problem. Every node
    of these graphs has the output's shape, or is summed into a scalar output, so an adjoint's
    entry is the seed's entry (or the scalar seed) times derivatives of ordinary size: its absolute
    tolerance is 1e-11 of that seed entry, and a seed of 1e-12 is not judged to 1e-9."""
    seed_t = torch.ones((), dtype=torch.float64) if seed is None else t64(seed)
    wanted = reachable(spec, output)
    tensors = list({id(nodes[i]): nodes[i] for i in sorted(wanted)}.values())  # a chain's nodes share one
    grads = dict(zip(map(id, tensors), vjp(nodes[output], tensors, seed_t, allow_unused=True)))
    by_node, bounds = {}, {}
    scale = np.abs(seed_t.numpy())
    for node in sorted(wanted):
        g = grads[id(nodes[node])]
        by_node[node] = np.zeros(nodes[node].shape) if g is None else g.numpy()
        bounds[node] = 1e-11 * np.broadcast_to(scale if scale.shape == by_node[node].shape else scale.max(),
                                               by_node[node].shape) + 1e-320
    # Laid out once here, not in each of the judge's two comparisons.
    flat = np.concatenate([by_node[node].ravel() for node in sorted(wanted)] + [np.zeros(0)])
    bound_flat = np.concatenate([bounds[node].ravel() for node in sorted(wanted)] + [np.zeros(0)])
    layout = None
    if len(wanted) == len(spec):  # probes.packed sends every node; its layout is comparable as a whole
        shapes = [by_node[node].shape for node in range(len(spec))]
        layout = (np.array([len(shape) for shape in shapes]), np.array([n for shape in shapes for n in shape]))
    return sorted(wanted), by_node, flat, layout, (bounds, bound_flat + 1e-9 * np.abs(flat))


def graph_case(title, spec, seed=None, output=-1, sent=None, omit_seed=False, interior=None, drawn=()):
    """backward on a graph, twice, and with `interior` = (node, seed) once more from that node:
    adjoints kept on the nodes from an earlier call would show there. `omit_seed` calls backward(out)
    rather than backward(out, None), relying on the default."""
    output = output % len(spec)
    nodes = torch_graph(spec if sent is None else sent)
    expected = graph_expectation(nodes, spec, output, seed)
    calls_wanted = sorted(n for n in reachable(spec, output) if spec[n][0] != "leaf")
    # A fresh twin: PyTorch frees a graph's saved values after one pass through it.
    then = None if interior is None else graph_expectation(torch_graph(spec if sent is None else sent), spec, *interior)

    def judge(answer):
        problem = order_problem(answer, spec, output, title)
        if problem:
            return problem
        problem = adjoints_problem(answer["first"], expected, f"{title}, first backward call")
        if problem or "second" not in answer:
            return problem
        calls = sorted(int(node) for node in answer["calls"])
        if calls != calls_wanted:
            extra = len(calls) - len(calls_wanted)
            return (f"{title}: each node's vjp must be called exactly once per backward call "
                    f"({plural(len(calls_wanted), 'call')} in all), but it made {len(calls)}"
                    + (" (a node was handled more than once)" if extra > 0 else ""))
        problem = adjoints_problem(answer["second"], expected,
                                   f"{title}, second backward call (adjoints must start from zero each call)")
        if problem or then is None:
            return problem
        return adjoints_problem(answer.get("third"), then, f"{title}, then backward from the interior node "
                                f"{interior[0]} (adjoints must start from zero each call, whatever the output)")

    args = {"spec": spec if sent is None else sent, "seed": seed, "output": output, "omit_seed": omit_seed,
            "interior": None if interior is None else list(interior)}
    return Case("2", title, "graph_backward", args, judge, drawn=drawn)


def error_case(title, probe, args, expected="ValueError"):
    def judge(answer):
        if answer != expected:
            return f"{title}: expected backward to raise {expected}, " + (
                "but it returned normally" if answer is None else f"but it raised {answer}")
        return None
    return Case("2", title, probe, args, judge)


def graph_title(row, stages):
    """'a graph of vector nodes with fan-out, a chain of 1500 operations and two leaves, ...'."""
    parts = [name for name in GRAPH_STAGES if name in stages]
    parts += ["two leaves"] if GRAPH_LEAVES[row["leaves"]] == 2 else []
    if parts:
        listed = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]
        title = f"a graph of {row['nodes']} with {listed}"
    else:
        title = f"a graph of {row['nodes']} that holds only the leaf x"
    return title + (", backward with an explicit seed" if GRAPH_SEEDS[row["seed"]] else "")


# The seed's boundaries (0, +-1e-12, subnormals, +-1e12), on small graphs that take the stages in
# turn, the long path listed first in some; scalar and vector nodes, one leaf or two, alternate.
# Two of them then call backward from an interior node, and two graphs rely on the default seed.
BOUNDARY_STAGES = [{"repeated"}, {"fan-out", "long first"}, {"unequal"}, {"repeated", "fan-out"},
                   {"long first"}, {"repeated", "unequal"}, {"repeated", "fan-out", "long first"}]


def interior_of(rng, spec, shape):
    """(the first node computed from others, a seed for it: None for a scalar)."""
    node = next(i for i, entry in enumerate(spec) if entry[0] != "leaf")
    return node, None if shape == () else rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)


STAGE_WORDS = {"repeated": "a repeated operand", "fan-out": "fan-out", "unequal": "paths of unequal length",
               "long first": "paths of unequal length, the long one listed first"}


def stage_text(stages):
    return listing(STAGE_WORDS[stage] for stage in STAGE_WORDS if stage in stages)


def boundary_graphs(rng):
    cases = []
    for index, row in enumerate(boundary_rows("backward")):
        stages, shape, leaves = BOUNDARY_STAGES[index % len(BOUNDARY_STAGES)], ((), (3,))[index % 2], 1 + index // 2 % 2
        spec, sent, _ = graph_spec(rng, stages, shape, leaves, explicit_seed=True)
        seed = planted(rng, row, "seed", shape)
        interior = interior_of(rng, spec, shape) if index in (1, 4) else None
        title = (f"a graph of {'scalar' if shape == () else 'vector'} nodes with {stage_text(stages)}"
                 f"{' and two leaves' if leaves == 2 else ''}, backward with a seed holding "
                 f"{row['seed'][0]}" + (", then backward from an interior node" if interior else ""))
        cases.append(graph_case(title, spec, seed, sent=sent, interior=interior, drawn=labels("backward", row)))
    for shape, stages in (((), {"fan-out", "long first"}), ((3,), {"repeated", "long first"})):
        spec, sent, _ = graph_spec(rng, stages, shape, 2, explicit_seed=False)
        title = (f"a graph of {'scalar' if shape == () else 'vector'} nodes with {stage_text(stages)} and "
                 "two leaves, backward(output) with the default seed, then backward from an interior node")
        cases.append(graph_case(title, spec, sent=sent, omit_seed=True, interior=interior_of(rng, spec, shape)))
    # Outputs of every magnitude, as activities 3, B and C hand backward a loss of 1e-17 or a
    # constant 0: a vector leaf holding each band of both signs, and a node that repeats it.
    magnitudes = [0.0, 5e-324, 10.0 ** rng.uniform(-15, -10), 10.0 ** rng.uniform(-8, -4), rng.uniform(0.5, 2.0),
                  10.0 ** rng.uniform(4, 12)]
    leaf = np.array(magnitudes + [-m for m in magnitudes[1:]])
    spec = [["leaf", leaf], ["weighted", [0], [1.0]]]
    cases.append(graph_case("a graph whose output holds 0, subnormal, tiny, small, ordinary and large entries of both "
                            "signs, backward with an explicit seed", spec, rng.uniform(0.5, 2.0, size=leaf.shape)))
    return cases


def cases_2(rng):
    presence = {name: {f"with {name}": True, f"without {name}": False} for name in GRAPH_STAGES}
    factors = {**presence, "nodes": GRAPH_NODES, "leaves": GRAPH_LEAVES, "seed": GRAPH_SEEDS}
    cases = []
    for row in covering(factors, full=tuple(GRAPH_STAGES)):
        stages = {name for name in GRAPH_STAGES if presence[name][row[name]]}
        spec, sent, seed = graph_spec(rng, {GRAPH_STAGES[name] for name in stages}, GRAPH_NODES[row["nodes"]],
                                      GRAPH_LEAVES[row["leaves"]], GRAPH_SEEDS[row["seed"]])
        cases.append(graph_case(graph_title(row, stages), spec, seed, sent=sent, omit_seed=seed is None))
    cases += [graph_case(title, spec) for title, spec in EXTRA_GRAPHS.items()]
    cases += boundary_graphs(rng)
    vector = ["leaf", rng.normal(size=3)]
    return cases + [  # the seed and shape rules, as errors
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
# The batch (one example, as many examples as features: a square X, or many) is crossed in
# full with the weights (W square, wider than tall, taller than wide): 9 cases. In one of them
# X, W and the logits are all square, so that a misplaced transpose raises no shape error and
# must show in the values. The number of updates and the learning rate are paired with both
# (the full product would be 36 cases).
STEP_BATCHES = {"one example": 1, "as many examples as features (a square X)": "features", "ten examples": 10}
STEP_WEIGHTS = {"a square W (3 classes, 3 features)": (3, 3), "a W with more features than classes": (3, 5),
                "a W with more classes than features": (4, 2)}
STEP_UPDATES = {"one update": 1, "three updates in a row": 3}
STEP_RATES = {"a small learning rate": 0.1, "a large learning rate": 1.0}
LABEL_DTYPES = ("int32", "uint8", "int16", "int64", "uint32", "int8", "uint64")


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


def step_bounds(X, W_bound, b_bound, lr):
    """{quantity: the sum of the magnitudes that go into each entry} of one update from parameters
    no larger than `W_bound` and `b_bound`, for bounded_problem: a logit of 1e12 leaves a correct
    answer about 1e-4 of freedom in it, and the loss, the softmax and the gradients inherit it."""
    logits = np.abs(X) @ W_bound.T + b_bound
    spread = 2.0 * logits.max(axis=1) + 1.0  # per example: what its loss and softmax can move by
    dW = np.broadcast_to(spread @ np.abs(X) / len(X), W_bound.shape)
    db = np.full(b_bound.shape, spread.mean())
    return {"logits": logits, "loss": spread.mean(), "dW": dW, "db": db, "W": W_bound + lr * dW, "b": b_bound + lr * db}


def loss_problem(loss, expected, what, bound=0.0):
    if isinstance(loss, np.ndarray) or not isinstance(loss, (float, np.floating)):
        return f"{what}: loss must be a Python float (use .item() or float()), got {describe(loss)}"
    return step_problem(loss, expected, what, bound)


def step_problem(got, expected, what, bound):
    """array_problem, its absolute 1e-9 widened where the entries' terms are large (step_bounds)."""
    return array_problem(got, expected, what, atol=1e-9 + 1e-13 * np.asarray(bound, dtype=np.float64))


def classifier_case(X, targets, W, b, lr, steps, title, drawn=()):
    expected, bounds, W_t, b_t, W_b, b_b = [], [], W, b, np.abs(W), np.abs(b)
    for _ in range(steps):
        expected.append(torch_step(X, targets, W_t, b_t, lr))
        bounds.append(step_bounds(X, W_b, b_b, lr))
        W_t, b_t, W_b, b_b = expected[-1]["W"], expected[-1]["b"], bounds[-1]["W"], bounds[-1]["b"]
    keys = ["logits", "loss", "dW", "db", "W", "b"]  # causes before consequences

    def judge(answer):
        results = answer["results"]
        for step, (got, want, bound) in enumerate(zip(results, expected, bounds), start=1):
            what = f"{title}, update {step}"
            if not isinstance(got, dict) or sorted(got) != sorted(keys):
                return f"{what}: classifier_step must return a dict with the keys {keys}, got {describe(got)}" + (
                    f" with keys {sorted(map(str, got))}" if isinstance(got, dict) else "")
            problem = first_problem(loss_problem(got["loss"], want["loss"], f"{what}: loss", bound["loss"]),
                                    *(step_problem(got[k], want[k], f"{what}: {k}", bound[k])
                                      for k in keys if k != "loss"))
            if problem:
                return problem
        if len(results) < steps:
            return f"{title}: stopped after {plural(len(results), 'update')} of {steps}"
        sent = answer["sent_after"]
        return first_problem(*(unchanged_problem(sent[k], v, f"{title}: the {k} passed in")
                               for k, v in (("X", X), ("W", W), ("b", b))))

    args = {"X": X, "targets": targets, "W": W, "b": b, "lr": lr, "steps": steps}
    return Case("3", title, "classifier_steps", args, judge, drawn=drawn)


def cases_3(rng):
    factors = {"batch": STEP_BATCHES, "weights": STEP_WEIGHTS, "updates": STEP_UPDATES, "rate": STEP_RATES}
    cases = []
    for row in covering(factors, full=("batch", "weights")):
        classes, features = STEP_WEIGHTS[row["weights"]]
        batch = features if STEP_BATCHES[row["batch"]] == "features" else STEP_BATCHES[row["batch"]]
        lr, steps = STEP_RATES[row["rate"]], STEP_UPDATES[row["updates"]]
        X = rng.normal(size=(batch, features))
        targets = np.arange(batch) % classes
        rng.shuffle(targets)
        W, b = 0.3 * rng.normal(size=(classes, features)), 0.3 * rng.normal(size=classes)
        title = (f"classifier_step on {plural(batch, 'example')} with {plural(features, 'feature')} and "
                 f"{plural(classes, 'class', 'classes')} (learning rate {number(lr)}, {plural(steps, 'update')})")
        cases.append(classifier_case(X, targets, W, b, lr, steps, title))
    # The contract's boundaries of X, W, b and the learning rate, the shapes taken in turn; the
    # labels come in another integer dtype each time (the notebook asks only for integers).
    shapes = list(product(STEP_BATCHES.values(), STEP_WEIGHTS.values()))
    for index, row in enumerate(boundary_rows("classifier_step")):
        batch, (classes, features) = shapes[(4 * index) % len(shapes)]
        batch = features if batch == "features" else batch
        dtype = LABEL_DTYPES[index % len(LABEL_DTYPES)]
        steps = 1 + index % 2
        X = planted(rng, row, "X", (batch, features))
        W, b = planted(rng, row, "W", (classes, features), scale=0.3), planted(rng, row, "b", (classes,), scale=0.3)
        targets = (np.arange(batch) % classes).astype(dtype)
        rng.shuffle(targets)
        lr = float(row["lr"][1])
        title = (f"classifier_step on {plural(batch, 'example')} with {plural(features, 'feature')} and "
                 f"{plural(classes, 'class', 'classes')}, {dtype} labels (learning rate {number(lr)}, "
                 f"{plural(steps, 'update')}), X holding {row['X'][0]}, W {row['W'][0]}, b {row['b'][0]}")
        cases.append(classifier_case(X, targets, W, b, lr, steps, title, labels("classifier_step", row)))
    return cases


# ---------------------------------------------------------------- A: mlp_step
# Inputs have 4 features and 3 classes. The batch (one example or twelve) is crossed with the
# hidden width (4 units, so that W1 is square, or 16); the number of updates is paired with
# both: 4 cases, each pair of classes once (the full product would double the MLP cases).
MLP_BATCHES = {"one example": 1, "twelve examples": 12}
MLP_HIDDEN = {"as many hidden units as features (a square W1)": 4, "more hidden units than features": 16}
MLP_UPDATES = {"one update": 1, "three updates in a row": 3}


def torch_mlp_history(X, targets, params, lr, steps):
    """(loss, parameters after the update) for each of `steps` updates, by PyTorch."""
    leaves = {k: t64(v, True) for k, v in params.items()}
    history = []
    y = torch.as_tensor(np.asarray(targets, dtype=np.int64))  # from any integer dtype NumPy has
    for _ in range(steps):
        hidden = torch.relu(t64(X) @ leaves["W1"].T + leaves["b1"])
        loss = F.cross_entropy(hidden @ leaves["W2"].T + leaves["b2"], y)
        grads = torch.autograd.grad(loss, list(leaves.values()))
        leaves = {k: (p - lr * g).detach().requires_grad_() for (k, p), g in zip(leaves.items(), grads)}
        history.append((loss.item(), {k: v.detach().numpy() for k, v in leaves.items()}))
    return history


def mlp_parameters(rng, hidden):
    return {"W1": 0.5 * rng.normal(size=(hidden, 4)), "b1": 0.1 * rng.normal(size=hidden),
            "W2": 0.5 * rng.normal(size=(3, hidden)), "b2": 0.1 * rng.normal(size=3)}


def mlp_case(rng, batch, hidden, steps, lr):
    X, targets = rng.normal(size=(batch, 4)), np.arange(batch) % 3
    title = (f"mlp_step on {plural(batch, 'example')} with {plural(hidden, 'hidden unit')} "
             f"(learning rate {number(lr)}, {plural(steps, 'update')})")
    return mlp_judged(X, targets, mlp_parameters(rng, hidden), lr, steps, title)


def mlp_judged(X, targets, params, lr, steps, title, drawn=()):
    expected = torch_mlp_history(X, targets, params, lr, steps)
    names = sorted(params)

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
        done = len(answer["history"])
        if done < steps:
            return f"{title}: stopped after {plural(done, 'update')} of {steps}"
        return first_problem(*(unchanged_problem(answer["sent_after"][k], params[k], f"{title}: the {k} passed in")
                               for k in names))

    return Case("A", title, "mlp_steps", {"X": X, "targets": targets, "params": params, "lr": lr, "steps": steps},
                judge, drawn=drawn)


def cases_A(rng):
    factors = {"batch": MLP_BATCHES, "hidden": MLP_HIDDEN, "updates": MLP_UPDATES}
    cases = [mlp_case(rng, MLP_BATCHES[row["batch"]], MLP_HIDDEN[row["hidden"]], MLP_UPDATES[row["updates"]],
                      lr=(0.1, 0.5)[i % 2])
             for i, row in enumerate(covering(factors, full=("batch", "hidden")))]
    # The contract's boundaries of X and the learning rate, one update each on five examples with
    # labels of another integer dtype. Where X holds a zero, its first row is all zeros and half
    # of b1 is 0: those hidden units sit exactly at relu's kink, where the derivative is 0.
    for index, row in enumerate(boundary_rows("mlp_step")):
        X, params = planted(rng, row, "X", (5, 4)), mlp_parameters(rng, 6)
        if row["X"][1] == 0.0:
            X[0], params["b1"][::2] = 0.0, 0.0
        targets = (np.arange(5) % 3).astype(LABEL_DTYPES[index % len(LABEL_DTYPES)])
        lr = float(row["lr"][1])
        title = (f"mlp_step on 5 examples with 6 hidden units, {targets.dtype} labels (learning rate {number(lr)}, "
                 f"1 update), X holding {row['X'][0]}" + (", hidden units at relu's kink" if row["X"][1] == 0.0 else ""))
        cases.append(mlp_judged(X, targets, params, lr, 1, title, labels("mlp_step", row)))
    return cases


# ---------------------------------------------------------------- B: grad, C: jacobian
# grad: every input shape crossed with every kind of scalar function (12 cases), then a
# ValueError for every kind of non-scalar result (3 cases), a result of shape (1,) included:
# it has one entry but is not a scalar.
GRAD_INPUTS = {"a scalar x": (), "a vector x": (4,), "a matrix x": (2, 3)}
GRAD_FUNCTIONS = {"t used three times": "(t * t * t).sum()", "tanh, and t used twice": "(t.tanh() * t).sum()",
                  "relu, and a constant factor": "(t.relu() * t).sum() + (t * 3.0).sum()",
                  "a constant, which ignores t": "const(7.0)"}
GRAD_NON_SCALAR = {"a vector result": (4,), "a result of shape (1,)": (1,), "a matrix result": (2, 3)}
# jacobian: every input shape crossed with every output shape, each with a function of x
# (JACOBIAN_FUNCTIONS, 9 cases); then constant functions, whose Jacobian is all zeros, once per
# input shape and once per output shape (3 cases: a constant fails by its missing adjoint,
# whatever the shapes, so pairing suffices).
JACOBIAN_INPUTS = {"a scalar x": (), "a vector x": (3,), "a matrix x": (2, 4)}
JACOBIAN_OUTPUTS = ("a scalar", "a vector", "a matrix")
JACOBIAN_FUNCTIONS = {
    ("a scalar x", "a scalar"): "t.tanh() * t",
    ("a scalar x", "a vector"): "const([1.5, -2.0, 0.25]) * (t * t)",
    ("a scalar x", "a matrix"): "const([[1.0, -1.0, 2.0], [0.5, 3.0, -2.5]]) * t.tanh()",
    ("a vector x", "a scalar"): "(t * t).sum()",
    ("a vector x", "a vector"): "const([[0.3, -1.2, 0.8], [1.1, 0.4, -0.6]]) @ (t * t)",
    ("a vector x", "a matrix"): "const([[2.0], [-0.5]]) * t.tanh()",
    ("a matrix x", "a scalar"): "(t.tanh() * t).sum()",
    ("a matrix x", "a vector"): "const([0.7, -1.3]) @ (t * t)",
    ("a matrix x", "a matrix"): "const([[0.2, -0.9], [1.4, 0.5], [-0.3, 0.8]]) @ t",
}
JACOBIAN_CONSTANTS = {("a scalar x", "a vector"): "const([3.0, 4.0, 5.0])",
                      ("a vector x", "a matrix"): "const([[1.0, 2.0], [3.0, 4.0]])",
                      ("a matrix x", "a scalar"): "const(7.0)"}


def torch_function(expression, constants=None):
    named = {name: torch.tensor(value, dtype=torch.float64) for name, value in (constants or {}).items()}
    return eval(f"lambda t: {expression}", {"const": lambda v: torch.tensor(v, dtype=torch.float64), **named})


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


def grad_error_case(shape, x):
    title = f"grad of a function with a result of shape {shape_text(shape)}"

    def judge(answer):
        if answer != "ValueError":
            return f"{title}: expected ValueError, " + (
                "but it returned normally" if answer is None else f"but it raised {answer}")
        return None

    return Case("B", title, "grad_error", {"expression": "t * t", "x": x}, judge)


# Reverse mode is the method B and C teach, so one case each that only it can finish: a scalar
# function (B) or a function with two outputs (C) of WIDE inputs. Reverse mode takes one backward
# pass per output; differences of the forward pass take one pass per input, about WIDE^2
# operations, hours against the 60 s a check may use. The inputs are drawn in the sandbox from a
# seed (probes._drawn), as here, rather than sent. The judge allows EXACT of the largest entry:
# reverse mode is exact to rounding; a difference quotient of any step misses by 1e-10 or more.
WIDE = 500_000
EXACT = 1e-13
METHOD_GRAD = ("(t.tanh() * t).sum() + (t * t * t).sum()", {"x": (WIDE,)})
METHOD_JACOBIAN = ("M @ (t.tanh() * t)", {"x": (WIDE,), "M": (2, WIDE)})


def drawn(seed, shapes):
    """probes._drawn, here: the same arrays from the same seed."""
    generator = np.random.default_rng(seed)
    return {name: generator.standard_normal(shape) for name, shape in shapes.items()}


def method_case(activity, probe, expression, shapes, seed, what):
    arrays = drawn(seed, shapes)
    x = arrays.pop("x")
    function, tx = torch_function(expression, arrays), t64(x, True)
    expected = (torch.autograd.grad(function(tx), (tx,))[0] if activity == "B"
                else torch.autograd.functional.jacobian(function, tx.detach())).numpy()
    scale = max(1.0, float(np.max(np.abs(expected))))
    title = (f"{what}(lambda t: {expression}) at x of {WIDE:,} entries: reverse mode takes one backward pass per "
             "output, differences one forward pass per input")

    def judge(answer):
        return array_problem(answer["result"], expected, f"{title}; to {EXACT:g} of the largest entry (reverse "
                             "mode is exact, finite differences are not)", atol=EXACT * scale, rtol=0.0)

    return Case(activity, title, probe, {"expression": expression, "seed": seed, "shapes": shapes}, judge)


def cases_B(rng):
    cases = [grad_case(GRAD_FUNCTIONS[function], rng.normal(size=GRAD_INPUTS[shape]))
             for shape, function in product(GRAD_INPUTS, GRAD_FUNCTIONS)]
    cases += [grad_error_case(shape, rng.normal(size=shape)) for shape in GRAD_NON_SCALAR.values()]
    return cases + [method_case("B", "grad_drawn", *METHOD_GRAD, int(rng.integers(2**31)), "grad")]


def jacobian_case(expression, x, drawn=()):
    expected = torch.autograd.functional.jacobian(torch_function(expression), t64(x)).numpy()
    title = f"jacobian(lambda t: {expression}, x) with x of shape {shape_text(x.shape)}"
    if drawn:
        title += " holding " + drawn[0].split(": ", 1)[1]
    # Where every entry is tiny, an absolute 1e-9 would pass a Jacobian of zeros: the floor
    # shrinks with the largest entry.
    floor = 1e-9 * min(1.0, float(np.max(np.abs(expected), initial=0.0)))
    return Case("C", title, "jacobian_of", {"expression": expression, "x": x},
                lambda answer: array_problem(answer["result"], expected, title, atol=floor + 1e-300), drawn=drawn)


def cases_C(rng):
    cases = [jacobian_case(JACOBIAN_FUNCTIONS[pair], rng.normal(size=JACOBIAN_INPUTS[pair[0]]))
             for pair in product(JACOBIAN_INPUTS, JACOBIAN_OUTPUTS)]
    cases += [jacobian_case(expression, rng.normal(size=JACOBIAN_INPUTS[x]))
              for (x, _), expression in JACOBIAN_CONSTANTS.items()]
    # The contract's boundaries of the point x, planted in the functions of x in turn.
    pairs = list(JACOBIAN_FUNCTIONS)
    for index, row in enumerate(boundary_rows("jacobian")):
        pair = pairs[(4 * index + 1) % len(pairs)]
        cases.append(jacobian_case(JACOBIAN_FUNCTIONS[pair], planted(rng, row, "value", JACOBIAN_INPUTS[pair[0]]),
                                   labels("jacobian", row)))
    return cases + [method_case("C", "jacobian_drawn", *METHOD_JACOBIAN, int(rng.integers(2**31)), "jacobian")]


def cases(seed):
    """Every hidden check, by activity, with the values drawn from the submission's `seed`."""
    rng = np.random.default_rng([seed, 20261129])
    return {"1a": cases_1a(rng), "1b": cases_1b(rng), "1c": cases_1c(rng), "2": cases_2(rng),
            "3": cases_3(rng), "A": cases_A(rng), "B": cases_B(rng), "C": cases_C(rng)}
