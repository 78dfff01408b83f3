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
#     lab: pt03_autodiff
#     title: PT03 · Automatic differentiation from scratch
#     data:
#     - penguins.csv
# ---

# %% [markdown]
# # PT03 · Automatic differentiation from scratch
#
# Up to now `loss.backward()` has produced our gradients as if by magic. In this lab you write
# that magic yourself: a reverse-mode autodiff engine on top of NumPy, small enough to read in
# one sitting. You then train the penguin classifier from PT02 with it, next to PyTorch, and
# watch the two agree to the last printed digit at every update.
#
# The idea from the lecture in one sentence: every operation provides a forward rule (compute
# the output) and a backward rule, its **vector-Jacobian product** (VJP); a backward pass runs
# the backward rules of all operations in an order that respects the graph.
#
# | Activity | You write | Points |
# |---|---|---|
# | 1a | VJPs of `+`, `*` and `@` | 3 |
# | 1b | `sum_to_shape`, the reduction that undoes broadcasting | 2 |
# | 1c | VJPs of `tanh` and `relu` | 2 |
# | 2 | `topological_order` and `backward` | 4 |
# | 3 | `classifier_step`, one gradient-descent update | 3 |
# | A (optional) | `mlp_step`, a two-layer network | 2 bonus |
# | B (optional) | `grad`, gradients as functions | 1 bonus |
# | C (optional) | `jacobian`, a Jacobian built from VJPs | 1 bonus |
#
# **Working through it.** Run the cells from the top. Each activity ends with a check cell;
# when something is off it stops with a message saying which quantity is wrong and for which
# input. A function you have not written yet raises `NotImplementedError` the first time it is
# used, so work through the activities in order. The `Tensor` class, the plotting code, the
# data and the loss function are supplied.
#
# You should be comfortable with PT01 (tensors, autograd) and PT02 (the batched linear
# classifier on the penguins).

# %% [markdown] tags=["reference"]
# **Instructor copy.** Cells tagged `reference` hold the solutions and the answers to the
# discussion questions. `build_student.py` deletes them, and every saved output, when it writes
# the student notebook; a student who skips an activity gets an error, never a hidden solution.

# %% [markdown]
# ## 1 · Setup
#
# All arithmetic is float64 on the CPU, in NumPy and in PyTorch alike, so the two engines can
# be compared with tolerances of 1e-9. The check cells use two small helpers:
# `close(actual, expected, quantity)` compares the shape first and then the values, and its
# error names `quantity`; `expect_error(kind, call, quantity)` insists that `call()` raises.

# %%
import hashlib
import os
from io import BytesIO
from pathlib import Path
from urllib.request import urlopen

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from matplotlib.patches import FancyArrowPatch
from sklearn.model_selection import train_test_split

np.set_printoptions(precision=4, suppress=True)
torch.set_num_threads(1)
print(f"NumPy {np.__version__}, PyTorch {torch.__version__}")


def close(actual, expected, quantity, *, atol=1e-9, rtol=1e-9):
    """Raise an AssertionError naming `quantity` unless shapes and values agree."""
    got, want = np.asarray(actual), np.asarray(expected, dtype=np.float64)
    if got.dtype.kind not in "biuf":
        raise AssertionError(f"{quantity}: expected an array of numbers, got {type(actual).__name__}")
    if got.shape != want.shape:
        raise AssertionError(f"{quantity}: wrong shape {got.shape}, expected {want.shape}")
    bad = ~np.isclose(got, want, atol=atol, rtol=rtol)
    if bad.any() and want.shape == ():
        raise AssertionError(f"{quantity}: got {float(got):.6g}, expected {float(want):.6g}")
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        count = int(bad.sum())
        raise AssertionError(
            f"{quantity}: {count} of {bad.size} {'entry' if bad.size == 1 else 'entries'} "
            f"{'is' if count == 1 else 'are'} wrong; at index {where} "
            f"got {float(got[where]):.6g}, expected {float(want[where]):.6g}")


def expect_error(kind, call, quantity):
    """Raise an AssertionError unless call() raises `kind`."""
    try:
        call()
    except kind:
        return
    raise AssertionError(f"{quantity}: expected {kind.__name__} to be raised")


def called(function, *args):
    """function(*args); an error inside it becomes an AssertionError that names the function and
    the shapes it was given, which NumPy's own message leaves out."""
    try:
        return function(*args)
    except Exception as failure:
        shapes = ", ".join(str(np.shape(arg)) if not isinstance(arg, tuple) else f"target {arg}" for arg in args)
        raise AssertionError(f"{function.__name__} given shapes {shapes} raised {type(failure).__name__}: "
                             f"{failure}") from failure


# %% [markdown]
# ## 2 · From the chain rule to VJPs
#
# A computation small enough to differentiate by hand: with $w = 3$, $x = 2$ and $b = -1$,
#
# $$r = wx + b, \qquad L = r^2 .$$
#
# Forward, $r = 5$ and $L = 25$. For every intermediate value $z$ write $\bar z$ for
# $\partial L / \partial z$, the **adjoint** of $z$: the sensitivity of the final result to a
# nudge of $z$. Adjoints are filled in from the output towards the inputs:
#
# * $\bar L = 1$, the **seed**: $L$ moves one-for-one with itself;
# * $\bar r = 2r \cdot \bar L = 10$;
# * $\bar w = x \cdot \bar r = 20$ and $\bar b = 1 \cdot \bar r = 10$.
#
# Every step touches one operation and the adjoint of its result, nothing more. That locality is
# what lets reverse mode handle arbitrary programs. Central differences confirm the numbers.

# %%
w_demo, x_demo, b_demo = 3.0, 2.0, -1.0
r_demo = w_demo * x_demo + b_demo
L_demo = r_demo**2

L_bar = 1.0                      # the seed
r_bar = 2 * r_demo * L_bar
w_bar, b_bar = x_demo * r_bar, r_bar


def loss_demo(w, b):
    return (w * x_demo + b) ** 2


h = 1e-6
w_numeric = (loss_demo(w_demo + h, b_demo) - loss_demo(w_demo - h, b_demo)) / (2 * h)
b_numeric = (loss_demo(w_demo, b_demo + h) - loss_demo(w_demo, b_demo - h)) / (2 * h)
print(f"w_bar: by hand {w_bar}, central difference {w_numeric:.6f}")
print(f"b_bar: by hand {b_bar}, central difference {b_numeric:.6f}")
close(w_bar, w_numeric, "w_bar", atol=1e-5)
close(b_bar, b_numeric, "b_bar", atol=1e-5)

# %% [markdown]
# ### Vectors and matrices
#
# The lecture described the derivative of $f$ at $x$ as a linear map $\partial f(x)[u]$, the
# JVP: feed it an input direction $u$ and it returns the first-order change of the output.
# Reverse mode runs the other way. The VJP $\partial f(x)^*[v]$ receives a direction $v$ in
# output space and returns one in input space; it is the adjoint of the JVP, pinned down by
#
# $$\langle v,\ \partial f(x)[u] \rangle = \langle \partial f(x)^*[v],\ u \rangle
# \qquad \text{for all } u ,$$
#
# where $\langle a, b \rangle$ sums the elementwise products of two arrays of equal shape,
# `np.sum(a * b)`, whether they are vectors or matrices.
#
# During a backward pass $v$ is the output's adjoint and the VJP yields the input's adjoint,
# $\bar x = \partial f(x)^*[\bar y]$. Two consequences are worth remembering:
#
# * $\bar x$ has exactly the shape of $x$, a cheap and very effective bug detector;
# * for a scalar loss, one backward pass seeded with $\bar L = 1$ returns the gradient with
#   respect to every input at once. That is why training uses reverse mode.
#
# With several inputs there is one VJP per input: $z = f(a, b)$ needs $\bar a$ and $\bar b$.
# (JAX calls adjoints *cotangents* and VJPs *pullbacks*; the objects are the same.)
#
# **Predict.** Take the lecture's $y = f(W) = Wx$ with $W$ of shape (3, 4) and $x$ of shape
# (4). Which shapes do $\bar y$, $\bar W$ and $\bar x$ have? Derive $\bar W$ from the definition
# of the VJP. Hint: expand $\langle v, Ux \rangle$ entry by entry.

# %% [markdown] tags=["reference"]
# **Instructor answer.** $\bar y$ has shape (3), $\bar W$ shape (3, 4), $\bar x$ shape (4).
# Expanding, $\langle v, Ux\rangle = \sum_{i}\sum_{j} v_i\,U_{ij}\,x_j$, which is the inner product
# of $U$ with the matrix whose $(i, j)$ entry is $v_i x_j$. Hence $\bar W = \bar y\,x^\top$, an
# outer product, and by the same expansion in $x$, $\bar x = W^\top \bar y$. Activity 1a asks for
# exactly these two formulas.

