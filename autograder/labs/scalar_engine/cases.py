"""How scalar_engine is graded: the questions, PyTorch's answers, and the judges.

Each activity's hidden cases are the cross product (itertools.product) of the input classes
that matter for it, named in the module-level dicts below, one dict per factor, with a comment
on what each factor is for. Where a combination has no meaning (a negative number to the power
0.5, one example with labels of both signs) it is dropped, and the comment says so. The inputs
differ from the visible checks' (other numbers, graphs, networks and data), and the expected
values are computed here with PyTorch in float64; they never enter the sandbox.

On top of the cross products, every boundary of a function's contract (contracts.py: zero, tiny
and subnormal values of both signs, the largest magnitudes, the ends of a range, relu's kink) is
planted in a case of its own, which names it in Case.drawn, and the classes the notebook's
promises make (far tails, the bands where a student clips or switches formulas, the state a call
meets) have cases of their own. Values whose size varies over orders of magnitude are judged by
relative error (RELATIVE), what must not change bit for bit (`unchanged`).
"""
from functools import cache
from itertools import product

import numpy as np
import torch
from torch.autograd import forward_ad

from autograder.labs.vocabulary import Case, apart, describe, listing, number, plural

from . import contracts as declared

# Activities whose functions call those of earlier ones. When such an activity fails and one of
# these failed too, the grader tries it again on the reference engine. Activity 2 is graded on
# graphs whose operations bring their own backward rules, and A, B and C on single operations,
# so none of them depends on another.
DEPENDS = {"3": ("1a", "1b", "2")}

# C's point is PyTorch's own extension mechanism; every other activity is graded without it.
USES_PYTORCH = ("C",)

TOL = 1e-9
TORCH = dict(add=torch.add, multiply=torch.mul, power=torch.pow, exp=torch.exp, log=torch.log, tanh=torch.tanh,
             relu=torch.relu, sigmoid=torch.sigmoid)  # the primitives' names in the expressions sent


def t64(value, grad=True):
    return torch.tensor(np.asarray(value, dtype=np.float64), dtype=torch.float64, requires_grad=grad)


def softplus(x):
    """log(1 + e^x), exact in float64 at every x: torch.nn.functional.softplus returns x itself
    above its threshold of 20, which is e^-x away (2e-9 at 20, more than TOL) from the loss and
    its gradient that a stable formula computes."""
    return torch.logaddexp(torch.zeros_like(x), x)


# The absolute floor of a relative comparison: far tails (a sigmoid of 4e-18, a loss of 1e-14)
# are judged by their relative error, which an absolute TOL would hide (0 would pass for 4e-18).
# Below this floor lie only subnormal results, whose few bits carry no relative precision.
RELATIVE = 1e-300


def agree(got, want, floor=TOL):
    """np.isclose's test at rtol TOL with the absolute tolerance `floor`, on numbers or arrays
    (one call per list: judging 100,000 numbers one np.isclose at a time took seconds of the
    grader's own time per submission)."""
    return np.isclose(got, want, rtol=TOL, atol=floor)


def two_moons(count, noise, seed):
    """Points on two interleaved half circles with Gaussian noise, and their classes (0 for the
    upper arc, 1 for the lower one), drawn as scikit-learn's make_moons draws them. Importing
    scikit-learn would add seconds to every grading process's start."""
    rng = np.random.default_rng(seed)
    upper, lower = np.linspace(0, np.pi, count // 2), np.linspace(0, np.pi, count - count // 2)
    points = np.concatenate([np.column_stack([np.cos(upper), np.sin(upper)]),
                             np.column_stack([1 - np.cos(lower), 0.5 - np.sin(lower)])])
    classes = np.concatenate([np.zeros(len(upper), dtype=int), np.ones(len(lower), dtype=int)])
    order = rng.permutation(count)
    return points[order] + rng.normal(scale=noise, size=points.shape), classes[order]


def numeric(got):
    return isinstance(got, (int, float, np.integer, np.floating)) and not isinstance(got, (bool, np.bool_))


def number_problem(got, want, quantity, floor=TOL):
    """None when `got` is the number `want`, else a sentence saying what it is."""
    if not numeric(got):
        return f"{quantity}: expected a number, got {describe(got)}"
    if not agree(float(got), want, floor):
        return "{} is {}, expected {}".format(quantity, *apart(got, want))
    return None


def numbers_problem(got, want, quantity, names, floor=TOL):
    """None when the list `got` matches `want`; else which entry (named by `names`) is wrong."""
    if not isinstance(got, list) or len(got) != len(want):
        return f"{quantity}: expected {plural(len(want), 'number')}, got {describe(got)}"
    for name, g in zip(names, got):
        if not numeric(g):
            return f"{quantity}: {name} is {describe(g)}, expected a number"
    wrong = np.flatnonzero(~agree(np.array(got, dtype=np.float64), np.asarray(want, dtype=np.float64),
                                  floor)).tolist()
    if wrong:
        i = wrong[0]
        return (f"{quantity}: {len(wrong)} of {len(want)} {'is' if len(wrong) == 1 else 'are'} wrong; "
                "{} is {}, expected {}".format(names[i], *apart(got[i], want[i])))
    return None


def unchanged(got, sent, quantity):
    """None when `got` is exactly what was sent (a number, or a list or array of numbers in the
    same shape): what must not change is compared bit for bit, not within a tolerance."""
    if not isinstance(sent, np.ndarray) and np.ndim(sent) == 0:
        if not numeric(got):
            return f"{quantity}: expected a number, got {describe(got)}"
        return None if float(got) == float(sent) else "{}: it is {}, it was {}".format(quantity, *apart(got, sent))
    try:
        array = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):  # not numbers at all
        return f"{quantity}: expected numbers, got {describe(got)}"
    sent = np.asarray(sent, dtype=np.float64)
    if array.shape != sent.shape:
        return f"{quantity}: shape {array.shape}, it was {sent.shape}"
    wrong = np.flatnonzero(array.ravel() != sent.ravel())
    if wrong.size:
        i = int(wrong[0])
        where = f" at {tuple(int(j) for j in np.unravel_index(i, sent.shape))}" if sent.ndim > 1 else f" (entry {i})"
        return "{}{}: it is {}, it was {}".format(quantity, where, *apart(array.flat[i], sent.flat[i]))
    return None


def first(*problems):
    return next((p for p in problems if p), None)


def signed(rng, low, high, sign):
    return float(sign * rng.uniform(low, high))


def either_sign(rng, low, high):
    return signed(rng, low, high, rng.choice([-1.0, 1.0]))


