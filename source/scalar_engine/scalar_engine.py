# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   course:
#     lab: scalar_engine
#     title: Scalar engine · Reverse-mode autodiff one number at a time
#     data: []
# ---

# %% [markdown]
# # Scalar engine · Reverse-mode autodiff one number at a time
#
# Calling `loss.backward()` in PyTorch fills the `.grad` of every parameter. This lab opens that
# box in its simplest form: an engine in which every node of the computation holds one plain
# Python number. It fits on a screen, yet by the end it trains a small neural network to separate
# two interleaved half-moons, and a float64 copy of the same network in PyTorch agrees with it at
# every step.
#
# Reverse mode works in two phases. The **forward pass** computes as usual but also records, for
# every elementary operation, which values went in and how a nudge of each input would move the
# output. The **backward pass** starts from the final output and walks that record from the end
# to the beginning, applying the chain rule one operation at a time. Only the local rule of each
# operation has to be written by hand; the bookkeeping is the same for every program.
#
# | Activity | You write | Points |
# |---|---|---|
# | 1a | `add` and `multiply`: new nodes with their backward rules | 2 |
# | 1b | `power`, `exp`, `log`, `tanh`, `relu` | 3 |
# | 2 | `topological_order` and `backward` | 4 |
# | 3 | `logistic_loss` and `train_step` | 3 |
# | A (optional) | `sigmoid` as a single node | 1 bonus |
# | B (optional) | forward mode: the rules of the `Dual` numbers | 2 bonus |
# | C (optional) | ReLU as a custom PyTorch operation | 1 bonus |
#
# **Working through it.** Run the cells from the top. Every activity ends with a check cell that
# stops with a message naming the quantity that is off and the input it was computed for. A
# function you have not written yet raises `NotImplementedError` when it is first called, so
# take the activities in order. The `Value` class, the network, the data and the plots are
# supplied.
#
# This lab comes before PT03, which builds the same algorithm on NumPy arrays. You should know
# the chain rule, and PyTorch's `requires_grad` and `.backward()` from PT01.

# %% [markdown] tags=["reference"]
# **Instructor copy.** Cells tagged `reference` hold the solutions and the answers to the
# discussion questions. `build_student.py` removes them, with every saved output, when it writes
# the student notebook, so an unfinished activity raises an error instead of running a hidden
# solution.
#
# Timing: the 100-step run of Section 8 takes one to one and a half minutes on two cores; most
# of it is spent by Python's cycle collector (see the answer to discussion question 4).

# %% [markdown]
# ## 1 · Setup
#
# Python floats are 64-bit, and the PyTorch tensors the checks build are float64 too, so the two
# engines can be compared with a tolerance of 1e-9. The checks use one helper:
# `close(actual, expected, quantity)` insists that two numbers (or two lists of numbers) agree
# and otherwise raises an error that names `quantity`.

# %%
import gc
import math

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons

np.set_printoptions(precision=4, suppress=True)


def as_floats(value, quantity):
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise AssertionError(f"{quantity}: expected a number, got a {type(value).__name__}") from None


def close(actual, expected, quantity, *, tol=1e-9):
    """Raise an AssertionError naming `quantity` unless the numbers agree within `tol`."""
    got, want = as_floats(actual, quantity), as_floats(expected, quantity)
    if got.shape != want.shape:
        raise AssertionError(f"{quantity}: got {got.size} numbers, expected {want.size}")
    wrong = ~np.isclose(got, want, rtol=tol, atol=tol)
    if wrong.any():
        i = int(np.flatnonzero(wrong)[0])
        where = f" (entry {i})" if got.ndim else ""
        raise AssertionError(f"{quantity}{where}: got {got.flat[i]:.10g}, expected {want.flat[i]:.10g}")


# %% [markdown]
# PyTorch is what the checks compare with. It gets a cell of its own; the engine you write uses
# only `math`.

# %%
import torch

torch.set_num_threads(1)
print(f"NumPy {np.__version__}, PyTorch {torch.__version__}")


def t64(number):
    """A float64 PyTorch leaf that records gradients."""
    return torch.tensor(float(number), dtype=torch.float64, requires_grad=True)


# The PyTorch counterparts of the engine's primitives, for the checks.
TORCH_NAMES = {"add": torch.add, "multiply": torch.mul, "power": torch.pow, "exp": torch.exp,
               "log": torch.log, "tanh": torch.tanh, "relu": torch.relu, "sigmoid": torch.sigmoid}


# %% [markdown]
# ## 2 · A number that remembers where it came from
#
# The engine's only data type is `Value`. Besides the number itself, each `Value` carries what
# the backward pass needs:
#
# * `data`: the number, a Python float;
# * `grad`: the derivative of the final output with respect to this value, $\partial L/\partial v$,
#   filled in by the backward pass. It starts at 0;
# * `_prev`: the parents, the Values this one was computed from, in argument order (`a * a` has
#   the parents `(a, a)`); a leaf has none;
# * `_op`: a label such as `"*"`, used only for printing;
# * `_backward`: a function of no arguments, the **backward rule**. Called once `grad` of this
#   node is final, it adds this node's contribution to the `grad` of each parent. A leaf's rule
#   does nothing.
#
# Each operation therefore comes as a pair, written side by side: the forward rule computes the
# new number, and a small closure stored on the new node knows how to send gradient back.
#
# **Where the gradient lives.** Here the gradient is an attribute of the node, and every rule
# **adds** into `.grad` with `+=`. Adding is what the chain rule asks for whenever a value is used
# more than once, and it has a consequence: nothing ever resets `.grad`. Clearing the gradients
# before the next backward pass is the training loop's job, just as `optimizer.zero_grad()` is in
# PyTorch. The next lab, PT03, organises the same algorithm differently: there each call of
# `backward` builds a fresh dictionary that maps every node to its gradient, so nothing carries
# over from one call to the next and nothing needs resetting.
#
# The class below is complete. Its operators call functions that you write in Activity 1
# (`add`, `multiply`, `power`, ...): until then only creating Values works. Everything else is
# derived from those primitives: `a - b` is `a + (-1) * b` and `a / b` is `a * b**-1`, so they
# need no backward rule of their own. Plain numbers mixed into an expression become constant
# leaves.

# %%
class Value:
    """A float in a computation, with its parents and its backward rule."""

    def __init__(self, data, _prev=(), _op=""):
        self.data = float(data)
        self.grad = 0.0
        self._prev = tuple(_prev)
        self._op = _op
        self._backward = lambda: None  # leaves send nothing back

    def __repr__(self):
        return f"Value(data={self.data:.6g}, grad={self.grad:.6g})"

    # The primitives: functions you write in Activity 1 (sin is given as an example).
    def __add__(self, other):
        return add(self, as_value(other))

    def __mul__(self, other):
        return multiply(self, as_value(other))

    def __pow__(self, k):
        if isinstance(k, Value):
            raise TypeError("the exponent of ** must be a plain number")
        return power(self, k)

    def exp(self):
        return exp(self)

    def log(self):
        return log(self)

    def tanh(self):
        return tanh(self)

    def relu(self):
        return relu(self)

    def sin(self):
        return sin(self)

    def sigmoid(self):
        return sigmoid(self)

    def backward(self):
        backward(self)

    # Derived operations: compositions of the primitives, with no backward rule of their own.
    def __radd__(self, other):  # 2 + v
        return self + other

    def __rmul__(self, other):  # 2 * v
        return self * other

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):  # 2 - v
        return (-self) + other

    def __truediv__(self, other):
        return self * as_value(other) ** -1

    def __rtruediv__(self, other):  # 2 / v
        return as_value(other) * self ** -1


def as_value(x):
    """Values pass through; plain numbers become constant leaves."""
    return x if isinstance(x, Value) else Value(x)


# %% [markdown]
# One primitive written out in full, the sine. The forward rule computes $\sin a$; since
# $\frac{d}{da}\sin a = \cos a$, the backward rule adds $\cos a$ times the gradient that has
# arrived at the new node to `a.grad`. Note that the closure reads `result.grad` when it is
# *called*, during the backward pass, not when it is created: at creation time nothing is known
# yet about the output's gradient.