# %% [markdown]
# ## 3 · A Tensor that records its history
#
# The engine wraps each NumPy array in a `Tensor` with four attributes:
#
# * `value`: the float64 array, made read-only. Parameters are never edited in place; an update
#   produces a new `Tensor`.
# * `parents`: the tensors this one was computed from, in argument order.
# * `vjp`: a function from this tensor's adjoint to a tuple of contributions, one per parent.
#   Inputs and parameters (the leaves) have `vjp = None`.
# * `name`: a label for drawings.
#
# This is operator overloading as in the lecture: `a * b` calls `Tensor.__mul__`, which computes
# the product *and* stores a `vjp` closure holding the forward values it will need later.
# Compared with PyTorch's tensor, `value` is the data while `parents` plus `vjp` do the job of
# `grad_fn`. There is no `requires_grad` and no `.grad`; our `backward` will return a
# dictionary that maps every node to its adjoint.
#
# The class below is complete, but it calls VJP functions that you write in Activity 1
# (`add_vjp`, `multiply_vjp`, ...). Until then the operators work forward only. Things to notice:
#
# * the VJPs of `+` and `*` go through `sum_to_shape` (Activity 1b), which undoes broadcasting;
# * subtraction and negation are built from `+` and `*` and need no VJP of their own;
# * transpose and `sum` come with their VJPs: a transpose sends the adjoint back transposed,
#   and a sum hands its adjoint to each entry it added, since each entered with weight one.

# %%
class Tensor:
    """A float64 array that remembers the operation and the tensors it came from."""

    def __init__(self, value, parents=(), vjp=None, name="leaf"):
        self.value = np.array(value, dtype=np.float64)  # always a private copy
        self.value.flags.writeable = False
        self.parents = tuple(parents)  # may repeat a node: x * x has parents (x, x)
        self.vjp = vjp
        self.name = name

    def __repr__(self):
        return f"Tensor({self.name}, shape={self.value.shape}, value={self.value})"

    def unbroadcast(self, adjoint):
        """Sum an adjoint of the broadcast result back down to this tensor's shape."""
        return sum_to_shape(adjoint, self.value.shape)

    def __add__(self, other):
        other = as_tensor(other)

        def vjp(v):
            a_bar, b_bar = add_vjp(self.value, other.value, v)
            return self.unbroadcast(a_bar), other.unbroadcast(b_bar)

        return Tensor(self.value + other.value, (self, other), vjp, "+")

    def __mul__(self, other):
        other = as_tensor(other)

        def vjp(v):
            a_bar, b_bar = multiply_vjp(self.value, other.value, v)
            return self.unbroadcast(a_bar), other.unbroadcast(b_bar)

        return Tensor(self.value * other.value, (self, other), vjp, "*")

    # 2 + t and 2 * t land here; both operations commute, so the left versions serve.
    __radd__ = __add__
    __rmul__ = __mul__

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + -as_tensor(other)

    def __rsub__(self, other):
        return as_tensor(other) + -self

    def __matmul__(self, other):
        other = as_tensor(other)
        if {self.value.ndim, other.value.ndim} - {1, 2}:
            raise ValueError("@ is defined here for vectors and matrices only")
        return Tensor(self.value @ other.value, (self, other),
                      lambda v: matmul_vjp(self.value, other.value, v), "@")

    def tanh(self):
        y = np.tanh(self.value)  # the backward rule is cheapest in terms of the output
        return Tensor(y, (self,), lambda v: (tanh_vjp(y, v),), "tanh")

    def relu(self):
        x = self.value  # the backward rule needs to know where the input was positive
        return Tensor(np.maximum(x, 0.0), (self,), lambda v: (relu_vjp(x, v),), "relu")

    @property
    def T(self):
        if self.value.ndim not in (1, 2):
            raise ValueError(".T is defined here for vectors and matrices only")
        return Tensor(self.value.T, (self,), lambda v: (np.transpose(v),), "transpose")

    def sum(self, axis=None):
        shape = self.value.shape

        def vjp(v):
            # Reinsert the reduced axes with length 1 so that v broadcasts back to the input.
            kept = v if axis is None else np.expand_dims(v, axis)
            return (np.array(np.broadcast_to(kept, shape)),)

        return Tensor(self.value.sum(axis=axis), (self,), vjp, "sum")


def as_tensor(value):
    """Tensors pass through; numbers and arrays become constant leaves."""
    if isinstance(value, Tensor):
        return value
    return Tensor(value, name="constant")


# %% [markdown]
# Each operation makes a fresh node, and a node is a Python object with an identity of its own.
# In `u + u` the two operands are *one* node `u`, so the graph has a single `u` with two edges
# leaving it towards `+`. A backward pass must count a contribution along each edge.
#
# **Predict.** For `u = x * x` and `L = (u + u).sum()`, how many nodes does the graph hold? The
# next cell counts them and draws the graph: one box per node (name and shape), one arrow per
# edge, so repeated edges appear as two separate arcs.

# %%
def graph_nodes(output):
    """Every node reachable from `output`, once each, in the order a depth-first search meets
    them. Good enough for drawing; Section 5 shows why it is no schedule for backward."""
    found, seen, todo = [], set(), [output]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            found.append(node)
            todo.extend(node.parents[::-1])
    return found


def node_label(node):
    if node.name == "constant" and node.value.size == 1:
        return f"{node.value.item():g}\n{node.value.shape}"
    return f"{node.name}\n{node.value.shape}"


def draw_graph(output):
    """Draw the graph with inputs on the left and `output` on the right."""
    nodes = graph_nodes(output)
    level = {}
    for node in reversed(nodes):  # parents are met after their users, so go backwards
        pending = [node]
        while pending:
            current = pending[-1]
            missing = [p for p in current.parents if p not in level]
            if missing:
                pending.extend(missing)
            else:
                pending.pop()
                level[current] = max((level[p] + 1 for p in current.parents), default=0)
    users = {node: [n for n in nodes if node in n.parents] for node in nodes}
    for node in nodes:  # pull each leaf next to its first user to keep arrows short
        if not node.parents and users[node]:
            level[node] = min(level[u] for u in users[node]) - 1
    place = {}
    for column in sorted(set(level.values()), reverse=True):
        members = [n for n in nodes if level[n] == column]
        members.sort(key=lambda n: np.mean([place[u][1] for u in users[n]]) if users[n] else 0.0)
        for row, node in enumerate(members):
            place[node] = (2.2 * column, row - (len(members) - 1) / 2)
    xs = [x for x, _ in place.values()]
    ys = [y for _, y in place.values()]
    fig, ax = plt.subplots(figsize=(max(7.0, 1.2 * (max(xs) - min(xs)) + 2), 3.5))
    for node in nodes:
        for slot, parent in enumerate(node.parents):
            twins = sum(p is parent for p in node.parents)
            bend = 0.0 if twins == 1 else 0.25 * (slot - (twins - 1) / 2)
            ax.add_patch(FancyArrowPatch(place[parent], place[node], arrowstyle="-|>",
                                         mutation_scale=14, shrinkA=30, shrinkB=30,
                                         connectionstyle=f"arc3,rad={bend}", color="#4a5d73"))
    for node, (x, y) in place.items():
        ax.text(x, y, node_label(node), ha="center", va="center",
                bbox=dict(boxstyle="round,pad=0.45", fc="#edf3f9", ec="#2f5479"))
    ax.set_xlim(min(xs) - 0.9, max(xs) + 0.9)
    ax.set_ylim(min(ys) - 0.9, max(ys) + 0.9)
    ax.axis("off")
    fig.tight_layout()
    return fig


picture_x = Tensor([1.0, 2.0], name="x")
picture_u = picture_x * picture_x
picture_L = (picture_u + picture_u).sum()
assert len(graph_nodes(picture_L)) == 4, "x, u, u + u and the sum"
draw_graph(picture_L)
plt.show()

# %% [markdown]
# ## 4 · Activity 1: local VJPs
#
# ### Activity 1a · VJPs of addition, multiplication and the matrix product (3 points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# Each function takes the two forward inputs `a`, `b` and the adjoint `v` of the output, and
# returns the pair `(a_bar, b_bar)`.
#
# * $z = a + b$: a nudge of $a$ reaches $z$ unchanged, so $\bar a = v$ and $\bar b = v$.
# * $z = a \odot b$ (elementwise): $\bar a = v \odot b$ and $\bar b = v \odot a$.
# * $z = AB$: $\bar A = v B^\top$ and $\bar B = A^\top v$. With a vector on one side the
#   transpose turns into an outer product, e.g. for $z = Ax$: $\bar A = v x^\top$
#   (`np.outer(v, x)`) and $\bar x = A^\top v$. Cover all four rank combinations (vector @ vector,
#   matrix @ vector, vector @ matrix, matrix @ matrix); `a.ndim` and `b.ndim` tell them apart.
#
# For `add_vjp` and `multiply_vjp` write the formulas as if `a` and `b` had the same shape. If
# they were broadcast, your result has the output's shape, and the `Tensor` class reduces it
# with `sum_to_shape` from Activity 1b.
#
# Before you run the check, convince yourself on paper that each result has its input's shape.