# ---------------------------------------------------------------- 1a, 1b, A: one node at a time
def node_case(activity, title, expression, values, prior, upstream, parents, op, *, data_floor=RELATIVE,
              grad_floor=RELATIVE, drawn=()):
    """The node `expression` makes from leaves holding `values` (their .grad at `prior`), with its
    backward rule run once at out.grad = `upstream`, against PyTorch on the same small graph.
    `parents` is what the node's _prev must be, in order ("another node" for the constant leaf an
    operator makes from a plain number), and `op` its label. The value and the gradients are
    judged by relative error down to the floors: the far tails are where a clipped or switched
    formula shows."""
    tensors = {name: t64(v) for name, v in values.items()}
    out = eval(expression, dict(TORCH), dict(tensors))
    grads = torch.autograd.grad(out, list(tensors.values()), t64(upstream, grad=False))
    data, wanted = out.item(), [prior + g.item() for g in grads]
    known = list(values)
    setting = (f"{title}: {expression} with " + ", ".join(f"{n} = {number(v)}" for n, v in values.items())
               + f", {listing(f'{n}.grad' for n in known)} starting at {number(prior)}"
               + f" and out.grad = {number(upstream)}")
    positions = [known.index(name) if name in known else -1 for name in parents]
    parents_text = ", ".join(parents).replace("another node", "the constant made from the number")

    def judge(answer):
        if answer["kind"] == "input":
            return f"{setting}: it returned one of its inputs; make a new Value"
        if answer["kind"] != "Value":
            return f"{setting}: expected a new Value, got a {answer['kind']}"
        prev = answer["prev"]
        if prev != positions:
            held = (", ".join(known[i] if i >= 0 else "a node that is not one of them" for i in prev) or "nothing"
                    ) if isinstance(prev, list) else f"a {prev}"
            return (f"{setting}: the new node's _prev must be ({parents_text}), its parents in argument order "
                    f"with one entry per operand; it holds ({held})")
        if answer.get("op") != op:
            return f"{setting}: the new node's _op is {describe(answer.get('op'))}; label it {op!r}"
        return first(number_problem(answer["data"], data, f"{setting}: out.data", data_floor),
                     *(number_problem(g, w, f"{setting}: {n}.grad after out._backward()", grad_floor)
                       for n, g, w in zip(known, answer["grads"], wanted)),
                     *(unchanged(g, values[n], f"{setting}: {n}.data (the inputs must not change)")
                       for n, g in zip(known, answer["inputs_after"])))

    args = {"expression": expression, "values": values, "prior": prior, "upstream": upstream}
    return Case(activity, setting, "local", args, judge, drawn=tuple(drawn))


# Shared by 1a, 1b and A. The parents' .grad either starts at 0 or already holds a gradient from
# earlier (a rule that assigns instead of adding shows only then). The upstream gradient that
# reaches the new node is positive or negative (a relu masked by its sign shows only then).
PRIORS = {".grad starting at 0": False, ".grad already holding an earlier gradient": True}
UPSTREAMS = {"a positive upstream gradient": 1.0, "a negative upstream gradient": -1.0}


def prior_of(rng, holding):
    return either_sign(rng, 0.2, 1.5) if holding else 0.0


# 1a: add and multiply, called directly or, with a plain number, through the given operators.
# The operands are two Values, one Value used twice (a + a, a * a: the two contributions must
# add up), or a Value and a number on either side (the number becomes a constant leaf). Their
# values are positive, of mixed signs, or include a zero (multiply's slopes vanish). Crossed in
# full with the priors: 2 x 4 x 3 x 2 = 48 cases.
OPERATIONS = {"add": "+", "multiply": "*"}
OPERANDS = {"two different Values": "pair", "one Value used twice": "same",
            "a Value and a number on its right": "right", "a number on the left of a Value": "left"}
SIGNS = {"positive values": (1.0, 1.0), "values of mixed signs": (-1.0, 1.0), "a zero operand": (0.0, 1.0)}


def cases_1a(rng):
    cases = []
    for (function, symbol), (operand_name, operands), (sign_name, signs), (prior_name, holding) in \
            product(OPERATIONS.items(), OPERANDS.items(), SIGNS.items(), PRIORS.items()):
        a, b = (signed(rng, 0.3, 2.5, s) if s else 0.0 for s in signs)
        constant = number(either_sign(rng, 0.5, 3.0))
        expression, values, parents = {
            "pair": (f"{function}(a, b)", {"a": a, "b": b}, ["a", "b"]),
            "same": (f"{function}(a, a)", {"a": a}, ["a", "a"]),
            "right": (f"a {symbol} {constant}", {"a": a}, ["a", "another node"]),
            "left": (f"{constant} {symbol} a", {"a": a}, ["a", "another node"]),
        }[operands]
        title = f"{function} on {operand_name}, {sign_name}, {prior_name}"
        cases.append(node_case("1a", title, expression, values, prior_of(rng, holding),
                               either_sign(rng, 0.3, 2.0), parents, symbol))
    return cases + planted_cases(rng, "1a")


# 1b: power's exponent (negative, zero, fractional, one, square, cube) crossed with its base
# (positive, negative, zero); a negative base with k = 0.5 (no real result) and a zero base
# with k < 1 (an infinite or undefined derivative) are dropped: 14 pairs. At a zero base the
# slope k a^(k-1) is 1 for k = 1 and 0 for k = 2 and 3, so a rule that special-cases a = 0
# shows. exp, log, tanh and relu each take their own input classes, the places where a wrong
# rule shows: exp at negative, zero, positive and large inputs; log near 0, at 1 (where log is
# 0), between 0 and 1 and large; tanh negative, at 0, positive and saturated (1 - t^2 tiny), and
# on both tails at the magnitudes of TAILS, where a tanh written with exponentials overflows;
# relu negative, positive and at its kink, +0.0 and -0.0 (both must pass nothing). Every input
# class is crossed with the priors and the upstream signs: (14 + 4 x 3 + 14) x 2 x 2 = 160
# cases.
EXPONENTS = {"k = -1": -1, "k = 0": 0, "k = 0.5": 0.5, "k = 1": 1, "k = 2": 2, "k = 3": 3}
BASES = {"a positive base": 1.0, "a negative base": -1.0, "a zero base": 0.0}
# Far out on the tails of tanh, sigmoid and the logistic loss: e^|x| is still finite at 700 and
# overflows a float beyond 709.78, where a formula that computes it raises OverflowError
# (math.exp) or divides infinities (NumPy). Each magnitude is taken with both signs.
TAILS = {"|input| 20": 20.0, "|input| 40": 40.0, "|input| 700 (e^|x| still finite)": 700.0,
         "|input| 710 (e^|x| overflows)": 710.0, "|input| 1000": 1000.0}
SIDES = {"positive": 1.0, "negative": -1.0}


def tails():
    """{"<magnitude>, <sign>": x} over TAILS and SIDES."""
    return {f"{name}, {side}": sign * x for (name, x), (side, sign) in product(TAILS.items(), SIDES.items())}


UNARY_INPUTS = {
    "exp": {"a negative input": -1.3, "zero": 0.0, "a positive input": 0.7, "a large input": 6.0,
            "an input of 550 to 605 (where a clip shows)": 550.0,
            "an input just below 709.78 (e^x still finite)": 709.0},
    "log": {"an input near 0": 0.02, "one": 1.0, "an input between 0 and 1": 0.45, "a large input": 40.0,
            "an input near 1e-12 (where an added epsilon shows)": 1e-12},
    "tanh": {"a negative input": -0.6, "zero": 0.0, "a positive input": 1.1, "a saturated input": 9.0,
             "a tiny input": 3e-10, **tails()},
    "relu": {"a negative input": -0.8, "a positive input": 1.3, "exactly +0.0": 0.0, "exactly -0.0": -0.0,
             "a tiny positive input (below a threshold of 1e-9)": 3e-10, "a tiny negative input": -3e-10},
}
# The upstream gradient stays below 1 in size where e^x is near the largest float: the product
# would overflow to inf in PyTorch and in every correct rule alike, and judge nothing.
NEAR_OVERFLOW = 700.0


def grad_floor(function, x, upstream):
    """The absolute floor of the gradient's comparison. 1 - tanh^2 and sigma (1 - sigma) for a
    positive input come out of a subtraction from 1, whose rounding (1e-16) PyTorch's formula and
    the notebook's share and an exact one (1 / cosh^2) does not: below that, relative error says
    nothing. Everywhere else the gradient is judged by its relative error."""
    if function == "tanh" or (function == "sigmoid" and x > 0):
        return 1e-15 * max(1.0, abs(upstream))
    return RELATIVE