# %%
def sin(a):
    """sin(a) as a new node: forward rule and backward rule side by side."""
    result = Value(math.sin(a.data), (a,), "sin")
    slope = math.cos(a.data)  # the local derivative, known as soon as a is

    def send_back():
        a.grad += slope * result.grad  # += : a may also feed other nodes

    result._backward = send_back
    return result


angle = Value(0.5)
wave = sin(angle)
wave.grad = 1.0  # treat wave as the final output for a moment
wave._backward()
print(wave, angle, sep="\n")
close(angle.grad, math.cos(0.5), "d sin(a)/da at a = 0.5")

# %% [markdown]
# ## 3 · Activity 1: the primitives
#
# ### Activity 1a · Addition and multiplication (2 points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# Write `add(a, b)` and `multiply(a, b)` for two Values `a` and `b`, following the pattern of
# `sin`. Each
#
# 1. computes the new number;
# 2. creates a new `Value` with the parents `(a, b)`, in that order, and the label `"+"` or `"*"`;
# 3. attaches a backward rule that adds, to each parent's `.grad`, the local derivative times
#    the new node's `.grad`;
# 4. returns the new node.
#
# | operation | forward | backward rule |
# |---|---|---|
# | $c = a + b$ | $a + b$ | `a.grad` $\mathrel{+}= \bar c$, `b.grad` $\mathrel{+}= \bar c$ |
# | $c = a \cdot b$ | $ab$ | `a.grad` $\mathrel{+}= b\,\bar c$, `b.grad` $\mathrel{+}= a\,\bar c$ |
#
# where $\bar c$ is the new node's `.grad` at the moment the rule runs. `a` and `b` may be one
# and the same Value: in `a * a` both lines of the rule update `a.grad`, and together they must
# give $2a\bar c$, the derivative of $a^2$. That only works with `+=`.
#
# The check runs each new node's backward rule once, on its own, after setting the new node's
# `.grad` to some number and with parents whose `.grad` may already hold something; it compares
# the parents' `.grad` with PyTorch on the same small graph.

# %% tags=["stub"] activity="1a"
def add(a, b):
    """a + b as a new Value whose backward rule adds into a.grad and b.grad."""
    raise NotImplementedError("Complete Activity 1a: add")


def multiply(a, b):
    """a * b as a new Value whose backward rule adds into a.grad and b.grad."""
    raise NotImplementedError("Complete Activity 1a: multiply")


# %% tags=["reference"] activity="1a"
def add(a, b):
    out = Value(a.data + b.data, (a, b), "+")

    def _backward():
        a.grad += out.grad  # the sum moves one for one with each term
        b.grad += out.grad

    out._backward = _backward
    return out


def multiply(a, b):
    out = Value(a.data * b.data, (a, b), "*")

    def _backward():
        a.grad += out.grad * b.data  # each factor's slope is the other factor
        b.grad += out.grad * a.data

    out._backward = _backward
    return out


# %% [markdown]
# The check cells of Activities 1a, 1b and A share one helper. `check_node` builds leaves from
# `values`, evaluates `expression` on them, runs the new node's backward rule once with
# `out.grad = upstream`, and compares the value, the parents and the parents' `.grad` with what
# PyTorch computes for the same expression.

# %%
def check_node(expression, values, torch_function, *, prior=0.0, upstream=0.75, parents=None):
    """Compare the node `expression` makes from the leaves `values` with PyTorch float64.
    `prior` is what every leaf's .grad holds beforehand; `parents` names the expected _prev
    ("constant" for a plain number the expression turns into a leaf)."""
    leaves = {name: Value(number) for name, number in values.items()}
    for leaf in leaves.values():
        leaf.grad = prior
    out = eval(expression, globals(), dict(leaves))
    assert isinstance(out, Value), f"{expression}: expected a new Value, got {type(out).__name__}"
    assert all(out is not leaf for leaf in leaves.values()), f"{expression}: return a new node, not an input"
    names = [next((n for n, leaf in leaves.items() if leaf is p), "constant") for p in out._prev]
    wanted = parents or list(values)
    assert sorted(set(names)) == sorted(set(wanted)), \
        f"{expression}: the new node's _prev should hold {wanted}, got {names}"
    tensors = {name: t64(number) for name, number in values.items()}
    expected = eval(expression, {**globals(), **TORCH_NAMES}, dict(tensors)) if torch_function is None \
        else torch_function(**tensors)
    close(out.data, expected.item(), f"{expression}: out.data")
    grads = torch.autograd.grad(expected, list(tensors.values()), torch.tensor(upstream, dtype=torch.float64))
    out.grad = upstream
    out._backward()
    for (name, leaf), grad in zip(leaves.items(), grads):
        close(leaf.grad, prior + grad.item(),
              f"{expression} with {name}.grad starting at {prior} and out.grad = {upstream}: "
              f"{name}.grad after out._backward()")
        close(leaf.data, values[name], f"{expression}: {name}.data (the inputs must not change)")

# %% tags=["check"] activity="1a" points=2
check_node("add(a, b)", {"a": 1.5, "b": 0.25}, None)
check_node("add(a, b)", {"a": -1.5, "b": 0.25}, None, prior=-0.5)
check_node("add(a, b)", {"a": 2.0, "b": 0.0}, None, prior=0.5, upstream=-1.25)
check_node("add(a, a)", {"a": 0.75}, None, parents=["a", "a"], upstream=2.0)
check_node("multiply(a, b)", {"a": 3.0, "b": -2.0}, None, upstream=0.5)
check_node("multiply(a, b)", {"a": -1.5, "b": 0.0}, None, prior=0.25)
check_node("multiply(a, a)", {"a": -1.75}, None, parents=["a", "a"], upstream=-0.5)  # 2a, not a
check_node("multiply(a, a)", {"a": 0.0}, None, parents=["a", "a"], prior=1.0)
check_node("a * 4.0", {"a": 1.25}, lambda a: a * 4.0, parents=["a", "constant"], prior=-0.5)
check_node("4.0 * a", {"a": -0.5}, lambda a: 4.0 * a, parents=["a", "constant"], upstream=1.5)
check_node("a + 2.5", {"a": 0.0}, lambda a: a + 2.5, parents=["a", "constant"], prior=2.0)
check_node("2.5 + a", {"a": -3.0}, lambda a: 2.5 + a, parents=["a", "constant"], upstream=-0.75)
print("Activity 1a passed: add and multiply, a value used twice, numbers on either side, "
      ".grad that already held something.")

# %% [markdown]
# ### Activity 1b · Powers, exp, log, tanh and relu (3 points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# Five more primitives, each of one parent and each written like `sin`:
#
# | function | forward | local derivative |
# |---|---|---|
# | `power(a, k)`, `k` a plain number | $a^k$ | $k\,a^{k-1}$ |
# | `exp(a)` | $e^a$ | $e^a$, the new node's own `data` |
# | `log(a)` | $\log a$ | $1/a$ |
# | `tanh(a)` | $t = \tanh a$ | $1 - t^2$ |
# | `relu(a)` | $\max(0, a)$ | 1 where $a > 0$, else 0 |
#
# The parent tuple is `(a,)`; label the nodes `f"**{k}"`, `"exp"`, `"log"`, `"tanh"` and
# `"relu"`. Use `math.exp`, `math.log` and `math.tanh` on floats: `math.exp` raises
# `OverflowError` beyond $e^{709.78}$, so a tanh written with exponentials fails at inputs that
# `math.tanh` handles, and the check tries some. ReLU has no derivative at exactly 0; like
# PyTorch, use 0 there. `power` is the one behind `**`, so it also serves
# division: `a / b` is `a * b**-1`.

# %% tags=["stub"] activity="1b"
def power(a, k):
    """a ** k for a Value a and a plain number k, as a new Value."""
    raise NotImplementedError("Complete Activity 1b: power")


def exp(a):
    raise NotImplementedError("Complete Activity 1b: exp")