# %% tags=["stub"] activity="1a"
def add_vjp(a, b, v):
    raise NotImplementedError("Complete Activity 1a: add_vjp")


def multiply_vjp(a, b, v):
    raise NotImplementedError("Complete Activity 1a: multiply_vjp")


def matmul_vjp(a, b, v):
    raise NotImplementedError("Complete Activity 1a: matmul_vjp")


# %% tags=["reference"] activity="1a"
# Instructor reference. One branch per rank combination keeps every shape in view; the
# vector cases are where outer products get swapped.
def add_vjp(a, b, v):
    return v, v


def multiply_vjp(a, b, v):
    return v * b, v * a


def matmul_vjp(a, b, v):
    if a.ndim == 1 and b.ndim == 1:      # scalar output: v is a number
        return v * b, v * a
    if a.ndim == 2 and b.ndim == 1:      # (m, n) @ (n,) -> (m,)
        return np.outer(v, b), a.T @ v
    if a.ndim == 1 and b.ndim == 2:      # (n,) @ (n, k) -> (k,)
        return b @ v, np.outer(a, v)
    if a.ndim == 2 and b.ndim == 2:      # (m, n) @ (n, k) -> (m, k)
        return v @ b.T, a.T @ v
    raise ValueError("matmul_vjp handles vectors and matrices only")


# %% tags=["check"] activity="1a" points=3
def compare_rule(rule, forward, a, b, case, rng):
    """Check rule(a, b, v) against PyTorch and against the VJP identity with random v, u."""
    v = rng.normal(size=np.shape(forward(a, b)))
    a_bar, b_bar = called(rule, a, b, v)
    ta, tb = (torch.tensor(x, requires_grad=True) for x in (a, b))
    torch.sum(forward(ta, tb) * torch.tensor(v)).backward()
    close(a_bar, ta.grad.numpy(), f"{case}: a_bar (first returned value)")
    close(b_bar, tb.grad.numpy(), f"{case}: b_bar (second returned value)")
    # <v, J u> = <J* v, u>, with J u approximated by a central difference along u.
    ua, ub = rng.normal(size=np.shape(a)), rng.normal(size=np.shape(b))
    h = 1e-6
    jvp = (forward(a + h * ua, b + h * ub) - forward(a - h * ua, b - h * ub)) / (2 * h)
    close(np.sum(a_bar * ua) + np.sum(b_bar * ub), np.sum(v * jvp),
          f"{case}: <VJP(v), u> against <v, JVP(u)>", atol=1e-7, rtol=1e-7)


def check_add_and_multiply():
    a = np.array([[1.0, -2.0], [3.0, 0.5]])
    b = np.array([[2.0, 4.0], [-1.0, 3.0]])
    v = np.array([[1.0, 2.0], [3.0, 4.0]])
    close(add_vjp(a, b, v)[0], v, "add_vjp: a_bar, which should be v")
    close(add_vjp(a, b, v)[1], v, "add_vjp: b_bar, which should be v")
    close(multiply_vjp(a, b, v)[0], v * b, "multiply_vjp: a_bar, which should be v * b")
    close(multiply_vjp(a, b, v)[1], v * a, "multiply_vjp: b_bar, which should be v * a")
    rng = np.random.default_rng(11)
    for shape in [(), (1,), (3,), (3, 3), (2, 3), (3, 1)]:
        a, b = rng.normal(size=shape), rng.normal(size=shape)
        compare_rule(add_vjp, lambda p, q: p + q, a, b, f"add_vjp, shape {shape}", rng)
        compare_rule(multiply_vjp, lambda p, q: p * q, a, b, f"multiply_vjp, shape {shape}", rng)


def check_matmul():
    rng = np.random.default_rng(12)
    four_ranks = [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 3)), ((2, 4), (4, 3))]
    # Square matrices, and dimensions of length 1 outside (a row times a column) and inside.
    other_sizes = [((3, 3), (3, 3)), ((1, 4), (4, 1)), ((4, 1), (1, 3)), ((1,), (1, 3))]
    for left, right in four_ranks + other_sizes:
        a, b = rng.normal(size=left), rng.normal(size=right)
        compare_rule(matmul_vjp, lambda p, q: p @ q, a, b, f"matmul_vjp, {left} @ {right}", rng)


check_add_and_multiply()
check_matmul()
print("Activity 1a passed: add_vjp, multiply_vjp and matmul_vjp in all four rank cases, "
      "square, non-square and with dimensions of length 1.")

# %% [markdown]
# ### Activity 1b · Undoing broadcasting (2 points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# In PT02 the bias $b$ of shape (C) was added to logits $XW^\top$ of shape (B, C). NumPy
# broadcasting reuses every $b_c$ in all B rows, and every reuse sends back a contribution of
# its own during the backward pass. Those contributions add up: $\bar b$ is $v$ summed over the
# batch axis, which has shape (C), the shape of $b$.
#
# `sum_to_shape(v, shape)` generalises this. It receives `v` in the broadcast output's shape and
# returns the sum that has the target `shape`:
#
# 1. broadcasting prepends axes, so while `v` has more axes than `shape`, sum away the first;
# 2. broadcasting stretches length-1 axes, so wherever `shape` has a 1 and `v` does not, sum
#    that axis with `keepdims=True`.
#
# For instance (3, 3) → (3,) sums axis 0; (2, 3, 4) → (1, 3, 1) sums axes 0 and 2, keeping them;
# any shape → () sums everything. Watch out for square batches: summing the wrong axis of a
# (3, 3) array still returns shape (3,), just with the wrong numbers. The check uses arrays that
# are not symmetric, so it notices.

# %% tags=["stub"] activity="1b"
def sum_to_shape(v, shape):
    raise NotImplementedError("Complete Activity 1b: sum_to_shape")


# %% tags=["reference"] activity="1b"
def sum_to_shape(v, shape):
    v, shape = np.asarray(v, dtype=np.float64), tuple(shape)
    extra = v.ndim - len(shape)
    if extra < 0:
        raise ValueError(f"cannot sum shape {v.shape} to the longer shape {shape}")
    v = v.sum(axis=tuple(range(extra)))  # the axes broadcasting prepended
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and v.shape[i] != 1)
    v = v.sum(axis=stretched, keepdims=True)
    if v.shape != shape:
        raise ValueError(f"shape {shape} does not broadcast to the adjoint's shape")
    return v


# %% tags=["check"] activity="1b" points=2
def check_sum_to_shape():
    v = np.arange(1.0, 10.0).reshape(3, 3)
    close(sum_to_shape(v, (3,)), [12.0, 15.0, 18.0], "sum_to_shape (3, 3) -> (3,), a sum over axis 0")
    close(sum_to_shape(v, (1, 3)), [[12.0, 15.0, 18.0]], "sum_to_shape (3, 3) -> (1, 3)")
    close(sum_to_shape(v, (3, 1)), [[6.0], [15.0], [24.0]], "sum_to_shape (3, 3) -> (3, 1)")
    close(sum_to_shape(v, ()), 45.0, "sum_to_shape (3, 3) -> (), the sum of everything")
    close(sum_to_shape(v, (3, 3)), v, "sum_to_shape (3, 3) -> (3, 3), nothing to do")
    close(sum_to_shape(np.array(2.0), ()), 2.0, "sum_to_shape () -> ()")


def broadcasting_adjoint(v, shape):
    """What PyTorch sends back to an array of `shape` that was broadcast to v's shape."""
    small = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
    torch.sum(torch.broadcast_to(small, v.shape) * torch.tensor(v)).backward()
    return small.grad.numpy()


def check_sum_to_shape_against_torch():
    """Targets stretched in one or several places, with and without prepended axes."""
    rng = np.random.default_rng(4)
    for before, after in [((2, 3, 4), (1, 3, 1)), ((2, 3, 4), (2, 1, 4)), ((2, 3, 4), (3, 1)),
                          ((2, 3, 4), (4,)), ((4, 5), (1, 1)), ((5,), (1,)), ((1, 3), (3,))]:
        v = rng.normal(size=before)
        close(called(sum_to_shape, v, after), broadcasting_adjoint(v, after), f"sum_to_shape {before} -> {after}")