def jitter_for(x):
    """How far an input class's value may move: not at all at 0 and 1, 10% in general, and
    0.1% from 700 on (so that 700 stays below e^x's overflow and 710 above it)."""
    return 0.0 if x in (0.0, 1.0) else 0.001 if abs(x) >= 700 else 0.1


def cases_1b(rng):
    inputs = []
    for (k_name, k), (base_name, sign) in product(EXPONENTS.items(), BASES.items()):
        if (sign < 0 and k == 0.5) or (sign == 0 and k < 1):
            continue
        base = signed(rng, 0.4, 1.8, sign) if sign else 0.0
        inputs.append((f"power with {k_name} and {base_name}", "power", f"power(a, {k})", base, f"**{k}"))
    for function, classes in UNARY_INPUTS.items():
        for input_name, x in classes.items():
            jitter = 1.0 + jitter_for(x) * rng.uniform()
            inputs.append((f"{function} at {input_name}", function, f"{function}(a)", x * jitter, function))
    cases = []
    for (title, function, expression, x, op), (prior_name, holding), (upstream_name, sign) in \
            product(inputs, PRIORS.items(), UPSTREAMS.items()):
        upstream = signed(rng, 0.3, 2.0, sign) * (0.45 if x > NEAR_OVERFLOW else 1.0)
        cases.append(node_case("1b", f"{title}, {prior_name}, {upstream_name}", expression, {"a": x},
                               prior_of(rng, holding), upstream, ["a"], op,
                               grad_floor=grad_floor(function, x, upstream)))
    return cases + planted_cases(rng, "1b")


# A: sigmoid at 0, at moderate inputs of both signs, at 14 on both sides (where sigma(1 - sigma)
# is tiny and a sign error in the forward rule is glaring) and on the tails of TAILS (where
# 1 / (1 + e^-x) overflows for a very negative x), crossed with the priors and the upstream
# signs: 15 x 2 x 2 = 60 cases. Each must be one node with parent a.
SIGMOID_INPUTS = {"zero": 0.0, "a positive input": 0.9, "a negative input": -1.6, "a large positive input": 14.0,
                  "a large negative input": -14.0, **tails()}


def cases_A(rng):
    cases = []
    for (input_name, x), (prior_name, holding), (upstream_name, sign) in \
            product(SIGMOID_INPUTS.items(), PRIORS.items(), UPSTREAMS.items()):
        x = x * (1.0 + jitter_for(x) * rng.uniform())
        upstream = signed(rng, 0.3, 2.0, sign)
        cases.append(node_case("A", f"sigmoid at {input_name}, {prior_name}, {upstream_name}", "sigmoid(a)",
                               {"a": x}, prior_of(rng, holding), upstream, ["a"], "sigmoid",
                               grad_floor=grad_floor("sigmoid", x, upstream)))
    return cases + planted_cases(rng, "A")


# The boundaries each function's contract declares (contracts.py), one case per distinct value
# and argument, whatever the seed: zero, +-1e-12, +-5e-324, the largest magnitudes the contract
# allows (709.78 for exp), the ends of a range and both sides of relu's kink. The other operand
# is ordinary; the parents' .grad start at 0, so that a tiny gradient is judged on its own
# (added to an earlier gradient of size 1 it would hide in the sum), and the upstream gradient
# is below 1 in size (e^709.78 times more would overflow). Power's base takes an integer k from
# -1 to 3 (a zero or subnormal base only k >= 1); its exponent, a positive base.
PLANTED = {"1a": (("add", "+", "ab"), ("multiply", "*", "ab")),
           "1b": (("power", None, "ak"), ("exp", "exp", "a"), ("log", "log", "a"), ("tanh", "tanh", "a"),
                  ("relu", "relu", "a")),
           "A": (("sigmoid", "sigmoid", "a"),)}


def planted_cases(rng, activity):
    cases = []
    for function, op, arguments in PLANTED[activity]:
        for argument in arguments:
            found = {}
            for name, value in declared.boundaries(function, argument).items():
                found.setdefault(value, []).append(declared.drawn(function, argument, name))
            # Small magnitudes (1e-9 to 1e-3) of both signs besides the boundaries: the training
            # step's gradients and products feed them to the primitives (test_contract_coverage.py).
            for sign in (1.0, -1.0):
                small = sign * 10 ** rng.uniform(-8.5, -3.5)
                if function != "log" or small > 0:
                    found.setdefault(small, [])
            for value, labels in found.items():
                upstream = either_sign(rng, 0.3, 0.9)
                if function in ("add", "multiply"):
                    other = either_sign(rng, 0.3, 2.5)
                    values = {"a": value, "b": other} if argument == "a" else {"a": other, "b": value}
                    expression, parents = f"{function}(a, b)", ["a", "b"]
                elif function == "power":
                    if argument == "a":
                        k = int(rng.choice([1, 2, 3] if abs(value) < 1e-300 else [-1, 2, 3]))
                        base = value
                    else:
                        k, base = value, signed(rng, 0.4, 1.8, 1.0)
                    expression, values, parents, op = f"power(a, {k!r})", {"a": base}, ["a"], f"**{k!r}"
                else:
                    expression, values, parents = f"{function}(a)", {"a": value}, ["a"]
                where = number(value) if abs(value) >= 1e-300 or value == 0 else repr(value)
                cases.append(node_case(activity, f"{function} with {argument} at {where}", expression, values, 0.0,
                                       upstream, parents, op, drawn=labels,
                                       grad_floor=grad_floor(function, values["a"], upstream)))
    return cases


# ---------------------------------------------------------------- 2: topological_order, backward
# A graph grows from a leaf x (times a second leaf y, when there are two) through stages, each
# present or not, and ends in a square, the root:
#   a repeated operand  c * c, then c + 0.5 c written as one operation with c twice;
#   a chain             1,500 operations in a row (a recursive topological_order must fail);
#   fan-out             u = c feeds 3u and u^2, which are added (u's gradient has two sources);
#   unequal paths       s = c reaches the output directly and through 0.5 s^2.
# Where two paths join, the parent order is a factor of its own: the short path listed first, or
# the long one (then the first parent's subtree reaches the second parent, as in x * y + x, and
# a walk that marks nodes when it pushes them, not when it places them, puts a node before one
# of its parents). Parent order matters only in graphs with a join, fan-out or unequal paths,
# and the chain, which comes before every join, is not crossed with it (the long-first graphs
# would double the chains, whose expected values are most of these cases' cost). The stages,
# the leaves (one or two) and the leaves' prior .grad (0, or holding an earlier gradient that
# backward must add to) are crossed in full otherwise: (16 + 6) x 2 x 2 = 88 graphs. Graphs the stages do not make come on top: a root that is a leaf itself, with either
# prior (backward adds its seed to what the root holds, as PyTorch's leaves do); twelve doublings
# n + n (4,096 paths through 13 nodes, each backward rule to be run once); and a recurrence
# unrolled over 10,000 steps, h <- -h + x / 1000, deeper than a recursion limit raised to 10,000
# allows, with x feeding every step.
GRAPH_STAGES = {"a repeated operand": "repeated", "a chain of 1,500 operations": "chain", "fan-out": "fan-out",
                "paths of unequal length": "unequal"}
GRAPH_JOINS = {"the short path as the first operand": False, "the long path as the first operand": True}
GRAPH_LEAVES = {"one leaf": 1, "two leaves": 2}
GRAPH_PRIORS = {"leaves' .grad starting at 0": False, "leaves' .grad already holding an earlier gradient": True}
RECURRENCE_STEPS = 10_000
EXTRA_GRAPHS = {"twelve doublings n + n (4,096 paths, 13 nodes)":
                    [["leaf", 0.9]] + [["weighted", [i, i], [1.0, 1.0]] for i in range(12)],
                f"a recurrence h <- -h + x / 1000 unrolled over {RECURRENCE_STEPS:,} steps":
                    [["leaf", 0.7]] + [["weighted", [i, 0], [-1.0, 1e-3]] for i in range(RECURRENCE_STEPS)]}