def log(a):
    raise NotImplementedError("Complete Activity 1b: log")


def tanh(a):
    raise NotImplementedError("Complete Activity 1b: tanh")


def relu(a):
    raise NotImplementedError("Complete Activity 1b: relu")


# %% tags=["reference"] activity="1b"
def power(a, k):
    out = Value(a.data**k, (a,), f"**{k}")

    def _backward():
        a.grad += k * a.data ** (k - 1) * out.grad

    out._backward = _backward
    return out


def exp(a):
    out = Value(math.exp(a.data), (a,), "exp")

    def _backward():
        a.grad += out.data * out.grad  # e^a is its own derivative

    out._backward = _backward
    return out


def log(a):
    out = Value(math.log(a.data), (a,), "log")

    def _backward():
        a.grad += out.grad / a.data

    out._backward = _backward
    return out


def tanh(a):
    t = math.tanh(a.data)
    out = Value(t, (a,), "tanh")

    def _backward():
        a.grad += (1.0 - t * t) * out.grad  # from the output, no second tanh

    out._backward = _backward
    return out


def relu(a):
    positive = a.data > 0
    out = Value(a.data if positive else 0.0, (a,), "relu")

    def _backward():
        if positive:  # at exactly 0 nothing passes, as in PyTorch
            a.grad += out.grad

    out._backward = _backward
    return out


# %% tags=["check"] activity="1b" points=3
for a, k in [(1.5, 3), (-1.2, 3), (0.0, 3), (0.0, 2), (0.0, 1), (-2.0, 1), (2.0, -1), (-0.8, -1), (2.25, 0.5),
             (1.7, 0), (0.6, 2)]:
    check_node(f"power(a, {k})", {"a": a}, None, prior=0.5 if a < 0 else 0.0, upstream=-0.6 if k == 2 else 0.8)
for a in [-1.3, 0.0, 0.4, 4.0]:
    check_node("exp(a)", {"a": a}, None, prior=0.6 if a > 0 else 0.0, upstream=-1.1 if a else 0.9)
for a in [0.05, 0.45, 1.0, 3.5, 20.0]:
    check_node("log(a)", {"a": a}, None, prior=0.3 if a > 1 else 0.0, upstream=1.4 if a != 0.45 else -0.7)
for a in [-0.9, 0.0, 0.3, 8.0, -8.0, 30.0, -30.0, 705.0, -705.0, 750.0, -750.0]:  # e^|a| overflows beyond 709.78
    check_node("tanh(a)", {"a": a}, None, prior=-0.2 if a > 0 else 0.0, upstream=0.8 if a else -1.2)
for a, upstream in [(1.2, 0.9), (1.2, -0.9), (-0.7, 0.6), (-0.7, -0.6), (0.0, 1.0), (-0.0, -1.0)]:
    check_node("relu(a)", {"a": a}, None, prior=0.25 if upstream < 0 else 0.0, upstream=upstream)
check_node("a ** 2", {"a": -3.0}, lambda a: a**2, upstream=1.0)
check_node("a / 2.0", {"a": 1.0}, lambda a: a / 2.0, parents=["a", "constant"], upstream=1.0)
print("Activity 1b passed: power (exponents -1, 0, 0.5, 1, 2, 3, zero bases included), exp, log, tanh "
      "(far out on both tails too), relu at 0, every rule adding to a .grad that held something, "
      "and ** and / through them.")

# %% [markdown]
# ## 4 · Activity 2: the backward pass
#
# Every local rule is now in place; what remains is the order in which to run them. The obvious
# idea is recursion: give the output the gradient 1, run its backward rule, then do the same for
# each of its parents, and so on down. It is given below, together with a graph to try it on:
# $q = x \cdot x$ and $L = q \cdot q$, so that $L = x^4$ and $dL/dx = 4x^3 = 32$ at $x = 2$.
#
# **Predict** before running the next two cells: what will `naive_backward` report for
# $dL/dx$?

# %%
def naive_backward(root):
    """Tempting but wrong: run a node's backward rule as soon as the walk reaches it, then
    recurse into its parents; no order, and no memory of nodes already handled."""
    def push(node):
        node._backward()
        for parent in node._prev:
            push(parent)

    root.grad = 1.0
    push(root)


# %% requires="1a"
x = Value(2.0)
q = x * x
L = q * q
naive_backward(L)
naive_dx = x.grad
print(f"naive backward: dL/dx = {naive_dx}   (4x^3 = {4 * 2.0**3})")

# %% [markdown]
# It says 64, twice the truth. $q$ feeds the last multiplication twice, so the walk reaches $q$
# along two edges and runs $q$'s backward rule twice, each time pushing $q$'s whole gradient
# down to $x$ once more. In a deeper graph the damage compounds: a node reachable along $n$ paths
# would propagate $n$ times, and the number of paths can grow exponentially with depth. Worse
# still, a node may be run before all of its users have added their share, and then it passes
# on an incomplete gradient.
#
# The cure is an order. A node may run its backward rule only when its own gradient is complete,
# that is, after every node that uses it. A **topological order** lists every node after all of
# its parents (for this graph: $x, q, L$); read backwards, it puts every node after all of its
# users. Computation graphs have no cycles (an operation cannot consume its own output), so such
# an order always exists.
#
# ### Activity 2 · `topological_order` and `backward` (4 points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# `topological_order(root)` returns the list of every node reachable from `root` through
# `_prev`, each exactly once, every node after all of its parents, `root` last. The usual
# definition is recursive (to place a node, first place its parents, then append it), but
# Python stops recursing at a depth of about 1000, and the check builds a chain of 10,000
# operations (raising the limit with `sys.setrecursionlimit` only moves the wall). Use a list as
# an explicit stack instead, for example of pairs `(node, ready)`:
#
# * start with `[(root, False)]`, an empty order and an empty set of seen nodes;
# * pop a pair. If `ready` is true, all of the node's parents are placed: append the node. If not
#   and the node is unseen, mark it seen, push `(node, True)` and then `(parent, False)` for every
#   parent. Push the parents in reverse so that the first parent is placed first: then your
#   order matches the recursive one, which the tables below print. Mark a node seen when you
#   pop it, not when you push it: in $xy + x$ the walk reaches $x$ through $xy$ after pushing it
#   as the sum's second parent, and a node marked on the push would be placed after $xy$.
#
# `backward(root)` adds 1 to `root.grad` (the seed, $\partial L/\partial L$) and then runs the
# backward rule of every node of `topological_order(root)`, from the last node to the first.
# It resets nothing: gradients add to whatever `.grad` holds, the seed included, as in PyTorch,
# where `backward` on a leaf that already holds a gradient adds 1 to it. (A graph is built for one
# backward pass; its root normally starts at 0.) It returns nothing; the results are in the
# `.grad` attributes.

# %% tags=["stub"] activity="2"
def topological_order(root):
    """Every node reachable from root, once each, parents before the nodes that use them."""
    raise NotImplementedError("Complete Activity 2: topological_order")


def backward(root):
    """Add the seed 1 to root.grad and run every backward rule in reverse topological order."""
    raise NotImplementedError("Complete Activity 2: backward")


# %% tags=["reference"] activity="2"
def topological_order(root):
    order, seen, todo = [], set(), [(root, False)]
    while todo:
        node, ready = todo.pop()
        if ready:
            order.append(node)  # its parents were appended before it
        elif node not in seen:
            seen.add(node)
            todo.append((node, True))
            todo.extend((parent, False) for parent in reversed(node._prev))
    return order


def backward(root):
    root.grad += 1.0  # the seed, dL/dL, added like every other gradient
    for node in reversed(topological_order(root)):
        node._backward()  # all of node's users have already added their share


# %% tags=["check"] activity="2" points=4
def check_order(root, what):
    order = topological_order(root)
    assert isinstance(order, list), f"topological_order({what}): expected a list, got {type(order).__name__}"
    assert len({id(n) for n in order}) == len(order), f"topological_order({what}): a node is listed twice"
    place = {id(node): i for i, node in enumerate(order)}
    for node in order:
        for parent in node._prev:
            assert id(parent) in place, f"topological_order({what}): a parent of a listed node is missing"
            assert place[id(parent)] < place[id(node)], f"topological_order({what}): a parent comes after its user"
    assert order and order[-1] is root, f"topological_order({what}): the root must come last"
    return order