def check_broadcast_operators():
    """+ and * between broadcast shapes, through Tensor.vjp, against PyTorch."""
    rng = np.random.default_rng(5)
    for left, right in [((3, 3), (3,)), ((2, 3), ()), ((1, 3, 1), (2, 1, 4)), ((4, 1), (1, 3))]:
        a, b = rng.normal(size=left), rng.normal(size=right)
        for symbol, forward in [("+", lambda p, q: p + q), ("*", lambda p, q: p * q)]:
            out = forward(Tensor(a), Tensor(b))
            v = rng.normal(size=out.value.shape)
            a_bar, b_bar = out.vjp(v)
            ta, tb = (torch.tensor(x, requires_grad=True) for x in (a, b))
            torch.sum(forward(ta, tb) * torch.tensor(v)).backward()
            close(a_bar, ta.grad.numpy(), f"a_bar of a{left} {symbol} b{right}")
            close(b_bar, tb.grad.numpy(), f"b_bar of a{left} {symbol} b{right}")


check_sum_to_shape()
check_sum_to_shape_against_torch()
check_broadcast_operators()
print("Activity 1b passed: sum_to_shape, and + and * between broadcast shapes.")

# %% [markdown]
# ### Activity 1c · Nonlinear operations (2 points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# Nonlinear operations are where reverse mode must keep values from the forward pass. For
# $y = \tanh(x)$,
#
# $$\bar x = (1 - y^2) \odot v ,$$
#
# which uses the forward *output* $y$; `Tensor.tanh` keeps `y` in its closure and hands it to
# your function. Elementwise operations act entry by entry, so their VJP is an elementwise
# product too: as in the lecture's activation example, no Jacobian matrix is ever formed.
#
# Write
#
# * `tanh_vjp(y, v)`, where `y` is the forward **output**;
# * `relu_vjp(x, v)`, where `x` is the forward **input**: the adjoint passes where $x > 0$ and is
#   stopped everywhere else. ReLU has no derivative at exactly $x = 0$; like PyTorch, use 0.
#
# Each returns a single array shaped like `v`.

# %% tags=["stub"] activity="1c"
def tanh_vjp(y, v):
    raise NotImplementedError("Complete Activity 1c: tanh_vjp")


def relu_vjp(x, v):
    raise NotImplementedError("Complete Activity 1c: relu_vjp")


# %% tags=["reference"] activity="1c"
def tanh_vjp(y, v):
    return v * (1.0 - y * y)


def relu_vjp(x, v):
    return np.where(x > 0, v, 0.0)


# %% tags=["check"] activity="1c" points=2
def check_nonlinear():
    rng = np.random.default_rng(3)
    inputs = [np.array([-2.0, -0.5, -0.0, 0.0, 0.5, 2.0]), np.array(-0.0), np.array([0.7]),
              rng.normal(size=(3, 3)), rng.normal(size=(2, 3))]
    for x in inputs:
        signs = (-1.0) ** np.arange(x.size)
        v = (np.arange(1.0, x.size + 1) * signs).reshape(x.shape)  # 1, -2, 3, ...: both signs
        for name, ours, theirs in [("tanh_vjp", Tensor.tanh, torch.tanh),
                                   ("relu_vjp", Tensor.relu, torch.relu)]:
            v_sent = v.copy()
            (x_bar,) = ours(Tensor(x)).vjp(v_sent)
            tx = torch.tensor(x, requires_grad=True)
            torch.sum(theirs(tx) * torch.tensor(v)).backward()
            close(x_bar, tx.grad.numpy(), f"{name} with x = {np.round(x, 3).tolist()}")
            close(v_sent, v, f"v after {name} (the adjoint it receives must not change)")


check_nonlinear()
print("Activity 1c passed: tanh_vjp and relu_vjp on scalars, vectors and matrices, relu at 0.0 and -0.0.")

# %% [markdown]
# ## 5 · Activity 2: the backward pass
#
# Local VJPs are half the story; the order in which they run is the other half. Let $x = 2$
# (a scalar) and
#
# $$u = x^2, \qquad a = 3u, \qquad b = u^2, \qquad L = a + b .$$
#
# By hand: $u$ feeds both $a$ and $b$, so its adjoint gathers two contributions,
# $\bar u = 3 + 2u = 11$, and then $\bar x = 2x\,\bar u = 44$.
#
# The next cell defines a backward pass that *looks* fine: it processes each node the moment a
# depth-first search from $L$ reaches it. It starts from `initial_adjoints`, which gives every
# node a zero adjoint and the output its seed; your own `backward` will call it too. The cell
# after it builds and draws the graph and runs that pass. Before running it: what will it say
# $\bar x$ is?

# %%
def initial_adjoints(nodes, output, seed):
    """A zero adjoint per node, then the seed on `output` (1 by default for a scalar)."""
    if seed is None:
        if output.value.shape != ():
            raise ValueError(f"an output of shape {output.value.shape} needs an explicit seed")
        seed = 1.0
    seed = np.asarray(seed, dtype=np.float64)
    if seed.shape != output.value.shape:
        raise ValueError(f"seed of shape {seed.shape} for an output of shape {output.value.shape}")
    adjoints = {node: np.zeros(node.value.shape) for node in nodes}
    adjoints[output] = seed.copy()
    return adjoints


def premature_backward(output, seed=None):
    """Plausible but wrong: passes a node's adjoint on as soon as the node is discovered."""
    nodes = graph_nodes(output)
    adjoints = initial_adjoints(nodes, output, seed)
    for node in nodes:
        if node.vjp is None:
            continue
        for parent, part in zip(node.parents, node.vjp(adjoints[node])):
            adjoints[parent] += part
    return adjoints


def named(tensor, name):
    tensor.name = name
    return tensor


# %% requires="1a 1b"
fan_x = Tensor(2.0, name="x")
fan_u = named(fan_x * fan_x, "u")
fan_a = named(3 * fan_u, "a")
fan_b = named(fan_u * fan_u, "b")
fan_L = named(fan_a + fan_b, "L")
draw_graph(fan_L)
plt.show()

early = premature_backward(fan_L)
print("Order of discovery:", " -> ".join(node.name for node in graph_nodes(fan_L)))
print(f"premature pass: x_bar = {early[fan_x]:g}, by hand 44")
print(f"u_bar does end at {early[fan_u]:g}, but u had already passed on its adjoint by then.")

# %% [markdown]
# The premature pass reached $u$ when only $a$ had reported, sent $2x \cdot 3 = 12$ on to $x$,
# and never looked back. The contribution through $b$ arrived at $u$ afterwards, and nothing
# forwarded it.
#
# The cure is the fan-out rule from the lecture: a node may pass its adjoint on only once every
# node that uses it has contributed. A **topological order** lists each node after its parents,
# for example $x, u, a, b, L$; read backwards ($L, b, a, u, x$) it puts every node after all of
# its users. Several orders may qualify and any of them works. (The constant 3 is a leaf of the
# graph as well; it receives an adjoint that nobody reads.)
#
# ### Activity 2 · `topological_order` and `backward` (4 points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# `topological_order(output)` returns each node reachable from `output` exactly once, parents
# before the nodes that use them. Use an explicit stack, not recursion: Python gives up at a
# recursion depth near 1000 and the check builds a chain 1500 operations long. A plan that works:
#
# * start from the stack `[(output, False)]` and an empty set of visited nodes;
# * on popping `(node, False)` for a node not yet visited, mark it visited, push `(node, True)`,
#   then push `(parent, False)` for each of its parents;
# * on popping `(node, True)`, its parents are all in the order already: append the node.
#
# `backward(output, seed=None)`:
#
# 1. orders the nodes with `topological_order(output)`;
# 2. builds the adjoints with `initial_adjoints(nodes, output, seed)` (seed 1 for a scalar
#    output; any other output needs a seed of its own shape);
# 3. walks the nodes in **reverse** order, calls each node's `vjp` (if it has one) on the node's
#    adjoint and adds (`+=`) every returned contribution to the adjoint of the matching parent;
#    a node that uses a parent twice, like `x * x`, sends it two contributions;
#    a contribution whose shape is not its parent's is a bug in a VJP: raise a `ValueError`;
# 4. returns the dictionary of adjoints.
#
# Each call starts from fresh zeros, so calling `backward` twice gives the same answer twice.
# PyTorch instead adds into `.grad` on every call (PT01); the derivatives are the same, only
# the bookkeeping differs.

# %% tags=["stub"] activity="2"
def topological_order(output):
    raise NotImplementedError("Complete Activity 2: topological_order")


def backward(output, seed=None):
    raise NotImplementedError("Complete Activity 2: backward")