# The state backward may meet besides the leaves' gradients: every node, the root and the
# interior ones included, holding a gradient from before (backward adds to each: the seed to
# the root's, and each rule reads the whole of its node's .grad), or a second backward on the
# same root (the second adds its seed to the first's gradients and pushes them all again, as
# the notebook's "resets nothing" says). Crossed with four graphs of two leaves: 4 x 2 = 8 cases.
STATE_GRAPHS = {"a repeated operand": ({"repeated"}, False),
                "fan-out (the long path as the first operand)": ({"fan-out"}, True),
                "paths of unequal length (the long path as the first operand)": ({"unequal"}, True),
                "a repeated operand, fan-out and paths of unequal length": ({"repeated", "fan-out", "unequal"}, False)}
ROOT_SIZES = {"a small root (x of 1e-4 to 1e-2)": (1e-4, 1e-2), "a tiny root (x of 1e-6 to 3e-5)": (1e-6, 3e-5)}
GRAPH_STATES = {"every node, the root and interior ones included, already holding a gradient": 1,
                "backward called a second time on the same root": 2}


def graph_spec(rng, stages, leaves, long_first):
    spec = [["leaf", either_sign(rng, 0.5, 1.2)]]

    def add(*node):
        spec.append(list(node))
        return len(spec) - 1

    def join(short, long):
        return [long, short] if long_first else [short, long]

    current = 0
    if leaves == 2:
        spec.append(["leaf", either_sign(rng, 0.5, 1.2)])
        current = add("product", [0, 1])
    if "repeated" in stages:
        current = add("product", [current, current])
        current = add("weighted", [current, current], [1.0, 0.5])
    if "chain" in stages:
        for step in range(1500):
            current = add("weighted", [current], [1.0 if step % 2 else -1.0])
    if "fan-out" in stages:
        tripled = add("weighted", [current], [3.0])
        squared = add("square", [current])
        current = add("weighted", join(tripled, squared), [1.0, 1.0])
    if "unequal" in stages:
        squared = add("square", [current])
        halved = add("weighted", [squared], [0.5])
        current = add("weighted", join(current, halved), [1.0, 1.0])
    add("square", [current])
    return spec


def torch_graph(spec, prior):
    """(every node's value, every node's .grad after backward from the last node) by PyTorch;
    leaves add their gradient to `prior`, and the root's .grad gets the seed, 1.
    A node 1.0 * p or -1.0 * p whose parent feeds nothing else is exactly +-p, and p's adjoint is
    exactly +-its own: such a node gets a tensor only where a node reads it that is not one
    (`passing`), and its adjoint is its child's times the child's sign, so the 1,500-node chain is
    one tensor to PyTorch (built node by node it cost most of a submission's cases)."""
    uses = [0] * len(spec)
    for op, *operands in spec:
        for parent in operands[0] if op != "leaf" else ():
            uses[parent] += 1
    passing = {}  # node: (the node whose tensor it is a sign of, that sign)
    tensors = {}

    def tensor(i):
        if i not in tensors:
            start, sign = passing[i]
            tensors[i] = sign * tensor(start)
        return tensors[i]

    for i, (op, *operands) in enumerate(spec):
        if op == "leaf":
            tensors[i] = t64(operands[0])
            continue
        parents = operands[0]
        if op == "weighted" and len(parents) == 1 and abs(operands[1][0]) == 1.0 and uses[parents[0]] == 1 \
                and i < len(spec) - 1:
            start, sign = passing.get(parents[0], (parents[0], 1.0))
            passing[i] = (start, sign * operands[1][0])
            continue
        if op == "weighted":
            terms = [w * tensor(p) for w, p in zip(operands[1], parents)]
            tensors[i] = terms[0] if len(terms) == 1 else torch.stack(terms).sum()
        elif op == "product":
            tensors[i] = tensor(parents[0]) * tensor(parents[1])
        else:
            tensors[i] = tensor(parents[0]) ** 2
    last = len(spec) - 1
    inputs = sorted(i for i in tensors if i != last)
    adjoint = dict(zip(inputs, torch.autograd.grad(tensors[last], [tensors[i] for i in inputs]) if inputs else ()))
    adjoint = {i: g.item() for i, g in adjoint.items()}
    child = {spec[i][1][0]: i for i in passing}
    for i in reversed(range(last)):
        if i not in adjoint:  # a passing node read only by the passing node after it
            adjoint[i] = spec[child[i]][2][0] * adjoint[child[i]]
    grads = [adjoint[i] + (prior if spec[i][0] == "leaf" else 0.0) for i in range(last)]
    values = [tensors[i].item() if i in tensors else passing[i][1] * tensors[passing[i][0]].item()
              for i in range(len(spec))]
    return values, grads + [1.0 + (prior if spec[-1][0] == "leaf" else 0.0)]


def torch_held(spec, held, repeat):
    """(every node's value, every node's .grad) by PyTorch when every node's .grad starts at its
    entry of `held` and backward runs `repeat` times on the same root. A pass that resets
    nothing adds, to each node, the gradient of sum_n g_n n, where g is what the nodes hold when
    it starts plus the seed 1 at the root: every node is given a zero addend whose gradient is
    that node's total."""
    grads = [float(g) for g in held]
    for _ in range(repeat):
        nodes, handles = [], []
        for op, *operands in spec:
            if op == "leaf":
                nodes.append(t64(operands[0]))
                handles.append(nodes[-1])
                continue
            parents = [nodes[i] for i in operands[0]]
            if op == "weighted":
                node = torch.stack([w * p for w, p in zip(operands[1], parents)]).sum()
            elif op == "product":
                node = parents[0] * parents[1]
            else:
                node = parents[0] ** 2
            handles.append(t64(0.0))
            nodes.append(node + handles[-1])
        seeds = grads[:-1] + [grads[-1] + 1.0]
        total = torch.stack([seed * node for seed, node in zip(seeds, nodes)]).sum()
        grads = [g.item() for g in torch.autograd.grad(total, handles)]
    return [n.item() for n in nodes], grads


def node_name(spec, i):
    return f"leaf {i}" if spec[i][0] == "leaf" else f"node {i} (a {spec[i][0]})"


@cache
def extra_graph(title):
    """An EXTRA_GRAPHS graph's values and gradients, the same whatever the seed: PyTorch's
    backward through the 10,000-step recurrence takes a second, once per process."""
    return torch_graph(EXTRA_GRAPHS[title], 0.0)