# The graphs of this check are made of nodes whose backward rules are written here, so that it
# tests topological_order and backward alone, whatever your Activity 1 rules do.
def graph_node(label, parents, data, slopes, calls=None):
    out = Value(data, parents, label)

    def rule():
        if calls is not None:
            calls.append(out)
        for parent, local in zip(parents, slopes):
            parent.grad += out.grad * local

    out._backward = rule
    return out


def graph_times(a, b):
    return graph_node("*", (a, b), a.data * b.data, (b.data, a.data))


def graph_plus(a, b, calls=None):
    return graph_node("+", (a, b), a.data + b.data, (1.0, 1.0), calls)


def graph_square(a):
    return graph_node("**2", (a,), a.data**2, (2 * a.data,))


x, y = Value(2.0), Value(-3.0)
f = graph_square(graph_plus(graph_times(x, y), x))  # the sum's first parent, x*y, reaches its second parent, x
assert len(check_order(f, "(x*y + x)**2")) == 5, "topological_order((x*y + x)**2): the graph has 5 nodes"
backward(f)
close(f.grad, 1.0, "f.grad after backward(f), the seed")
close([x.grad, y.grad], [16.0, -16.0], "[df/dx, df/dy] for f = (xy + x)^2 at x = 2, y = -3")

x = Value(2.0)
q = graph_times(x, x)
backward(graph_times(q, q))
close(x.grad, 32.0, "dL/dx for L = (x*x)*(x*x) at x = 2 (q is used twice)")

x = Value(0.5)
u = graph_square(x)  # x reaches the sum through u * 3, through u^2 * x and directly: paths of unequal length
fan = graph_plus(graph_plus(graph_times(u, Value(3.0)), graph_times(graph_square(u), x)), x)
backward(fan)
tx = t64(0.5)
(3.0 * tx**2 + tx**4 * tx + tx).backward()
close(x.grad, tx.grad.item(), "d/dx [3x^2 + x^4 x + x] at x = 0.5 (fan-out, paths of unequal length)")

w = Value(1.5)
w.grad = 10.0  # left over from an earlier backward pass
backward(graph_times(w, w))
close(w.grad, 13.0, "w.grad after backward(w * w) when it held 10 before: backward adds, it does not reset")
leaf = Value(4.0)
backward(leaf)
close(leaf.grad, 1.0, "backward of a lone leaf: its grad is the seed, 1")
leaf.grad = 2.5
backward(leaf)
close(leaf.grad, 3.5, "backward of a leaf whose grad held 2.5: the seed is added to it, as in PyTorch")

start = chain = Value(1.0)
for _ in range(10_000):
    chain = graph_node("+1", (chain,), chain.data + 1.0, (1.0,))
try:
    check_order(chain, "a chain of 10,000 operations")
except RecursionError:
    raise AssertionError("topological_order recursed too deep on a chain of 10,000 operations: "
                         "walk the graph with an explicit stack") from None
backward(chain)
close(start.grad, 1.0, "d/dx of a chain of 10,000 operations")

calls = []
start = doubled = Value(1.0)
for _ in range(12):  # twelve doublings: 4,096 paths through 13 nodes
    doubled = graph_plus(doubled, doubled, calls)
backward(doubled)
close(start.grad, 4096.0, "the gradient of 12 doublings v + v")
assert len(calls) == 12, f"backward must run each backward rule once; over 12 doublings it ran {len(calls)}"
print("Activity 2 passed: orders, the seed, repeated and shared nodes, accumulation, "
      "a 10,000-node chain, one call per rule.")

# %% [markdown]
# With the order in place, the backward pass is exact. Four results to compare with a hand
# calculation:
#
# * $f = (xy + x)^2$ at $x = 2$, $y = -3$: $f = 16$, $\partial f/\partial x = 2(xy + x)(y + 1) = 16$
#   and $\partial f/\partial y = 2(xy + x)\,x = -16$;
# * a longer expression $g(a, b)$ with six kinds of operation, values used on several paths and an
#   ordinary Python `if`, against central differences $\frac{g(a + h) - g(a - h)}{2h}$ with
#   $h = 10^{-6}$;
# * $L = \operatorname{relu}(ab - c) + a^2$ at $a = 3$, $b = -1$, $c = -5$: by hand $L = 11$,
#   $\partial L/\partial a = b + 2a = 5$, $\partial L/\partial b = a = 3$, $\partial L/\partial c = -1$;
# * $L = (x \cdot x)(x \cdot x)$ at $x = 2$: 32, where the naive pass said 64.
#
# The graph of $f$ is small enough to print node by node, in topological order. Each node shows
# its label, its parents, its value and its gradient; $x$ feeds two nodes, and its gradient 16 is
# the sum of the two contributions.

# %% requires="1a 1b 2"
def g_expression(a, b):
    c = a * b + b**3
    d = (c / a).tanh() + c.exp() * 0.001
    if b.data * d.data > 0:  # an ordinary branch: the graph is whatever ran
        return (d - a).relu() + (b * d).log()
    return (d - a).relu()


x, y = Value(2.0), Value(-3.0)
f = (x * y + x) ** 2
backward(f)
f_figures = [f.data, x.grad, y.grad]
print(f"f = {f.data}, df/dx = {x.grad}, df/dy = {y.grad}")

a, b = Value(1.5), Value(0.8)
backward(g_expression(a, b))
h = 1e-6
g_numeric = [(g_expression(Value(1.5 + h), Value(0.8)).data - g_expression(Value(1.5 - h), Value(0.8)).data) / (2 * h),
             (g_expression(Value(1.5), Value(0.8 + h)).data - g_expression(Value(1.5), Value(0.8 - h)).data) / (2 * h)]
g_grads = [a.grad, b.grad]
print(f"engine:              dg/da = {a.grad:.8f}, dg/db = {b.grad:.8f}")
print(f"central differences: dg/da = {g_numeric[0]:.8f}, dg/db = {g_numeric[1]:.8f}")

names = {id(x): "x", id(y): "y"}
table = []
for i, node in enumerate(topological_order(f)):
    names.setdefault(id(node), f"n{i}")
    parents = ", ".join(names[id(p)] for p in node._prev)
    table.append(f"{names[id(node)]:>3} = {node._op or 'leaf':<5} ({parents:<6})  "
                 f"data {node.data:>6.1f}   grad {node.grad:>6.1f}")
print("\n".join(table))

a, b, c = Value(3.0), Value(-1.0), Value(-5.0)
L = (a * b - c).relu() + a**2
backward(L)
exercise_1 = [L.data, a.grad, b.grad, c.grad]
print(*exercise_1)

x = Value(2.0)
q = x * x
L = q * q
backward(L)
ordered_dx = x.grad
print(f"naive backward {naive_dx}, topological backward {ordered_dx}")

# %% [markdown]
# ## 5 · Activity 3: training a network
#
# Neurons, layers and networks are built from Values alone. A `Neuron` with inputs $x_i$ computes
# $z = b + \sum_i w_i x_i$ and passes it through `relu`, except in the output layer, where $z$ is
# the score. `MLP([2, 8, 8, 1], rng)` stacks layers of 8, 8 and 1 neurons on two inputs. Weights
# start as normal draws with standard deviation $\sqrt{2/n_\text{in}}$ (He initialisation) and
# biases at 0; `parameters()` lists every weight and bias, layer by layer and neuron by neuron,
# each neuron's weights before its bias.
#
# The data are scikit-learn's two moons: 100 points in the plane, in two interleaved half circles,
# labelled $y \in \{0, 1\}$ and recoded as $t = 2y - 1 \in \{-1, +1\}$.