# %% tags=["reference"] activity="2"
# Instructor reference. A node is appended only when its (node, True) marker resurfaces, i.e.
# after all its parents. A parent listed twice still receives two contributions in backward,
# which x * x depends on. The shape test turns a broken local VJP into a clear error instead
# of a silent broadcast into the wrong adjoint.
def topological_order(output):
    order, visited, stack = [], set(), [(output, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
        elif node not in visited:
            visited.add(node)
            stack.append((node, True))
            stack.extend((parent, False) for parent in node.parents[::-1])
    return order


def backward(output, seed=None):
    order = topological_order(output)
    adjoint = initial_adjoints(order, output, seed)
    for node in reversed(order):
        if node.vjp is not None:
            contributions = node.vjp(adjoint[node])
            if len(contributions) != len(node.parents):
                raise ValueError(f"the VJP of {node.name} returned {len(contributions)} adjoints "
                                 f"for {len(node.parents)} parents")
            for parent, share in zip(node.parents, contributions):
                share = np.asarray(share, dtype=np.float64)
                if share.shape != parent.value.shape:
                    raise ValueError(f"the VJP of {node.name} returned shape {share.shape} "
                                     f"for a parent of shape {parent.value.shape}")
                adjoint[parent] += share
    return adjoint


# %% tags=["check"] activity="2" points=4
def check_order():
    order = topological_order(fan_L)
    assert len(order) == len(set(order)) == len(graph_nodes(fan_L)), \
        "topological_order: every reachable node must appear exactly once"
    position = {node: i for i, node in enumerate(order)}
    for node in order:
        for parent in node.parents:
            assert position[parent] < position[node], \
                f"topological_order: parent {parent.name} must come before {node.name}"


def check_fan_out():
    first = backward(fan_L)
    close(first[fan_u], 11.0, "u_bar in the Section 5 graph (both branches must contribute)")
    close(first[fan_x], 44.0, "x_bar in the Section 5 graph")
    second = backward(fan_L)
    close(second[fan_x], first[fan_x], "x_bar from a second backward call")
    assert second[fan_x] is not first[fan_x], "backward must build fresh adjoints on every call"
    close(fan_x.value, 2.0, "x after backward (backward must not change values)")
    close(backward(fan_L, 0.5)[fan_x], 22.0, "x_bar in the Section 5 graph with the seed 0.5 (it scales every adjoint)")


def check_seeds_and_errors():
    x = Tensor([2.0, -3.0])
    close(backward((x * x).sum())[x], [4.0, -6.0], "x_bar of sum(x * x): x is used twice")
    y = x * x + x
    close(backward(y, np.array([2.0, -1.0]))[x], [10.0, 5.0], "x_bar of x * x + x with seed [2, -1]")
    close(backward((x - y).sum())[x], [-4.0, 6.0], "x_bar of sum(x - (x * x + x)), i.e. -2x")
    expect_error(ValueError, lambda: backward(y), "backward of a vector output without a seed")
    expect_error(ValueError, lambda: backward(y, 1.0), "backward with a scalar seed for a vector")
    expect_error(ValueError, lambda: backward(y, np.ones((2, 1))), "backward with a (2, 1) seed")
    expect_error(ValueError, lambda: backward(Tensor([1.0])), "backward of shape (1,) without a seed")
    broken = Tensor([1.0, 2.0], (x,), lambda v: (v.sum(),), "broken")
    expect_error(ValueError, lambda: backward(broken, np.ones(2)), "a VJP that returns the wrong shape")
    leaf = Tensor(3.0)
    close(backward(leaf)[leaf], 1.0, "the adjoint of a leaf that is itself the output")


def check_shapes_in_graphs():
    bias = Tensor([1.0, 2.0, 3.0])
    seed = np.arange(1.0, 10.0).reshape(3, 3)
    close(backward(Tensor(np.arange(9.0).reshape(3, 3)) + bias, seed)[bias], seed.sum(axis=0),
          "the adjoint of a bias broadcast over 3 rows")
    m = Tensor(np.arange(6.0).reshape(2, 3))
    v = np.arange(6.0).reshape(3, 2)
    close(backward(m.T, v)[m], v.T, "the adjoint through a transpose")
    cube = Tensor(np.ones((2, 3, 4)))
    weights = np.array([1.0, 2.0, 3.0])
    close(backward(cube.sum(axis=(0, 2)), weights)[cube],
          np.broadcast_to(weights.reshape(1, 3, 1), (2, 3, 4)), "the adjoint of a sum over axes 0 and 2")


def check_shared_and_deep():
    # Twelve doublings node + node: 2**12 paths from the output back to the start, but only
    # 13 nodes, so each node's VJP must run exactly once.
    calls = {}

    def counted(vjp, step):
        def wrapper(v):
            calls[step] = calls.get(step, 0) + 1
            return vjp(v)
        return wrapper

    start = node = Tensor(1.0)
    for step in range(12):
        node = node + node
        node.vjp = counted(node.vjp, step)
    assert len(topological_order(node)) == 13, "topological_order of 12 doublings: 13 nodes"
    close(backward(node)[start], 4096.0, "the adjoint of the start of 12 doublings")
    assert calls == dict.fromkeys(range(12), 1), f"each VJP must run exactly once; calls per step: {calls}"
    chain = Tensor(0.0)
    for _ in range(1500):
        chain = Tensor(chain.value + 1, (chain,), lambda v: (v,), "+1")
    assert len(topological_order(chain)) == 1501, "topological_order of a chain of 1500 operations"
    backward(chain)


def layered(x, y, links):
    """Two leaves, operands used twice, `links` operations in a row, fan-out, and paths of
    unequal length from h to the result: the direct one, h * -2.0, comes first, so a depth-first
    search meets h before the longer path through `fan` has reported. Works on Tensors and on
    PyTorch tensors alike."""
    h = x * x * y
    for _ in range(links):
        h = h * 1.0
    fan = h * 3.0 + h * h
    return h * -2.0 + fan * fan * 0.5


def check_combined():
    x_value, y_value, seed = np.array([0.5, -1.0, 1.5]), np.array([1.0, 0.5, -0.5]), np.array([1.0, -2.0, 0.5])
    for links in (0, 1500):
        x, y = Tensor(x_value), Tensor(y_value)
        adjoints = backward(layered(x, y, links), seed)
        tx, ty = (torch.tensor(value, requires_grad=True) for value in (x_value, y_value))
        layered(tx, ty, links).backward(torch.tensor(seed))
        where = f"layered(x, y, {links}) with seed {seed.tolist()}"
        close(adjoints[x], tx.grad.numpy(), f"x_bar of {where}")
        close(adjoints[y], ty.grad.numpy(), f"y_bar of {where}")


check_order()
check_fan_out()
check_seeds_and_errors()
check_shapes_in_graphs()
check_shared_and_deep()
check_combined()
print("Activity 2 passed: order, fan-out, unequal paths, seeds, shape errors, reductions, fresh adjoints, deep chains.")

# %% [markdown]
# ## 6 · Activity 3: training the PT02 classifier
#
# PT02's model computes logits $Z = XW^\top + b$ for $X$ of shape (B, D), $W$ of shape (C, D) and
# $b$ of shape (C). The next cell prepares the data exactly as PT02 did: four measurements per
# penguin, the same stratified train/validation/test split, and standardisation with statistics
# of the training set alone. It reads the CSV shipped next to this notebook; opened on its own
# (in Colab, say) it downloads the file once and checks its SHA-256. Nothing to write here.

# %%
PENGUINS_SHA256 = "f204db2c753b0937caac3cb35258562c14f073e4bbc76be24b4c51ce22767a93"
# Where a notebook opened alone fetches the CSV; COURSE_DATA_URL, if set, names another folder
# that serves the same file (a mirror, or a local server).
PENGUINS_URL = os.environ.get("COURSE_DATA_URL", "https://raw.githubusercontent.com/allisonhorst/palmerpenguins/"
                              "main/inst/extdata").rstrip("/") + "/penguins.csv"


def penguin_bytes():
    """The bundled CSV (beside the notebook, or at the course root); else a download, kept in
    data/ so that it happens once. A copy in data/ that fails the checksum is deleted."""
    kept = Path("data/penguins.csv")
    found = next((path for path in (kept, Path("../../data/penguins.csv")) if path.is_file()), None)
    if found is None:
        kept.parent.mkdir(exist_ok=True)
        kept.write_bytes(urlopen(PENGUINS_URL, timeout=30).read())
        found = kept
    blob = found.read_bytes()
    digest = hashlib.sha256(blob).hexdigest()
    if digest != PENGUINS_SHA256:
        if found == kept:
            kept.unlink()  # the next run downloads a fresh copy
        raise RuntimeError(f"{found} is not the published penguins.csv: its SHA-256 is {digest}, not "
                           f"{PENGUINS_SHA256}." + (f" It was deleted; run this cell again to download it "
                                                    f"from {PENGUINS_URL}." if found == kept else ""))
    return blob


features = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
species = ["Adelie", "Chinstrap", "Gentoo"]
frame = pd.read_csv(BytesIO(penguin_bytes())).dropna(subset=[*features, "species"])
labels = pd.Categorical(frame["species"], categories=species).codes.astype(np.int64)
# PT02 standardised in float32; we repeat that, then move to float64 for the engines.
measurements = torch.tensor(frame[features].to_numpy(), dtype=torch.float32)
train_idx, holdout_idx = train_test_split(np.arange(len(labels)), test_size=0.4,
                                          stratify=labels, random_state=7)
val_idx, test_idx = train_test_split(holdout_idx, test_size=0.5,
                                     stratify=labels[holdout_idx], random_state=7)
centre = measurements[train_idx].mean(dim=0)
spread = measurements[train_idx].std(dim=0, correction=0).clamp_min(1e-8)


def standardised(idx):
    return ((measurements[idx] - centre) / spread).double().numpy()


Xtrain, Xval, Xtest = (standardised(idx) for idx in (train_idx, val_idx, test_idx))
ytrain, yval, ytest = (labels[idx] for idx in (train_idx, val_idx, test_idx))
assert (len(ytrain), len(yval), len(ytest)) == (205, 68, 69)
assert [X.shape for X in (Xtrain, Xval, Xtest)] == [(205, 4), (68, 4), (69, 4)]
assert len(set(train_idx) | set(val_idx) | set(test_idx)) == len(labels), "the splits overlap"
print(f"Examples: {len(ytrain)} training, {len(yval)} validation, {len(ytest)} test")

# %% [markdown]
# The loss is supplied as one operation with its own VJP (you derived it in PT02). For a batch of
# B examples with integer labels $y_i$,
#
# $$L(Z) = \frac1B \sum_i \Big[\log \sum_c e^{Z_{ic}} - Z_{i y_i}\Big], \qquad
# \bar Z = \bar L \cdot \frac{\operatorname{softmax}(Z) - Y}{B},$$
#
# with $Y$ the one-hot label matrix and the softmax taken row by row. The loss is a mean, hence
# the $1/B$ in the gradient as well. Subtracting each row's maximum before exponentiating keeps
# large logits from overflowing; the cell tests exactly that case against PyTorch.
#
# `torch_reference` performs the same update in PyTorch; the checks compare yours with it.

# %%
def cross_entropy(logits, targets):
    """Mean cross-entropy of integer `targets` under `logits` (B, C), as one graph node."""
    logits, targets = as_tensor(logits), np.asarray(targets)
    z = logits.value
    if z.ndim != 2 or 0 in z.shape:
        raise ValueError(f"logits must be a nonempty (batch, classes) matrix, got shape {z.shape}")
    if targets.shape != (z.shape[0],) or targets.dtype.kind not in "iu":
        raise ValueError(f"targets must be {z.shape[0]} integer class indices")
    if targets.min() < 0 or targets.max() >= z.shape[1]:
        raise ValueError(f"targets must lie in 0..{z.shape[1] - 1}")
    rows = np.arange(z.shape[0])
    shifted = z - z.max(axis=1, keepdims=True)
    log_norm = np.log(np.exp(shifted).sum(axis=1))
    value = np.mean(log_norm - shifted[rows, targets])
    softmax_minus_onehot = np.exp(shifted - log_norm[:, None])
    softmax_minus_onehot[rows, targets] -= 1.0
    local = softmax_minus_onehot / z.shape[0]
    return Tensor(value, (logits,), lambda v: (v * local,), "cross-entropy")


def torch_reference(X, targets, W, b, lr):
    """PyTorch's answers for one classifier_step."""
    tW, tb = (torch.tensor(p, dtype=torch.float64, requires_grad=True) for p in (W, b))
    logits = torch.tensor(X, dtype=torch.float64) @ tW.T + tb
    loss = F.cross_entropy(logits, torch.as_tensor(targets, dtype=torch.long))
    dW, db = (g.numpy() for g in torch.autograd.grad(loss, (tW, tb)))
    return {"logits": logits.detach().numpy(), "loss": loss.item(), "dW": dW, "db": db,
            "W": np.asarray(W) - lr * dW, "b": np.asarray(b) - lr * db}


# %% requires="2"
huge = Tensor([[1000.0, -1000.0, 0.0], [-1000.0, 1000.0, 0.0]])
huge_targets = np.array([1, 0])
huge_loss = cross_entropy(huge, huge_targets)
t_huge = torch.tensor(huge.value, requires_grad=True)
t_huge_loss = F.cross_entropy(t_huge, torch.tensor(huge_targets))
t_huge_loss.backward()
assert np.isfinite(huge_loss.value), "the loss overflowed on large logits"
close(huge_loss.value, t_huge_loss.item(), "cross-entropy of logits of size 1000")
close(backward(huge_loss)[huge], t_huge.grad.numpy(), "cross-entropy gradient at logits of size 1000")
print("Supplied loss agrees with PyTorch on logits of size 1000, value and gradient.")

# %% [markdown]
# ### Activity 3 · `classifier_step` (3 points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# Write `classifier_step(X, targets, W, b, lr)`, one gradient-descent step with your engine:
#
# 1. wrap `X`, `W` and `b` in new Tensors; `W` and `b` are the leaves whose adjoints you want;
# 2. build the logits `X @ W.T + b` and their loss with `cross_entropy`;
# 3. run `backward(loss)` and read off the adjoints of the two parameter leaves, the gradients;
# 4. return a dictionary with the logits, the loss as a Python `float`, both gradients, and the
#    updated parameters `W - lr * dW` and `b - lr * db`, under the keys given in the stub.
#
# Leave the arrays you receive untouched and return new ones. The check compares every entry of
# the dictionary with PyTorch on a tiny batch and on penguin batches, over two successive steps.
# A correct loss proves little: forget to update the bias and the first loss is still right.

# %% tags=["stub"] activity="3"
def classifier_step(X, targets, W, b, lr):
    # Return {"logits": array, "loss": float, "dW": array, "db": array,
    #         "W": updated array, "b": updated array}.
    raise NotImplementedError("Complete Activity 3: classifier_step")


# %% tags=["reference"] activity="3"
# Instructor reference. The new parameters are plain arrays: the next call wraps them in fresh
# leaves and records a fresh graph, which is what PyTorch does on every iteration as well.
def classifier_step(X, targets, W, b, lr):
    weights, bias = Tensor(W, name="W"), Tensor(b, name="b")
    logits = Tensor(X, name="X") @ weights.T + bias
    loss = cross_entropy(logits, targets)
    adjoints = backward(loss)
    dW, db = adjoints[weights], adjoints[bias]
    return {"logits": np.array(logits.value), "loss": float(loss.value), "dW": dW, "db": db,
            "W": W - lr * dW, "b": b - lr * db}


# %% tags=["check"] activity="3" points=3
def check_one_case(X, targets):
    rng = np.random.default_rng(13)
    W, b = 0.1 * rng.normal(size=(3, X.shape[1])), 0.1 * rng.normal(size=3)
    W_before, b_before = W.copy(), b.copy()
    theirs = torch_reference(X, targets, W, b, 0.1)
    ours = classifier_step(X, targets, W, b, 0.1)
    assert isinstance(ours, dict) and set(ours) == set(theirs), \
        f"classifier_step must return a dict with exactly the keys {sorted(theirs)}"
    assert isinstance(ours["loss"], float), \
        f"classifier_step: loss must be a Python float, got {type(ours['loss']).__name__}"
    for key in theirs:
        close(ours[key], theirs[key], f"classifier_step on X of shape {X.shape}: {key}")
    close(W, W_before, "W after classifier_step (the input array must not change)")
    close(b, b_before, "b after classifier_step (the input array must not change)")
    ours = classifier_step(X, targets, ours["W"], ours["b"], 0.1)
    theirs = torch_reference(X, targets, theirs["W"], theirs["b"], 0.1)
    for key in theirs:
        close(ours[key], theirs[key], f"classifier_step on X of shape {X.shape}, second update: {key}")


check_one_case(np.array([[1.0, 2.0], [-1.0, 3.0], [2.0, -2.0]]), np.array([0, 1, 2]))  # W (3, 2)
check_one_case(Xtrain[:7], ytrain[:7])  # W (3, 4)
check_one_case(Xtrain[:1], ytrain[:1])  # a single example
check_one_case(np.array([[0.5, -1.0, 2.0], [1.5, 0.0, -0.5], [-1.0, 1.0, 0.5]]), np.array([2, 0, 1]))  # X, W square
print("Activity 3 passed: logits, loss, gradients and two updates in a row agree with PyTorch.")

# %% [markdown]
# ## 7 · Training with your engine
#
# The loop is supplied: 60 full-batch updates at learning rate 0.1 from zero weights, as in
# PT02. Every update runs your `classifier_step` next to `torch_reference` and insists that the
# parameters agree. The test split stays untouched.
#
# **Predict** before running: will the NumPy and PyTorch curves coincide exactly, nearly, or
# not at all?

# %% requires="3"
def validation_loss_numpy(W, b):
    return float(cross_entropy(Tensor(Xval @ W.T + b), yval).value)


def validation_loss_torch(W, b):
    with torch.no_grad():
        logits = torch.tensor(Xval) @ torch.tensor(W).T + torch.tensor(b)
        return F.cross_entropy(logits, torch.tensor(yval)).item()


def train_side_by_side(updates=60, lr=0.1):
    ours = theirs = {"W": np.zeros((3, 4)), "b": np.zeros(3)}
    curves = {"NumPy train": [], "PyTorch train": [], "NumPy validation": [], "PyTorch validation": []}
    for update in range(1, updates + 1):
        ours = classifier_step(Xtrain, ytrain, ours["W"], ours["b"], lr)
        theirs = torch_reference(Xtrain, ytrain, theirs["W"], theirs["b"], lr)
        curves["NumPy train"].append(ours["loss"])
        curves["PyTorch train"].append(theirs["loss"])
        curves["NumPy validation"].append(validation_loss_numpy(ours["W"], ours["b"]))
        curves["PyTorch validation"].append(validation_loss_torch(theirs["W"], theirs["b"]))
        close(ours["W"], theirs["W"], f"W after update {update}")
        close(ours["b"], theirs["b"], f"b after update {update}")
    return curves, ours["W"], ours["b"]


curves, trained_W, trained_b = train_side_by_side()
for split in ("train", "validation"):
    close(curves[f"NumPy {split}"], curves[f"PyTorch {split}"], f"{split} loss curve")
assert curves["NumPy train"][-1] < curves["NumPy train"][0], "training did not reduce the loss"

fig, ax = plt.subplots(figsize=(7, 4))
for split, colour in (("train", "#1f5f9e"), ("validation", "#b0531c")):
    ax.plot(curves[f"NumPy {split}"], color=colour, lw=2.5, alpha=0.6, label=f"NumPy engine, {split}")
    ax.plot(curves[f"PyTorch {split}"], ":", color="black", lw=1.2, label=f"PyTorch, {split}")
ax.set_xlabel("update (training loss is measured before the update)")
ax.set_ylabel("mean cross-entropy")
ax.legend()
fig.tight_layout()
plt.show()

val_accuracy = np.mean(np.argmax(Xval @ trained_W.T + trained_b, axis=1) == yval)
print(f"Training loss {curves['NumPy train'][0]:.4f} -> {curves['NumPy train'][-1]:.4f} over 60 updates")
print(f"Validation accuracy after 60 updates: {val_accuracy:.3f}")

# %% [markdown]
# ## 8 · What you built
#
# At its core your engine is what PyTorch's autograd is: the forward pass records, for each
# operation, a VJP closure; the backward pass visits the graph in reverse topological order and
# adds up what arrives along every edge.
#
# The real thing adds hundreds of operations, GPUs, many dtypes and careful memory management
# (PyTorch frees the saved tensors after `backward` unless asked not to). Ours keeps everything
# alive, multiplies only vectors and matrices, and returns plain NumPy adjoints, which means a
# gradient cannot itself be differentiated again.
#
# Loops do not create cycles: every iteration creates new nodes, so the graph stays acyclic.
#
# **Discuss**
#
# 1. Why does the bias go through `sum_to_shape` while $W$ does not need it?
# 2. In `u + u`, why is `u` one node but two edges? What breaks if `backward` keeps only the
#    latest contribution for each parent?
# 3. Every local VJP passed its check in Activity 1. How can `backward` still get a gradient
#    wrong?
# 4. Why does `tanh` keep its output rather than its input?

# %% [markdown] tags=["reference"]
# **Instructor answers.**
#
# 1. Every $b_c$ is used by all B examples, so $\bar b_c$ adds B contributions, which is the
#    reduction `sum_to_shape` performs. $W$ meets the batch through a matrix product, and its
#    VJP $\bar W = \bar Z^\top X$ sums over the batch by itself.
# 2. Identity makes `u` a single node whose adjoint is computed once and propagated once; the
#    two edges each deliver a contribution, and both belong in the sum. Keeping only the last
#    one turns the derivative of `x * x` into $x$ instead of $2x$.
# 3. Through the schedule: a node that propagates before all its users have reported passes on
#    a partial adjoint, as in Section 5 (12 instead of 44). Correct local rules need a correct
#    order.
# 4. $\tanh'(x) = 1 - \tanh(x)^2$ is immediate from the output the forward pass already
#    computed. Keeping the input works too, at the price of evaluating $\tanh$ a second time.
#
# Matching PyTorch here is evidence for this operation set on these graphs and inputs, not a
# proof that the engine is a general-purpose autodiff system.

# %% [markdown]
# ## Optional A · An MLP with your engine (2 bonus points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# Once you have done PT02's Section 9, swap the linear model for PT02's MLP with one hidden
# layer of 16 ReLU units:
#
# $$H = \operatorname{relu}(X W_1^\top + b_1), \qquad Z = H W_2^\top + b_2 .$$
#
# Write `mlp_step(X, targets, params, lr)`. `params` maps `W1` (16, 4), `b1` (16), `W2` (3, 16)
# and `b2` (3) to arrays. Return the loss as a Python `float` and a new dictionary of updated
# parameters under the same keys. The engine needs nothing new.
#
# The cell after the exercise gives both engines PT02's `make_mlp()` initial weights (seed 7)
# and trains for 200 updates at learning rate 0.1.

# %% tags=["stub"] activity="A"
def mlp_step(X, targets, params, lr):
    # Return (loss as a float, {"W1": ..., "b1": ..., "W2": ..., "b2": ...} updated).
    raise NotImplementedError("Complete Activity A: mlp_step")


# %% tags=["reference"] activity="A"
def mlp_step(X, targets, params, lr):
    leaf = {key: Tensor(value, name=key) for key, value in params.items()}
    hidden = (Tensor(X, name="X") @ leaf["W1"].T + leaf["b1"]).relu()
    loss = cross_entropy(hidden @ leaf["W2"].T + leaf["b2"], targets)
    adjoints = backward(loss)
    return float(loss.value), {key: params[key] - lr * adjoints[leaf[key]] for key in params}


# %% requires="A"
def make_mlp(seed=7):
    """PT02's MLP, 4 -> 16 ReLU -> 3, initialised from `seed`, in float64."""
    torch.manual_seed(seed)
    layers = [torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)]
    return torch.nn.Sequential(*layers).double()


def mlp_parameters(model):
    first, second = model[0], model[2]
    tensors = {"W1": first.weight, "b1": first.bias, "W2": second.weight, "b2": second.bias}
    return {key: t.detach().numpy().copy() for key, t in tensors.items()}


torch_mlp = make_mlp()
mlp_params = mlp_parameters(torch_mlp)
sgd = torch.optim.SGD(torch_mlp.parameters(), lr=0.1)
mlp_curves = {"NumPy": [], "PyTorch": []}
inputs_t, targets_t = torch.tensor(Xtrain), torch.tensor(ytrain)
for _ in range(200):
    loss, mlp_params = mlp_step(Xtrain, ytrain, mlp_params, 0.1)
    mlp_curves["NumPy"].append(loss)
    sgd.zero_grad()
    torch_loss = F.cross_entropy(torch_mlp(inputs_t), targets_t)
    torch_loss.backward()
    sgd.step()
    mlp_curves["PyTorch"].append(torch_loss.item())

fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(mlp_curves["NumPy"], lw=2.5, alpha=0.6, label="NumPy engine")
ax.plot(mlp_curves["PyTorch"], ":", color="black", label="PyTorch")
ax.set(xlabel="update", ylabel="training cross-entropy", title="MLP with 16 hidden units, lr 0.1")
ax.legend()
fig.tight_layout()
plt.show()

hidden_val = np.maximum(Xval @ mlp_params["W1"].T + mlp_params["b1"], 0.0)
mlp_accuracy = np.mean(np.argmax(hidden_val @ mlp_params["W2"].T + mlp_params["b2"], axis=1) == yval)
print(f"MLP training loss {mlp_curves['NumPy'][0]:.4f} -> {mlp_curves['NumPy'][-1]:.4f} over 200 updates")
print(f"MLP validation accuracy: {mlp_accuracy:.3f}")

# %% tags=["check"] activity="A" points=2
def check_mlp_one_example():
    """One update on a single example, with as many hidden units as inputs (a square W1)."""
    rng = np.random.default_rng(17)
    X, targets = rng.normal(size=(1, 4)), np.array([2])
    params = {"W1": rng.normal(size=(4, 4)), "b1": rng.normal(size=4),
              "W2": rng.normal(size=(3, 4)), "b2": rng.normal(size=3)}
    sent = {key: value.copy() for key, value in params.items()}
    loss, updated = mlp_step(X, targets, params, 0.5)
    leaves = {key: torch.tensor(value, requires_grad=True) for key, value in sent.items()}
    hidden = torch.relu(torch.tensor(X) @ leaves["W1"].T + leaves["b1"])
    torch_loss = F.cross_entropy(hidden @ leaves["W2"].T + leaves["b2"], torch.tensor(targets))
    gradients = dict(zip(leaves, torch.autograd.grad(torch_loss, list(leaves.values()))))
    close(loss, torch_loss.item(), "MLP loss on one example")
    for key in sent:
        close(updated[key], sent[key] - 0.5 * gradients[key].numpy(), f"{key} after one update on one example")
        close(params[key], sent[key], f"the {key} passed to mlp_step (update copies, not the arrays you receive)")


assert len(mlp_curves["NumPy"]) == 200, \
    "the training cell above stopped early: finish mlp_step, then run that cell again"
close(mlp_curves["NumPy"], mlp_curves["PyTorch"], "MLP training losses over 200 updates",
      atol=1e-8, rtol=1e-8)
for key, value in mlp_parameters(torch_mlp).items():
    close(mlp_params[key], value, f"{key} after 200 MLP updates", atol=1e-8, rtol=1e-8)
check_mlp_one_example()
print("Activity A passed: 200 MLP updates, and one update on a single example, agree with PyTorch.")

# %% [markdown]
# ## Optional B · Gradients as functions (1 bonus point)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# `torch.func.grad` and JAX's `grad` turn a function into the function that computes its
# gradient. Build the same thing on your engine: `grad(function)` returns a function of a NumPy
# array `x` that wraps `x` in a new Tensor, calls `function` on it, runs `backward` and returns
# the adjoint of the input. Raise `ValueError` when `function` does not return a scalar, and
# return zeros when the result does not depend on the input at all.

# %% tags=["stub"] activity="B"
def grad(function):
    raise NotImplementedError("Complete Activity B: grad")


# %% tags=["reference"] activity="B"
def grad(function):
    def gradient(x):
        leaf = Tensor(x, name="x")
        out = as_tensor(function(leaf))
        if out.value.shape != ():
            raise ValueError(f"grad needs a scalar result, got shape {out.value.shape}")
        return backward(out).get(leaf, np.zeros(leaf.value.shape)).copy()

    return gradient


# %% tags=["check"] activity="B" points=1
def check_grad():
    x = np.array([1.0, -2.0, 3.0])
    close(grad(lambda t: (t * t).sum())(x), 2 * x, "grad of sum(x * x)")
    close(grad(lambda t: t.tanh().sum())(x), 1 - np.tanh(x) ** 2, "grad of sum(tanh(x))")
    close(grad(lambda t: Tensor(7.0))(x), np.zeros(3), "grad of a constant function")
    close(x, [1.0, -2.0, 3.0], "x after grad (the input must not change)")
    close(grad(lambda t: t * t * t)(np.array(2.0)), 12.0, "grad of x ** 3 at the scalar x = 2")
    M = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, -1.0]])
    close(grad(lambda t: (t.relu() * t).sum())(M), 2 * np.maximum(M, 0.0),
          "grad of sum(relu(x) * x) for a (2, 3) matrix x")
    for value in (x, np.array([2.0]), M):
        expect_error(ValueError, lambda: grad(lambda t: t * t)(value),
                     f"grad of a function whose result has shape {value.shape}, not a scalar")