def graph_case(title, spec, prior, computed=None, held=None, repeat=1):
    values, expected = computed or (torch_held(spec, held, repeat) if held is not None or repeat > 1
                                    else torch_graph(spec, prior))
    rules = sorted(i for i, node in enumerate(spec) if node[0] != "leaf") * repeat
    rules.sort()
    parents = [node[1] if node[0] != "leaf" else [] for node in spec]
    names = [node_name(spec, i) for i in range(len(spec))]
    title = f"backward on {title}"

    def judge(answer):
        order = answer["order"]
        if not isinstance(order, list):
            return f"{title}: topological_order must return a list of nodes, got a {order}"
        if -1 in order:
            return f"{title}: topological_order listed something that is not a node of the graph"
        if len(set(order)) != len(order):
            return f"{title}: topological_order listed a node more than once"
        if len(order) != len(spec):
            return (f"{title}: topological_order listed {plural(len(order), 'node')}; the graph has "
                    f"{len(spec)}, all reachable from the root")
        place = {node: i for i, node in enumerate(order)}
        for node in order:
            late = [p for p in parents[node] if place[p] > place[node]]
            if late:
                return f"{title}: topological_order put {names[late[0]]} after {names[node]}, which uses it"
        if order[-1] != len(spec) - 1:
            return f"{title}: topological_order must end with the root"
        problem = numbers_problem(answer["grads"], expected, f"{title}: .grad after backward", names)
        if problem:
            return problem
        calls = answer["calls"]
        if sorted(calls) != rules:
            return (f"{title}: backward must run each node's backward rule exactly once per call "
                    f"({plural(len(rules), 'rule call')}), but it made {plural(len(calls), 'call')}")
        return numbers_problem(answer["data_after"], values, f"{title}: .data after backward (it must not change)",
                               names)

    args = {"spec": spec, "prior": prior}
    if held is not None or repeat > 1:
        args.update(held=held, repeat=repeat)
    return Case("2", title, "graph_backward", args, judge)


def cases_2(rng):
    cases = []
    presence = [dict(zip(GRAPH_STAGES, flags)) for flags in product((False, True), repeat=len(GRAPH_STAGES))]
    for present, (join_name, long_first), (leaves_name, leaves), (prior_name, holding) in \
            product(presence, GRAPH_JOINS.items(), GRAPH_LEAVES.items(), GRAPH_PRIORS.items()):
        stages = [name for name in GRAPH_STAGES if present[name]]
        joined = present["fan-out"] or present["paths of unequal length"]
        if long_first and (not joined or present["a chain of 1,500 operations"]):
            continue
        spec = graph_spec(rng, {GRAPH_STAGES[name] for name in stages}, leaves, long_first)
        shape = f"a graph with {listing(stages)}" if stages else "a graph with no stage but the final square"
        if joined:
            shape += f" ({join_name})"
        cases.append(graph_case(f"{shape}, {leaves_name}, {prior_name}", spec, prior_of(rng, holding)))
    cases += [graph_case(f"a root that is a leaf itself, {prior_name}", [["leaf", either_sign(rng, 0.5, 2.0)]],
                         prior_of(rng, holding)) for prior_name, holding in GRAPH_PRIORS.items()]
    # Roots whose value is small (1e-9 to 1e-3) or tiny (below 1e-9), as the loss of a training
    # step far on the right side of every margin is (test_contract_coverage.py).
    for name, (low, high) in ROOT_SIZES.items():
        spec = [["leaf", either_sign(rng, low, high)], ["square", [0]]]
        cases.append(graph_case(f"x^2 with {name}", spec, 0.0))
    for (shape, (stages, long_first)), (state, repeat) in product(STATE_GRAPHS.items(), GRAPH_STATES.items()):
        spec = graph_spec(rng, stages, 2, long_first)
        held = [either_sign(rng, 0.2, 1.5) for _ in spec] if repeat == 1 else [0.0] * len(spec)
        cases.append(graph_case(f"a graph with {shape}, {state}", spec, 0.0, held=held, repeat=repeat))
    return cases + [graph_case(title, spec, 0.0, extra_graph(title)) for title, spec in EXTRA_GRAPHS.items()]


# ---------------------------------------------------------------- 3: logistic_loss, train_step
# logistic_loss: one example or five; labels all +1, all -1 or mixed (one example with mixed
# labels is dropped); scores small (|z| < 1), large (|z| between 3 and 6, where a missing minus
# sign or a missing mean is plain), far out (20 to 40) or beyond 709 (where e^(-tz) overflows a
# float for a score of the wrong sign, so that only a stable formula gives the loss). The first
# score always has the wrong sign for its label; the others either sign.
# 2 x 3 x 4 - 4 = 20 cases.
LOSS_EXAMPLES = {"one example": 1, "five examples": 5}
LOSS_LABELS = {"labels all +1": "plus", "labels all -1": "minus", "mixed labels": "mixed"}
LOSS_SCORES = {"small scores": (0.05, 1.0), "large scores": (3.0, 6.0),
               "scores of size 10 to 20 (where a switch of formula shows)": (10.0, 20.0),
               "scores of size 20 to 40": (20.0, 40.0),
               "scores of size 500 to 709 (e^(-tz) still finite, where a clip shows)": (500.0, 709.0),
               "scores of size 710 to 1,000 (e^(-tz) overflows)": (710.0, 1000.0)}
# Then cases the cross product leaves out: every margin negative and far out (20 to 40), so that
# the loss itself is tiny (e^-20 to e^-40) and judged by its relative error, with one example or
# five; labels passed as an int64 or int32 array, a list of ints or a tuple of floats (the
# notebook asks for "a sequence of numbers +-1"); and the boundaries of the scores' contract
# (zero, +-1e-12, +-5e-324, +-1e12) planted among five scores: 2 + 4 + 7 cases.
TINY_LOSSES = {"one example": 1, "five examples": 5}
LABEL_KINDS = {"labels as an int64 array": ("array", "int64"), "labels as an int32 array": ("array", "int32"),
               "labels as a list of ints": ("list", None), "labels as a tuple of floats": ("tuple", None)}
# log(1 + e^m) computed as the notebook asks rounds 1 + e^m to a float: the loss is exact to
# about 1e-16, not relatively, where it is tiny. Its gradient is exact relatively.
LOSS_FLOOR = 1e-15


def loss_case(scores, targets, title, drawn=(), kind=None):
    """`kind` names the container the labels are sent in when it is not a float64 array."""
    tz = t64(scores)
    loss = softplus(-t64(np.asarray(targets, dtype=np.float64), grad=False) * tz).mean()
    (grads,) = torch.autograd.grad(loss, (tz,))
    expected, wanted = loss.item(), grads.tolist()
    title = (f"logistic_loss on {title}, scores {[round(z, 3) for z in scores]}, "
             f"labels {[int(t) for t in targets]}")

    def judge(answer):
        if answer["kind"] != "Value":
            return f"{title}: expected the loss as a Value, got a {answer['kind']}"
        return first(number_problem(answer["loss"], expected, f"{title}: the loss", LOSS_FLOOR),
                     numbers_problem(answer["grads"], wanted, f"{title}: the scores' .grad after backward(loss)",
                                     [f"score {i}" for i in range(len(scores))], RELATIVE))

    sent = np.array(targets) if isinstance(targets, list) and kind is None else targets
    return Case("3", title, "loss_of", {"scores": scores, "targets": sent}, judge, drawn=tuple(drawn))


# train_step: networks without a hidden layer, with one, or with two (relu between layers);
# one example or six (drawn from two_moons with a seed the notebook does not use); one call,
# or three calls in a row on the same model (a missing gradient reset shows from the second);
# parameters whose .grad starts at 0 or stale, as a previous backward pass leaves it (a missing
# reset shows at once); a small or a large learning rate. Crossed in full:
# 3 x 2 x 2 x 2 x 2 = 48 cases. Biases start away from 0, so that a bias left out of the update
# changes the loss.
NETWORKS = {"an MLP [2, 1] (no hidden layer)": [2, 1], "an MLP [2, 4, 1]": [2, 4, 1],
            "an MLP [2, 3, 3, 1]": [2, 3, 3, 1]}
BATCHES = {"one example": 1, "six examples": 6}
CALLS = {"one call": 1, "three calls in a row": 3}
STALE = {"fresh .grad": 0.0, "a stale .grad left by an earlier backward": 0.75}
RATES = {"learning rate 0.2": 0.2, "learning rate 1.5": 1.5}