# %%
class Neuron:
    """z = b + sum_i w_i x_i, followed by relu unless the neuron is an output."""

    def __init__(self, n_in, rng, relu=True):
        spread = math.sqrt(2 / n_in)
        self.w = [Value(rng.normal(0, spread)) for _ in range(n_in)]
        self.b = Value(0.0)
        self.relu = relu

    def __call__(self, inputs):
        z = self.b
        for weight, x_i in zip(self.w, inputs):
            z = z + weight * x_i
        return z.relu() if self.relu else z

    def parameters(self):
        return self.w + [self.b]


class MLP:
    """Fully connected layers of Neurons; `sizes` lists the width of every layer, inputs first."""

    def __init__(self, sizes, rng):
        last = len(sizes) - 2
        self.layers = [[Neuron(n_in, rng, relu=index < last) for _ in range(n_out)]
                       for index, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:]))]

    def __call__(self, inputs):
        for layer in self.layers:
            inputs = [neuron(inputs) for neuron in layer]
        return inputs[0] if len(inputs) == 1 else inputs

    def parameters(self):
        found = []
        for layer in self.layers:
            for neuron in layer:
                found += neuron.parameters()
        return found


X_moons, y_moons = make_moons(100, noise=0.1, random_state=0)
t_moons = 2.0 * y_moons - 1.0
print(f"{len(X_moons)} points, {int(np.sum(t_moons > 0))} labelled +1 and {int(np.sum(t_moons < 0))} labelled -1")
print(f"an MLP [2, 8, 8, 1] has {len(MLP([2, 8, 8, 1], np.random.default_rng(0)).parameters())} parameters")

# %% [markdown]
# **The loss.** For a score $z$ and a label $t = \pm 1$, the logistic loss is
#
# $$\ell(z, t) = \log\left(1 + e^{-tz}\right),$$
#
# close to 0 when $z$ has the label's sign with a wide margin and growing linearly when it has the
# wrong sign. It is binary cross-entropy written for labels $\pm 1$, with the score as the logit.
# The training loss is its mean over the examples.
#
# ### Activity 3 · `logistic_loss` and `train_step` (3 points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# * `logistic_loss(scores, targets)`: `scores` is a list of Values, `targets` a sequence of
#   numbers $\pm 1$ of the same length. Return a single Value, the mean of
#   $\log(1 + e^{-t z})$, composed from Value operations (`exp`, `log`, `+`, `*`, `/`) so that
#   `backward` can reach every score. Mind the margin $m = -tz$: `math.exp` overflows beyond
#   $m = 709.78$, a score of the wrong sign that a badly started network easily reaches. Where
#   $m > 0$, compute the same number as $m + \log(1 + e^{-m})$, in which $e^{-m} \le 1$ (an
#   ordinary Python `if` on `m.data` chooses; the graph is whatever ran). Written as the formula
#   reads, one node per operation, the graph of the last training step in Section 8 has 20,409
#   nodes; other correct ways of composing it give other counts.
# * `train_step(model, X, targets, lr)`: one step of gradient descent, in the order of a PyTorch
#   training loop:
#   1. forward: wrap each row of `X` in Values once (`[Value(v) for v in row]`), call the model on
#      it, and take the loss of all the scores;
#   2. set every parameter's `.grad` to 0: gradients add up (Section 2), and what a previous step
#      left in them must not leak into this one;
#   3. `backward(loss)`;
#   4. move every parameter against its gradient, `p.data -= lr * p.grad`.
#
#   Return the loss Value, computed before the update. Leave the gradients in `.grad` after the
#   update, as PyTorch does, so that they can be inspected.
#
# The check compares each step with a float64 PyTorch copy of the same network, weights and data:
# the loss, every parameter and every gradient, over several steps in a row. It also gives the
# parameters a stale `.grad` before the first step, as a previous backward pass would.

# %% tags=["stub"] activity="3"
def logistic_loss(scores, targets):
    """The mean of log(1 + exp(-t * z)) over the scores z and labels t, as a Value."""
    raise NotImplementedError("Complete Activity 3: logistic_loss")


def train_step(model, X, targets, lr):
    """Forward, zero the gradients, backward, update; return the loss Value."""
    raise NotImplementedError("Complete Activity 3: train_step")


# %% tags=["reference"] activity="3"
def softplus(m):
    """log(1 + e^m) for a Value m, without computing e^m for a large positive m."""
    if m.data > 0:
        return m + (1 + (-m).exp()).log()  # log(1 + e^m) = m + log(1 + e^-m)
    return (1 + m.exp()).log()  # -z * t, exp, 1 + (.), log: one node per operation


def logistic_loss(scores, targets):
    per_example = [softplus(-z * float(t)) for z, t in zip(scores, targets)]
    return sum(per_example) / len(per_example)


def train_step(model, X, targets, lr):
    scores = [model([Value(v) for v in row]) for row in X]
    loss = logistic_loss(scores, targets)
    parameters = model.parameters()
    for p in parameters:
        p.grad = 0.0  # zero_grad: the engine only ever adds
    backward(loss)  # fills every p.grad
    for p in parameters:
        p.data -= lr * p.grad  # plain SGD
    return loss


# %% [markdown]
# The PyTorch copy the check uses: the network's weights become float64 tensors, one matrix and
# one bias vector per layer, and the same steps run with `torch.autograd.grad`.

# %%
def torch_layers(model):
    """The model's parameters as float64 tensors: (W, b) per layer."""
    return [(torch.tensor([[w.data for w in n.w] for n in layer], dtype=torch.float64),
             torch.tensor([n.b.data for n in layer], dtype=torch.float64)) for layer in model.layers]


def torch_training(model, X, targets, lr, steps):
    """[(loss, flat parameters after the step, flat gradients)] for `steps` steps in PyTorch."""
    layers = [(W.requires_grad_(), b.requires_grad_()) for W, b in torch_layers(model)]
    inputs, labels = torch.tensor(X, dtype=torch.float64), torch.tensor(targets, dtype=torch.float64)
    history = []
    for _ in range(steps):
        h = inputs
        for index, (W, b) in enumerate(layers):
            h = h @ W.T + b
            h = torch.relu(h) if index < len(layers) - 1 else h
        loss = torch.logaddexp(torch.zeros_like(h[:, 0]), -h[:, 0] * labels).mean()  # log(1 + e^m), exact
        grads = torch.autograd.grad(loss, [p for pair in layers for p in pair])
        grads = [(grads[2 * i], grads[2 * i + 1]) for i in range(len(layers))]
        layers = [((W - lr * dW).detach().requires_grad_(), (b - lr * db).detach().requires_grad_())
                  for (W, b), (dW, db) in zip(layers, grads)]
        history.append((loss.item(), flat(layers), flat(grads)))
    return history


def flat(layers):
    """Per-layer (W, b) tensors as one list in the order of MLP.parameters()."""
    return [v for W, b in layers for row, bias in zip(W.tolist(), b.tolist()) for v in row + [bias]]


# %% tags=["check"] activity="3" points=3
def check_loss(z, t):
    scores = [Value(v) for v in z]
    loss = logistic_loss(scores, t)
    assert isinstance(loss, Value), f"logistic_loss: expected a Value, got {type(loss).__name__}"
    tz = torch.tensor(z, dtype=torch.float64, requires_grad=True)
    margins = -torch.tensor(t, dtype=torch.float64) * tz
    # log(1 + e^m) exactly: F.softplus returns m itself for m > 20, e^-m away from the loss
    expected = torch.logaddexp(torch.zeros_like(margins), margins).mean()
    expected.backward()
    close(loss.data, expected.item(), f"logistic_loss({z}, {t})")
    backward(loss)
    close([s.grad for s in scores], tz.grad.tolist(), f"the scores' gradients of logistic_loss({z}, {t})")


def check_training(sizes, seed, X, t, lr, steps, stale=0.0):
    model = MLP(sizes, np.random.default_rng(seed))
    expected = torch_training(model, X, t, lr, steps)
    for p in model.parameters():
        p.grad = stale
    what = f"train_step with an MLP {sizes} on {len(X)} examples, lr {lr}"
    for step, (loss_t, params_t, grads_t) in enumerate(expected, start=1):
        loss = train_step(model, X, t, lr)
        assert isinstance(loss, Value), f"{what}: expected the loss as a Value, got {type(loss).__name__}"
        close(loss.data, loss_t, f"{what}, step {step}: the loss (before the update)")
        close([p.grad for p in model.parameters()], grads_t, f"{what}, step {step}: the parameters' .grad")
        close([p.data for p in model.parameters()], params_t, f"{what}, step {step}: the parameters after the update")