check_grad()
print("Activity B passed: grad.")

# %% [markdown]
# ## Optional C · A Jacobian from VJPs (1 bonus point)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# A VJP with seed $v$ is $\partial f(x)^*[v]$. Seeding with $e_j$, the $j$-th basis vector of
# the output space, returns row $j$ of the Jacobian, just as in the lecture's reverse-mode
# slides. Write `jacobian(function, value)`: one forward pass, then one `backward` per output
# entry with a one-hot seed, stacked into an array of shape `output.shape + input.shape`.
#
# How many backward passes does a function $\mathbb R^{1000} \to \mathbb R$ take? And one
# $\mathbb R \to \mathbb R^{1000}$? Which mode suits the second?

# %% tags=["stub"] activity="C"
def jacobian(function, value):
    raise NotImplementedError("Complete Activity C: jacobian")


# %% tags=["reference"] activity="C"
def jacobian(function, value):
    leaf = Tensor(value, name="x")
    out = as_tensor(function(leaf))
    rows = []
    for j in range(out.value.size):
        seed = np.zeros(out.value.size)
        seed[j] = 1.0
        adjoints = backward(out, seed.reshape(out.value.shape))
        rows.append(adjoints.get(leaf, np.zeros(leaf.value.shape)))
    return np.array(rows).reshape(out.value.shape + leaf.value.shape)