def parameter_names(sizes):
    names = []
    for layer, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:]), start=1):
        for neuron in range(n_out):
            names += [f"layer {layer}, neuron {neuron}, w{i}" for i in range(n_in)]
            names.append(f"layer {layer}, neuron {neuron}, b")
    return names


def torch_history(sizes, weights, X, targets, lr, steps):
    """[(loss, parameters after the step, gradients)] for `steps` steps of the same network,
    written with F.linear and logaddexp to stay independent of the notebook's PyTorch copy."""
    flat = t64(weights)
    inputs, labels = t64(X, grad=False), t64(targets, grad=False)
    history = []
    for _ in range(steps):
        h, at = inputs, 0
        for layer, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            block = flat[at:at + n_out * (n_in + 1)].reshape(n_out, n_in + 1)
            at += n_out * (n_in + 1)
            h = torch.nn.functional.linear(h, block[:, :-1], block[:, -1])
            if layer < len(sizes) - 2:
                h = torch.relu(h)
        loss = softplus(-labels * h[:, 0]).mean()
        (grads,) = torch.autograd.grad(loss, (flat,))
        flat = (flat - lr * grads).detach().requires_grad_()
        history.append((loss.item(), flat.tolist(), grads.tolist()))
    return history


def train_case(sizes, weights, X, targets, lr, steps, stale, title, drawn=()):
    expected = torch_history(sizes, weights, X, targets, lr, steps)
    names = parameter_names(sizes)
    title = f"train_step with {title}"

    def judge(answer):
        for call, (got, (loss, params, grads)) in enumerate(zip(answer, expected), start=1):
            when = f"{title}, call {call} of {steps}"
            if got["kind"] != "Value":
                return f"{when}: expected the loss as a Value, got a {got['kind']}"
            problem = first(number_problem(got["loss"], loss, f"{when}: the loss (before the update)"),
                            numbers_problem(got["grads"], grads, f"{when}: the parameters' .grad after the call",
                                            names),
                            numbers_problem(got["params"], params, f"{when}: the parameters after the update", names))
            if problem:
                return problem
        return None if len(answer) == steps else f"{title}: stopped after {plural(len(answer), 'call')}"

    args = {"sizes": sizes, "weights": weights, "stale": stale, "X": X, "targets": targets, "lr": lr, "steps": steps}
    return Case("3", title, "train_steps", args, judge, drawn=tuple(drawn))


def cases_3(rng):
    return loss_cases(rng) + training_cases(rng)


def loss_cases(rng):
    """logistic_loss's cases, drawn first from a seed's `rng`."""
    cases = []
    for (examples_name, examples), (labels_name, labels), (scores_name, (low, high)) in \
            product(LOSS_EXAMPLES.items(), LOSS_LABELS.items(), LOSS_SCORES.items()):
        if examples == 1 and labels == "mixed":
            continue
        targets = {"plus": [1.0] * examples, "minus": [-1.0] * examples,
                   "mixed": [1.0, -1.0, -1.0, 1.0, -1.0][:examples]}[labels]
        scores = [either_sign(rng, low, high) for _ in range(examples)]
        scores[0] = -targets[0] * abs(scores[0])  # a margin of the wrong sign: -tz > 0
        cases.append(loss_case(scores, targets, f"{examples_name}, {labels_name}, {scores_name}"))
    for name, examples in TINY_LOSSES.items():
        targets = [1.0, -1.0, 1.0, 1.0, -1.0][:examples]
        scores = [t * rng.uniform(20.0, 40.0) for t in targets]
        cases.append(loss_case(scores, targets, f"{name}, every margin -tz below -20 (a tiny loss)"))
    for name, (container, dtype) in LABEL_KINDS.items():
        labels = [1, -1, -1, 1, 1]
        targets = {"array": lambda: np.array(labels, dtype=dtype), "list": lambda: list(labels),
                   "tuple": lambda: tuple(float(t) for t in labels)}[container]()
        scores = [either_sign(rng, 0.05, 6.0) for _ in labels]
        cases.append(loss_case(scores, targets, f"five examples, {name}", kind=container))
    found = {}
    for name, value in declared.boundaries("logistic_loss", "scores").items():
        found.setdefault(value, []).append(declared.drawn("logistic_loss", "scores", name))
    for value, labels in found.items():
        scores = [either_sign(rng, 0.05, 6.0) for _ in range(5)]
        scores[int(rng.integers(5))] = value
        where = number(value) if abs(value) >= 1e-300 or value == 0 else repr(value)
        cases.append(loss_case(scores, [1.0, -1.0, 1.0, -1.0, -1.0], f"five examples, a score at {where}",
                               labels))
    return cases


def training_cases(rng):
    """The training loop's cases, drawn from `rng` after the loss's."""
    cases = []
    points, classes = two_moons(60, noise=0.1, seed=11)
    for (net_name, sizes), (batch_name, batch), (calls_name, steps), (stale_name, stale), (rate_name, lr) in \
            product(NETWORKS.items(), BATCHES.items(), CALLS.items(), STALE.items(), RATES.items()):
        rows = rng.choice(len(points), size=batch, replace=False)
        title = f"{net_name}, {batch_name}, {calls_name}, {stale_name}, {rate_name}"
        cases.append(train_case(sizes, he_weights(rng, sizes), points[rows], 2.0 * classes[rows] - 1.0, lr, steps,
                                stale, title))
    return cases + planted_training(rng, points, classes)


def he_weights(rng, sizes):
    weights = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        for _ in range(n_out):
            weights += [float(w) for w in rng.normal(0, np.sqrt(2 / n_in), size=n_in)]
            weights.append(float(rng.normal(0, 0.3)))
    return weights


# train_step beyond the cross product: labels as an int64 or int32 array (two calls on an MLP
# [2, 4, 1]), and the boundaries of X's and lr's contracts: X's (zero, +-1e-12, +-5e-324,
# +-1000) planted among six examples for one call with stale gradients, lr's (1e-12, 5e-324,
# 10) for two calls on an MLP [2, 3, 3, 1]. 2 + 7 + 3 cases.
TRAIN_LABELS = {"labels as an int64 array": "int64", "labels as an int32 array": "int32"}


def planted_training(rng, points, classes):
    cases = []
    for name, dtype in TRAIN_LABELS.items():
        rows = rng.choice(len(points), size=6, replace=False)
        cases.append(train_case([2, 4, 1], he_weights(rng, [2, 4, 1]), points[rows],
                                (2 * classes[rows] - 1).astype(dtype), 0.5, 2, 0.75,
                                f"an MLP [2, 4, 1], six examples, {name}, two calls in a row"))
    for argument, sizes, steps in (("X", [2, 4, 1], 1), ("lr", [2, 3, 3, 1], 2)):
        found = {}
        for name, value in declared.boundaries("train_step", argument).items():
            found.setdefault(value, []).append(declared.drawn("train_step", argument, name))
        for value, labels in found.items():
            rows = rng.choice(len(points), size=6, replace=False)
            X, lr = points[rows].copy(), 0.5
            where = number(value) if abs(value) >= 1e-300 or value == 0 else repr(value)
            if argument == "X":
                planted = rng.random(X.shape) < 1 / 3
                planted.flat[int(rng.integers(X.size))] = True
                X[planted] = value
                title = f"an MLP [2, 4, 1], six examples with entries of X at {where}, one call, stale .grad"
            else:
                lr = value
                title = f"an MLP [2, 3, 3, 1], six examples, learning rate {where}, two calls in a row"
            cases.append(train_case(sizes, he_weights(rng, sizes), X, 2.0 * classes[rows] - 1.0, lr, steps,
                                    0.75 if argument == "X" else 0.0, title, labels))
    return cases