check_loss([0.5], [1.0])
check_loss([0.5, -1.25, 2.0, 0.0], [1.0, 1.0, -1.0, -1.0])
check_loss([-4.0, 5.5, 3.0], [-1.0, -1.0, -1.0])
check_loss([30.0, -25.0], [1.0, 1.0])
check_loss([-750.0, 720.0, 0.5], [1.0, -1.0, 1.0])  # margins -tz of 750 and 720: e^(-tz) overflows
check_training([2, 4, 1], 1, X_moons[:8], t_moons[:8], 0.5, steps=3, stale=5.0)
check_training([2, 1], 2, X_moons[8:9], t_moons[8:9], 1.0, steps=2)
check_training([2, 3, 3, 1], 3, X_moons[10:16], t_moons[10:16], 0.1, steps=2)
print("Activity 3 passed: the loss and its gradients (margins far beyond e^x's range included), and "
      "train_step step by step against PyTorch, stale gradients included.")

# %% [markdown]
# ## 6 · The same ideas in PyTorch
#
# PyTorch records the same kind of graph. Every tensor computed from tensors that require
# gradients gets a `grad_fn`, the node that made it; `grad_fn.next_functions` points to the nodes
# of its inputs, as `_prev` does here, and each node's backward code plays the part of your
# `_backward` closures. Below, $f = (xy + x)^2$ once more, and the chain of nodes from $f$ down to
# $x$ along the first input of each node.

# %%
xt, yt = t64(2.0), t64(-3.0)
ft = (xt * yt + xt) ** 2
ft.backward()
print(f"PyTorch: df/dx = {xt.grad.item()}, df/dy = {yt.grad.item()}")
grad_fn_chain = []
step = ft.grad_fn
while step is not None:
    grad_fn_chain.append(type(step).__name__)
    step = next((fn for fn, _ in step.next_functions if fn is not None), None)
for depth, name in enumerate(grad_fn_chain):
    print("  " * depth + name)
print("x is a leaf:", xt.is_leaf, "  its grad_fn:", xt.grad_fn)

# %% [markdown]
# `PowBackward0` belongs to `** 2`, `AddBackward0` to `+` and `MulBackward0` to `*`. The chain ends
# in `AccumulateGrad`, the node that adds whatever reaches a leaf into its `.grad`: the `+=` of
# your rules. Leaves have no `grad_fn`.
#
# Accumulation is easy to watch: three backward passes through fresh graphs of the same leaf,
# without zeroing in between, stack three gradients. That is exactly what the zeroing step of
# `train_step` prevents, and what `optimizer.zero_grad()` prevents in a PyTorch loop. (It is also
# a feature: several backward passes before one update accumulate the gradient of a large batch
# from small pieces.)

# %%
w_t = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
torch_accumulated = []
for i in range(3):
    (w_t**2).sum().backward()  # the gradient is 2w = [2, -4] each time
    torch_accumulated.append(w_t.grad.tolist())
    print(f"PyTorch, after backward #{i + 1}: w.grad = {w_t.grad.tolist()}")
w_t.grad.zero_()
print("after w.grad.zero_():", w_t.grad.tolist())

# %% [markdown]
# Your engine behaves the same way, and for the same reason: each pass adds into `.grad`.

# %% requires="1a 1b 2"
w_pair = [Value(1.0), Value(-2.0)]
engine_accumulated = []
for i in range(3):
    backward(w_pair[0] ** 2 + w_pair[1] ** 2)
    engine_accumulated.append([w.grad for w in w_pair])
    print(f"your engine, after backward #{i + 1}: grads = {engine_accumulated[-1]}")
close(engine_accumulated, torch_accumulated, "accumulated gradients, your engine against PyTorch")

# %% [markdown]
# ## 7 · Optional activities
#
# Three short extensions, each worth bonus points and each independent of the others.
#
# ### Optional A · A sigmoid primitive (1 bonus point)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# The sigmoid $\sigma(x) = 1/(1 + e^{-x})$ can already be composed from existing operations,
# `1 / (1 + (-x).exp())`, and the engine differentiates it correctly. Write `sigmoid(a)` as a
# primitive instead: one new node with parent `(a,)`, label `"sigmoid"` and its own backward rule,
# using $\sigma'(x) = \sigma(x)\,(1 - \sigma(x))$. Keep it finite everywhere: for $x < -709.78$,
# $e^{-x}$ overflows, so there compute the same number as $e^{x}/(1 + e^{x})$. The check compares
# the primitive with `torch.sigmoid` far out on both tails too, and the cell after it compares it
# with the composed version, including the size of their graphs.

# %% tags=["stub"] activity="A"
def sigmoid(a):
    """1 / (1 + exp(-a)) as a single new Value with its own backward rule."""
    raise NotImplementedError("Complete Activity A: sigmoid")


# %% tags=["reference"] activity="A"
def sigmoid(a):
    if a.data >= 0:
        s = 1.0 / (1.0 + math.exp(-a.data))
    else:  # e^a <= 1, where e^-a may overflow
        e = math.exp(a.data)
        s = e / (1.0 + e)
    out = Value(s, (a,), "sigmoid")

    def _backward():
        a.grad += s * (1.0 - s) * out.grad

    out._backward = _backward
    return out


# %% tags=["check"] activity="A" points=1
for value in [0.0, 0.9, -2.5, 15.0, -15.0, 40.0, -40.0, 705.0, -705.0, 750.0, -750.0]:
    check_node("sigmoid(a)", {"a": value}, None, prior=0.5 if value < 0 else 0.0, upstream=-0.4 if value else 1.3)
probe_x = Value(0.7)
probe = sigmoid(probe_x)
assert tuple(probe._prev) == (probe_x,), \
    f"sigmoid(x) should be a single new node whose _prev is (x,), but its _prev holds {len(probe._prev)} node(s)"
print("Activity A passed: sigmoid as a single node, equal to torch.sigmoid on both tails.")

# %% requires="1a 1b 2 A"
primitive_x, composed_x = Value(0.7), Value(0.7)
primitive = sigmoid(primitive_x)
composed = 1 / (1 + (-composed_x).exp())
backward(primitive)
backward(composed)
sigmoid_nodes = [len(topological_order(primitive)), len(topological_order(composed))]
print(f"primitive: {primitive.data:.6f}, grad {primitive_x.grad:.6f}, {sigmoid_nodes[0]} nodes in the graph")
print(f"composed:  {composed.data:.6f}, grad {composed_x.grad:.6f}, {sigmoid_nodes[1]} nodes in the graph")

# %% [markdown]
# Same value, same gradient, but the composed version records 9 nodes where the primitive needs 2.
# That is why frameworks give common functions a hand-written backward rule: smaller graphs, less
# memory, and often better numerical behaviour.
#
# ### Optional B · Forward mode with dual numbers (2 bonus points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# Reverse mode is one way to organise the chain rule. **Forward mode** is the other: every number
# travels together with its derivative along one chosen input direction, and each operation
# updates both at once. A dual number is such a pair (`val`, `der`). Seed the input with
# `der = 1`, compute as usual, and the output's `der` is the derivative.
#
# The `Dual` class below is given; its operators call four rules that you write. Each takes
# Duals and returns a new `Dual`:
#
# * `dual_add(a, b)`: $(a + b,\ a' + b')$;
# * `dual_mul(a, b)`: the product rule, $(ab,\ a'b + ab')$;
# * `dual_sin(a)`: $(\sin a,\ a' \cos a)$;
# * `dual_exp(a)`: $(e^a,\ a' e^a)$.
#
# The check computes $\frac{d}{dx}\left[\sin(x)\,e^x + x^2\right]$ at $x = 1$ and compares it with
# the exact derivative and with `torch.func.jvp`, PyTorch's forward mode. Then think about cost:
# how many forward-mode passes does the gradient of a function of $n$ inputs take?

