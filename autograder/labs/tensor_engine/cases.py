"""How tensor_engine is graded: the questions, PyTorch's answers, and the judges.

Each activity's hidden cases are the cross product (itertools.product) of the input classes that
matter for it, named in the module-level dicts below, one dict per factor, with a comment on what
each factor is for and how many cases the product makes. The inputs differ from the visible
checks' (other shapes, axes, seeds, graphs and networks). Expected values are computed here with
PyTorch in float64 (or, for a finite difference with a given step, with the same difference
computed here) and never enter the sandbox. Nearly every case is small; the two of forward mode
on WIDE entries are large by design, and still take a fraction of a second done as taught.

Every boundary that contracts.py declares for an argument (0, ±1e-12, ±5e-324, the largest finite
values, kinks, open ends, the infinities a function allows) is planted in some case, which names
it in Case.drawn; the bands where students invent thresholds (exp from 500 to 709.78, log near
1e-12, relu at tiny values, a loss's margins of 10 to 700) have cases of their own. Where
magnitudes vary, judges compare entry by entry relative to each entry's size (relative_problem),
so that a tail of 1e-17 returned as 0 fails. What the checks of other activities feed a function
is asked by the function's own activity too (tests/test_contract_coverage.py).
"""
import re
from itertools import product

import numpy as np
import torch
import torch.nn.functional as F

from autograder.labs.vocabulary import Case, apart, array_problem, as_numbers, describe, first_problem, number, plural
from autograder.labs.vocabulary import array_problem as vocabulary_array_problem

# The lab's declared contracts (and the label maker they re-export): through the lab's own module,
# so that this file still imports nothing of the grader but the vocabulary.
from .contracts import CONTRACTS
from .contracts import drawn as boundary_label

# Activities whose functions call those of earlier ones. When such an activity fails and one of
# these failed too, the grader tries it again on the reference engine. 1a and 1b are graded node
# by node, and 2 on graphs whose operations bring their own backward rules and on plain NumPy
# functions, so none of them depends on another. The training loop (3) runs the student's
# primitives, loss and backward; the network and its gradient check (4) all of that and
# zero_grad; the witness (5) runs on a network the probe builds, with a zero_grad of its own.
# Of the optional activities, no_grad (B) is watched through graphs of the student's primitives
# and backward, and double backprop (D) builds its backward graphs from the primitives and ends
# with backward; Adam (A), forward mode (C), conv2d (E) and to_dot (F) are graded on their own
# (C's Dual and F's graphs are built by given code and the probes).
DEPENDS = {"3": ("1a", "1b", "2"), "4": ("1a", "1b", "2", "3"), "5": ("1a", "1b", "2"), "B": ("1a", "2"),
           "D": ("1a", "2")}

# The witness (5) is a comparison with PyTorch; every other activity is graded without it.
USES_PYTORCH = ("5",)

# The probes of what teaches a method (Adam's state, no_grad, forward mode, double backprop,
# to_dot's walk of the graph, the gradient checks' differences): the submission's process could
# write the reply a correct answer gives without it, so they run apart from it and only ask its
# objects. (A, B, C, D, F and activity 4's gradient checks.)
APART = ("adam", "quiet", "tangent", "jacobian", "tangent_drawn", "jacobian_drawn", "contributions", "gradient_of",
         "curvature", "newton", "tape", "checked", "checked_mlp")

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
        return "{} is {}, expected {}".format(quantity, *apart(got, want))
    return None


def unchanged(after, sent, quantity):
    """None when `after` is exactly `sent` (array_equal, NaN equal to NaN): a value put back must be
    the same bits, not a close one."""
    numbers = as_numbers(after)
    sent = np.asarray(sent, dtype=np.float64)
    if numbers is None or numbers.shape != sent.shape:
        return f"{quantity} (it must not change): got {describe(after)}, expected an array of shape {sent.shape}"
    if np.array_equal(numbers, sent, equal_nan=True):
        return None
    where = tuple(int(i) for i in np.argwhere(~((numbers == sent) | (np.isnan(numbers) & np.isnan(sent))))[0])
    return (f"{quantity} (it must not change): at index {where} got {float(numbers[where])!r}, expected "
            f"{float(sent[where])!r}, exactly as it was")


# ---------------------------------------------------------------- the contracts' boundaries
VALUES = {(c.function, arg.name): arg.values for c in CONTRACTS for arg in c.args if arg.values is not None}


def planted(function, argument, rng, shape, names=None, base=None):
    """(array, labels): `base` (else ordinary values the contract admits) of `shape`, with the
    boundaries `names` (default: every one the contract declares for `function`'s `argument`)
    each in an entry of its own, at random places; the labels name them for Case.drawn."""
    values = VALUES[function, argument]
    found = values.boundaries()
    names = list(found) if names is None else names
    array = values.draw(rng, shape) if base is None else np.array(base, dtype=np.float64)
    places = rng.permutation(array.size)[:len(names)]
    assert len(places) == len(names), f"{shape} is too small for {len(names)} boundaries"
    for place, name in zip(places, names):
        array.flat[place] = found[name]
    return array, tuple(boundary_label(function, argument, name) for name in names)


def labels_of(function, argument, names=None):
    """The Case.drawn labels of the boundaries `names` (default: all) of an argument."""
    found = VALUES[function, argument].boundaries()
    return tuple(boundary_label(function, argument, name) for name in (found if names is None else names))