# %% [markdown] tags=["reference"]
# **Instructor answer.** One backward pass per output entry: a single pass for
# $\mathbb R^{1000} \to \mathbb R$, a thousand for $\mathbb R \to \mathbb R^{1000}$. Forward mode
# costs one JVP per input entry, so the second function needs one forward-mode pass. Training
# lives in the first case: one scalar loss, one seed, one pass.

# %% tags=["check"] activity="C" points=1
def check_jacobian():
    x = np.array([1.0, 2.0])
    close(jacobian(lambda t: t * t, x), np.diag([2.0, 4.0]), "Jacobian of x * x")
    close(jacobian(lambda t: (t * t).sum(), x), [2.0, 4.0], "Jacobian of sum(x * x), a scalar")
    close(jacobian(lambda t: Tensor([3.0, 4.0]), x), np.zeros((2, 2)), "Jacobian of a constant")
    A = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    close(jacobian(lambda t: Tensor(A) @ t, np.array([1.0, -1.0])), A, "Jacobian of x -> A @ x")
    M = np.arange(6.0).reshape(2, 3)
    J = jacobian(lambda t: t * t, M)
    close(np.shape(J), (2, 3, 2, 3), "shape of the Jacobian of a (2, 3) -> (2, 3) function")
    close(np.reshape(J, (6, 6)), np.diag(2 * M.ravel()), "Jacobian of x * x for a (2, 3) matrix x")
    close(jacobian(lambda t: (t * t).sum(), M), 2 * M, "Jacobian of sum(x * x) for a (2, 3) matrix x, shape (2, 3)")
    close(jacobian(lambda t: Tensor([1.0, -2.0, 3.0]) * t, np.array(2.0)), [1.0, -2.0, 3.0],
          "Jacobian of x -> [1, -2, 3] * x at a scalar x, of shape (3,)")