# %%
class Dual:
    """A number with its derivative along one direction, for forward-mode differentiation."""

    def __init__(self, val, der=0.0):
        self.val, self.der = float(val), float(der)

    def __repr__(self):
        return f"Dual(val={self.val:.10g}, der={self.der:.10g})"

    def __add__(self, other):
        return dual_add(self, as_dual(other))

    def __mul__(self, other):
        return dual_mul(self, as_dual(other))

    __radd__ = __add__
    __rmul__ = __mul__

    def sin(self):
        return dual_sin(self)

    def exp(self):
        return dual_exp(self)


def as_dual(x):
    """Duals pass through; a plain number is a constant, with derivative 0."""
    return x if isinstance(x, Dual) else Dual(x)


# %% tags=["stub"] activity="B"
def dual_add(a, b):
    raise NotImplementedError("Complete Activity B: dual_add")


def dual_mul(a, b):
    raise NotImplementedError("Complete Activity B: dual_mul")


def dual_sin(a):
    raise NotImplementedError("Complete Activity B: dual_sin")


def dual_exp(a):
    raise NotImplementedError("Complete Activity B: dual_exp")


# %% tags=["reference"] activity="B"
def dual_add(a, b):
    return Dual(a.val + b.val, a.der + b.der)


def dual_mul(a, b):
    return Dual(a.val * b.val, a.der * b.val + a.val * b.der)


def dual_sin(a):
    return Dual(math.sin(a.val), math.cos(a.val) * a.der)


def dual_exp(a):
    e = math.exp(a.val)
    return Dual(e, e * a.der)


# %% tags=["check"] activity="B" points=2
def check_dual(expression, duals, torch_function):
    """Compare val and der of a Dual expression with torch.func.jvp at the same point and tangent."""
    inputs = {name: Dual(*pair) for name, pair in duals.items()}
    got = eval(expression, globals(), dict(inputs))
    assert isinstance(got, Dual), f"{expression}: expected a Dual, got {type(got).__name__}"
    for name, pair in duals.items():
        close([inputs[name].val, inputs[name].der], list(pair),
              f"{expression}: {name} as (val, der) afterwards (the rules must return a new Dual, not change it)")
    primals = tuple(torch.tensor(p[0], dtype=torch.float64) for p in duals.values())
    tangents = tuple(torch.tensor(p[1], dtype=torch.float64) for p in duals.values())
    value, derivative = torch.func.jvp(torch_function, primals, tangents)
    close(got.val, value.item(), f"{expression} with {duals}: val")
    close(got.der, derivative.item(), f"{expression} with {duals}: der")


check_dual("dual_add(a, b)", {"a": (1.5, 2.0), "b": (-0.5, -3.0)}, torch.add)
check_dual("dual_add(a, b)", {"a": (0.5, 0.0), "b": (1.0, 0.0)}, torch.add)
check_dual("dual_add(a, a)", {"a": (0.5, 1.0)}, lambda a: a + a)
check_dual("a + 4.0", {"a": (1.5, 2.0)}, lambda a: a + 4.0)
check_dual("dual_mul(a, b)", {"a": (1.5, 2.0), "b": (-0.5, 0.25)}, torch.mul)
check_dual("dual_mul(a, b)", {"a": (3.0, 1.0), "b": (2.0, 0.0)}, torch.mul)
check_dual("dual_mul(a, a)", {"a": (-1.25, 1.0)}, lambda a: a * a)
check_dual("3.0 * a", {"a": (0.5, -2.0)}, lambda a: 3.0 * a)
check_dual("dual_sin(a)", {"a": (0.8, 1.0)}, torch.sin)
check_dual("dual_sin(a)", {"a": (0.0, 1.0)}, torch.sin)
check_dual("dual_sin(a)", {"a": (2.5, -0.5)}, torch.sin)
check_dual("dual_exp(a)", {"a": (-0.3, 1.0)}, torch.exp)
check_dual("dual_exp(a)", {"a": (1.2, 0.0)}, torch.exp)

x = Dual(1.0, 1.0)  # seed: dx/dx = 1
fx = x.sin() * x.exp() + x * x
exact = (math.cos(1.0) + math.sin(1.0)) * math.e + 2.0
print(f"forward mode: f = {fx.val:.10f}, f' = {fx.der:.10f}")
print(f"exact:                          f' = {exact:.10f}")
close(fx.der, exact, "d/dx [sin(x) e^x + x^2] at x = 1")
check_dual("x.sin() * x.exp() + x * x", {"x": (1.0, 1.0)}, lambda x: torch.sin(x) * torch.exp(x) + x * x)
print("Activity B passed: the four rules, their inputs left as they were, and sin(x) e^x + x^2 against the "
      "exact derivative and torch.func.jvp.")

# %% [markdown] tags=["reference"]
# **Instructor answer.** A forward pass yields the derivative along the one direction that was
# seeded, so the gradient of a function of $n$ inputs takes $n$ passes, one per input. Reverse
# mode gets all $n$ partial derivatives of one scalar output from a single backward pass. Training
# has millions of inputs (the parameters) and one output (the loss), hence reverse mode. Forward
# mode wins in the opposite case, few inputs and many outputs, and it needs no stored graph.

# %% [markdown]
# ### Optional C · A custom PyTorch operation (1 bonus point)
#
# PyTorch lets you add an operation with hand-written rules by subclassing
# `torch.autograd.Function`: a static `forward(ctx, x)` computes the output and may store what the
# backward rule will need with `ctx.save_for_backward(...)`; a static `backward(ctx, grad_output)`
# receives the gradient that reached the output and returns the gradient for the input, the VJP
# of the operation. It is the same pair as your Value primitives, in PyTorch's terms.
#
# The class `MyReLU` below is given and forwards to two functions that you write:
#
# * `relu_forward(ctx, x)`: save `x` for the backward pass and return $\max(x, 0)$ elementwise as
#   a new tensor (leave `x` itself unchanged);
# * `relu_backward(ctx, grad_output)`: read the saved `x` back from `ctx.saved_tensors` and return
#   `grad_output` where $x > 0$ and 0 elsewhere, 0 at exactly 0 as before.
#
# `torch.autograd.gradcheck` then compares your backward rule with finite differences of your
# forward rule, in float64. Two things PyTorch expects of a backward rule that the check tries:
# it must not write into `grad_output` (in `MyReLU(x) + x` the same tensor also carries x's
# other gradient), and it must read `x` from `ctx.saved_tensors`, not from an attribute of `ctx`:
# if `x` is changed in place between the forward and the backward pass, `save_for_backward`
# lets PyTorch notice and raise an error instead of differentiating at the wrong point.

# %%
class MyReLU(torch.autograd.Function):
    """ReLU as a hand-written PyTorch operation: MyReLU.apply(x)."""

    @staticmethod
    def forward(ctx, x):
        return relu_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad_output):
        return relu_backward(ctx, grad_output)


# %% tags=["stub"] activity="C"
def relu_forward(ctx, x):
    raise NotImplementedError("Complete Activity C: relu_forward")


def relu_backward(ctx, grad_output):
    raise NotImplementedError("Complete Activity C: relu_backward")


# %% tags=["reference"] activity="C"
def relu_forward(ctx, x):
    ctx.save_for_backward(x)
    return x.clamp(min=0.0)  # a new tensor; x is untouched


def relu_backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    return grad_output * (x > 0)