def relative_problem(got, want, quantity, bound=None, rtol=1e-9, floor=0.0):
    """array_problem for values whose magnitudes vary by hundreds of orders: each entry within
    rtol of its own size (and 1e-12 of `bound`, the size of the terms it sums, where rounding
    may cancel), so that 1e-17 is not taken for 0 as an absolute tolerance would; equal
    infinities agree, and so do NaNs where NaN is expected."""
    want = np.asarray(want, dtype=np.float64)
    numbers = as_numbers(got)
    if numbers is None:
        return f"{quantity}: expected a NumPy array, got {describe(got)}"
    if numbers.shape != want.shape:
        return f"{quantity}: shape {numbers.shape}, expected {want.shape}"
    bound = np.zeros(want.shape) if bound is None else np.asarray(bound, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        agree = (numbers == want) | (np.isnan(numbers) & np.isnan(want)) | \
            (np.abs(numbers - want) <= rtol * np.abs(want) + 1e-12 * bound + floor)
    if agree.all():
        return None
    wrong = ~agree
    where = tuple(int(i) for i in np.argwhere(wrong)[0]) if want.shape else ()
    count = int(wrong.sum())
    shown = apart(numbers[where], want[where]) if np.isfinite([numbers[where], want[where]]).all() else \
        (repr(float(numbers[where])), repr(float(want[where])))
    place = f"{count} of {plural(wrong.size, 'entry', 'entries')} {'is' if count == 1 else 'are'} wrong; at index " \
        f"{where} " if want.shape else ""
    return (f"{quantity}: {place}got {shown[0]}, expected {shown[1]} (each entry is compared to {number(rtol)} of "
            "its own size: a tiny value is not zero)")


# ---------------------------------------------------------------- 1a: the primitives, node by node
def node_parents(expression, names):
    """The positions in `names` of the node's parents, in order (-1: a constant leaf made from a
    number), as the notebook defines _prev: the operands in argument order, with multiplicity."""
    call = re.match(r"^(\w+)\((\w+)(?:, (\w+))?", expression)
    if call is None:  # `a * number` or `number * a`: a, then the constant
        return [names.index("a"), -1]
    operands = call.groups()[1:] if call.group(1) in ("multiply", "matmul") else call.groups()[1:2]
    return [names.index(operand) for operand in operands]


LINEAR = ("multiply", "matmul", "reduce_sum")  # on absolute values, these give the size of the terms they sum


def node_case(title, expression, leaves, stale, rng, drawn=(), relative=False):
    """`expression` on Tensor leaves holding `leaves` (.grad holding a random earlier gradient
    when `stale`), its backward rule run once with a random out.grad, against PyTorch. Where
    `relative`, every entry is judged to 1e-9 of its own size (relative_problem), the sums of
    products to 1e-12 of the terms they add."""
    priors = {name: rng.normal(size=np.shape(v)) if stale else np.zeros(np.shape(v)) for name, v in leaves.items()}
    twins = {name: t64(v) for name, v in leaves.items()}
    out = eval(expression, dict(TORCH), dict(twins))
    upstream = rng.normal(size=tuple(out.shape))
    grads = torch.autograd.grad(out, list(twins.values()), t64(upstream, grad=False))
    value = out.detach().numpy()
    wanted = [priors[name] + g.numpy() for name, g in zip(leaves, grads)]
    names = list(leaves)
    value_bound, grad_bounds = np.abs(value), [np.abs(p) + np.abs(g.numpy()) for p, g in zip(priors.values(), grads)]
    if relative and expression.startswith(LINEAR):
        sizes = {name: t64(np.abs(v)) for name, v in leaves.items()}
        summed = eval(expression, dict(TORCH), dict(sizes))
        value_bound = summed.detach().numpy()
        grad_bounds = [np.abs(p) + g.numpy() for p, g in zip(priors.values(), torch.autograd.grad(
            summed, list(sizes.values()), t64(np.abs(upstream), grad=False)))]
    setting = (f"{title}: {expression} with " + ", ".join(f"{n} of shape {shape_text(np.shape(v))}"
                                                          for n, v in leaves.items())
               + (", .grad already holding an earlier gradient" if stale else ", .grad starting at zero"))
    parents = node_parents(expression, names)

    def compare(got, want, quantity, bound):
        if relative:
            return relative_problem(got, want, quantity, bound)
        return array_problem(got, want, quantity)

    def judge(answer):
        if answer["kind"] == "input":
            return f"{setting}: it returned one of its inputs; make a new Tensor"
        if answer["kind"] != "Tensor":
            return f"{setting}: expected a new Tensor, got a {answer['kind']}"
        prev = answer["prev"]
        if prev != parents:
            def shown(indices):
                return "(" + ", ".join(names[i] if 0 <= i < len(names) else "a constant" for i in indices) + ")"
            return (f"{setting}: the new node's _prev must be {shown(parents)}, its parents in argument order, each "
                    f"as often as it is an operand; got {shown(prev) if isinstance(prev, list) else prev}")
        return first_problem(
            compare(answer["data"], value, f"{setting}: out.data", value_bound),
            *(compare(g, w, f"{setting}: {n}.grad after out._backward() with a random out.grad", b)
              for n, g, w, b in zip(names, answer["grads"], wanted, grad_bounds)),
            *(unchanged(after, leaves[n], f"{setting}: {n}.data") for n, after in zip(names, answer["data_after"])))

    return Case("1a", setting, "node", {"expression": expression, "leaves": leaves, "priors": priors,
                                         "upstream": upstream}, judge, drawn=tuple(drawn))


# The .grad of the leaves starts at zero or already holds a gradient from an earlier pass (a rule
# that assigns instead of adding shows only then).
PRIORS = {"fresh .grad": False, "stale .grad": True}
# multiply: operands of one shape, the three broadcasts of the exercise in Section 2, a vector
# broadcast over a square matrix from either side (summing the wrong axis then keeps the shape),
# a 0-d tensor, operands stretched along several size-1 axes at once ((1, 1) over a matrix; (2, 1, 4)
# against (1, 3, 1), each stretched, one on two axes: a rule that finds and sums a single stretched
# axis passes every other pair), one tensor used twice, and a plain number on either side (a
# constant leaf). The square case comes first among the broadcasts, so that a wrong reduction is
# reported by its values. Crossed with the priors: 12 x 2 = 24 cases.
MULTIPLY_OPERANDS = {
    "two tensors of one shape": ("multiply(a, b)", (2, 3), (2, 3)),
    "a vector broadcast over the rows of a square matrix": ("multiply(a, b)", (3, 3), (3,)),
    "a vector broadcast on the left of a square matrix": ("multiply(a, b)", (3,), (3, 3)),
    "a row broadcast over 32 rows (exercise a)": ("multiply(a, b)", (32, 10), (10,)),
    "a column and a row broadcast against each other (exercise b)": ("multiply(a, b)", (4, 1), (1, 6)),
    "a leading axis added and an axis stretched (exercise c)": ("multiply(a, b)", (2, 3, 5), (3, 1)),
    "a 0-d tensor broadcast over a matrix": ("multiply(a, b)", (), (2, 4)),
    "a (1, 1) matrix stretched along both axes": ("multiply(a, b)", (1, 1), (2, 3)),
    "(2, 1, 4) against (1, 3, 1), several axes stretched": ("multiply(a, b)", (2, 1, 4), (1, 3, 1)),
    "one tensor used twice": ("multiply(a, a)", (3, 2), None),
    "a number on the right": ("a * -0.75", (2, 3), None),
    "a number on the left": ("1.25 * a", (4,), None),
}
# matmul: square, non-square, a row times a column (a 1 x 1 result), a column times a row (an
# outer product), and one square tensor used as both operands. Crossed with the priors:
# 5 x 2 = 10 cases. (matmul is 2-D only and does not broadcast, so the stretched axes of
# multiply's operands do not apply to it.)
MATMUL_OPERANDS = {"square matrices": ((3, 3), (3, 3)), "non-square matrices": ((2, 5), (5, 3)),
                   "a row times a column": ((1, 4), (4, 1)), "a column times a row": ((3, 1), (1, 4)),
                   "one square tensor used twice": ((3, 3), None)}
# reduce_sum: a square matrix (a gradient put back along the wrong axis keeps its shape) and a
# 3-d array, each summed over everything, over the first axis, over a middle or last axis by a
# positive index, over the last axis by -1, over a tuple of axes in ascending order, in
# descending order (axes put back one at a time in the order given go astray) and with a
# negative axis inside (one turned positive only when it comes alone stays unmatched), with and
# without keepdims; leaves hold stale gradients throughout. Crossed in full: 2 x 7 x 2 = 28 cases.
SUM_INPUTS = {"a square matrix (3, 3)": ((3, 3), 1, {"tuple": (0, 1), "descending": (1, 0), "negative": (-1, 0)}),
              "a 3-d array (2, 3, 4)": ((2, 3, 4), 1, {"tuple": (0, 2), "descending": (2, 0), "negative": (-1, 0)})}
SUM_AXES = {"everything": "none", "the first axis": "first", "axis 1": "middle", "axis -1": "last",
            "a tuple of axes": "tuple", "a tuple in descending order": "descending",
            "a tuple holding a negative axis": "negative"}
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
    for (input_name, (shape, middle, tuples)), (axis_name, axis_kind), (keep_name, keep) in \
            product(SUM_INPUTS.items(), SUM_AXES.items(), KEEPDIMS.items()):
        axis = {"none": None, "first": 0, "middle": middle, "last": -1, **tuples}[axis_kind]
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
    return cases + cases_1a_thresholds(rng) + cases_1a_boundaries(rng) + cases_1a_fed(rng)


def small(rng, shape):
    """Entries of both signs from 3e-9 to 3e-4: the band (1e-9 to 1e-3) where small activations,
    logits and step sizes of other activities' checks lie, inside it by half a decade."""
    signs = rng.choice([-1.0, 1.0]) * (-1.0) ** np.arange(int(np.prod(shape)))  # both, wherever two entries are
    return signs.reshape(shape) * 10.0 ** rng.uniform(-8.5, -3.5, size=shape)


# What other activities' checks feed the primitives, asked here first so that a slip there fails
# 1a and its message points at the primitive (tests/test_contract_coverage.py): row vectors and
# 1 x 1 matrices (D's functions of a (1, d) x), 1-d sums, and small magnitudes of both signs
# (4's logits and activations), each entry judged to 1e-9 of its size. 11 cases.
FED = {"multiply on a (1, 3) row and a (1, 1) matrix of small values": ("multiply(a, b)", {"a": (1, 3), "b": (1, 1)}),
       "multiply on two (2, 2) matrices of small values": ("multiply(a, b)", {"a": (2, 2), "b": (2, 2)}),
       "matmul of a (1, 1) and a (1, 4) matrix of small values": ("matmul(a, b)", {"a": (1, 1), "b": (1, 4)}),
       "matmul of a (2, 1) and a (1, 1) matrix of small values": ("matmul(a, b)", {"a": (2, 1), "b": (1, 1)}),
       "reduce_sum of a vector of small values over everything": ("reduce_sum(a)", {"a": (4,)}),
       "reduce_sum of a (1, 3) row over everything": ("reduce_sum(a)", {"a": (1, 3)}),
       "reduce_sum of a (1, 1) matrix over axis 1, keepdims=True": ("reduce_sum(a, 1, True)", {"a": (1, 1)}),
       "exp of a (1, 3) row": ("exp(a)", {"a": (1, 3)}), "exp of a (1, 1) matrix": ("exp(a)", {"a": (1, 1)}),
       "log of a (1, 3) row": ("log(a)", {"a": (1, 3)}),
       "relu of small values of both signs": ("relu(a)", {"a": (2, 3)})}


def cases_1a_fed(rng):
    cases = []
    for title, (expression, shapes) in FED.items():
        leaves = {name: small(rng, shape) if "small" in title else rng.normal(size=shape)
                  for name, shape in shapes.items()}
        if expression.startswith("log"):
            leaves["a"] = np.abs(leaves["a"]) + 0.1
        cases.append(node_case(title, expression, leaves, True, rng, relative=True))
    return cases


# Where students invent thresholds: exp clipped below 710 or above -30, log given an epsilon,
# relu's test written as a > 1e-9. Each band on a (3, 4) matrix that also holds the contract's
# boundaries of that side (contracts.py: 709.78, 5e-324, 1e12, ...), and on a 0-d tensor inside the band. Each entry is judged to 1e-9 of its own size
# and .grad starts at zero, so that a tail of 1e-300 that came back 0 shows. 6 x 2 = 12 cases.
THRESHOLDS = {
    "exp": {"large inputs from 500 to 709.78": (lambda r, n: r.uniform(500.0, 709.78, n),
                                                ["a large positive value", "the high end 709.78",
                                                 "just inside the high end 709.78"]),
            "a far negative tail from -700 to -30": (lambda r, n: r.uniform(-700.0, -30.0, n),
                                                     ["zero", "a tiny positive value", "a tiny negative value",
                                                      "a subnormal positive value", "a subnormal negative value",
                                                      "a large negative value"])},
    "log": {"inputs from 1e-13 to 1e-9, where an epsilon shows": (lambda r, n: 10.0 ** r.uniform(-13, -9, n),
                                                                  ["a tiny positive value", "a subnormal positive value",
                                                                   "the low end 0", "just inside the low end 0"]),
            "inputs from 1e3 to 1e12": (lambda r, n: 10.0 ** r.uniform(3, 12, n), ["a large positive value"])},
    "relu": {"tiny values of both signs at the kink, 1e-300 to 1e-9": (
                 lambda r, n: r.choice([-1.0, 1.0], n) * 10.0 ** r.uniform(-300, -9, n),
                 ["zero", "the kink at 0", "just above the kink at 0", "just below the kink at 0",
                  "a subnormal positive value", "a subnormal negative value", "a tiny positive value",
                  "a tiny negative value"]),
             "large magnitudes of both signs": (
                 lambda r, n: r.choice([-1.0, 1.0], n) * 10.0 ** r.uniform(3, 12, n),
                 ["a large positive value", "a large negative value"])},
}


def cases_1a_thresholds(rng):
    cases = []
    for function, bands in THRESHOLDS.items():
        for band_name, (draw, names) in bands.items():
            x, labels = planted(function, "a", rng, (3, 4), names, base=draw(rng, 12).reshape(3, 4))
            cases.append(node_case(f"{function} on a (3, 4) matrix with {band_name}", f"{function}(a)", {"a": x},
                                   False, rng, labels, relative=True))
            point = np.array(abs(draw(rng, 1)[0]) if function == "relu" else draw(rng, 1)[0])
            cases.append(node_case(f"{function} on a 0-d tensor with {band_name}", f"{function}(a)", {"a": point},
                                   False, rng, relative=True))
    return cases


# The contract's boundaries of the linear primitives (0, ±1e-12, ±5e-324, ±1e12 in every operand),
# judged entry by entry: multiply on operands of one shape (fresh .grad) and broadcast (stale),
# matmul, and reduce_sum; and reduce_sum called with its defaults left out (axis, keepdims or
# both), as `x.sum()` calls it. 7 cases.
def cases_1a_boundaries(rng):
    cases = []
    for title, shapes, stale in (("two tensors of one shape holding the boundaries", ((3, 4), (3, 4)), False),
                                 ("a (3, 2, 4) tensor and a broadcast (2, 4) one holding the boundaries",
                                  ((3, 2, 4), (2, 4)), True)):
        (a, first), (b, second) = (planted("multiply", name, rng, shape) for name, shape in zip("ab", shapes))
        cases.append(node_case(f"multiply on {title}", "multiply(a, b)", {"a": a, "b": b}, stale, rng,
                               first + second, relative=True))
    (a, first), (b, second) = planted("matmul", "a", rng, (3, 4)), planted("matmul", "b", rng, (4, 3))
    cases.append(node_case("matmul on matrices holding the boundaries", "matmul(a, b)", {"a": a, "b": b}, True, rng,
                           first + second, relative=True))
    a, labels = planted("reduce_sum", "a", rng, (3, 4))
    cases.append(node_case("reduce_sum of a matrix holding the boundaries over axis 0, keepdims left out",
                           "reduce_sum(a, 0)", {"a": a}, True, rng, labels, relative=True))
    for title, expression, shape in (("everything, axis and keepdims left out", "reduce_sum(a)", (2, 3, 4)),
                                     ("everything, keepdims=True by name, axis left out",
                                      "reduce_sum(a, keepdims=True)", (3, 3)),
                                     ("axis -1, keepdims left out", "reduce_sum(a, -1)", (2, 3, 4))):
        cases.append(node_case(f"reduce_sum of a {shape_text(shape)} array over {title}", expression,
                               {"a": rng.normal(size=shape)}, True, rng))
    return cases


# ---------------------------------------------------------------- 1b: the fused cross-entropy
# Logits of one example, of a square batch (n = K: a transposed gradient keeps its shape), of a
# taller batch and of a binary task; of moderate size or with entries of ±1000 (without the shift
# exp overflows); the loss's out.grad is 1 or another number (a rule that ignores it shows only
# then); logits.grad starts at zero or holds an earlier gradient. Crossed in full:
# 4 x 2 x 2 x 2 = 32 cases. The moderate cases come first. In every case the rule then runs a
# second time, as a second backward through the same graph runs it (PyTorch's retain_graph): a
# rule that edits what the forward pass saved (P - Y written into the saved softmax) is right
# only the first time.
LOSS_SHAPES = {"one example of 3 classes": (1, 3), "a square batch of 4 examples and 4 classes": (4, 4),
               "6 examples of 3 classes": (6, 3), "5 examples of 2 classes": (5, 2)}
LOSS_SCALES = {"moderate logits": 2.0, "logits of size 1000": 1000.0}
UPSTREAMS = {"out.grad = 1": 1.0, "out.grad = -0.6": -0.6}


EPS = np.finfo(np.float64).eps


def loss_case(logits, labels, upstream, stale, title, rng, drawn=(), relative=False):
    """cross_entropy on `logits` and `labels` (of the dtype they come in), against PyTorch. Where
    `relative`, the loss is judged to 1e-9 of its size beyond the rounding of its row shift
    (64 eps of the rows' largest logit), and each entry of the gradient to 1e-9 of its own size:
    a probability of 1e-17 is not 0. Only P - 1 at the labels' entries keeps an absolute
    allowance of 64 eps, its own rounding."""
    twin = t64(logits)
    loss = F.cross_entropy(twin, torch.from_numpy(labels.astype(np.int64)))
    (grad,) = torch.autograd.grad(loss, (twin,), t64(upstream, grad=False))
    prior = rng.normal(size=logits.shape) if stale else np.zeros(logits.shape)
    value, wanted = loss.item(), prior + grad.numpy()
    n = len(labels)
    at_labels = np.zeros(logits.shape)
    at_labels[np.arange(n), labels.astype(np.int64)] = 1.0
    loss_floor = 64 * EPS * float(np.mean(np.maximum(1.0, np.max(np.abs(logits), axis=1))))
    grad_floor = 64 * EPS * abs(upstream) / n * at_labels + 4 * EPS * np.abs(prior)
    kind = "" if labels.dtype == np.int64 else f" of dtype {labels.dtype}"
    setting = f"cross_entropy on {title}, labels{kind} {labels.tolist()}"

    def compare(got, want, quantity, floor):
        if relative:
            return relative_problem(got, want, quantity, floor=floor)
        return array_problem(got, want, quantity)

    def judge(answer):
        if answer["kind"] != "Tensor":
            return f"{setting}: expected a Tensor, got a {answer['kind']}"
        if answer["prev"] != [0]:
            return (f"{setting}: the loss must be a single node whose _prev is (logits,); its _prev holds "
                    f"{plural(len(answer['prev']), 'entry', 'entries') if isinstance(answer['prev'], list) else answer['prev']}")
        data = as_numbers(answer["data"])
        if data is None or data.shape != ():
            return f"{setting}: the loss's data must be a 0-d array (a scalar), got {describe(answer['data'])}"
        return first_problem(
            relative_problem(data, value, f"{setting}: the loss", floor=loss_floor) if relative else
            float_problem(float(data), value, f"{setting}: the loss"),
            compare(answer["grad"], wanted, f"{setting}: logits.grad after out._backward()", grad_floor),
            compare(answer["grad_again"], wanted + grad.numpy(),
                    f"{setting}: logits.grad after a second out._backward() (a second backward through the same "
                    "graph adds the same gradient again; the rule must leave what the forward pass saved as it "
                    "was)", 2 * grad_floor),
            unchanged(answer["data_after"], logits, f"{setting}: logits.data"))

    return Case("1b", setting, "loss_node", {"logits": logits, "labels": labels, "prior": prior,
                                             "upstream": np.array(upstream)}, judge, drawn=tuple(drawn))


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
    return cases + cases_1b_margins(rng)


# Where students switch formulas or drop what looks negligible: each row's label logit above
# every other by a margin drawn from a band (10 to 20, where exp(-margin) is 2e-9 to 5e-5;
# 20 to 40; far tails of 40 to 690, where a probability is 1e-17 to 1e-300 and not 0, nor yet
# subnormal, where correct formulas part by more than 1e-9), or below the others by 10 to 690
# (a loss of that size). Crossed with the labels' integer dtype (int64,
# as in the notebook, or another integer dtype: int32, uint8, int16, uint64): 4 x 2 = 8 cases on
# 5 examples of 4 classes, logits.grad starting at zero so that tiny entries show, judged entry
# by entry. Then small logits of both signs (3e-9 to 3e-4), and logits holding the contract's
# boundaries (0, ±1e-12, ±5e-324, ±1e12): 3 cases.
MARGINS = {"a margin of 10 to 20 above the other logits": (10.0, 20.0, 1.0),
           "a margin of 20 to 40 above the other logits": (20.0, 40.0, 1.0),
           "far tails, margins of 40 to 690 above the other logits": (40.0, 690.0, 1.0),
           "the label's logit 10 to 690 below the others": (10.0, 690.0, -1.0)}
LABEL_DTYPES = {"int64 labels": (np.int64,), "labels of another integer dtype": (np.int32, np.uint8, np.int16,
                                                                                np.uint64)}


def margin_logits(rng, shape, labels, low, high, side):
    """Logits whose label entry is above (side 1) or below (side -1) every other entry of its row
    by a margin drawn from [low, high] (log-uniformly, so that every decade of the band shows)."""
    logits = rng.normal(size=shape) * 2.0
    for row, label in enumerate(labels):
        gaps = np.exp(rng.uniform(np.log(low), np.log(high), size=shape[1]))
        others = [k for k in range(shape[1]) if k != label]
        if side > 0:
            logits[row, others] = logits[row, label] - gaps[others]
        else:
            logits[row, label] = logits[row, others].min() - gaps[label]
    return logits


def cases_1b_margins(rng):
    cases = []
    for index, ((margin_name, (low, high, side)), (dtype_name, dtypes)) in \
            enumerate(product(MARGINS.items(), LABEL_DTYPES.items())):
        dtype = dtypes[index // 2 % len(dtypes)]
        labels = rng.integers(0, 4, size=5).astype(dtype)
        logits = margin_logits(rng, (5, 4), labels, low, high, side)
        upstream = 1.0 if index % 2 == 0 else -0.6
        cases.append(loss_case(logits, labels, upstream, False, f"5 examples of 4 classes, {margin_name}, "
                               f"{dtype_name}, out.grad = {number(upstream)}", rng, relative=True))
    # Small logits of both signs (3e-9 to 3e-4), as an untrained network's: 1 case.
    labels = rng.integers(0, 3, size=4).astype(np.int64)
    cases.append(loss_case(small(rng, (4, 3)), labels, -0.6, True, "4 examples of 3 classes, logits of size 3e-9 to "
                           "3e-4 of both signs, out.grad = -0.6, stale .grad", rng, relative=True))
    for dtype, stale in ((np.int64, False), (np.uint8, True)):
        logits, labels_drawn = planted("cross_entropy", "logits", rng, (4, 3))
        labels = rng.integers(0, 3, size=4).astype(dtype)
        cases.append(loss_case(logits, labels, 1.0, stale, "4 examples of 3 classes, logits holding 0, ±1e-12, "
                               f"±5e-324 and ±1e12, {'stale' if stale else 'fresh'} .grad", rng, labels_drawn,
                               relative=True))
    return cases


# ---------------------------------------------------------------- 2: backward
# A graph is a list of nodes, leaves first; the probe gives every operation a backward rule of
# its own, so that only the student's backward is tested. Graph shapes:
#   a tensor used twice   H = relu(A @ W) enters H * H, and both add to H's gradient;
#   a bias over rows      A @ W + b with b of shape (k,), copied into every row;
#   a column over columns H * c + H with c of shape (n, 1): H used twice, c broadcast;
#   unequal paths         s feeds the output directly and through s * s, the short path first or
#                         the long one first (the root's parents in either order), so that a node
#                         reached early by a depth-first search from either side is not yet complete;
#   a chain               200 operations in a row, each scaling by -1 or 1 (depth, not width);
#   shared doublings      10 doublings n + n: 1,024 paths through 11 nodes, each rule to run once.
# The root is summed to a scalar, or left a matrix (seeded with ones); the leaves' .grad starts
# at zero or holds a stale gradient that backward must add to. Crossed in full:
# 7 x 2 x 2 = 28 graphs, plus a root that is a leaf itself (its .grad becomes ones, whether it
# held zeros or an earlier gradient): 2 cases.
GRAPHS = {"a tensor used twice": "twice", "a bias broadcast over rows": "bias",
          "a column broadcast over columns": "column", "paths of unequal length, the short one first": "unequal",
          "paths of unequal length, the long one first": "unequal_long",
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
    elif kind in ("unequal", "unequal_long"):
        x = put("leaf", rng.normal(size=(2, 3)))
        s = put("scale", [x], 0.5)
        square = put("mul", [s, s])
        deeper = put("scale", [put("scale", [square], 2.0)], 0.5)
        last = put("add", [s, deeper] if kind == "unequal" else [deeper, s])
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


def engine_grads(spec, priors):
    """Every node's .grad after the notebook's backward on `spec`, where node m's .grad held
    priors[m] beforehand (None: zeros). backward resets nothing but the root, which it seeds with
    ones, so what a node held flows on with what reaches it: node n ends with the derivative of
    sum(root) + sum over m of <m, priors[m]> (the root's own prior left out), which PyTorch
    gives for interior nodes too."""
    nodes = torch_graph(spec)
    root = nodes[-1]
    total = root.sum()
    for node, prior in zip(nodes[:-1], priors[:-1]):
        if prior is not None:
            total = total + (node * t64(prior, grad=False)).sum()
    found = torch.autograd.grad(total, nodes[:-1], allow_unused=True) if len(nodes) > 1 else ()
    grads = [np.zeros(tuple(n.shape)) if g is None else g.numpy() for n, g in zip(nodes[:-1], found)]
    return grads + [np.ones(tuple(root.shape))]


def graph_case(title, spec, priors, repeat=1):
    """backward on `spec`, its nodes' .grad holding `priors` beforehand, run `repeat` times."""
    wanted = engine_grads(spec, priors)
    for _ in range(repeat - 1):  # a second backward meets every .grad the first one left
        wanted = engine_grads(spec, wanted)
    rules = sorted([i for i, (op, *_) in enumerate(spec) if op != "leaf"] * repeat)
    held = [prior is not None and bool(np.any(prior)) for prior in priors]
    names = [(f"leaf {i}" if op == "leaf" else f"node {i} ({op})")
             + (" (its .grad held an earlier gradient)" if held[i] else "") for i, (op, *_) in enumerate(spec)]
    names[-1] = ("the root" if spec[-1][0] != "leaf" else "the root, a leaf") + \
        (" (its .grad held an earlier gradient: backward seeds it with ones)" if held[-1] else "")
    sent = [entry[1] for entry in spec if entry[0] == "leaf"]
    title = f"backward on {title}"
    times = "exactly once" if repeat == 1 else f"exactly once per backward ({repeat} backward calls)"

    def judge(answer):
        # The calls first: a rule run twice or never is the cause of the wrong .grad it leaves,
        # and the more useful thing to tell.
        calls = answer["calls"]
        if sorted(calls) != rules:
            repeated = sorted({i for i in calls if calls.count(i) > repeat})
            missing = sorted({i for i in rules if calls.count(i) < repeat})
            detail = (f"the rule of node {repeated[0]} ran {calls.count(repeated[0])} times" if repeated
                      else f"the rule of node {missing[0]} ran {calls.count(missing[0])} times")
            return f"{title}: backward must call each node's _backward {times}; {detail}"
        got = answer["grads"]
        for name, g, w in zip(names, got, wanted):
            problem = array_problem(g, w, f"{title}: the .grad of {name} after backward")
            if problem:
                return problem
        leaf_data = [d for d, entry in zip(answer["data_after"], spec) if entry[0] == "leaf"]
        return first_problem(*(unchanged(d, s, f"{title}: a leaf's data") for d, s in zip(leaf_data, sent)))

    return Case("2", title, "graph", {"spec": spec, "priors": priors, "repeat": repeat}, judge)


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
    cases.append(graph_case("a root that is a leaf itself, its .grad holding an earlier gradient",
                            [["leaf", rng.normal(size=(3,))]], [rng.normal(size=(3,))]))
    return cases + cases_2_states(rng)


# The state backward meets: every node, the root and the interior ones included, holding a
# gradient already (as after an earlier backward through a graph that is used again: the root is
# seeded with ones, the rest is reset by nothing and flows on), one graph of each shape with the
# root alternately a scalar and a matrix: 7 cases. Roots of every size: 2 cases. And a
# second backward on the same graph, leaves' .grad stale, as a loss whose graph is kept and
# differentiated again: 3 cases.
SECOND_BACKWARD = ("twice", "unequal_long", "bias")


def cases_2_states(rng):
    cases = []
    for index, (graph_name, kind) in enumerate(GRAPHS.items()):
        spec, last = graph_spec(kind, rng)
        if index % 2 == 0:
            spec.append(["total", [last]])
        priors = [rng.normal(size=tuple(node.shape)) for node in torch_graph(spec)]
        cases.append(graph_case(f"{graph_name}, {'a scalar root' if index % 2 == 0 else 'a matrix root'}, every "
                                "node's .grad, the root's and the interior ones' included, holding an earlier "
                                "gradient", spec, priors))
    # A root whose entries have every size a loss or a weighted sum of other activities' checks may
    # have (0, ±5e-324, ±1e-12, ±1e-6, ±1e6, ±1e301; D's sums of contributions reach 1e12): 1 case.
    sizes = np.array([0.0, 5e-324, -5e-324, 1e-12, -1e-12, 1e-6, -1e-6, 1e6, -1e6, 1e301, -1e301, 1.5])
    leaf = (sizes * rng.uniform(1.0, 2.0, size=12)).reshape(3, 4)
    cases.append(graph_case("a matrix root whose entries range from 5e-324 to 1e301 in size, of both signs",
                            [["leaf", leaf], ["scale", [0], 1.0]], [np.zeros((3, 4)), None]))
    # A root of small values (3e-9 to 3e-4, after relu), as B's graphs of small leaves give: 1 case.
    spec, last = graph_spec("bias", rng)
    spec[0][1], spec[2][1] = small(rng, np.shape(spec[0][1])), small(rng, np.shape(spec[2][1]))
    cases.append(graph_case("a bias broadcast over rows, inputs and bias of size 3e-9 to 3e-4, a matrix root", spec,
                            [np.zeros(np.shape(entry[1])) if entry[0] == "leaf" else None for entry in spec]))
    for kind in SECOND_BACKWARD:
        spec, last = graph_spec(kind, rng)
        spec.append(["total", [last]])
        priors = [rng.normal(size=np.shape(entry[1])) if entry[0] == "leaf" else None for entry in spec]
        name = next(name for name, k in GRAPHS.items() if k == kind)
        cases.append(graph_case(f"{name}, a scalar root, backward called twice on it", spec, priors, repeat=2))
    return cases


# ---------------------------------------------------------------- 2: numerical_grad
# f() is a NumPy expression of one to three arrays, written so that its second derivatives are
# large (exp(2A) and cubes): a one-sided difference, off by about h f''/2, then misses by far more
# than the tolerance, while a central one stays within it. One expression takes a single array;
# the others several, one of them broadcast. The step is the default 1e-6 (compared with PyTorch's
# exact gradient, within 1e-7 absolute), 1e-4 or 1e-2 (compared with the central difference itself,
# computed here, within 1e-8: this also checks that h is used). Crossed in full: 3 x 3 = 9 cases,
# on C-ordered arrays. Then the arrays as NumPy also hands them out, laid out otherwise in memory
# (the probe makes them so): a transposed view, a Fortran-ordered array, all but the last column
# of a wider array. reshape(-1) or ravel() copies such an array (when it has two axes or more),
# so an estimate that perturbs the flattened entries leaves what f reads unchanged. One
# expression each, default step: 3 cases.
EXPRESSIONS = {
    "sum(exp(2A)) of one array": ("exp(2 * A).sum()", {"A": (2, 3)}),
    "sum(exp(2A) * B) + sum(B^3) with B broadcast over rows": ("(exp(2 * A) * B).sum() + (B * B * B).sum()",
                                                               {"A": (3, 2), "B": (2,)}),
    "sum(A @ W)^2 / 4 + sum(c^3) of three arrays": ("((A @ W).sum() ** 2) / 4 + (c * c * c).sum()",
                                                     {"A": (2, 3), "W": (3, 2), "c": (2, 1)}),
}
STEPS = {"the default step": None, "h = 1e-4": 1e-4, "h = 1e-2": 1e-2}
LAYOUTS = {"transposed views": "transposed", "Fortran-ordered arrays": "fortran",
           "all but the last column of a wider array": "sliced"}


def differences(f, arrays, h):
    """The central differences with step h of f(), which reads `arrays`, entry by entry."""
    found = []
    for array in arrays:
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


def central(expression, arrays, h):
    """The central differences of the expression, computed here, entry by entry."""
    held = {name: np.array(value, dtype=np.float64) for name, value in arrays.items()}
    return differences(lambda: float(eval(expression, {}, {"exp": np.exp, "tanh": np.tanh, **held})), held.values(), h)


def numeric_case(title, expression, arrays, h, layout="C", drawn=()):
    if h is None:
        twins = {name: t64(value) for name, value in arrays.items()}
        out = eval(expression, {}, {"exp": torch.exp, **twins})
        wanted, tol = [g.numpy() for g in torch.autograd.grad(out, list(twins.values()))], 1e-7
    else:
        wanted, tol = central(expression, arrays, h), 1e-8
    names = list(arrays)
    title = f"numerical_grad of {title} with {'h = ' + number(h) if h else 'the default h'}"
    if layout != "C":
        title += f", the arrays as {next(name for name, kind in LAYOUTS.items() if kind == layout)}"

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

    return Case("2", title, "numeric", {"expression": expression, "arrays": arrays, "h": h, "layout": layout},
                judge, drawn=tuple(drawn))


def cases_2_numeric(rng):
    cases = []
    for (name, (expression, shapes)), (step_name, h) in product(EXPRESSIONS.items(), STEPS.items()):
        arrays = {key: rng.uniform(-0.3, 1.0, size=shape) for key, shape in shapes.items()}
        cases.append(numeric_case(name, expression, arrays, h))
    for (name, (expression, shapes)), layout in zip(EXPRESSIONS.items(), LAYOUTS.values()):
        arrays = {key: rng.uniform(-0.3, 1.0, size=shape) for key, shape in shapes.items()}
        cases.append(numeric_case(name, expression, arrays, None, layout))
    return cases + cases_2_numeric_boundaries(rng)


# The contract's boundaries: arrays holding 0, ±1e-12, ±5e-324 and ±1e12 beside small entries of
# both signs (3e-9 to 3e-4, as gradient checks of small parameters feed it; through tanh, so that f
# stays of order 1 and its differences mean something at every entry), at h = 1e-4; and the step
# at its own boundaries, 5e-324 (x ± h is x: every estimate 0, unless h is ignored), 1e-12 and 1,
# each compared with the central differences computed here at that step. 4 cases.
BOUNDED = "(tanh(A) * tanh(B)).sum()"
STEP_BOUNDARIES = {5e-324: ("a subnormal positive value", "the low end 0"),
                   1e-12: ("a tiny positive value", "just inside the low end 0"), 1.0: ("a large positive value",)}


def cases_2_numeric_boundaries(rng):
    A, labels = planted("numerical_grad", "arrays", rng, (3, 4), base=small(rng, (3, 4)))
    cases = [numeric_case("sum(tanh(A) * tanh(B)), A holding 0, ±1e-12, ±5e-324 and ±1e12", BOUNDED,
                          {"A": A, "B": rng.normal(size=(4,))}, 1e-4, drawn=labels)]
    for h, names in STEP_BOUNDARIES.items():
        arrays = {"A": rng.normal(size=(2, 3)), "B": rng.normal(size=(3,))}
        cases.append(numeric_case("sum(tanh(A) * tanh(B))", BOUNDED, arrays, h,
                                  drawn=labels_of("numerical_grad", "h", names)))
    return cases


# ---------------------------------------------------------------- 3: zero_grad, sgd_step, train_epoch
# zero_grad and sgd_step alone, on one parameter, on three of different shapes, or on a 0-d
# parameter beside a matrix (p.grad[:] or p.data[:] does not index a 0-d array); zero_grad on
# .grad holding finite numbers or inf and NaN (the probe puts them there, since NaN equals
# nothing, itself included; multiplying by 0 leaves NaN), sgd_step at two learning rates:
# 3 x 2 + 3 x 2 = 12 cases. sgd_step updates in place: the arrays the parameters' .data held
# before the step (those an optimiser's or a caller's references point to) must hold the new
# values. Then train_epoch on a linear model or a network with one ReLU layer; 12 examples in
# batches of 4 (equal batches), 10 examples in batches of 4 (a smaller last batch) or 5 examples
# in a batch of 8 (one batch); parameters whose .grad is fresh or stale (a missing zero_grad shows
# from the first batch then). Crossed in full: 2 x 3 x 2 = 12 epochs, compared update by update
# (every batch loss, then the parameters) with a float64 PyTorch copy.
PARAMETER_SETS = {"one parameter": [(3, 2)], "three parameters of different shapes": [(2, 3), (3,), (1, 4)],
                  "a 0-d parameter and a (2, 2) matrix": [(), (2, 2)]}
GRAD_VALUES = {"finite .grad": False, ".grad holding inf and NaN": True}
RATES = {"lr 0.1": 0.1, "lr 1.5": 1.5}
MODELS = {"a linear model [3, 3]": [3, 3], "a network [3, 4, 2] with a ReLU layer": [3, 4, 2]}
BATCHING = {"12 examples in batches of 4": (12, 4), "10 examples in batches of 4 (the last one smaller)": (10, 4),
            "5 examples in one batch of 8": (5, 8)}
STALE = {"fresh .grad": False, "stale .grad": True}


def zero_case(title, datas, grads, unbounded, drawn=(), nan_at=()):
    title = f"zero_grad on {title}"

    def judge(answer):
        return first_problem(
            *(relative_problem(g, np.zeros(np.shape(d)), f"{title}: parameter {i}'s .grad after zero_grad (zeros "
                               "exactly, of the parameter's shape)")
              for i, (g, d) in enumerate(zip(answer["grads"], datas))),
            *(unchanged(after, d, f"{title}: parameter {i}'s .data") for i, (after, d) in
              enumerate(zip(answer["datas"], datas))))

    return Case("3", title, "zero", {"datas": datas, "grads": grads, "unbounded": unbounded,
                                     "nan_at": np.array(nan_at, dtype=np.int64).reshape(-1, 2)},
                judge, drawn=tuple(drawn))


def step_case(title, datas, grads, lr, drawn=()):
    """sgd_step, judged to the rounding of data - lr * grad itself (4 eps of its terms): a step of
    lr 1e-12 moves data by 1e-12, which an absolute tolerance would not see."""
    title = f"sgd_step on {title}, lr {number(lr)}{' (an int)' if isinstance(lr, int) else ''}"
    wanted = [d - lr * g for d, g in zip(datas, grads)]
    floors = [4 * EPS * (np.abs(d) + np.abs(lr * g)) for d, g in zip(datas, grads)]

    def judge(answer):
        return first_problem(
            *(relative_problem(after, w, f"{title}: parameter {i}'s .data after the step (data - lr * grad)",
                               rtol=0.0, floor=f)
              for i, (after, w, f) in enumerate(zip(answer["datas"], wanted, floors))),
            *(unchanged(after, g, f"{title}: parameter {i}'s .grad") for i, (after, g) in
              enumerate(zip(answer["grads"], grads))),
            *(relative_problem(held, w, f"{title}: the array parameter {i}'s .data held before the step "
                               "(sgd_step updates it in place, so that whoever holds it sees the step)", rtol=0.0,
                               floor=f)
              for i, (held, w, f) in enumerate(zip(answer["held"], wanted, floors))))

    return Case("3", title, "step", {"datas": datas, "grads": grads, "lr": lr}, judge, drawn=tuple(drawn))


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


def epoch_case(title, arrays, stale, X, y, order, batch_size, lr, drawn=()):
    """train_epoch against PyTorch, update by update; where lr is tiny, each parameter's move
    (after - before) is judged too, to 1e-6 of its size beyond 64 eps of the parameter: a
    move of 1e-12 must happen."""
    losses, params = torch_epoch(arrays, X, y, order, batch_size, lr)
    title = f"train_epoch with {title}, lr {number(lr)}"
    tiny = lr < 1e-6

    def moved(got, want, before, quantity):
        if not tiny or as_numbers(got) is None or np.shape(got) != np.shape(want):
            return None
        return relative_problem(as_numbers(got) - before, want - before, quantity, rtol=1e-6,
                                floor=64 * EPS * np.abs(before))

    def judge(answer):
        got = answer["losses"]
        if not isinstance(got, list) or len(got) != len(losses):
            return f"{title}: expected a list of {plural(len(losses), 'batch loss', 'batch losses')}, got {describe(got)}"
        for number_, (g, w) in enumerate(zip(got, losses), start=1):
            problem = float_problem(g, w, f"{title}: the loss of batch {number_} of {len(losses)} (before its update)")
            if problem:
                return problem
        return first_problem(*(array_problem(g, w, f"{title}: parameter {i} after the epoch")
                               for i, (g, w) in enumerate(zip(answer["params"], params))),
                             *(moved(g, w, a, f"{title}: how far parameter {i} moved in the epoch (every batch "
                                              "takes its step, however small lr is)")
                               for i, (g, w, a) in enumerate(zip(answer["params"], params, arrays))))

    return Case("3", title, "epoch", {"arrays": arrays, "stale": stale, "X": X, "y": y, "order": order,
                                      "batch_size": batch_size, "lr": lr}, judge, drawn=tuple(drawn))


def network_arrays(sizes, rng, bias=0.2):
    arrays = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        arrays += [rng.normal(size=(fan_in, fan_out)) * np.sqrt(2.0 / fan_in), bias * rng.normal(size=fan_out)]
    return arrays


def cases_3(rng):
    cases = []
    for (name, shapes), (values_name, unbounded) in product(PARAMETER_SETS.items(), GRAD_VALUES.items()):
        cases.append(zero_case(f"{name}, {values_name}", [rng.normal(size=s) for s in shapes],
                               [rng.normal(size=s) for s in shapes], unbounded))
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
    return cases + cases_3_boundaries(rng)


# The contracts' boundaries: zero_grad on .grad holding 0, ±1e-12, ±5e-324, ±1e12, ±inf and NaN
# (and .data holding them too, to be left exactly as it was); sgd_step on parameters holding
# 0, ±1e-12, ±5e-324 and ±1e12 at lr 0.1, at the step's boundaries 5e-324, 1e-12 and 1, and at
# lr 2 given as an int; train_epoch at lr 5e-324, 1e-12 and 1 (one batch of 4 examples, then a
# smaller one of 2, on the network with a ReLU layer). 1 + 5 + 3 = 9 cases.
def cases_3_boundaries(rng):
    finite = [name for name in VALUES["zero_grad", "params"].boundaries() if name != "nan"]
    datas, first = zip(*(planted("zero_grad", "params", rng, shape, finite) for shape in ((3, 4), (2, 5))))
    grads, second = zip(*(planted("zero_grad", "params", rng, shape) for shape in ((3, 4), (2, 5))))
    # NaN goes in by the probe (nan_at): a case's arguments must compare equal to themselves.
    nan_at = np.array([[k, i] for k, g in enumerate(grads) for i in np.flatnonzero(np.isnan(g))], dtype=np.int64)
    grads = [np.nan_to_num(g, nan=0.0, posinf=np.inf, neginf=-np.inf) for g in grads]
    cases = [zero_case("two parameters whose .data hold 0, ±1e-12, ±5e-324, ±1e12 and ±inf, and whose .grad hold "
                       "these and NaN", list(datas), list(grads), False, sum(first + second, ()), nan_at)]
    datas, first = zip(*(planted("sgd_step", "params", rng, shape) for shape in ((3, 4), (2, 4))))
    grads, second = zip(*(planted("sgd_step", "params", rng, shape) for shape in ((3, 4), (2, 4))))
    cases.append(step_case("two parameters whose .data and .grad hold 0, ±1e-12, ±5e-324 and ±1e12", list(datas),
                           list(grads), 0.1, sum(first + second, ())))
    shapes = PARAMETER_SETS["three parameters of different shapes"]
    for lr, names in list(STEP_BOUNDARIES.items()) + [(2, ())]:
        cases.append(step_case("three parameters of different shapes", [rng.normal(size=s) for s in shapes],
                               [rng.normal(size=s) for s in shapes], lr, labels_of("sgd_step", "lr", names)))
    sizes = MODELS["a network [3, 4, 2] with a ReLU layer"]
    for lr, names in STEP_BOUNDARIES.items():
        arrays = network_arrays(sizes, rng)
        X, y = rng.normal(size=(6, sizes[0])), rng.integers(0, sizes[-1], size=6).astype(np.int64)
        cases.append(epoch_case(f"a network {sizes} with a ReLU layer, 6 examples in batches of 4, fresh .grad",
                                arrays, [np.zeros(np.shape(a)) for a in arrays], X, y,
                                rng.permutation(6).astype(np.int64), 4, lr, labels_of("train_epoch", "lr", names)))
    return cases


# ---------------------------------------------------------------- 4: the MLP and its two checkers
# init_mlp: networks without a hidden layer, with one and with two, each from its own seed:
# 3 cases (shapes, order [W1, b1, W2, b2, ...], He scale, zero biases, zero .grad).
# Then layers of width 1, where a bias of shape () or (1, 1) instead of (1,) and a weight squeezed
# to a vector show: [1, 4, 1] and [3, 1, 2]. 5 cases.
INIT_SIZES = {"[2, 3] (no hidden layer)": ([2, 3], 5), "[3, 5, 2]": ([3, 5, 2], 6), "[4, 6, 5, 3]": ([4, 6, 5, 3], 7),
              "[1, 4, 1] (an input and an output of width 1)": ([1, 4, 1], 8),
              "[3, 1, 2] (a hidden layer of width 1)": ([3, 1, 2], 9)}
# mlp_forward: the same three depths, with biases away from zero, given X as an array or as a
# Tensor (as_tensor passes it through, and its .grad then receives a gradient too); the logits,
# then every parameter's gradient through cross_entropy: 3 x 2 = 6 cases; and X holding the
# contract's boundaries, as an array and as a Tensor: 2 cases.
# gradient_check: a correct network (with .grad fresh, or stale: it must clear it) at the default
# step and at h = 1e-4 (a one-sided difference fails there): 4 cases. A network whose gradient is
# wrong at one entry of its last, first or a middle parameter, on the spiral's inputs (gradients
# below 1, where the relative and the absolute error agree) or on inputs 40 times as large
# (gradients well above 1 at the W faults, where only the relative error is right): 3 x 2 = 6
# cases. One such network checked with h = 1e-4, compared with central differences at that step
# computed here (the bend is 100 steps wide, so the estimate at the fault moves with h: a checker
# that ignores h shows): 1 case. And the notebook's MLP: 1 case. 12 cases.
#
# Where the fault is must not be readable from what the checker receives: a network that said
# which parameter it breaks (an attribute, a name, a node of its own) could be "checked" by
# reading that and never differencing anything. So every network a checker sees, correct or
# faulty, is the same probes._Bent: each parameter bends by depth (p - centre)
# exp(-((p - centre) / width)^2) on its way into the forward pass, while the backward rule gives
# the plain network's gradient (the whole network is one node of the submission's Tensor, which
# the probe computes). Correct and faulty networks differ only in their numbers: in a faulty
# one, one entry of one parameter is exactly `centre` (its value is untouched, its true slope
# 1 + depth); in a correct one no entry lies within BEND_CLEAR of `centre`, where the bend is
# below 1e-40. The grader alone knows which entry it placed; from inside the sandbox only the
# derivative of the forward pass tells, and a finite difference is how the activity asks for it.
# The expected worst error comes from PyTorch on the same bent network, differentiated through
# the bend.
FORWARD_SIZES = {"[2, 3] (no hidden layer)": [2, 3], "[3, 4, 3]": [3, 4, 3], "[2, 5, 4, 3]": [2, 5, 4, 3]}
CHECK_STALE = {"fresh .grad": False, "stale .grad (it must be cleared first)": True}
CHECK_STEPS = {"the default step": None, "h = 1e-4": 1e-4}
INPUT_KINDS = {"X an array": False, "X a Tensor": True}
FAULTS = {"its last parameter (b2)": 3, "its first parameter (W1)": 0, "a middle parameter (W2)": 2}
INPUT_SCALES = {"the spiral's inputs (gradients below 1)": 1.0, "inputs 40 times as large (gradients above 1)": 40.0}
BEND_WIDTH, BEND_DEPTH, BEND_CLEAR = 0.01, 2.0, 0.1  # BEND_CLEAR is 10 widths: exp(-100)


def initialised(sizes, seed):
    """The arrays of init_mlp(sizes, np.random.default_rng(seed)), the notebook's MLP's parameters."""
    generator = np.random.default_rng(seed)
    arrays = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        arrays += [generator.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in), np.zeros(fan_out)]
    return arrays


def init_case(title, sizes, seed):
    wanted = initialised(sizes, seed)
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
            quantity = (f"{title}: {name} (order W1, b1, W2, ...; W ~ N(0, 2 / fan_in) of shape (fan_in, fan_out), "
                        "drawn layer by layer; b zeros of shape (fan_out,), drawing nothing)")
            problem = first_problem(
                array_problem(p["data"], w, quantity, atol=1e-12, rtol=1e-12) if name[0] == "W" else
                relative_problem(p["data"], w, quantity),
                relative_problem(p["grad"], np.zeros(w.shape), f"{title}: {name}.grad (zeros exactly)"))
            if problem:
                return problem
        return None

    return Case("4", title, "init", {"sizes": sizes, "seed": seed}, judge)


def network_loss(leaves, inputs, y, no_relu=False, bend=None):
    """(logits, loss) of the network whose parameters are the tensors `leaves`."""
    seen = leaves if bend is None else [bent(leaf, *bend) for leaf in leaves]
    h = inputs
    for j in range(0, len(leaves), 2):
        h = h @ seen[j] + seen[j + 1]
        if j + 2 < len(leaves) and not no_relu:
            h = torch.relu(h)
    return h, F.cross_entropy(h, torch.from_numpy(y))


def torch_network(arrays, X, y, no_relu=False, bend=None, input_grad=False):
    """(logits, loss, gradients of the parameters, then of X when input_grad) in PyTorch."""
    leaves, inputs = [t64(w) for w in arrays], t64(X, grad=input_grad)
    h, loss = network_loss(leaves, inputs, y, no_relu, bend)
    grads = torch.autograd.grad(loss, leaves + [inputs] if input_grad else leaves)
    return h.detach().numpy(), loss.item(), [g.numpy() for g in grads]


def forward_case(title, arrays, X, y, tensor_input, drawn=()):
    """mlp_forward against PyTorch; each quantity within 1e-9 of its largest entry (X may hold
    1e12 next to 5e-324)."""
    logits, _, grads = torch_network(arrays, X, y, input_grad=tensor_input)
    title = f"mlp_forward for {title} on {len(X)} examples, {'X a Tensor' if tensor_input else 'X an array'}"

    def compare(got, want, quantity):
        return array_problem(got, want, quantity, atol=1e-9 * max(1.0, float(np.max(np.abs(want)))))

    def judge(answer):
        if answer["kind"] != "Tensor":
            return f"{title}: expected the logits as a Tensor, got a {answer['kind']}"
        return first_problem(
            compare(answer["data"], logits, f"{title}: the logits (relu after every layer but the last)"),
            *(compare(g, w, f"{title}: the gradient of parameter {i} after cross_entropy(...).backward()")
              for i, (g, w) in enumerate(zip(answer["grads"], grads))),
            tensor_input and compare(answer["input_grad"], grads[-1], f"{title}: X.grad after cross_entropy"
                                     "(...).backward() (as_tensor(X) keeps a Tensor X in the graph)"))

    return Case("4", title, "forward_pass", {"arrays": arrays, "X": X, "y": y, "tensor_input": tensor_input}, judge,
                drawn=tuple(drawn))


def bent(p, centre, width, depth):
    """The value through which probes._Bent feeds a parameter to its network, in PyTorch."""
    offset = p - centre
    return p + depth * offset * torch.exp(-(offset / width) ** 2)


def bent_network(arrays, rng, fault=None):
    """(arrays, bend) for a _Bent network: `fault` = parameter index whose largest-gradient
    entry becomes the bend's centre, or None for a centre that no entry comes near. Entries
    within BEND_CLEAR of the centre (the placed one aside) are moved 2 BEND_CLEAR away."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    flat = np.concatenate([a.ravel() for a in arrays])
    kept = None
    if fault is None:
        centre = float(rng.uniform(flat.min(), flat.max()))
    else:
        kept = (fault, int(np.argmax(np.abs(arrays[fault]).ravel())))
        centre = float(arrays[fault].ravel()[kept[1]])
    for k, a in enumerate(arrays):
        near = np.abs(a - centre) < BEND_CLEAR
        if kept is not None and k == kept[0]:
            near.ravel()[kept[1]] = False
        a[near] += np.where(a[near] >= centre, 2 * BEND_CLEAR, -2 * BEND_CLEAR)
    return arrays, (centre, BEND_WIDTH, BEND_DEPTH)


def worst_error(arrays, X, y, bend, h=None):
    """The worst |numeric - engine| / max(1, |engine|) on a _Bent network: numeric is the true
    gradient through the bend (h None) or its central differences with step h, engine the one its
    backward rule gives (the plain network's)."""
    _, _, engine = torch_network(arrays, X, y)
    if h is None:
        _, _, numeric = torch_network(arrays, X, y, bend=bend)
    else:
        moved = [np.array(a, dtype=np.float64) for a in arrays]
        # torch.from_numpy shares `moved`, so each difference sees the entry it moved; no graph is
        # recorded, since only the loss is needed, twice per entry.
        leaves, inputs = [torch.from_numpy(a) for a in moved], t64(X, grad=False)
        with torch.no_grad():
            numeric = differences(lambda: network_loss(leaves, inputs, y, bend=bend)[1].item(), moved, h)
    return max(float(np.max(np.abs(t - e) / np.maximum(1.0, np.abs(e)))) for t, e in zip(numeric, engine))


def check_case(title, arrays, stale, X, y, h, bend, faulty=False, differenced=None):
    """gradient_check on a _Bent network; `differenced`: the step of the central differences the
    expected worst error is computed with when the checker runs at its default (a deep bend's
    curvature puts the exact slope beyond the judge's tolerance of what a difference gives)."""
    title = f"gradient_check on {title}" + (f", h = {number(h)}" if faulty and h else "")
    worst = worst_error(arrays, X, y, bend, (h or differenced) if faulty else None)

    def judge(answer):
        result = answer["result"]
        if isinstance(result, (bool, np.bool_)) or not isinstance(result, (int, float, np.floating)):
            return f"{title}: expected the worst error as a float, got {describe(result)}"
        if faulty:
            problem = float_problem(result, worst, f"{title}: the worst error over every entry of every parameter",
                                    tol=1e-6)
        else:
            problem = None if result < 1e-7 else (f"{title}: returned {number(result)} for a correct network; "
                                                  "central differences agree with it to better than 1e-7")
        return problem or first_problem(*(unchanged(after, a, f"{title}: parameter {i}'s .data after the check")
                                          for i, (after, a) in enumerate(zip(answer["after"], arrays))))

    return Case("4", title, "checked", {"arrays": arrays, "stale": stale, "X": X, "y": y, "h": h, "bend": bend},
                judge)


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
                return "{}: {} is {}, expected {}".format(title, name, *apart(got, want))
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


KINK_CLEAR = 1e-2  # a difference step of at most 1e-4 moves no pre-activation across ReLU's kink


def clear_of_kinks(arrays, X):
    """Whether no hidden pre-activation of the ReLU network `arrays` on X lies within KINK_CLEAR
    of 0: across ReLU's kink a central difference is off by far more than any gradient check's
    tolerance, whatever the engine, for some draws of the seed."""
    h = X
    for j in range(0, len(arrays) - 2, 2):
        h = h @ arrays[j] + arrays[j + 1]
        if np.min(np.abs(h)) <= KINK_CLEAR:
            return False
        h = np.maximum(h, 0.0)
    return True


def kink_free(sizes, X, rng, fault=None):
    """bent_network's (arrays, bend) for `sizes`, drawn again until it is clear of kinks on X."""
    while True:
        arrays, bend = bent_network(network_arrays(sizes, rng), rng, fault=fault)
        if clear_of_kinks(arrays, X):
            return arrays, bend


def kink_free_spiral(arrays, rng):
    """spiral_points drawn again until the network `arrays` is clear of kinks on them."""
    while True:
        X, y = spiral_points(3, rng)
        if clear_of_kinks(arrays, X):
            return X, y


def large_fault(sizes, X, y, rng, index):
    """kink_free's faulty network, drawn again until the engine's gradient at the fault is at
    least 1 (W faults on large inputs): there |numeric - engine| is 2 |engine| and the relative
    error 2, so only a checker that divides by max(1, |engine|) returns the worst error."""
    while True:
        arrays, bend = kink_free(sizes, X, rng, fault=index)
        if index == len(arrays) - 1 or worst_error(arrays, X, y, bend) > 2 - 1e-6:
            return arrays, bend


def cases_4(rng):
    cases = [init_case(name, sizes, seed) for name, (sizes, seed) in INIT_SIZES.items()]
    for (name, sizes), tensor_input in product(FORWARD_SIZES.items(), INPUT_KINDS.values()):
        X, y = spiral_points(3, rng)
        X = np.column_stack([X, rng.normal(size=(len(X), sizes[0] - 2))]) if sizes[0] > 2 else X
        cases.append(forward_case(name, network_arrays(sizes, rng), X, y, tensor_input))
    # X holding the contract's boundaries (0, ±1e-12, ±5e-324, ±1e12), as an array and as a Tensor.
    for tensor_input in INPUT_KINDS.values():
        X, labels = planted("mlp_forward", "X", rng, (9, 3))
        y = rng.integers(0, 3, size=9).astype(np.int64)
        cases.append(forward_case("[3, 4, 3], X holding 0, ±1e-12, ±5e-324 and ±1e12", network_arrays([3, 4, 3], rng),
                                  X, y, tensor_input, labels))
    X, y = spiral_points(3, rng)
    sizes = [2, 5, 3]
    for (stale_name, stale), (step_name, h) in product(CHECK_STALE.items(), CHECK_STEPS.items()):
        arrays, bend = kink_free(sizes, X, rng)
        grads = [rng.normal(size=np.shape(a)) if stale else np.zeros(np.shape(a)) for a in arrays]
        cases.append(check_case(f"a correct network {sizes}, {stale_name}, {step_name}", arrays, grads, X, y, h,
                                bend))
    zeros = [np.zeros(np.shape(a)) for a in network_arrays(sizes, np.random.default_rng(0))]
    for (which, index), (scale_name, scale) in product(FAULTS.items(), INPUT_SCALES.items()):
        arrays, bend = large_fault(sizes, X * scale, y, rng, index) if scale > 1 else kink_free(sizes, X, rng, index)
        cases.append(check_case(f"a network {sizes} whose backward pass is wrong at one entry of {which}, on "
                                f"{scale_name}", arrays, zeros, X * scale, y, None, bend, faulty=True))
    arrays, bend = large_fault(sizes, X * 40.0, y, rng, 0)
    cases.append(check_case(f"a network {sizes} whose backward pass is wrong at one entry of its first parameter, on "
                            "inputs 40 times as large", arrays, zeros, X * 40.0, y, 1e-4, bend, faulty=True))
    # A fault 1000 times the gradient (the bend 500 times as deep): the worst error is about 1000,
    # and a checker that caps or clips what it returns shows. 1 case.
    arrays, (centre, width, _) = large_fault(sizes, X * 40.0, y, rng, 2)
    cases.append(check_case(f"a network {sizes} whose backward pass is wrong at one entry of a middle parameter by "
                            "a factor of 1000, on inputs 40 times as large", arrays, zeros, X * 40.0, y, None,
                            (centre, width, 1000.0), faulty=True, differenced=1e-6))
    # The notebook's own network is fixed by its seed, so its inputs are drawn clear of its kinks.
    cases.append(mlp_check_case([2, 4, 3], 8, *kink_free_spiral(initialised([2, 4, 3], 8), rng)))
    return cases


# ---------------------------------------------------------------- 5: torch_witness
# A correct network with fresh or stale .grad; networks whose hidden layers skip their ReLU (a
# wrong forward pass: both gaps known), drawn so that the engine's loss comes out above PyTorch's
# or below it (a gap that is a signed difference is right only in the first); and networks whose
# gradient for the last, the first or a middle parameter is scaled (a wrong backward pass):
# 2 + 2 + 3 = 7 cases.
LOSS_SIDES = {"above": 1.0, "below": -1.0}
SCALED = {"the last": (5, 2.0), "the first": (0, 0.25), "a middle": (3, 0.5)}


def skipped_relu(sizes, X, y, rng, side):
    """network_arrays(sizes), drawn again until the loss without the hidden ReLUs minus the loss
    with them has the sign `side`."""
    while True:
        arrays = network_arrays(sizes, rng)
        if side * (torch_network(arrays, X, y, no_relu=True)[1] - torch_network(arrays, X, y)[1]) > 1e-3:
            return arrays


def cases_5(rng):
    cases = []
    X, y = spiral_points(3, rng)
    sizes = [2, 4, 4, 3]
    for stale_name, stale in CHECK_STALE.items():
        arrays = network_arrays(sizes, rng)
        grads = [rng.normal(size=np.shape(a)) if stale else np.zeros(np.shape(a)) for a in arrays]
        cases.append(witness_case(f"a correct network {sizes}, {stale_name}", arrays, grads, X, y))
    zeros = [np.zeros(np.shape(a)) for a in network_arrays(sizes, np.random.default_rng(0))]
    for side_name, side in LOSS_SIDES.items():
        cases.append(witness_case(f"a network {sizes} whose hidden layers skip their ReLU (a wrong forward pass; "
                                  f"the engine's loss {side_name} PyTorch's)", skipped_relu(sizes, X, y, rng, side),
                                  zeros, X, y, no_relu=True))
    for which, (index, factor) in SCALED.items():
        cases.append(witness_case(f"a network {sizes} whose gradient for {which} parameter is multiplied by "
                                  f"{number(factor)} (a wrong backward pass)", network_arrays(sizes, rng), zeros,
                                  X, y, scaled=index, factor=factor))
    return cases


# ---------------------------------------------------------------- A: adam_step against torch.optim.Adam
# Hyper-parameters: PyTorch's defaults; other betas and eps; an eps as large as sqrt(v) (gradients
# of size 1e-3), where adding it inside or outside the square root differs; beta2 = 0 (v is the
# last squared gradient). Parameter sets: one matrix, a matrix with a vector, a 0-d parameter.
# Each case runs 5 steps with fresh random gradients (a zero entry included) and is judged step
# by step, step 1 first. Crossed: 4 x 3 = 12 cases, every step taken with one state.
ADAM_SETTINGS = {"PyTorch's defaults (lr 0.001, betas (0.9, 0.999), eps 1e-8)": (1e-3, (0.9, 0.999), 1e-8, 1.0),
                 "lr 0.02, betas (0.8, 0.95), eps 1e-6": (0.02, (0.8, 0.95), 1e-6, 1.0),
                 "lr 0.5, betas (0.95, 0.9), eps 0.002, gradients of size 1e-3": (0.5, (0.95, 0.9), 2e-3, 1e-3),
                 "lr 0.1, betas (0.7, 0.0), eps 1e-8": (0.1, (0.7, 0.0), 1e-8, 1.0)}
ADAM_PARAMETERS = {"one (3, 4) matrix": [(3, 4)], "a (2, 3) matrix and a (3,) vector": [(2, 3), (3,)],
                   "a 0-d parameter": [()]}
ADAM_STEPS = 5
# Which state dict each of the 5 steps is given (a new number: a new, empty dict). Besides one
# state throughout: a fresh state after step 2 on the same, already trained Tensors (a restart,
# as a new torch.optim.Adam starts from zero moments and step 1), and two states taking turns
# over the same Tensors (two optimisers, each with moments and a step count of its own). Only
# these show moments or step counts kept on the Tensors instead of in `state`. Crossed with the
# parameter sets at the second setting (large bias corrections): 2 x 3 = 6 cases; 18 in all.
ADAM_HISTORIES = {"one state for every step": [0, 0, 0, 0, 0],
                  "a fresh state after step 2, on the Tensors trained so far": [0, 0, 1, 1, 1],
                  "two states taking turns over the same Tensors": [0, 1, 0, 1, 1]}
ADAM_HISTORY_SETTING = "lr 0.02, betas (0.8, 0.95), eps 1e-6"


def adam_case(title, datas, grads, lr, betas, eps, history, drawn=(), defaults=False):
    """adam_step against torch.optim.Adam, step by step; with `defaults`, betas and eps are left
    out of the call (PyTorch's defaults are what the notebook's signature gives). Where lr is
    tiny, how far each parameter moved is judged too, to 1e-6 of the move beyond 64 eps of the
    parameter: a move of 1e-12 per step must happen."""
    leaves = [t64(d) for d in datas]
    optimisers = {}  # torch.optim.Adam keeps its state per optimiser, as adam_step keeps it per dict
    trail = []
    for step_grads, which in zip(grads, history):
        for leaf, g in zip(leaves, step_grads):
            leaf.grad = torch.tensor(g)
        if which not in optimisers:
            optimisers[which] = torch.optim.Adam(leaves, lr=lr, betas=betas, eps=eps)
        optimisers[which].step()
        trail.append([leaf.detach().numpy().copy() for leaf in leaves])
    title = f"adam_step with {title}"
    advice = "" if len(set(history)) == 1 else ("; a new state dict starts from zero moments and step 1, and never "
                                                "shares them with another: keep the moments and the step count in "
                                                "`state`, not on the Tensors")

    if defaults:
        title += ", betas and eps left at their defaults"

    def moved(got, want, before, quantity):
        if lr >= 1e-6 or as_numbers(got) is None or np.shape(got) != np.shape(want):
            return None
        return relative_problem(as_numbers(got) - before, want - before, quantity, rtol=1e-6,
                                floor=64 * EPS * np.abs(before))

    def judge(answer):
        if not isinstance(answer, list) or len(answer) != len(trail):
            return f"{title}: the probe expected {len(trail)} steps, got {describe(answer)}"
        for step, (got, want, sent) in enumerate(zip(answer, trail, grads), start=1):
            problem = first_problem(
                *(array_problem(d, w, f"{title}: parameter {i} after step {step} of {len(trail)} (torch.optim.Adam "
                                "on the same gradients)") for i, (d, w) in enumerate(zip(got["datas"], want))),
                *(moved(d, w, before, f"{title}: how far parameter {i} moved by step {step} (every step moves it "
                        "by about lr, however small lr is)") for i, (d, w, before) in
                  enumerate(zip(got["datas"], want, datas))),
                *(unchanged(g, s, f"{title}: parameter {i}'s .grad after step {step}")
                  for i, (g, s) in enumerate(zip(got["grads"], sent))))
            if problem:
                return problem + advice
        return None

    return Case("A", title, "adam", {"datas": datas, "grads": grads, "lr": lr, "betas": list(betas), "eps": eps,
                                     "history": history, "defaults": defaults}, judge, drawn=tuple(drawn))


def cases_a(rng):
    (_, single), *others = ADAM_HISTORIES.items()
    runs = [(setting, shapes, "", single)
            for setting, shapes in product(ADAM_SETTINGS.items(), ADAM_PARAMETERS.items())]
    runs += [((ADAM_HISTORY_SETTING, ADAM_SETTINGS[ADAM_HISTORY_SETTING]), shapes, f", {name}", history)
             for (name, history), shapes in product(others, ADAM_PARAMETERS.items())]
    cases = []
    for (setting, (lr, betas, eps, scale)), (name, shapes), told, history in runs:
        grads = [[scale * rng.normal(size=shape) for shape in shapes] for _ in range(ADAM_STEPS)]
        grads[1][0] = grads[1][0] * (np.arange(np.size(grads[1][0])).reshape(np.shape(grads[1][0])) != 0)
        cases.append(adam_case(f"{setting} on {name}{told}", [rng.normal(size=shape) for shape in shapes], grads,
                               lr, betas, eps, history))
    # The step's boundaries (lr 5e-324, 1e-12 and 1) and a call that leaves betas and eps to their
    # defaults, each on a (2, 3) matrix and a (3,) vector with PyTorch's betas and eps: 4 cases.
    # The defaults' call has gradients of size 1e-8, as large as the default eps, so that every
    # default shows in the step.
    shapes = ADAM_PARAMETERS["a (2, 3) matrix and a (3,) vector"]
    for lr, names, defaults in [(lr, names, False) for lr, names in STEP_BOUNDARIES.items()] + [(0.01, (), True)]:
        scale = 1e-8 if defaults else 1.0
        grads = [[scale * rng.normal(size=shape) for shape in shapes] for _ in range(ADAM_STEPS)]
        cases.append(adam_case(f"lr {number(lr)}, betas (0.9, 0.999), eps 1e-8 on a (2, 3) matrix and a (3,) vector"
                               + (", gradients of size 1e-8" if defaults else ""),
                               [rng.normal(size=shape) for shape in shapes], grads, lr, (0.9, 0.999), 1e-8,
                               [0] * ADAM_STEPS, labels_of("adam_step", "lr", names), defaults))
    return cases


# ---------------------------------------------------------------- B: no_grad, graded on structure
# Expressions of the student's primitives on small leaves (operations with one and two parents,
# broadcasting, a reduction, the transpose): each run outside no_grad, inside it, inside an outer
# no_grad after an inner one ended, after both, after an exception inside one, inside an outer
# no_grad that caught an exception of an inner one, and after the block was left by a
# BaseException that is not an Exception: a KeyboardInterrupt (the kernel interrupted during an
# evaluation), and the GeneratorExit that closing a generator suspended inside the block raises
# there. Every case observes every way out: 5 cases.
QUIET = {"a product plus a broadcast bias": ("a * b + c", {"a": (2, 3), "b": (2, 3), "c": (3,)}),
         "a matrix product, exp and a sum": ("(a @ b).exp().sum()", {"a": (2, 3), "b": (3, 2)}),
         "a transpose through relu": ("(a.T * 3.0).relu() + 1.0", {"a": (3, 2)}),
         "a difference squared": ("(a - b) * (a - b)", {"a": (4,), "b": (4,)}),
         "a mean of logs": ("(a * a + 1.0).log().mean()", {"a": (2, 2)})}


# What probes.quiet observes, in order; each result is sent before the student's code runs again.
QUIET_OBSERVED = ("outside", "inside", "after_inner", "after_both", "propagated", "after_error", "after_inner_error",
                  "interrupted", "after_interrupt", "after_close")


def quiet_case(title, expression, leaves):
    setting = f"no_grad with {title}, {expression}"

    def judge(_, seen):
        answer = dict(zip(QUIET_OBSERVED, seen))
        outside, inside = answer["outside"], answer["inside"]
        if not (outside["parents"] and outside["sent"]):
            return (f"{setting}: outside no_grad the result must record its parents and backward must reach the "
                    "leaves (is grad_enabled left False?)")
        return first_problem(
            inside["parents"] and f"{setting}: inside `with no_grad():` the result kept {inside['parents']} parents "
                                  "in _prev, expected none (no_grad must set the module-level grad_enabled to False; "
                                  "a function assigns a module-level name only after `global grad_enabled`)",
            inside["sent"] and f"{setting}: inside no_grad, backward from the result still reached the leaves",
            array_problem(inside["data"], outside["data"], f"{setting}: the value computed inside no_grad (it must "
                                                           "equal the recorded one)"),
            answer["after_inner"]["parents"] and f"{setting}: nested no_grad blocks: after the inner one ended, "
                                                 "recording was on again inside the outer one (restore the value "
                                                 "grad_enabled had on entry, not True)",
            not answer["after_both"]["parents"] and f"{setting}: after nested no_grad blocks ended, recording "
                                                    "must be on again",
            not answer["propagated"] and f"{setting}: an exception raised inside `with no_grad():` must propagate "
                                         "to the caller",
            not answer["after_error"]["parents"] and f"{setting}: after an exception inside no_grad, recording "
                                                     "must be on again (restore grad_enabled in a finally clause)",
            answer["after_inner_error"]["parents"] and f"{setting}: an exception raised in an inner no_grad and "
                                                       "caught inside an outer one switched recording on inside the "
                                                       "outer block (restore the value grad_enabled had on entry, "
                                                       "however the block ends)",
            not answer["interrupted"] and f"{setting}: a KeyboardInterrupt raised inside `with no_grad():` must "
                                          "propagate to the caller",
            not answer["after_interrupt"]["parents"] and f"{setting}: after a KeyboardInterrupt inside no_grad (a "
                                                         "BaseException, not an Exception), recording must be on "
                                                         "again (a finally clause runs whatever was raised)",
            not answer["after_close"]["parents"] and f"{setting}: after a generator suspended inside `with "
                                                     "no_grad():` was closed (GeneratorExit, a BaseException, not an "
                                                     "Exception), recording must be on again")

    return Case("B", setting, "quiet", {"expression": expression, "leaves": leaves}, judge,
                observations=len(QUIET_OBSERVED))


def reaching_leaves(rng, expression, shapes):
    """Leaves of `shapes` on which backward from `expression` gives some leaf a nonzero gradient,
    so that "outside no_grad backward reaches the leaves" holds for a correct engine (relu of
    leaves drawn all negative would send nothing)."""
    while True:
        leaves = {name: rng.normal(size=shape) for name, shape in shapes.items()}
        made = {name: t64(value) for name, value in leaves.items()}
        sent = torch.autograd.grad(eval(expression, {}, made).sum(), list(made.values()), allow_unused=True)
        if any(g is not None and bool(g.abs().sum()) for g in sent):
            return leaves


def cases_b(rng):
    return [quiet_case(title, expression, reaching_leaves(rng, expression, shapes))
            for title, (expression, shapes) in QUIET.items()]


# ---------------------------------------------------------------- C: forward mode against torch.func
# Functions that use every dual rule (product, matrix product on either side, exp, log) and the
# derived tanh and mean, on inputs of 1, 2 and 3 dimensions, plus two whose output does not
# depend on the input: one computed from it (a Dual comes back), and one that ignores it and
# returns a plain array of another shape than x's (its tangent is zero, of the output's shape),
# or a plain number (a 0-d tangent); each asked for a JVP along a random direction and for its
# Jacobian: 8 x 2 = 16 cases.
FORWARD = {"a product with a constant, summed over axis 0": ("(x * x * C).sum(axis=0)", (3, 2), {"C": (3, 2)}),
           "a matrix product with the input on the right": ("W @ x", (3, 2), {"W": (4, 3)}),
           "exp of a matrix product with the input on the left": ("(x @ W).exp()", (2, 3), {"W": (3, 2)}),
           "the log of a positive function": ("(x * x + 1.0).log().sum()", (2, 2, 2), {}),
           "tanh, then the mean": ("(x * V - 0.5).tanh().mean()", (5,), {"V": (5,)}),
           "an output that does not depend on the input": ("x * 0.0 + C", (2,), {"C": (3, 2)}),
           "a constant array that ignores the input, no Dual coming back": ("C", (2,), {"C": (2, 3)}),
           "a plain number that ignores the input, no Dual coming back": ("2.5", (3,), {})}


def torch_function(expression, constants):
    return lambda x: eval(expression, {}, {"x": x, **{k: torch.tensor(v) for k, v in constants.items()}})


def ignoring(expression, x, constants):
    """(value, tangent) of a function that ignores its input (no x in its text): what it returns,
    as an array, and zeros of that shape. torch.func.jvp wants Tensors back, not a plain number."""
    value = np.asarray(eval(expression, {}, dict(constants)), dtype=np.float64)
    return value, np.zeros(value.shape)


def tangent_case(title, expression, x, constants, u, drawn=(), relative=False):
    if re.search(r"\bx\b", expression):
        value, slope = (t.numpy() for t in torch.func.jvp(torch_function(expression, constants), (torch.tensor(x),),
                                                           (torch.tensor(u),)))
    else:
        value, slope = ignoring(expression, x, constants)
    setting = f"jvp of f(x) = {expression} ({title}) at x of shape {shape_text(x.shape)}"
    compare = relative_problem if relative else array_problem

    def judge(answer):
        return first_problem(compare(answer["value"], value, f"{setting}: the value f(x)"),
                             compare(answer["tangent"], slope, f"{setting}: the tangent along u (torch.func.jvp)"))

    return Case("C", setting, "tangent", {"expression": expression, "x": x, "constants": constants, "u": u}, judge,
                drawn=tuple(drawn))


def jacobian_case(title, expression, x, constants, drawn=(), relative=False):
    if re.search(r"\bx\b", expression):
        want = torch.func.jacfwd(torch_function(expression, constants))(torch.tensor(x)).numpy()
    else:
        want = np.zeros(ignoring(expression, x, constants)[0].shape + x.shape)
    setting = f"jacobian_fwd of f(x) = {expression} ({title}) at x of shape {shape_text(x.shape)}"
    compare = relative_problem if relative else array_problem

    def judge(answer):
        return compare(answer["jacobian"], want, f"{setting}: the Jacobian, of shape f(x).shape + x.shape "
                       "(torch.func.jacfwd)")

    return Case("C", setting, "jacobian", {"expression": expression, "x": x, "constants": constants}, judge,
                drawn=tuple(drawn))


# Forward mode is the method C teaches, so two cases only it can finish: a JVP of a function of
# WIDE inputs and as many outputs (reverse mode needs one backward pass per output), and the
# Jacobian of a function of one input and WIDE outputs (one JVP, against one backward pass per
# output). Either takes a few passes over WIDE numbers forward and about WIDE^2 operations, hours,
# in reverse. Their inputs are drawn in the sandbox from a seed (probes._drawn), as the grader
# draws them here, rather than sent. The judge allows 1e-13 of the largest entry: a dual number
# is exact to rounding, a finite difference of the forward pass misses by 1e-10 at best.
WIDE = 500_000
METHOD_FORWARD = {
    "jvp": ("(x * C).exp() * D + x * x", {"x": (WIDE,), "u": (WIDE,), "C": (WIDE,), "D": (WIDE,)}),
    "jacobian_fwd": ("(x * C).exp() + x * D", {"x": (1,), "C": (WIDE,), "D": (WIDE,)}),
}
EXACT = 1e-13


def drawn(seed, shapes):
    """probes._drawn, here: the same arrays from the same seed."""
    generator = np.random.default_rng(seed)
    return {name: generator.standard_normal(shape) for name, shape in shapes.items()}


def exact_problem(got, want, quantity):
    """array_problem within EXACT of the largest entry: only an exact method gets there."""
    scale = max(1.0, float(np.max(np.abs(want))))
    return array_problem(got, want, quantity, atol=EXACT * scale, rtol=0.0)


def method_tangent_case(expression, shapes, seed):
    arrays = drawn(seed, shapes)
    x, u = arrays.pop("x"), arrays.pop("u")
    value, slope = (t.numpy() for t in torch.func.jvp(torch_function(expression, arrays), (torch.tensor(x),),
                                                       (torch.tensor(u),)))
    setting = (f"jvp of f(x) = {expression} at x of shape {shape_text(x.shape)}, f(x) of the same shape: "
               "one forward pass (reverse mode would need one backward pass per output)")

    def judge(answer):
        return first_problem(array_problem(answer["value"], value, f"{setting}: the value f(x)"),
                             exact_problem(answer["tangent"], slope, f"{setting}: the tangent along u, to "
                                           f"{number(EXACT)} (dual numbers are exact; finite differences are not)"))

    return Case("C", setting, "tangent_drawn", {"expression": expression, "seed": seed, "shapes": shapes}, judge)


def method_jacobian_case(expression, shapes, seed):
    arrays = drawn(seed, shapes)
    x = arrays.pop("x")
    want = torch.func.jacfwd(torch_function(expression, arrays))(torch.tensor(x)).numpy()
    setting = (f"jacobian_fwd of f(x) = {expression} at x of shape {shape_text(x.shape)}, f(x) of shape "
               f"({WIDE},): one JVP per input entry (reverse mode would need one backward pass per output)")

    def judge(answer):
        return exact_problem(answer["jacobian"], want, f"{setting}: the Jacobian, to {number(EXACT)} (dual numbers "
                             "are exact; finite differences are not)")

    return Case("C", setting, "jacobian_drawn", {"expression": expression, "seed": seed, "shapes": shapes}, judge)


# The dual rules at the contracts' boundaries, judged entry by entry (a tangent of 1e-300 is not
# 0): exp on a (4, 4) x from 500 to 709.78 and from -700 to -30 holding 709.78, -1e12, 0,
# ±1e-12 and ±5e-324; log on x from 1e-13 to 1e12 holding 5e-324, 1e-12 and 1e12; and
# x * x * C with x, C and the direction u each holding 0, ±1e-12, ±5e-324 and ±1e12, as a JVP
# and as a Jacobian. 4 cases.
def cases_c_boundaries(rng):
    base = np.where(rng.random(16) < 0.5, rng.uniform(500.0, 709.78, 16), rng.uniform(-700.0, -30.0, 16))
    x, labels = planted("dual_exp", "a", rng, (4, 4), base=base.reshape(4, 4))
    cases = [tangent_case("exp at its large inputs and far tail", "x.exp()", x, {}, rng.uniform(-1, 1, (4, 4)),
                          labels, relative=True)]
    x, labels = planted("dual_log", "a", rng, (3, 3), base=10.0 ** rng.uniform(-13, 12, (3, 3)))
    cases.append(tangent_case("log from 1e-13 to 1e12", "x.log()", x, {}, rng.normal(size=(3, 3)), labels,
                              relative=True))
    x, first = planted("jvp", "x", rng, (3, 4))
    C, second = planted("dual_multiply", "b", rng, (3, 4))
    u, third = planted("jvp", "u", rng, (3, 4))
    cases.append(tangent_case("x, C and u holding 0, ±1e-12, ±5e-324 and ±1e12", "x * x * C", x, {"C": C}, u,
                              first + labels_of("dual_multiply", "a") + second + third, relative=True))
    x, labels = planted("jacobian_fwd", "x", rng, (2, 4))
    cases.append(jacobian_case("x holding 0, ±1e-12, ±5e-324 and ±1e12", "x * x * C", x,
                               {"C": rng.normal(size=(2, 4))}, labels, relative=True))
    return cases


def cases_c(rng):
    cases = []
    for title, (expression, shape, shapes) in FORWARD.items():
        constants = {name: rng.normal(size=size) for name, size in shapes.items()}
        x = rng.normal(size=shape)
        cases.append(tangent_case(title, expression, x, constants, rng.normal(size=shape)))
        cases.append(jacobian_case(title, expression, x, constants))
    cases += cases_c_boundaries(rng)
    (jvp_expression, jvp_shapes), (jacobian_expression, jacobian_shapes) = METHOD_FORWARD.values()
    return cases + [method_tangent_case(jvp_expression, jvp_shapes, int(rng.integers(2**31))),
                    method_jacobian_case(jacobian_expression, jacobian_shapes, int(rng.integers(2**31)))]


# ---------------------------------------------------------------- D: double backprop
# Smooth scalar functions (softplus, a cubic, tanh with a broadcast bias, exp of a quadratic form
# through the transpose, log of a row sum kept with keepdims) of row vectors and of a matrix, and
# one whose broadcast operands are made from x itself (its row sums in a product, its total in a
# sum), so that the summed contributions to them and the sums' incoming gradients depend on x
# (with a constant operand, such a contribution is never differentiated again), and one with an
# interior node used twice (h * h: a walk that lists it twice adds its contributions twice); for
# each, grad with and without create_graph (and a Tensor it does not use), hvp along a random
# direction (a failure is diagnosed with central differences of the student's own grad), and a
# Newton step: 7 x 3 = 21 cases.
SECOND_ORDER = {
    "softplus of a product plus a square": ("((x @ W).exp() + 1.0).log().sum() + (x * x).sum()", (1, 4),
                                            {"W": (4, 3)}),
    "a cubic": ("(x * x * x * C).sum() + (x * x).sum() * 3.0", (1, 3), {"C": (1, 3)}),
    "tanh with a broadcast bias": ("(x @ W + c).tanh().sum() + (x * x).sum()", (1, 3), {"W": (3, 5), "c": (5,)}),
    "exp of a quadratic form": ("(x @ A @ x.T).exp().sum() * 0.2 + (x * x).sum()", (1, 3), {"A": (3, 3)}),
    "log of row sums kept with keepdims, on a matrix": (
        "((x * x).sum(axis=1, keepdims=True) + 1.0).log().sum() + (x @ W).exp().mean()", (2, 2), {"W": (2, 3)}),
    "broadcast operands made from x, its row sums and its total": (
        "(x * x.sum(axis=1, keepdims=True) + x.sum()).tanh().sum() + (x * x).sum() * 3.0", (2, 3), {}),
    "one interior node used twice (h * h with h = tanh(x @ W))": (
        "((h := (x @ W).tanh()) * h).sum() + (x * x).sum()", (1, 3), {"W": (3, 4)}),
}


def torch_gradient(expression, x, constants):
    twin = t64(x)
    (g,) = torch.autograd.grad(torch_function(expression, constants)(twin), twin)
    return g.numpy()


def gradient_case(title, expression, x, constants):
    want = torch_gradient(expression, x, constants)
    setting = f"grad of f(x) = {expression} ({title}) with respect to [x, a Tensor f does not use]"

    def judge(answer):
        if answer.get("kind") != "list":
            return f"{setting}: expected a list of Tensors, got a {answer.get('kind')}"
        for create in ("False", "True"):
            got = answer[create]
            where = f"{setting}, " + ("create_graph=True" if create == "True" else "create_graph left at its default")
            if len(got["datas"]) != 2:
                return f"{where}: expected 2 gradients, one per Tensor of xs, got {len(got['datas'])}"
            problem = first_problem(
                array_problem(got["datas"][0], want, f"{where}: the gradient of x (torch.autograd.grad)"),
                array_problem(got["datas"][1], np.zeros(2), f"{where}: the gradient of the unused Tensor"),
                create == "False" and any(got["parents"]) and f"{where}: the gradients must be leaves (no _prev)",
                array_problem(got["leaf_grad"], np.zeros(x.shape), f"{where}: x.grad (grad must leave .grad alone)"))
            if problem:
                return problem
        return None

    return Case("D", setting, "gradient_of", {"expression": expression, "x": x, "constants": constants}, judge)


# The central difference of the gradient along v, with this step, is within about 1e-9 of the
# Hessian times v for these functions; it only tells a failed case's two halves apart. The judge
# allows 1e-13 of the largest entry (double backprop is exact to about 1e-16; the best central
# difference of the student's own gradient, at any step, misses these functions by 1e-12 or
# more, the cubic aside, whose gradient a central difference reproduces exactly), and Newton
# steps, solved from those products, 1e-12.
HVP_STEP = 1e-5


def hvp_case(title, expression, x, constants, v, drawn=()):
    _, want = torch.autograd.functional.hvp(torch_function(expression, constants), torch.tensor(x), torch.tensor(v))
    setting = f"hvp of f(x) = {expression} ({title}) at x of shape {shape_text(x.shape)}"

    def judge(answer):
        problem = exact_problem(answer["result"], want.numpy(), f"{setting}: the Hessian times v, to "
                                f"{number(EXACT)} (torch.autograd.functional.hvp; double backprop is exact, "
                                "differences of the gradient are not)")
        if problem is None:
            return None
        # Tell the two halves apart: a wrong gradient, or a wrong second backward pass.
        if array_problem(answer["central"], want.numpy(), "", atol=1e-6, rtol=1e-6) is None:
            return (f"{problem}. Central differences of your own grad along v agree with PyTorch, so grad is "
                    "right and the second pass is not: look at create_graph and the Tensor operations of "
                    "vjp_tensor")
        return (f"{problem}. Central differences of your own grad along v disagree with PyTorch as well: "
                "fix the gradient first")

    return Case("D", setting, "curvature", {"expression": expression, "x": x, "constants": constants, "v": v,
                                            "h": HVP_STEP}, judge, drawn=tuple(drawn))


def newton_case(title, expression, x, constants):
    hessian = torch.autograd.functional.hessian(torch_function(expression, constants), torch.tensor(x))
    step = torch.linalg.solve(hessian.reshape(x.size, x.size), torch.tensor(torch_gradient(expression, x, constants))
                              .reshape(-1))
    want = x - step.numpy().reshape(x.shape)
    setting = f"newton_step on f(x) = {expression} ({title}) at x of shape {shape_text(x.shape)}"
    # Two correct solves of one system differ by up to about cond(H) * eps * |step|: a Hessian
    # near singular (a step of thousands) once failed a correct engine by 5e-9 at 1e-12 * |want|.
    solve_error = 64 * np.finfo(np.float64).eps * float(torch.linalg.cond(hessian.reshape(x.size, x.size)))
    tolerance = max(1e-12 * max(1.0, float(np.max(np.abs(want)))), solve_error * float(step.abs().max()))

    def judge(answer):
        return array_problem(answer["result"], want, f"{setting}: x - H^-1 grad f(x) (torch.linalg.solve with "
                             "the Hessian)", atol=tolerance, rtol=0.0)

    return Case("D", setting, "newton", {"expression": expression, "x": x, "constants": constants}, judge)


# vjp_tensor, probed on its own: one node of every label it must know (two-parent operations
# with broadcasting, the matrix product, the transpose, both sums, exp, log and relu at mixed
# signs). Its contributions must equal PyTorch's, and, being built from Tensor operations, carry
# a graph: the engine's backward from a weighted sum of them must give PyTorch's second-order
# gradients for the node's inputs and for g (create_graph=True). 9 cases.
VJP_NODES = {"+ with a broadcast row": ("a + b", {"a": (2, 3), "b": (3,)}),
             "* with a broadcast column": ("a * b", {"a": (3, 1), "b": (3, 4)}),
             "@": ("a @ b", {"a": (2, 3), "b": (3, 4)}), "T": ("a.T", {"a": (2, 3)}),
             "sum over everything": ("a.sum()", {"a": (2, 3)}),
             "sum with keepdims": ("a.sum(axis=1, keepdims=True)", {"a": (3, 2)}),
             "exp": ("a.exp()", {"a": (2, 2)}), "log": ("a.log()", {"a": (2, 3)}), "relu": ("a.relu()", {"a": (3, 3)})}


def vjp_case(title, expression, leaves, rng, g=None, drawn=(), relative=False):
    """vjp_tensor on one node against PyTorch. Where `relative`, each contribution is judged entry
    by entry to 1e-9 of its own size, and the second-order gradients to 1e-9 of their largest."""
    torch_leaves = {name: t64(value) for name, value in leaves.items()}
    node = eval(expression, {}, dict(torch_leaves))
    g = t64(rng.normal(size=tuple(node.shape)) if g is None else g)
    parts = torch.autograd.grad(node, list(torch_leaves.values()), g, create_graph=True)
    weights = [rng.normal(size=tuple(part.shape)) for part in parts]
    total = sum((part * t64(w, grad=False)).sum() for part, w in zip(parts, weights))
    inputs = [*torch_leaves.values(), g]
    seconds = [np.zeros(tuple(t.shape)) if d is None else d.numpy()
               for t, d in zip(inputs, torch.autograd.grad(total, inputs, allow_unused=True))] \
        if total.requires_grad else [np.zeros(tuple(t.shape)) for t in inputs]
    wanted = [part.detach().numpy() for part in parts]
    names = list(leaves)
    setting = f"vjp_tensor on a {title} node, {expression}, with a random g"

    def first_order(got, want, quantity):
        return relative_problem(got, want, quantity) if relative else array_problem(got, want, quantity)

    def second_order(got, want, quantity):
        if not relative:
            return array_problem(got, want, quantity)
        return array_problem(got, want, quantity, atol=1e-9 * max(1.0, float(np.max(np.abs(want)))))

    def judge(answer):
        if answer["kind"] != "list":
            return f"{setting}: expected a list of Tensors, one per parent, got a {answer['kind']}"
        if len(answer["datas"]) != len(wanted):
            return f"{setting}: expected {plural(len(wanted), 'contribution')}, one per parent, got {len(answer['datas'])}"
        return first_problem(
            *(first_order(d, w, f"{setting}: the contribution to {n}")
              for d, w, n in zip(answer["datas"], wanted, names)),
            *(second_order(got, want, f"{setting}: the gradient of a weighted sum of the contributions with respect "
                           f"to {n} (build them from Tensor operations of g, the node and its parents)")
              for got, want, n in zip([*answer["grads"], answer["g_grad"]], seconds, [*names, "g"])))

    return Case("D", setting, "contributions", {"expression": expression, "leaves": leaves, "g": g.detach().numpy(),
                                                "weights": weights}, judge, drawn=tuple(drawn))


def cases_d(rng):
    cases = []
    for title, (expression, shape, shapes) in SECOND_ORDER.items():
        constants = {name: rng.normal(size=size) for name, size in shapes.items()}
        x = 0.5 * rng.normal(size=shape)
        cases += [gradient_case(title, expression, x, constants),
                  hvp_case(title, expression, x, constants, rng.normal(size=shape)),
                  newton_case(title, expression, x, constants)]
    for title, (expression, shapes) in VJP_NODES.items():
        leaves = {name: rng.normal(size=shape) for name, shape in shapes.items()}
        if expression == "a.log()":
            leaves["a"] = np.abs(leaves["a"]) + 0.2
        cases.append(vjp_case(title, expression, leaves, rng))
    # A Newton step far from 0, on the cubic at x of size 1000 to 2000 (the step lands beyond 500,
    # where a clipped answer shows), and vjp_tensor asked about a sum it has no rule for: 2 cases.
    expression, shape, shapes = SECOND_ORDER["a cubic"]
    constants = {name: np.abs(rng.normal(size=size)) + 0.5 for name, size in shapes.items()}
    cases.append(newton_case("a cubic, far from 0", expression, rng.uniform(1000.0, 2000.0, size=shape), constants))
    cases.append(refused_case(rng))
    return cases + cases_d_boundaries(rng)


def refused_case(rng):
    """vjp_tensor on a sum over one axis without keepdims, which the notebook tells it to refuse
    with ValueError rather than return something."""
    setting = "vjp_tensor on a sum over axis 0 without keepdims, a.sum(axis=0) with a of shape (2, 3)"

    def judge(answer):
        if answer["kind"] != "ValueError":
            return (f"{setting}: expected ValueError (vjp_tensor handles sums over everything or with keepdims=True "
                    f"and raises ValueError for any other), got {answer['kind']}")
        return None

    return Case("D", setting, "refused", {"expression": "a.sum(axis=0)", "leaves": {"a": rng.normal(size=(2, 3))},
                                          "g": rng.normal(size=(3,))}, judge)


# vjp_tensor where its primitives' domains have their edges (the inputs 1a is judged on too): a
# log node on inputs from 1e-13 to 1e-9, an exp node on inputs from 500 to 690, a relu node on
# tiny values of both signs and zeros; and g holding the contract's boundaries (0, ±1e-12,
# ±5e-324, ±1e12) on a * node and an exp node. hvp with v holding them, over two functions of
# six and three entries. grad's create_graph is left at its default in every gradient case
# above. 7 cases.
def cases_d_boundaries(rng):
    cases = []
    for title, expression, a in (
            ("log on inputs from 1e-13 to 1e-9", "a.log()", 10.0 ** rng.uniform(-13, -9, (2, 3))),
            ("exp on inputs from 500 to 690", "a.exp()", rng.uniform(500.0, 690.0, (2, 3))),
            ("relu on tiny values of both signs and zeros", "a.relu()",
             np.array([[0.0, -0.0, 1e-300], [-1e-300, 1e-12, -1e-12]]))):
        cases.append(vjp_case(title, expression, {"a": a}, rng, relative=True))
    names = list(VALUES["vjp_tensor", "g"].boundaries())
    for title, expression, leaves, chosen in (
            ("* of two (2, 4) tensors", "a * b", {"a": rng.normal(size=(2, 4)), "b": rng.normal(size=(2, 4))},
             names),
            ("exp", "a.exp()", {"a": rng.normal(size=(2, 4))}, names)):
        g, labels = planted("vjp_tensor", "g", rng, (2, 4), chosen)
        cases.append(vjp_case(f"{title}, g holding 0, ±1e-12, ±5e-324 and ±1e12", expression, leaves, rng, g, labels,
                              relative=True))
    # The probe also differences the student's grad at x ± 1e-5 v to tell a failure's halves apart:
    # the large entries go to the cubic, which stays finite there (a function with exp would feed
    # inf to the primitives), the rest to a function of six entries.
    names = list(VALUES["hvp", "v"].boundaries())
    for title, part in (("broadcast operands made from x, its row sums and its total", names[:5]),
                        ("a cubic", names[5:])):
        expression, shape, shapes = SECOND_ORDER[title]
        constants = {name: rng.normal(size=size) for name, size in shapes.items()}
        v, labels = planted("hvp", "v", rng, shape, part)
        cases.append(hvp_case(f"{title}, v holding {', '.join(part)}", expression, 0.5 * rng.normal(size=shape),
                              constants, v, labels))
    return cases


# ---------------------------------------------------------------- E: conv2d against F.conv2d
# Input and filter shapes: one channel in and out; 3 channels to 2 with a batch of one; a
# non-square image and kernel; a 1 x 1 kernel from 4 channels to 5. Crossed with stride and
# padding (1 and 0; 2 and 1; 3 and 2, where stride and padding leave some input rows unread):
# 4 x 3 = 12 cases, every leaf's .grad holding an earlier gradient. Each rule then runs a second
# time, as a second backward through the same graph runs it: a gradient buffer allocated in the
# forward pass, and filled by the first run, is added again by the second.
CONV_SHAPES = {"one channel in and out, a 3 x 3 filter": ((2, 1, 5, 5), (1, 1, 3, 3)),
               "3 channels to 2, a batch of one": ((1, 3, 6, 6), (2, 3, 3, 3)),
               "a non-square image and filter": ((2, 2, 7, 5), (3, 2, 2, 3)),
               "a 1 x 1 filter from 4 channels to 5": ((1, 4, 4, 4), (5, 4, 1, 1))}
CONV_STEPS = {"stride 1, padding 0": (1, 0), "stride 2, padding 1": (2, 1), "stride 3, padding 2": (3, 2)}


def conv_case(title, arrays, stride, padding, rng, drawn=(), defaults=False):
    """conv2d against F.conv2d; with `defaults`, stride and padding are left out of the call (1
    and 0). Where `drawn` (x holding 1e12 beside 5e-324), each quantity is judged within 1e-9 of
    its largest entry."""
    twins = [t64(array) for array in arrays]
    out = F.conv2d(*twins, stride=stride, padding=padding)
    upstream = rng.normal(size=tuple(out.shape))
    priors = [rng.normal(size=a.shape) for a in arrays]
    grads = [g.numpy() for g in torch.autograd.grad(out, twins, t64(upstream, grad=False))]
    wanted = [p + g for p, g in zip(priors, grads)]
    setting = (f"conv2d with {title}: x {shape_text(arrays[0].shape)}, w {shape_text(arrays[1].shape)}, "
               f"b {shape_text(arrays[2].shape)}, " + ("stride and padding left at their defaults" if defaults else
                                                       f"stride {stride}, padding {padding}"))

    def array_problem(got, want, quantity):
        atol = 1e-9 * max(1.0, float(np.max(np.abs(want)))) if drawn else 1e-9
        return vocabulary_array_problem(got, want, quantity, atol=atol)

    def judge(answer):
        if answer["kind"] != "Tensor":
            return f"{setting}: expected a new Tensor, got a {answer['kind']}"
        if answer["prev"] != [0, 1, 2]:
            return f"{setting}: the new node's _prev must be (x, w, b); got {answer['prev']}"
        if "failed" in answer:
            return (f"{setting}: out._backward() raised {answer['failed']}; x.grad, w.grad and b.grad each need a "
                    "contribution of their own shape (drop the padding's border; sum b's over batch and positions)")
        return first_problem(
            array_problem(answer["data"], out.detach().numpy(), f"{setting}: out.data (F.conv2d)"),
            *(array_problem(g, w, f"{setting}: {n}.grad after out._backward() (it held an earlier gradient)")
              for n, g, w in zip("xwb", answer["grads"], wanted)),
            *(array_problem(g, w + once, f"{setting}: {n}.grad after a second out._backward() (a second backward "
                            "through the same graph adds the same gradient again; nothing the forward pass made may "
                            "carry the first run's sums)")
              for n, g, w, once in zip("xwb", answer["grads_again"], wanted, grads)),
            *(unchanged(after, a, f"{setting}: {n}.data") for n, after, a in zip("xwb", answer["data_after"], arrays)))

    return Case("E", setting, "convolution", {"x": arrays[0], "w": arrays[1], "b": arrays[2], "stride": stride,
                                              "padding": padding, "priors": priors, "upstream": upstream,
                                              "defaults": defaults}, judge, drawn=tuple(drawn))


def cases_e(rng):
    cases = [conv_case(f"{shape_name}, {step_name}", [rng.normal(size=x), rng.normal(size=w), rng.normal(size=w[0])],
                       stride, padding, rng)
             for (shape_name, (x, w)), (step_name, (stride, padding))
             in product(CONV_SHAPES.items(), CONV_STEPS.items())]
    # x holding the contract's boundaries (0, ±1e-12, ±5e-324, ±1e12) at stride 2 and padding 1,
    # and a call that leaves stride and padding to their defaults: 2 cases.
    x, labels = planted("conv2d", "x", rng, (1, 2, 4, 4))
    cases.append(conv_case("x holding 0, ±1e-12, ±5e-324 and ±1e12, 2 channels to 3", [x, rng.normal(size=(3, 2, 2, 2)),
                           rng.normal(size=3)], 2, 1, rng, labels))
    x, w = CONV_SHAPES["3 channels to 2, a batch of one"]
    cases.append(conv_case("3 channels to 2, a batch of one", [rng.normal(size=x), rng.normal(size=w),
                                                               rng.normal(size=w[0])], 1, 0, rng, defaults=True))
    return cases


# ---------------------------------------------------------------- F: to_dot, parsed back
# Graphs given as [label, parent indices, shape] per node, leaves with the label "": a single
# leaf; a chain; one tensor as both parents; a node reached by two paths; a constant used at two
# depths; a two-layer MLP's loss; an operation without parents, as no_grad makes them (labelled
# by its _op, not as a leaf), reused by recorded ones; a node with three parents, conv2d's x, w
# and b. 8 cases. The DOT text is parsed here: statements may end with a semicolon or not and
# names may be quoted.
TAPES = {
    "a single leaf": [["", [], (2,)]],
    "a chain relu, exp, sum": [["", [], (2, 3)], ["relu", [0], (2, 3)], ["exp", [1], (2, 3)], ["sum", [2], ()]],
    "x * x, one tensor as both parents": [["", [], (3,)], ["*", [0, 0], (3,)], ["sum", [1], ()]],
    "a node reached by two paths": [["", [], (2, 2)], ["relu", [0], (2, 2)], ["exp", [1], (2, 2)],
                                    ["+", [1, 2], (2, 2)], ["sum", [3], ()]],
    "a constant used at two depths": [["", [], (4,)], ["", [], (4,)], ["*", [0, 1], (4,)], ["*", [2, 1], (4,)]],
    "the loss of a two-layer MLP": [["", [], (5, 2)], ["", [], (2, 8)], ["", [], (8,)], ["@", [0, 1], (5, 8)],
                                    ["+", [3, 2], (5, 8)], ["relu", [4], (5, 8)], ["", [], (8, 3)], ["", [], (3,)],
                                    ["@", [5, 6], (5, 3)], ["+", [8, 7], (5, 3)], ["cross_entropy", [9], ()]],
    "an operation made under no_grad, without parents, used by recorded ones": [
        ["@", [], (3, 2)], ["", [], (3, 2)], ["*", [0, 1], (3, 2)], ["relu", [0], (3, 2)], ["+", [2, 3], (3, 2)]],
    "conv2d, a node with the three parents x, w and b": [["", [], (1, 2, 5, 5)], ["", [], (3, 2, 3, 3)],
                                                        ["", [], (3,)], ["conv2d", [0, 1, 2], (1, 3, 3, 3)],
                                                        ["relu", [3], (1, 3, 3, 3)], ["sum", [4], ()]],
}
DOT_NODE = re.compile(r'^"?(\w+)"?\s*\[\s*label\s*=\s*"([^"]*)"\s*\]\s*;?$')
DOT_EDGE = re.compile(r'^"?(\w+)"?\s*->\s*"?(\w+)"?\s*;?$')


def read_dot(text):
    """(labels by node name, repeated names, edges, lines not understood) of DOT text."""
    statements = [row.strip() for row in text.strip().splitlines()]
    labels, repeated, edges, strange = {}, [], [], []
    for line in statements[1:-1]:
        if (edge := DOT_EDGE.match(line)):
            edges.append(edge.groups())
        elif (node := DOT_NODE.match(line)):
            if node.group(1) in labels:
                repeated.append(node.group(1))
            labels[node.group(1)] = node.group(2)
        elif line:
            strange.append(line)
    return labels, repeated, edges, strange


def dot_by_position(text, seen):
    """DOT text as read_dot reads it, each node named by its position in the spec instead of its
    id, which changes from run to run; names no node of the graph has become '?'."""
    if not isinstance(text, str) or not seen or not isinstance(seen[0], list):
        return text
    position = {str(name): f"n{index}" for index, name in enumerate(seen[0])}
    lines = text.strip().splitlines() or [""]
    framed = lines[0].strip().startswith("digraph") and lines[-1].strip() == "}"
    labels, repeated, edges, strange = read_dot(text)
    return [framed, sorted((position.get(name, "?"), label) for name, label in labels.items()),
            sorted(position.get(name, "?") for name in repeated),
            sorted(tuple(position.get(name, "?") for name in edge) for edge in edges), len(strange)]


def tape_case(title, spec):
    setting = f"to_dot on {title}"

    def judge(text, seen):
        (names,) = seen  # the nodes' names, observed before to_dot ran; the graph is the grader's spec
        if not isinstance(text, str):
            return f"{setting}: expected DOT text (a str), got {describe(text)}"
        lines = text.strip().splitlines()
        if len(lines) < 2 or not lines[0].strip().startswith("digraph") or lines[-1].strip() != "}":
            return f"{setting}: the text must start with 'digraph tape {{' and end with '}}'"
        labels, repeated, edges, strange = read_dot(text)
        want = {name: f"{op or 'leaf'} {shape_text(shape)}" for name, (op, _, shape) in zip(names, spec)}
        wanted_edges = sorted((names[p], names[i]) for i, (_, parents, _) in enumerate(spec) for p in parents)
        if strange:
            return f"{setting}: the line {strange[0]!r} is neither 'n<id> [label=\"...\"];' nor 'n<id> -> n<id>;'"
        if repeated:
            return (f"{setting}: the node {repeated[0]} is listed twice; list each node once, however many paths "
                    "reach it")
        if set(labels) != set(want):
            return (f"{setting}: {plural(len(labels), 'node')} listed, expected {len(want)}, one per Tensor of the "
                    "graph, named n<id(node)>")
        for name, wanted_label in want.items():
            if labels[name] != wanted_label:
                return (f"{setting}: a node's label is {labels[name]!r}, expected {wanted_label!r} (the _op, or leaf, "
                        "and the shape)")
        if sorted(edges) != wanted_edges:
            wrong = next((e for e in edges if e not in wanted_edges), None)
            detail = (f"the edge {wrong[0]} -> {wrong[1]} is not a parent -> node pair" if wrong else
                      f"{plural(len(edges), 'edge')}, expected {len(wanted_edges)}")
            return f"{setting}: {detail}; draw one edge parent -> node per entry of every node's _prev"
        return None

    return Case("F", setting, "tape", {"spec": spec}, judge, observations=1, sketch_of=dot_by_position)


def cases_f():
    return [tape_case(title, spec) for title, spec in TAPES.items()]


def cases(seed):
    """Every hidden check, by activity, with the values drawn from the submission's `seed`."""
    rng = np.random.default_rng([seed, 20261130])
    return {"1a": cases_1a(rng), "1b": cases_1b(rng), "2": cases_2_graphs(rng) + cases_2_numeric(rng),
            "3": cases_3(rng), "4": cases_4(rng), "5": cases_5(rng), "A": cases_a(rng), "B": cases_b(rng),
            "C": cases_c(rng), "D": cases_d(rng), "E": cases_e(rng), "F": cases_f()}