# ---------------------------------------------------------------- B: dual numbers
# dual_add and dual_mul on two Duals, on one Dual twice, and with a number on either side (a
# constant, derivative 0); the derivatives carried are: the first operand seeded with 1 and the
# second constant, both carrying arbitrary derivatives, or none (der 0 everywhere). Crossed in
# full: 2 x 4 x 3 = 24 cases. dual_sin and dual_exp at negative, zero and positive inputs,
# with derivative 1, 0 or arbitrary: 2 x 3 x 3 = 18 cases. Then whole expressions through the
# given operators, at a negative, a zero and a positive point, seeded with 1: 3 x 3 = 9 cases.
# The expected values come from PyTorch's own forward mode, torch.autograd.forward_ad.
DUAL_BINARY = {"dual_add": ("+", torch.add), "dual_mul": ("*", torch.mul)}
DUAL_OPERANDS = {"two Duals": "pair", "one Dual used twice": "same", "a Dual and a number on its right": "right",
                 "a number on the left of a Dual": "left"}
DUAL_DERIVATIVES = {"the first seeded with 1, the second constant": "seeded", "arbitrary derivatives": "arbitrary",
                    "no derivative (der 0)": "none"}
DUAL_UNARY = {"dual_sin": torch.sin, "dual_exp": torch.exp}
DUAL_POINTS = {"a negative input": -1.0, "zero": 0.0, "a positive input": 1.0}
UNARY_DERIVATIVES = {"derivative 1": "one", "derivative 0": "none", "an arbitrary derivative": "arbitrary"}
DUAL_EXPRESSIONS = {
    "sin(x) e^x + x^2": ("x.sin() * x.exp() + x * x", lambda x: torch.sin(x) * torch.exp(x) + x * x),
    "3 x e^x + 2": ("3.0 * x * x.exp() + 2.0", lambda x: 3.0 * x * torch.exp(x) + 2.0),
    "sin(x^2) + e^(sin x)": ("(x * x).sin() + x.sin().exp()", lambda x: torch.sin(x * x) + torch.exp(torch.sin(x))),
}


def dual_case(title, expression, values, torch_expression, floor=TOL, drawn=()):
    with forward_ad.dual_level():
        duals = [forward_ad.make_dual(t64(v, grad=False), t64(d, grad=False)) for v, d in values.values()]
        value, derivative = (t.item() for t in forward_ad.unpack_dual(torch_expression(*duals))[:2])
    setting = (f"{title}: {expression} with "
               + ", ".join(f"{n} = Dual({number(v)}, {number(d)})" for n, (v, d) in values.items()))

    def judge(answer):
        if answer["kind"] != "Dual":
            return f"{setting}: expected a new Dual, got a {answer['kind']}"
        return first(number_problem(answer["val"], value, f"{setting}: val", floor),
                     number_problem(answer["der"], derivative, f"{setting}: der", floor),
                     *(unchanged(after, list(values[n]), f"{setting}: {n} as (val, der) (the inputs must not change)")
                       for n, after in zip(values, answer["inputs_after"])))

    return Case("B", setting, "dual", {"expression": expression, "values": {n: list(p) for n, p in values.items()}},
                judge, drawn=tuple(drawn))


def cases_B(rng):
    cases = []
    for (function, (symbol, operation)), (operand_name, operands), (der_name, ders) in \
            product(DUAL_BINARY.items(), DUAL_OPERANDS.items(), DUAL_DERIVATIVES.items()):
        a, b = either_sign(rng, 0.3, 2.0), either_sign(rng, 0.3, 2.0)
        da, db = {"seeded": (1.0, 0.0), "none": (0.0, 0.0),
                  "arbitrary": (either_sign(rng, 0.3, 2.0), either_sign(rng, 0.3, 2.0))}[ders]
        constant = number(either_sign(rng, 0.5, 3.0))
        expression, values, torch_expression = {
            "pair": (f"{function}(a, b)", {"a": (a, da), "b": (b, db)}, operation),
            "same": (f"{function}(a, a)", {"a": (a, da)}, lambda x, op=operation: op(x, x)),
            "right": (f"a {symbol} {constant}", {"a": (a, da)},
                      lambda x, op=operation, c=float(constant): op(x, c)),
            "left": (f"{constant} {symbol} a", {"a": (a, da)}, lambda x, op=operation, c=float(constant): op(c, x)),
        }[operands]
        cases.append(dual_case(f"{function} on {operand_name}, {der_name}", expression, values, torch_expression))
    for (function, operation), (point_name, point), (der_name, ders) in \
            product(DUAL_UNARY.items(), DUAL_POINTS.items(), UNARY_DERIVATIVES.items()):
        x = point * (1.0 + 0.5 * rng.uniform())
        der = {"one": 1.0, "none": 0.0, "arbitrary": either_sign(rng, 0.3, 2.0)}[ders]
        cases.append(dual_case(f"{function} at {point_name}, {der_name}", f"{function}(a)", {"a": (x, der)},
                               operation))
    for (name, (expression, torch_expression)), (point_name, point) in \
            product(DUAL_EXPRESSIONS.items(), DUAL_POINTS.items()):
        x = point * (0.5 + rng.uniform())
        cases.append(dual_case(f"d/dx of {name} at {point_name}", expression, {"x": (x, 1.0)}, torch_expression))
    return cases + planted_duals(rng)


# The boundaries of the rules' contracts (zero, +-1e-12, +-5e-324, the largest magnitudes, e^x's
# end at 709.78), one case per distinct value and argument, judged by relative error. In
# dual_add and dual_mul the boundary is both val and der of its operand, the other operand
# ordinary; dual_sin and dual_exp carry an ordinary derivative below 1 (e^709.78 is near the
# largest float).
PLANTED_DUALS = {"dual_add": ("ab", torch.add), "dual_mul": ("ab", torch.mul), "dual_sin": ("a", torch.sin),
                 "dual_exp": ("a", torch.exp)}


def planted_duals(rng):
    cases = []
    for function, (arguments, operation) in PLANTED_DUALS.items():
        for argument in arguments:
            found = {}
            for name, value in declared.boundaries(function, argument).items():
                found.setdefault(value, []).append(declared.drawn(function, argument, name))
            for value, labels in found.items():
                where = number(value) if abs(value) >= 1e-300 or value == 0 else repr(value)
                if arguments == "ab":
                    other = (either_sign(rng, 0.3, 2.0), either_sign(rng, 0.3, 2.0))
                    values = {"a": (value, value), "b": other} if argument == "a" else \
                        {"a": other, "b": (value, value)}
                    expression = f"{function}(a, b)"
                else:
                    values, expression = {"a": (value, either_sign(rng, 0.3, 0.9))}, f"{function}(a)"
                cases.append(dual_case(f"{function} with {argument} at {where}", expression, values, operation,
                                       RELATIVE, labels))
    return cases


# ---------------------------------------------------------------- C: a custom PyTorch ReLU
# The input is a 0-d tensor, a vector or a matrix; it holds an entry at exactly +0.0, at -0.0
# (equal to 0, sign bit set), or none at 0; every tensor of two or more entries has both signs.
# The upstream gradient is positive everywhere or has negative entries (a mask taken from the
# gradient instead of x shows only then). MyReLU's output is the root, or it is added to x
# itself: then PyTorch hands the same incoming gradient to both terms, and a backward rule that
# writes into it changes x's other contribution. Crossed in full: 3 x 3 x 2 x 2 = 36 cases.
# Then, per shape, x changed in place between forward and backward (PyTorch's version counter
# makes backward raise when x was saved with ctx.save_for_backward; x kept on ctx otherwise
# gives the gradient at the changed values) and gradcheck on inputs away from 0: 3 + 3 cases.
RELU_SHAPES = {"a 0-d tensor": (), "a vector": (5,), "a matrix": (2, 3)}
RELU_ZEROS = {"an entry at +0.0": 0.0, "an entry at -0.0": -0.0, "no entry at 0": None}
RELU_UPSTREAMS = {"a positive upstream gradient": "positive", "an upstream gradient with negative entries": "mixed"}
RELU_GRAPHS = {"MyReLU(x) alone": False, "MyReLU(x) + x (one incoming gradient for both terms)": True}