check_jacobian()
print("Activity C passed: jacobian.")

# %% [markdown]
# ## Optional D · JVP and VJP side by side
#
# Your engine is reverse mode only; `torch.func` offers both, so compare them on
# $f(x) = A(x \odot x)$ with $A$ of shape (3, 2):
#
# * JVP: $\partial f(x)[u] = A(2x \odot u)$, of shape (3);
# * VJP: $\partial f(x)^*[v] = 2x \odot (A^\top v)$, of shape (2).
#
# Predict both shapes, then run the cell. It computes the two products with `torch.func`, the VJP
# with your engine as well, and checks $\langle v, \partial f(x)[u]\rangle =
# \langle \partial f(x)^*[v], u\rangle$. There is nothing to write here.

# %% requires="1a 1b 2"
A_d = np.array([[1.0, 2.0], [-2.0, 1.0], [3.0, -1.0]])
x_d, u_d, v_d = np.array([1.0, -2.0]), np.array([0.5, 1.0]), np.array([1.0, -1.0, 2.0])


def f_torch(x):
    return torch.tensor(A_d) @ (x * x)


f_value, jvp_d = torch.func.jvp(f_torch, (torch.tensor(x_d),), (torch.tensor(u_d),))
_, pullback = torch.func.vjp(f_torch, torch.tensor(x_d))
(vjp_torch,) = pullback(torch.tensor(v_d))
engine_x = Tensor(x_d)
engine_y = Tensor(A_d) @ (engine_x * engine_x)
vjp_engine = backward(engine_y, v_d)[engine_x]
close(f_value.numpy(), engine_y.value, "f(x), PyTorch against the engine")
close(jvp_d.numpy(), A_d @ (2 * x_d * u_d), "JVP against the formula A(2x * u)")
close(vjp_engine, vjp_torch.numpy(), "your VJP against torch.func.vjp")
close(v_d @ jvp_d.numpy(), vjp_engine @ u_d, "<v, JVP(u)> against <VJP(v), u>")
print("JVP:", jvp_d.numpy(), " VJP:", vjp_engine)

# %% [markdown]
# ## Sources
#
# * Simone Scardapane's autodiff Colab, on which the starter code and reference fragments of
#   this lab are modelled.
# * The automatic-differentiation lecture: derivatives as linear maps, JVPs and VJPs, reverse
#   mode by operator overloading.
# * The PT01 and PT02 notebooks: tensors and autograd, the linear classifier, the MLP.
# * The JAX Autodiff Cookbook, for JVPs, VJPs and cotangents (JAX is not needed here).
# * PyTorch documentation of `torch.func.jvp` and `torch.func.vjp`.
# * Data: Horst, Hill and Gorman (2020), *palmerpenguins*, released under CC0; collected by
#   Kristen Gorman and the Palmer Station LTER. The download address and SHA-256 are in the
#   data cell; the bundled copy is the file shipped by the `palmerpenguins` 0.1.6 package.