# %% tags=["check"] activity="C" points=1
def check_custom_relu(x, upstream, shared=False):
    """MyReLU(x), or MyReLU(x) + x when `shared`, against torch.relu with the same upstream gradient."""
    x = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    before = x.detach().clone()
    out = MyReLU.apply(x)
    (out + x if shared else out).backward(torch.tensor(upstream, dtype=torch.float64))
    reference = before.clone().requires_grad_()
    expected = torch.relu(reference)
    (expected + reference if shared else expected).backward(torch.tensor(upstream, dtype=torch.float64))
    what = f"MyReLU{'(x) + x' if shared else ''} on x = {before.tolist()} with upstream gradient {upstream}"
    close(out.detach().tolist(), torch.relu(before).tolist(), f"{what}: the output")
    close(x.grad.tolist(), reference.grad.tolist(), f"{what}: the input's gradient"
          + (" (does relu_backward write into grad_output?)" if shared else ""))
    close(x.detach().tolist(), before.tolist(), f"{what}: x itself (the forward rule must not change it)")


seeded = torch.Generator().manual_seed(0)
x_in = torch.randn(5, 4, generator=seeded, dtype=torch.float64).requires_grad_()
gradcheck_passed = torch.autograd.gradcheck(MyReLU.apply, (x_in,))
print("gradcheck passed:", gradcheck_passed)
check_custom_relu([-1.5, 0.0, -0.0, 2.0], [1.0, 2.0, 3.0, 4.0])
check_custom_relu([[0.5, -0.5], [3.0, -2.0]], [[-1.0, 2.0], [0.5, 1.5]])
check_custom_relu(-0.25, 2.0)
check_custom_relu([-1.0, 2.0, 0.0, 3.0], [0.5, -1.5, 2.0, 1.0], shared=True)

leaf = torch.tensor([1.5, -2.0, 0.5], dtype=torch.float64, requires_grad=True)
h = leaf * 1.0
out = MyReLU.apply(h)
with torch.no_grad():
    h.neg_()  # changed in place after the forward pass
try:
    out.sum().backward()
    close(leaf.grad.tolist(), [1.0, 0.0, 1.0], "MyReLU's gradient at x = [1.5, -2, 0.5] when x is negated in place "
          "before backward: relu_backward used x as changed; save x with ctx.save_for_backward")
except RuntimeError as refusal:
    assert "inplace" in str(refusal), f"MyReLU's backward raised an unexpected error: {refusal}"
print("Activity C passed: MyReLU passes gradcheck and agrees with torch.relu, at 0 included, with its "
      "incoming gradient shared, and with x changed in place before backward.")

# %% [markdown]
# ## 8 · The whole run: 100 steps on the moons
#
# Time to train. The loop below starts an `MLP([2, 8, 8, 1])` from `np.random.default_rng(0)` and
# runs 100 calls of your `train_step` on all 100 points with learning rate 1.0, printing the loss
# and the training accuracy (the share of points whose score has the sign of their label) every
# 20 steps, measured before the step.
#
# **It is slow on purpose**: expect half a minute. Every step builds a graph of about twenty
# thousand Python objects, one per number, for 105 parameters and 100 points, then walks it
# backwards. While it runs, estimate how many nodes a single 64 × 128 matrix product on a batch of
# 32 would need in this engine.
#
# The cell's first line is about that cost too. A node and its backward rule refer to each other,
# so only Python's cycle collector frees a graph, and by default it runs after every 700 new
# objects: in a process that holds PyTorch and the graphs of the cells above, that made this loop
# five times slower. Running it after every 100,000 instead costs a few megabytes.

# %% requires="1a 1b 2 3"
gc.set_threshold(100_000, 10, 10)
model = MLP([2, 8, 8, 1], np.random.default_rng(0))
params = model.parameters()
print(f"{len(params)} parameters")


def accuracy(model, X, targets):
    scores = [model([Value(v) for v in row]).data for row in X]
    return float(np.mean((np.array(scores) > 0) == (np.asarray(targets) > 0)))


history, report = [], {}
for step in range(100):
    if step % 20 == 0 or step == 99:
        correct = accuracy(model, X_moons, t_moons)  # before this step's update
    loss = train_step(model, X_moons, t_moons, 1.0)
    history.append(loss.data)
    if step % 20 == 0 or step == 99:
        report[step] = (loss.data, correct)
        print(f"step {step:>3}: loss {loss.data:.4f}, accuracy {correct:.2f}")
last_graph_nodes = len(topological_order(loss))
print(f"nodes in the graph of the last step: {last_graph_nodes:,}")

# %% requires="1a 1b 2 3"
grid_x, grid_y = np.meshgrid(np.linspace(-1.5, 2.5, 41), np.linspace(-1.0, 1.5, 41))
boundary = np.array([model([Value(a), Value(b)]).data for a, b in zip(grid_x.ravel(), grid_y.ravel())])
boundary = boundary.reshape(grid_x.shape)
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
left.plot(history, color="#1f5f9e")
left.set(xlabel="step", ylabel="mean logistic loss", title="training loss")
right.contourf(grid_x, grid_y, boundary > 0, alpha=0.25, cmap="coolwarm")
right.contour(grid_x, grid_y, boundary, levels=[0.0], colors="black", linewidths=1)
right.scatter(X_moons[:, 0], X_moons[:, 1], c=y_moons, cmap="coolwarm", edgecolor="black", s=20)
right.set(title="decision boundary after 100 steps", xlabel="$x_1$", ylabel="$x_2$")
fig.tight_layout()
plt.show()

# %% [markdown]
# A network of two hidden layers, trained entirely by the engine you wrote: every gradient came
# from your local rules, run in your topological order. It is also hopelessly slow, and the
# reason is structural, not a matter of tuning: a scalar engine spends a Python object, a closure
# and a dictionary lookup on every single multiplication. The next lab, PT03, keeps the algorithm
# and changes the unit: a node holds a whole NumPy array, and one backward rule handles a whole
# matrix product.
#
# ## 9 · Discuss
#
# 1. Your rules use `+=`. Which check of Activity 1a would fail with `=`, and what would
#    `multiply(a, a)` report as the derivative of $a^2$?
# 2. `train_step` zeroes the gradients. What happens to the second step if it does not? Why does
#    PyTorch accumulate instead of overwriting?
# 3. The naive backward gave 64 instead of 32. Is it enough to add a set of visited nodes to it?
# 4. Where does the time of Section 8 go? Think about how many objects one step creates and how
#    long each of them lives.
# 5. Forward mode needs one pass per input direction, reverse mode one pass per output. Which suits
#    a network with a million parameters and one loss?

# %% [markdown] tags=["reference"]
# **Instructor answers.**
#
# 1. Every check with `.grad` already holding something, and every check of a value used twice.
#    With `=` the second update of `a.grad` in `multiply(a, a)` overwrites the first, and the
#    derivative of $a^2$ comes out as $a$ instead of $2a$.
# 2. Its gradient is the sum of the first and the second step's gradients, so the update is too
#    large, and it grows step after step. Accumulation is what the chain rule needs at forks, and
#    it lets several small backward passes build the gradient of a large batch before one update.
# 3. No. A visited set stops the second push of $q$, but a node can still be reached before all of
#    its users have contributed, and then it passes on an incomplete gradient (the fan-out graphs
#    of the check show it). The order is the point, not only the uniqueness.
# 4. One step creates about 20,000 Values, each with a closure that refers back to its own node.
#    Those are reference cycles, which Python frees only in its periodic cycle collection; with
#    so many objects alive, the collector runs often and scans a lot. Plain arithmetic is a small
#    part of the cost. (`gc.disable()` makes the loop several times faster, at the price of memory
#    that is only freed at the next collection.) PyTorch avoids both costs: few nodes, each a
#    whole tensor operation, and graphs freed right after `backward`.
# 5. Reverse mode: one backward pass gives all million partial derivatives of the loss, where
#    forward mode would need a million passes.

# %% [markdown]
# ## Sources
#
# * Andrej Karpathy's *micrograd*, the scalar engine this lab's `Value` design follows.
# * A. G. Baydin, B. A. Pearlmutter, A. A. Radul and J. M. Siskind, "Automatic differentiation in
#   machine learning: a survey", JMLR 18 (2018).
# * PyTorch documentation: "Autograd mechanics", `torch.autograd.Function`,
#   `torch.autograd.gradcheck` and `torch.func.jvp`.
# * Data: `sklearn.datasets.make_moons`, generated on the spot; nothing is downloaded.