def mixed_signs(rng, shape):
    x = rng.normal(size=shape)
    if x.size >= 2:
        x.flat[0], x.flat[1] = abs(x.flat[0]) + 0.1, -abs(x.flat[1]) - 0.1
    return x


def array_problem(got, want, quantity):
    """None when the tensor `got` is `want` in shape and, by relative error, in every entry: relu
    and its mask are exact, so a tiny output or gradient is judged as closely as a large one."""
    want = np.asarray(want, dtype=np.float64)
    if not isinstance(got, np.ndarray) or got.dtype.kind not in "biuf":
        return f"{quantity}: expected a tensor of numbers, got {describe(got)}"
    if tuple(got.shape) != want.shape:
        return f"{quantity}: shape {got.shape}, expected {want.shape}"
    wrong = ~agree(got.astype(np.float64), want, RELATIVE)
    if wrong.any():
        i = int(np.argmax(wrong.ravel()))  # the first wrong entry
        where = f" at {tuple(int(j) for j in np.unravel_index(i, want.shape))}" if want.ndim else ""
        count = int(wrong.sum())
        return (f"{quantity}: {count} of {plural(want.size, 'entry', 'entries')} {'is' if count == 1 else 'are'} "
                "wrong; got {1}{0}, expected {2}".format(where, *apart(got.flat[i], want.flat[i])))
    return None


def relu_case(x, upstream, shared, title, drawn=(), transposed=False):
    """`transposed`: MyReLU receives x as the transpose of a contiguous leaf, a view whose
    entries are not laid out in order in memory."""
    tx = t64(x)
    out = torch.relu(tx)
    (grad,) = torch.autograd.grad(out + tx if shared else out, (tx,), t64(upstream, grad=False))
    expected_out, expected_grad = out.detach().numpy(), grad.numpy()
    title = f"MyReLU on {title}, x = {np.round(x, 3).tolist()}"
    gradient = "x's gradient through MyReLU(x) + x" if shared else "the input's gradient from relu_backward"

    def judge(answer):
        if answer["kind"] != "Tensor":
            return f"{title}: MyReLU.apply must return a tensor, got a {answer['kind']}"
        return first(array_problem(answer["out"], expected_out, f"{title}: the output"),
                     array_problem(answer["grad"], expected_grad, f"{title}: {gradient}"
                                   + (" (does relu_backward write into grad_output?)" if shared else "")),
                     unchanged(answer["x_after"], x, f"{title}: x after the call (relu_forward must not change it)"))

    args = {"x": x, "upstream": upstream, "shared": shared}
    if transposed:
        args["transposed"] = True
    return Case("C", title, "custom_relu", args, judge, drawn=tuple(drawn))


def changed_case(x, shape_name):
    """x (a non-leaf copy of a leaf) is negated in place after MyReLU's forward: backward must
    refuse (save_for_backward's version check) or still use x as it was."""
    tx = t64(x)
    (expected,) = torch.autograd.grad(torch.relu(tx), (tx,), t64(np.ones_like(x), grad=False))
    title = (f"MyReLU on {shape_name}, x = {np.round(x, 3).tolist()}, changed in place (negated) between "
             "forward and backward")

    def judge(answer):
        if answer["kind"] == "raised":
            if "inplace" in answer["error"] or "in-place" in answer["error"]:
                return None
            return f"{title}: backward raised {answer['error']}"
        problem = array_problem(answer["grad"], expected.numpy(), f"{title}: the input's gradient")
        return problem and (problem + "; relu_backward read x as changed after the forward pass: save it with "
                            "ctx.save_for_backward, which lets PyTorch notice")

    return Case("C", title, "custom_relu_changed", {"x": x}, judge)


def gradcheck_case(x, shape_name):
    title = f"torch.autograd.gradcheck of MyReLU on {shape_name} away from 0"

    def judge(answer):
        if answer is True:
            return None
        return f"{title}: gradcheck failed (your backward rule disagrees with finite differences of your forward rule)"

    return Case("C", title, "custom_relu_gradcheck", {"x": x}, judge)


def cases_C(rng):
    cases = []
    for (shape_name, shape), (zero_name, zero), (upstream_name, kind), (graph_name, shared) in \
            product(RELU_SHAPES.items(), RELU_ZEROS.items(), RELU_UPSTREAMS.items(), RELU_GRAPHS.items()):
        x = mixed_signs(rng, shape)
        if zero is not None:
            x.flat[-1] = zero
        if kind == "positive":
            upstream = rng.uniform(0.5, 2.0, size=shape)
        else:
            upstream = -mixed_signs(rng, shape) if shape else -rng.uniform(0.5, 2.0, size=shape)
        cases.append(relu_case(x, upstream, shared, f"{graph_name}, {shape_name}, {zero_name}, {upstream_name}"))
    for shape_name, shape in RELU_SHAPES.items():
        cases.append(changed_case(mixed_signs(rng, shape), shape_name))
    for shape_name, shape in RELU_SHAPES.items():
        x = mixed_signs(rng, shape)
        cases.append(gradcheck_case(np.where(np.abs(x) < 0.2, 0.5, x), shape_name))
    for graph_name, shared in RELU_GRAPHS.items():
        x, upstream = mixed_signs(rng, (3, 2)), -mixed_signs(rng, (3, 2))
        x.flat[-1] = 0.0
        cases.append(relu_case(x, upstream, shared, f"{graph_name}, a transposed (non-contiguous) matrix, an entry "
                                                    "at +0.0, an upstream gradient with negative entries",
                               transposed=True))
    return cases + planted_relu(rng)


# The boundaries of x's contract (zero, +-1e-12, +-5e-324, +-1e12, both sides of the kink)
# planted in a matrix x, and those of grad_output's in the upstream gradient of a vector, one
# case per distinct value, the other tensor of mixed signs.
def planted_relu(rng):
    cases = []
    for function, argument, shape in (("relu_forward", "x", (2, 3)), ("relu_backward", "grad_output", (5,))):
        found = {}
        for name, value in declared.boundaries(function, argument).items():
            found.setdefault(value, []).append(declared.drawn(function, argument, name))
        for value, labels in found.items():
            x, upstream = mixed_signs(rng, shape), -mixed_signs(rng, shape)
            planted = x if argument == "x" else upstream
            chosen = rng.random(shape) < 1 / 3
            chosen.flat[int(rng.integers(planted.size))] = True
            planted[chosen] = value
            where = number(value) if abs(value) >= 1e-300 or value == 0 else repr(value)
            shape_name = "a matrix" if len(shape) == 2 else "a vector"
            cases.append(relu_case(x, upstream, False, f"MyReLU(x) alone, {shape_name}, {argument} with entries at "
                                                       f"{where}", labels))
    return cases


def cases(seed):
    """Every hidden check, by activity, with the values drawn from the submission's `seed`."""
    rng = np.random.default_rng([seed, 20261207])
    return {"1a": cases_1a(rng), "1b": cases_1b(rng), "2": cases_2(rng), "3": cases_3(rng),
            "A": cases_A(rng), "B": cases_B(rng), "C": cases_C(rng)}
