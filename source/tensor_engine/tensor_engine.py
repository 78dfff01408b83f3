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
#     lab: tensor_engine
#     title: Tensor engine · An autodiff engine that trains real networks
#     data: []
# ---

# %% [markdown]
# # Tensor engine · An autodiff engine that trains real networks
#
# Two labs ago every node of your engine held a single Python number; in PT03 the nodes held
# NumPy arrays, but `backward` handed the gradients back in a dictionary. This lab builds the
# engine the way PyTorch is organised. A node is an array **with its gradient beside it** in
# `.grad`; every operation leaves behind a small closure that **adds** into the `.grad` of its
# inputs; `backward()` runs those closures in reverse topological order. About a hundred lines
# in all, and with them you will
#
# * pin the engine against two oracles that know nothing of each other, central differences
#   and PyTorch;
# * train a 64-128-10 network on handwritten digits to about 97% test accuracy;
# * train a [2, 64, 64, 3] network on three interleaved spirals, a task no linear model can do.
#
# | Activity | You write | Points |
# |---|---|---|
# | 1a | `multiply`, `matmul`, `reduce_sum`, `exp`, `log`, `relu`: forward and backward side by side | 4 |
# | 1b | `cross_entropy`, a fused and numerically stable loss node | 2 |
# | 2 | `backward` and `numerical_grad` | 3 |
# | 3 | `zero_grad`, `sgd_step` and `train_epoch`: the training loop | 3 |
# | 4 | `init_mlp` and `mlp_forward` (the `MLP`) and `gradient_check` | 2 |
# | 5 | `torch_witness`, the same network checked against PyTorch | 1 |
# | A (optional) | `adam_step`: the Adam optimiser, raced against SGD on the spiral | 2 bonus |
# | B (optional) | `no_grad`: a context that switches recording off | 1 bonus |
# | C (optional) | forward mode: dual-number rules, `jvp`, `jacobian_fwd` | 2 bonus |
# | D (optional) | double backprop: `vjp_tensor`, `grad`, `hvp`, `newton_step` | 2 bonus |
# | E (optional) | `conv2d` and its backward rule; a small CNN on the digits | 2 bonus |
# | F (optional) | `to_dot`: the tape as Graphviz text | 1 bonus |
#
# **Working through it.** Run the cells from the top. Every activity ends with a check cell that
# stops with a message naming the quantity that is off and the input it was computed for. A
# function you have not written yet raises `NotImplementedError` when it is first used, so take
# the activities in order. The `Tensor` class, `add`, `unbroadcast`, the data and the plots are
# supplied.
#
# You should have done the scalar engine (lab 1) and PT03 (lab 2): this lab reuses their ideas
# (closures that add into `.grad`, topological order, undoing broadcasting) without repeating
# their derivations.

# %% [markdown] tags=["reference"]
# **Instructor copy.** Cells tagged `reference` hold the solutions and the answers to the
# questions. `build_student.py` removes them, with every saved output, when it writes the student
# notebook, so an activity left undone raises an error instead of running a hidden solution.
#
# Timing: the whole notebook, optional activities included, runs in about half a minute on two
# cores (digits: 40 epochs, about a second; spiral: 1,000 full-batch steps, about a second; the
# gradient checks, a few seconds; Optional A's 300 Adam steps, under a second; Optional B's
# passes over the 58,081-point grid, a few seconds and 370 MiB at the peak; Optional E's CNN,
# 8 epochs of 34 batches, a few seconds). The one timing printed, B's speed-up, is in a cell
# tagged `timing`, which `make instructor` stores without its output.

# %% [markdown]
# ## 1 · Setup
#
# Everything is float64, in NumPy and in PyTorch, so the checks can compare with a tolerance of
# 1e-9. They share one helper, `close(actual, expected, quantity)`, which compares the shape
# first, then the values, and raises an error that names `quantity` and the first wrong entry.

# %%
import numpy as np
from threadpoolctl import threadpool_limits

np.set_printoptions(precision=4, suppress=True)
# One BLAS thread: the matrices here are small, so more threads only add overhead, and the
# printed digits then do not depend on how many cores the machine has.
blas_limit = threadpool_limits(limits=1)


def close(actual, expected, quantity, *, tol=1e-9, rtol=None):
    """Raise an AssertionError naming `quantity` unless shape and values agree within `tol`
    (absolute, plus `rtol` times the expected value; `rtol` is `tol` unless given)."""
    try:
        got = np.asarray(actual, dtype=np.float64)
    except (TypeError, ValueError):
        raise AssertionError(f"{quantity}: expected numbers, got a {type(actual).__name__}") from None
    want = np.asarray(expected, dtype=np.float64)
    if got.shape != want.shape:
        raise AssertionError(f"{quantity}: shape {got.shape}, expected {want.shape}")
    wrong = ~np.isclose(got, want, rtol=tol if rtol is None else rtol, atol=tol)
    if wrong.any():
        at = tuple(int(i) for i in np.argwhere(wrong)[0])
        where = f" at index {at}" if at else ""
        raise AssertionError(f"{quantity}: {int(wrong.sum())} of {wrong.size} wrong; got {got[at]:.10g}"
                             f"{where}, expected {want[at]:.10g}")


# %% [markdown]
# PyTorch is the witness the checks compare with; it gets a cell of its own. The engine itself
# uses only NumPy.

# %%
import torch
import torch.nn.functional as F

torch.set_num_threads(1)
print(f"NumPy {np.__version__}, PyTorch {torch.__version__}")


def t64(array, grad=True):
    """A float64 PyTorch copy of `array`, recording gradients unless grad=False."""
    return torch.tensor(np.asarray(array, dtype=np.float64), dtype=torch.float64, requires_grad=grad)


# %% [markdown]
# ## 2 · Where the gradient lives
#
# The three engines of this course run the same algorithm and differ in what a node holds and
# where its gradient is kept:
#
# | | scalar engine (lab 1) | PT03 (lab 2) | this lab |
# |---|---|---|---|
# | a node holds | one float | an array | an array |
# | its gradient is kept | in the node's `.grad` | in a dictionary that `backward` returns | in the node's `.grad`, an array of the node's shape |
# | a backward rule | a closure adding into the parents' `.grad` | `vjp(v)`, returning one contribution per parent | a closure adding into the parents' `.grad`, summed back to each parent's shape |
# | after a second `backward` | `.grad` holds the sum of both passes | a fresh dictionary, nothing carried over | `.grad` holds the sum of both passes |
#
# Scalars were the simplest place to learn the rules, and the slowest place to use them: one
# 64 × 128 weight matrix applied to a batch of 32 examples is 262,144 multiplications, and in
# the scalar engine each is a Python object with a closure. Here the same product is one node and
# one `@`. PT03's dictionary made every pass self-contained: nothing to reset, and nothing to
# inspect afterwards either. Keeping the gradient on the node, as PyTorch does, means that a
# parameter's `.grad` is there to read after `backward`, and that it **accumulates**: every
# closure uses `+=`, because a value that feeds several operations must collect a contribution
# from each. The price is that stale gradients stay where they are until someone clears them,
# which is the training loop's job (`optimizer.zero_grad()` in PyTorch, `zero_grad` in
# Activity 3).
#
# ### Broadcasting, undone
#
# Adding a bias of shape (128,) to activations of shape (32, 128) copies the bias into all 32
# rows. A copy is a fork in the graph, so on the way back the 32 row gradients **add up**: the
# bias gradient is the upstream gradient summed over the axes that broadcasting created or
# stretched. That is PT03's `sum_to_shape` (Activity 1b there), which you have already written
# and which is supplied here as `unbroadcast(grad, shape)`: it sums away the leading axes
# broadcasting added, then sums, keeping them, the axes where `shape` has a 1 and `grad` does
# not. Every backward rule whose operation may broadcast passes its contribution through it.
#
# ### The `Tensor` class
#
# A `Tensor` has the attributes of PyTorch's tensor that matter for autodiff, with micrograd's
# names:
#
# * `data`: a float64 array, a private copy of what it was made from;
# * `grad`: $\partial L/\partial$ (this tensor), an array of the same shape, zeros at creation;
# * `_prev`: the parents, in argument order (`a * a` has the parents `(a, a)`); leaves have none.
#   It does the job of PyTorch's `grad_fn.next_functions`;
# * `_op`: a label for printing;
# * `_backward`: a function of no arguments. Called once this node's `.grad` is complete, it adds
#   the node's contribution to every parent's `.grad`. A node without parents keeps none: a
#   leaf's does nothing.
#
# The operators call module-level functions, one per primitive operation: `add` and `transpose`
# are given below, the others are yours in Activity 1. Everything else (`-`, negation, `mean`,
# `tanh`, numbers on the left) is a one-line composition of primitives in `DerivedOps`, with no
# backward rule of its own; Optional C reuses those lines for dual numbers. Plain numbers and
# arrays that meet a Tensor become constant leaves, and `graph_nodes(root)` lists every node
# reachable from `root`, once each. The switch `grad_enabled` stays `True` throughout the
# required activities; Optional B writes the context that turns it off.

# %%
def unbroadcast(grad, shape):
    """Sum `grad` down to `shape`, undoing NumPy broadcasting (PT03's sum_to_shape)."""
    grad = np.asarray(grad, dtype=np.float64)
    while grad.ndim > len(shape):  # axes that broadcasting put in front
        grad = grad.sum(axis=0)
    stretched = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad


grad_enabled = True  # False inside Optional B's no_grad(): new nodes then record no parents


def send_nothing():
    """The backward rule of a node without parents."""


class DerivedOps:
    """Operations composed of primitives, one line each, shared by Tensor and Optional C's Dual
    (each provides lift(x), which turns a number or an array into a constant of its own kind)."""
    __array_ufunc__ = None  # an array on the left hands `array * node` over to __rmul__

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + (-self.lift(other))

    def __rsub__(self, other):
        return self.lift(other) + (-self)

    def mean(self):
        return self.sum() * (1.0 / np.prod(self.shape))

    def reciprocal(self):  # 1 / x for x > 0, as exp(-log x)
        return (-self.log()).exp()

    def tanh(self):
        return 1.0 - 2.0 * ((2.0 * self).exp() + 1.0).reciprocal()


class Tensor(DerivedOps):
    """A float64 array in a computation, with its gradient, its parents and its backward rule."""

    def __init__(self, data, _prev=(), _op=""):
        self.data = np.array(data, dtype=np.float64)
        self.grad = np.zeros_like(self.data)
        self._prev = tuple(_prev) if grad_enabled else ()
        self._op = _op
        self._backward = send_nothing

    @property
    def _backward(self):
        return self._rule

    @_backward.setter
    def _backward(self, rule):
        # The primitives attach their rule to every result; a result without parents drops it,
        # and with it the references to the inputs that the closure holds.
        self._rule = rule if self._prev else send_nothing

    @staticmethod
    def lift(x):
        return as_tensor(x)

    @property
    def shape(self):
        return self.data.shape

    def __repr__(self):
        return f"Tensor(shape={self.shape}, op={self._op or 'leaf'!r})"

    # The primitives, each a function with a forward and a backward rule.
    def __add__(self, other):
        return add(self, as_tensor(other))

    def __mul__(self, other):
        return multiply(self, as_tensor(other))

    def __matmul__(self, other):
        return matmul(self, as_tensor(other))

    @property
    def T(self):
        return transpose(self)

    def sum(self, axis=None, keepdims=False):
        return reduce_sum(self, axis, keepdims)

    def exp(self):
        return exp(self)

    def log(self):
        return log(self)

    def relu(self):
        return relu(self)

    def backward(self):
        backward(self)


def as_tensor(x):
    """Tensors pass through; numbers and arrays become constant leaves."""
    return x if isinstance(x, Tensor) else Tensor(x)


def graph_nodes(root):
    """Every distinct node of the graph of `root`, leaves and constants included."""
    seen, todo = {}, [root]
    while todo:
        current = todo.pop()
        if id(current) not in seen:
            seen[id(current)] = current
            todo.extend(current._prev)
    return list(seen.values())


# %% [markdown]
# One primitive written out in full: addition. The forward rule makes the new node, with its
# parents and its label; the backward rule, defined right beside it, is a closure that reads the
# new node's `.grad` **when it is called**, during the backward pass, and adds to each parent's
# `.grad` the part that belongs to it: all of it, summed back to the parent's shape.

# %%
def add(a, b):
    """a + b as a new Tensor; its backward rule undoes any broadcasting."""
    result = Tensor(a.data + b.data, (a, b), "+")

    def push_back():
        a.grad += unbroadcast(result.grad, a.shape)  # += : a may feed other nodes too
        b.grad += unbroadcast(result.grad, b.shape)

    result._backward = push_back
    return result


def transpose(a):
    """The transpose of a 2-D Tensor; its backward rule transposes the gradient back."""
    result = Tensor(a.data.T, (a,), "T")

    def push_back():
        a.grad += result.grad.T

    result._backward = push_back
    return result


activations = Tensor(np.arange(6.0).reshape(2, 3))
bias = Tensor([10.0, 20.0, 30.0])
shifted = activations + bias
shifted.grad = np.ones(shifted.shape)  # pretend `shifted` is the output for a moment
shifted._backward()
print("shifted.data =", shifted.data.tolist())
print("bias.grad    =", bias.grad.tolist(), " (each entry was copied into 2 rows)")
close(bias.grad, [2.0, 2.0, 2.0], "the gradient of a bias broadcast over 2 rows")

# %% [markdown]
# **Predict.** For each pair below, which shape does the gradient of each operand of `A + B`
# have, and which axes does `unbroadcast` sum over? With an upstream gradient of ones, what is
# every entry? Then run the cell.
#
# (a) A (32, 10) and B (10,); (b) A (4, 1) and B (1, 6); (c) A (2, 3, 5) and B (3, 1).

# %%
for left, right in [((32, 10), (10,)), ((4, 1), (1, 6)), ((2, 3, 5), (3, 1))]:
    result_shape = np.broadcast_shapes(left, right)
    grad_left = unbroadcast(np.ones(result_shape), left)
    grad_right = unbroadcast(np.ones(result_shape), right)
    print(f"A {left} + B {right} -> {result_shape}: grad of A {grad_left.shape}, every entry "
          f"{grad_left.flat[0]:g}; grad of B {grad_right.shape}, every entry {grad_right.flat[0]:g}")

# %% [markdown] tags=["reference"]
# **Instructor answer.** (a) A keeps its gradient, (32, 10), entries 1; B is read as (1, 10), so
# its gradient is summed over the new leading axis: (10,), entries 32. (b) The output is (4, 6);
# A was stretched along axis 1 and gets (4, 1), entries 6; B along axis 0 and gets (1, 6),
# entries 4. (c) B gains a leading axis (summed away) and its last axis of length 1 was stretched
# to 5 (summed, kept): (3, 1), entries 2 × 5 = 10. With ones upstream, each entry counts the
# output entries it was copied into.

# %% [markdown]
# ## 3 · Activity 1: the primitives
#
# ### Activity 1a · Multiply, matmul, sum, exp, log and relu (4 points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# Write the six functions below, each after the pattern of `add`: compute the output, create a
# new `Tensor` with the parents (in argument order) and the label, attach a closure as its
# `_backward`, and return the new node. In the table, $\bar g$ is the new node's `.grad` at the
# moment the closure runs.
#
# | function | forward | the closure adds |
# |---|---|---|
# | `multiply(a, b)`, label `"*"` | $a \odot b$, broadcasting | to `a.grad`: $\bar g \odot b$, summed back to `a.shape`; to `b.grad`: $\bar g \odot a$, summed back to `b.shape` |
# | `matmul(a, b)`, label `"@"`, both 2-D | $AB$ | to `a.grad`: $\bar g B^\top$; to `b.grad`: $A^\top \bar g$ |
# | `reduce_sum(a, axis=None, keepdims=False)`, label `"sum"` | `a.data.sum(axis=axis, keepdims=keepdims)` | $\bar g$ copied back to every entry that was summed |
# | `exp(a)`, label `"exp"` | $e^a$ | $\bar g \odot e^a$: the output is its own slope |
# | `log(a)`, label `"log"` | $\log a$ | $\bar g / a$ |
# | `relu(a)`, label `"relu"` | $\max(a, 0)$ | $\bar g$ where $a > 0$, 0 elsewhere (at exactly 0 too, as in PyTorch) |
#
# Some points to watch:
#
# * **`+=`, always.** `a` and `b` may be the same tensor (`x * x`), and a parent may already hold
#   a gradient from another consumer; only `+=` gets both right.
# * **Shapes.** Every contribution must have the parent's shape. `multiply` broadcasts like
#   `add`, so pass each contribution through `unbroadcast`. A matrix product does not broadcast
#   here (2-D only), and the elementwise functions keep their input's shape.
# * **`reduce_sum`.** `axis` is `None` (everything), an int (negative ones count from the end)
#   or a tuple of ints. Without `keepdims` the summed axes are gone from $\bar g$: put them back
#   with length 1 (`np.expand_dims` takes a tuple of axes) and then `np.broadcast_to` the input's
#   shape. A tuple may list its axes in any order, negative ones included: `(2, 0)` and
#   `(-1, 0)` are as valid as `(0, 2)`. For `axis=None` without `keepdims`, $\bar g$ is 0-d and
#   broadcasts as it is. Beware of square inputs: broadcasting a (3,) gradient back to (3, 3)
#   along the wrong axis still gives a (3, 3) array, with the wrong numbers.
# * Leave the parents' `.data` alone, and whatever else the forward pass saved: the closures only
#   read it. A closure may run more than once (a second `backward` through the same graph, as
#   with PyTorch's `retain_graph=True`), and each run must add the same amounts.
#
# The check builds each operation on small leaves whose `.grad` may already hold something, runs
# the new node's `_backward` once after setting `out.grad` to a random array, and compares
# everything with PyTorch, broadcasting cases of the exercise above included.

# %% tags=["stub"] activity="1a"
def multiply(a, b):
    """a * b elementwise, with broadcasting, as a new Tensor."""
    raise NotImplementedError("Complete Activity 1a: multiply")


def matmul(a, b):
    """The matrix product of two 2-D Tensors, as a new Tensor."""
    raise NotImplementedError("Complete Activity 1a: matmul")


def reduce_sum(a, axis=None, keepdims=False):
    """a.data.sum(axis=axis, keepdims=keepdims) as a new Tensor."""
    raise NotImplementedError("Complete Activity 1a: reduce_sum")


def exp(a):
    raise NotImplementedError("Complete Activity 1a: exp")


def log(a):
    raise NotImplementedError("Complete Activity 1a: log")


def relu(a):
    raise NotImplementedError("Complete Activity 1a: relu")


# %% tags=["reference"] activity="1a"
def multiply(a, b):
    out = Tensor(a.data * b.data, (a, b), "*")

    def _backward():
        a.grad += unbroadcast(out.grad * b.data, a.shape)  # each factor's slope is the other factor
        b.grad += unbroadcast(out.grad * a.data, b.shape)

    out._backward = _backward
    return out


def matmul(a, b):
    out = Tensor(a.data @ b.data, (a, b), "@")

    def _backward():
        a.grad += out.grad @ b.data.T
        b.grad += a.data.T @ out.grad

    out._backward = _backward
    return out


def reduce_sum(a, axis=None, keepdims=False):
    out = Tensor(a.data.sum(axis=axis, keepdims=keepdims), (a,), "sum")

    def _backward():
        upstream = out.grad
        if axis is not None and not keepdims:
            upstream = np.expand_dims(upstream, axis)  # the summed axes return with length 1
        a.grad += np.broadcast_to(upstream, a.shape)

    out._backward = _backward
    return out


def exp(a):
    out = Tensor(np.exp(a.data), (a,), "exp")

    def _backward():
        a.grad += out.grad * out.data  # reuse the output: no second exponential

    out._backward = _backward
    return out


def log(a):
    out = Tensor(np.log(a.data), (a,), "log")

    def _backward():
        a.grad += out.grad / a.data

    out._backward = _backward
    return out


def relu(a):
    out = Tensor(np.maximum(a.data, 0.0), (a,), "relu")

    def _backward():
        a.grad += out.grad * (a.data > 0)  # nothing passes at exactly 0

    out._backward = _backward
    return out


# %% [markdown]
# The check cells of Activity 1a use one helper. `check_node` makes a Tensor leaf from each array
# in `leaves` (with a random stale `.grad` unless `stale=False`), evaluates `expression` on them,
# runs the new node's `_backward` once with a random `out.grad`, and compares the output, the
# parents and every leaf's `.grad` with what PyTorch computes for the same expression.

# %%
def torch_sum(t, axis=None, keepdims=False):
    """PyTorch's counterpart of reduce_sum."""
    if axis is None:
        return t.sum(dim=tuple(range(t.dim())), keepdim=True) if keepdims else t.sum()
    return t.sum(dim=axis, keepdim=keepdims)


TORCH_OPS = {"multiply": torch.mul, "matmul": torch.matmul, "reduce_sum": torch_sum, "exp": torch.exp,
             "log": torch.log, "relu": torch.relu}


def check_node(expression, leaves, *, stale=True, seed=0):
    rng = np.random.default_rng(seed)
    tensors = {name: Tensor(value) for name, value in leaves.items()}
    earlier = {name: rng.normal(size=t.shape) if stale else np.zeros(t.shape) for name, t in tensors.items()}
    for name, t in tensors.items():
        t.grad = earlier[name].copy()
    what = f"{expression} with " + ", ".join(f"{name} of shape {np.shape(v)}" for name, v in leaves.items())
    try:
        out = eval(expression, globals(), dict(tensors))
    except NotImplementedError:
        raise  # an activity still to do
    except Exception as error:
        raise AssertionError(f"{what}: the forward pass raised {type(error).__name__}: {error}") from None
    assert isinstance(out, Tensor), f"{what}: expected a new Tensor, got a {type(out).__name__}"
    assert all(out is not t for t in tensors.values()), f"{what}: return a new node, not one of the inputs"
    for name, t in tensors.items():
        assert any(parent is t for parent in out._prev), f"{what}: {name} is missing from the new node's _prev"
    twins = {name: t64(value) for name, value in leaves.items()}
    expected = eval(expression, {**globals(), **TORCH_OPS}, dict(twins))
    close(out.data, expected.detach().numpy(), f"{what}: out.data")
    upstream = rng.normal(size=tuple(expected.shape))
    grads = torch.autograd.grad(expected, list(twins.values()), torch.tensor(upstream))
    out.grad = upstream.copy()
    try:
        out._backward()
    except NotImplementedError:
        raise
    except Exception as error:
        raise AssertionError(f"{what}: out._backward() raised {type(error).__name__}: {error} (does every "
                             "contribution have its parent's shape?)") from None
    held = "already holding a gradient" if stale else "starting at zero"
    for (name, t), grad in zip(tensors.items(), grads):
        close(t.grad, earlier[name] + grad.numpy(),
              f"{what}: {name}.grad after out._backward() ({name}.grad {held}, random out.grad)")
        close(t.data, leaves[name], f"{what}: {name}.data (the inputs must not change)")


# %% tags=["check"] activity="1a" points=4
gen = np.random.default_rng(2024)


def draw(*shape):
    return gen.normal(size=shape)


check_node("multiply(a, b)", {"a": draw(2, 3), "b": draw(2, 3)}, stale=False)
check_node("multiply(a, b)", {"a": draw(2, 3), "b": draw(2, 3)})
check_node("multiply(a, a)", {"a": draw(3, 2)})
check_node("a * 2.5", {"a": draw(4)})
check_node("-1.5 * a", {"a": draw(2, 2)})
for left, right in [((32, 10), (10,)), ((4, 1), (1, 6)), ((2, 3, 5), (3, 1)), ((3, 3), (3,)), ((3,), (3, 3)),
                    ((3, 1), (3, 3)), ((), (2, 2)), ((1, 1), (2, 3)), ((2, 1, 4), (1, 3, 1))]:
    check_node("multiply(a, b)", {"a": draw(*left), "b": draw(*right)})
for left, right in [((2, 4), (4, 3)), ((3, 3), (3, 3)), ((1, 4), (4, 1)), ((4, 1), (1, 3))]:
    check_node("matmul(a, b)", {"a": draw(*left), "b": draw(*right)})
check_node("matmul(a, a)", {"a": draw(3, 3)})
check_node("a @ b", {"a": draw(2, 3), "b": draw(3, 2)}, stale=False)
for shape, axes in [((3, 3), [None, 0, 1, -1, (0, 1)]), ((2, 3, 4), [None, 1, (0, 2), -1, (2, 0), (-1, 0)])]:
    for axis in axes:
        for keepdims in (False, True):
            check_node(f"reduce_sum(a, {axis}, {keepdims})", {"a": draw(*shape)})
check_node("a.sum()", {"a": draw(3)}, stale=False)
check_node("exp(a)", {"a": np.array([[-2.0, 0.0, 0.5], [1.5, -0.3, 3.0]])})
check_node("exp(a)", {"a": np.array(0.7)})
check_node("log(a)", {"a": np.array([[0.05, 1.0, 2.5], [7.0, 0.4, 30.0]])})
check_node("log(a)", {"a": np.array(3.0)}, stale=False)
check_node("relu(a)", {"a": np.array([[-1.5, 0.0, 2.0], [-0.0, 0.7, -0.2]])})
check_node("relu(a)", {"a": np.array([3.0, -3.0, 0.0, 1e-9])}, stale=False, seed=5)
print("Activity 1a passed: multiply (exercise 4's broadcasts and several stretched axes included), matmul, "
      "reduce_sum on every kind of axis, exp, log and relu, with .grad that already held something.")

# %% [markdown]
# ### Activity 1b · A fused, stable cross-entropy (2 points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# For logits $Z$ of shape (n, K) and integer labels $y_i \in \{0, \dots, K-1\}$, the mean
# softmax cross-entropy is
#
# $$L = \frac1n \sum_{i} \Big[\log \sum_k e^{Z_{ik}} - Z_{i y_i}\Big]
#     = -\frac1n \sum_i \log P_{i y_i}, \qquad P = \operatorname{softmax}(Z) \text{ row by row}.$$
#
# It could be composed from the primitives above, but it deserves a node of its own, as in every
# framework:
#
# * **Stability.** $e^{1000}$ overflows. Subtract each row's maximum $m_i$ first (a constant: it
#   cancels in the loss, so it needs no gradient), then take the log-softmax
#   $\ell_{ik} = (Z_{ik} - m_i) - \log \sum_k e^{Z_{ik} - m_i}$ and $L = -\frac1n \sum_i \ell_{i y_i}$.
# * **A short backward rule.** $\partial L / \partial Z = (P - Y)/n$ with $Y$ the one-hot
#   matrix of the labels, and $P = e^{\ell}$ is at hand from the forward pass.
# * **A small graph.** One node instead of a dozen and more (Section 5 counts them).
#
# Write `cross_entropy(logits, y)`: `logits` is a Tensor of shape (n, K), `y` an integer array
# of shape (n,). Return a new Tensor of shape `()` whose only parent is `logits` (label
# `"cross_entropy"`), and whose closure adds `out.grad * (P - Y) / n` to `logits.grad`. The check
# compares the value and the gradient with PyTorch's `F.cross_entropy`, on logits as large as
# ±1000 too, and runs the closure a second time, as a second `backward` would: it must add the
# same gradient again, so compute $P - Y$ in an array of its own, not in one the forward pass saved.

# %% tags=["stub"] activity="1b"
def cross_entropy(logits, y):
    """Mean softmax cross-entropy of logits (n, K) and integer labels y (n,), as one node."""
    raise NotImplementedError("Complete Activity 1b: cross_entropy")


# %% tags=["reference"] activity="1b"
def cross_entropy(logits, y):
    z = logits.data - logits.data.max(axis=1, keepdims=True)  # the shift: no overflow
    log_probs = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    rows, n = np.arange(len(y)), len(y)
    out = Tensor(-log_probs[rows, y].mean(), (logits,), "cross_entropy")

    def _backward():
        slope = np.exp(log_probs)  # P
        slope[rows, y] -= 1.0  # P - Y
        logits.grad += out.grad * slope / n

    out._backward = _backward
    return out


# %% tags=["check"] activity="1b" points=2
def check_loss(logits, labels, *, upstream=1.0, stale=False):
    what = f"cross_entropy on logits of shape {np.shape(logits)} with labels {list(labels)}"
    if np.abs(logits).max() >= 1000:
        what += " (logits of size 1000: shift by the row maximum)"
    z = Tensor(logits)
    earlier = np.random.default_rng(3).normal(size=z.shape) if stale else np.zeros(z.shape)
    z.grad = earlier.copy()
    loss = cross_entropy(z, np.array(labels))
    assert isinstance(loss, Tensor), f"{what}: expected a Tensor, got a {type(loss).__name__}"
    assert len(loss._prev) == 1 and loss._prev[0] is z, \
        f"{what}: the loss must be one node whose _prev is (logits,); it has {len(loss._prev)} parents"
    assert loss.shape == (), f"{what}: the loss must have shape (), not {loss.shape}"
    twin = t64(logits)
    expected = F.cross_entropy(twin, torch.tensor(labels))
    (grad,) = torch.autograd.grad(expected, twin, torch.tensor(upstream, dtype=torch.float64))
    close(loss.data, expected.item(), f"{what}: the loss")
    loss.grad = np.array(upstream)
    try:
        loss._backward()
    except NotImplementedError:
        raise
    except Exception as error:
        raise AssertionError(f"{what}: loss._backward() raised {type(error).__name__}: {error}") from None
    close(z.grad, earlier + grad.numpy(), f"{what}: logits.grad after loss._backward() with loss.grad = "
          f"{upstream}" + (" (logits.grad already held a gradient)" if stale else ""))
    loss.grad = np.array(upstream)
    loss._backward()
    close(z.grad, earlier + 2 * grad.numpy(), f"{what}: logits.grad after a second loss._backward() (each run "
          "adds the same gradient; leave the arrays the forward pass saved as they were)")
    close(z.data, logits, f"{what}: logits.data (the input must not change)")


check_loss(np.array([[2.0, -1.0, 0.5, 0.0], [0.1, 0.2, -0.3, 1.5], [-2.0, 3.0, 1.0, 0.0]]), [0, 3, 1])
check_loss(np.array([[1000.0, -1000.0, 0.0], [-1000.0, 1000.0, 0.0]]), [1, 0])
check_loss(np.array([[1000.0, 999.0], [-1000.0, -998.5], [5.0, 1000.0]]), [0, 0, 1], upstream=0.5)
check_loss(np.array([[0.3, -0.7, 1.1]]), [2], upstream=-1.5, stale=True)
check_loss(np.random.default_rng(4).normal(size=(4, 4)) * 3, [3, 0, 0, 2], upstream=2.0, stale=True)
print("Activity 1b passed: one node, stable at logits of ±1000, value and gradient equal to F.cross_entropy.")

# %% [markdown]
# ## 4 · Activity 2: the backward pass, and a second opinion
#
# A node may send its gradient on only when that gradient is complete, that is after every node
# that uses it has added its share. A **topological order** lists each node after its parents;
# read backwards, it puts each node after all of its users. You built it twice already (with an
# explicit stack in the scalar engine, as `topological_order` in PT03); here it lives inside
# `backward`, as in PyTorch. The graphs of this lab are at most a few hundred operations deep,
# so a recursive depth-first search (place the parents, then the node) is fine.
#
# ### Activity 2 · `backward` and `numerical_grad` (3 points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# `backward(root)`:
#
# 1. lists every node reachable from `root` through `_prev`, each **once** (identity, not value:
#    two different tensors may hold equal numbers), every node after its parents;
# 2. seeds `root.grad` with ones of the root's shape, $\partial L/\partial L$. For a root that is
#    not a scalar this is what PyTorch's `out.backward(torch.ones_like(out))` does: the gradient
#    of the sum of its entries;
# 3. calls every node's `_backward` exactly once, from the root back to the leaves.
#
# It resets nothing else: a leaf's `.grad` keeps what it held and the new gradient is added to
# it, as in PyTorch. It returns nothing. (`Tensor.backward()` calls it: `loss.backward()`.)
#
# `numerical_grad(f, arrays, h=1e-6)` is the oracle that knows nothing about graphs. `f` takes
# no arguments and returns a number computed from the NumPy `arrays`. For every entry of every
# array, set it to $x + h$ and call `f`, set it to $x - h$ and call `f` again, put $x$ back, and
# record the **central difference** $(f_+ - f_-)/2h$, whose error shrinks like $h^2$ (a one-sided
# difference only like $h$). Change the arrays themselves, in place, since `f` reads them, and
# leave them exactly as they were. They come as NumPy hands arrays out: a transposed view, a
# Fortran-ordered array or the first columns of a wider one are arrays too, and for them
# `array.reshape(-1)` and `array.ravel()` return copies, whose changes `f` never sees; index the
# array itself (`np.ndindex` gives every index). Return a list with one array of estimates per
# input array, of its shape.

# %% tags=["stub"] activity="2"
def backward(root):
    """Seed root.grad with ones, then run every node's _backward once, in reverse topological order."""
    raise NotImplementedError("Complete Activity 2: backward")


def numerical_grad(f, arrays, h=1e-6):
    """Central-difference estimates of the derivative of f() with respect to every entry of `arrays`."""
    raise NotImplementedError("Complete Activity 2: numerical_grad")


# %% tags=["reference"] activity="2"
def backward(root):
    order, placed = [], set()

    def place(node):  # parents first, then the node: a depth-first topological sort
        if id(node) not in placed:
            placed.add(id(node))
            for parent in node._prev:
                place(parent)
            order.append(node)

    place(root)
    root.grad = np.ones_like(root.data)  # the seed dL/dL
    for node in reversed(order):
        node._backward()


def numerical_grad(f, arrays, h=1e-6):
    estimates = []
    for array in arrays:
        slopes = np.zeros(array.shape)
        for index in np.ndindex(*array.shape):
            kept = array[index]
            array[index] = kept + h
            above = f()
            array[index] = kept - h
            below = f()
            array[index] = kept  # exactly as it was
            slopes[index] = (above - below) / (2 * h)
        estimates.append(slopes)
    return estimates


# %% tags=["check"] activity="2" points=3
def compare_with_torch(build, arrays, what):
    """build(*leaves) on Tensor leaves and on PyTorch leaves: the leaves' .grad after backward."""
    leaves = [Tensor(a) for a in arrays]
    backward(build(*leaves))
    twins = [t64(a) for a in arrays]
    out = build(*twins)
    out.backward(torch.ones_like(out))
    for number, (leaf, twin) in enumerate(zip(leaves, twins)):
        close(leaf.grad, twin.grad.numpy(), f"{what}: .grad of leaf {number} after backward")


def fan(x):  # u feeds two nodes; the paths from u to the output have different lengths
    u = x * x
    return u * 3.0 + u * u


def layer_graph(A, W, b, c):  # b broadcast over rows, c over columns, H used three times
    H = (A @ W + b).relu()
    G = H * c + H
    return (G * G).sum(axis=1, keepdims=True).mean() + (H * c).sum()


compare_with_torch(fan, [np.array(2.0)], "u = x * x, L = 3u + u * u at x = 2 (by hand: 44)")
rng2 = np.random.default_rng(7)
compare_with_torch(layer_graph, [rng2.normal(size=s) for s in [(4, 3), (3, 5), (5,), (4, 1)]],
                   "relu(A @ W + b) with b (5,) and c (4, 1) broadcast, H used three times")
compare_with_torch(lambda x, y: x * y + x, [rng2.normal(size=(2, 3)), rng2.normal(size=(2, 3))],
                   "x * y + x, an output of shape (2, 3) (seeded with ones)")
w = Tensor([1.5, -0.5])
w.grad = np.array([10.0, 10.0])  # left over from an earlier pass
backward((w * w).sum())
close(w.grad, [13.0, 9.0], "w.grad after backward(sum(w * w)) when it held [10, 10]: backward adds, it does not reset")
root = (Tensor([1.0, 2.0]) * 3.0).sum()
backward(root)
close(root.grad, 1.0, "root.grad after backward(root): the seed")
root = Tensor(np.arange(6.0).reshape(2, 3)) * 3.0
backward(root)
close(root.grad, np.ones((2, 3)), "root.grad after backward(root) for a root of shape (2, 3): the seed is ones "
      "of the root's shape")
calls = []
start = node = Tensor([1.0, -1.0])
for step in range(12):  # twelve doublings: 4,096 paths through 13 nodes
    node = node + node
    rule = node._backward
    node._backward = lambda rule=rule, step=step: (calls.append(step), rule())
backward(node.sum())
close(start.grad, [4096.0, 4096.0], "the gradient through 12 doublings n + n")
assert sorted(calls) == list(range(12)), f"backward must call each _backward once; 12 doublings made {len(calls)} calls"

A_check, B_check = np.array([[0.5, -1.0, 1.0], [0.8, 0.0, -0.5]]), np.array([0.3, -2.0, 1.0])
A_sent, B_sent = A_check.copy(), B_check.copy()
estimates = numerical_grad(lambda: float(np.sum(np.exp(2 * A_check) * B_check) + np.sum(B_check ** 4)),
                           [A_check, B_check])
assert isinstance(estimates, list) and len(estimates) == 2, \
    "numerical_grad must return a list with one array per input array"
twin_A, twin_B = t64(A_sent), t64(B_sent)
(torch.exp(2 * twin_A) * twin_B).sum().add((twin_B ** 4).sum()).backward()
close(estimates[0], twin_A.grad.numpy(), "numerical_grad for A in sum(exp(2A) * B) + sum(B^4), h = 1e-6",
      tol=1e-7, rtol=0.0)
close(estimates[1], twin_B.grad.numpy(), "numerical_grad for B in sum(exp(2A) * B) + sum(B^4), h = 1e-6",
      tol=1e-7, rtol=0.0)
close(A_check, A_sent, "A after numerical_grad (put every entry back exactly)", tol=1e-12)
close(B_check, B_sent, "B after numerical_grad (put every entry back exactly)", tol=1e-12)
cube = np.array([[1.0, -2.0], [0.5, 3.0]])
(slopes,) = numerical_grad(lambda: float(np.sum(cube ** 3)), [cube], h=0.01)
close(slopes, 3 * cube ** 2 + 0.01 ** 2, "numerical_grad of sum(x^3) with h = 0.01: a central difference gives "
      "exactly 3x^2 + h^2")
wider = np.zeros((2, 4))
wider[:, :3] = [[0.5, -1.0, 1.5], [0.2, 0.7, -0.4]]
for layout, array in [("a transposed view", np.array(wider[:, :3].T, order="C").T),
                      ("a Fortran-ordered array", np.asfortranarray(wider[:, :3])),
                      ("the first 3 columns of a (2, 4) array", wider[:, :3])]:
    sent = array.copy()
    (slopes,) = numerical_grad(lambda array=array: float(np.sum(array ** 3)), [array])
    close(slopes, 3 * sent ** 2, f"numerical_grad of sum(x^3) for {layout} (change the entries of the array itself: "
          "reshape(-1) and ravel() copy such an array)", tol=1e-7, rtol=0.0)
    close(array, sent, f"{layout} after numerical_grad (put every entry back exactly)", tol=1e-12)
print("Activity 2 passed: backward on fan-out, broadcasting, shared and stale nodes and a matrix root; "
      "numerical_grad central, in place on arrays of every layout, restored.")

# %% [markdown]
# ## 5 · The engine, checked
#
# Every backward rule is a derivation, and a derivation can be wrong in a way that still
# trains. So compare the engine with central differences on an expression that uses every
# operation: a bias `b` broadcast over rows, a column `c` broadcast over columns, a reduction
# along one axis, `H` used several times, and the fused loss. For each leaf the cell prints the
# relative error $\lVert g - \hat g \rVert / (\lVert g \rVert + \lVert \hat g \rVert)$ between the
# engine's gradient $g$ and the estimate $\hat g$.

# %% requires="1a 1b 2"
check_rng = np.random.default_rng(0)
check_arrays = [check_rng.normal(size=(4, 3)), check_rng.normal(size=(3, 5)), check_rng.normal(size=(5,)),
                check_rng.normal(size=(4, 1)), check_rng.integers(0, 5, size=4).astype(float)]
check_labels = check_arrays[4].astype(int)


def every_operation():
    A, W, b, c = (Tensor(array) for array in check_arrays[:4])
    H = (A @ W + b).relu()  # b: (5,) copied into 4 rows
    G = H * c + H  # c: (4, 1) copied into 5 columns; H used twice here
    S = G.sum(axis=1, keepdims=True).exp().log() - c
    total = cross_entropy(G, check_labels) + S.mean() + (H * H).sum(axis=0).mean()
    return total, (A, W, b, c)


total, check_leaves = every_operation()
total.backward()
check_numeric = numerical_grad(lambda: float(every_operation()[0].data), check_arrays[:4])
table_errors = {}
for name, leaf, estimate in zip("AWbc", check_leaves, check_numeric):
    error = np.linalg.norm(leaf.grad - estimate) / (np.linalg.norm(leaf.grad) + np.linalg.norm(estimate))
    table_errors[name] = float(error)
    print(f"{name}: shape {str(leaf.shape):<7} grad shape {str(leaf.grad.shape):<7} relative error {error:.1e}")

# %% [markdown]
# Every gradient has its leaf's shape, the broadcast `b` and `c` included, and every relative
# error is around $10^{-10}$: what central differences with $h = 10^{-6}$ can resolve, thousands
# of times below the $10^{-7}$ that would start to look suspicious.
#
# **Fused or composed?** The same loss can be built from primitives: shift the logits by the row
# maximum (as a constant), `exp`, `sum(axis=1, keepdims=True)`, `log`, the one-hot product and
# `mean`. Before running the next cell: how many nodes will each graph have?

# %% requires="1a 1b 2"
def cross_entropy_composed(logits, labels):
    """The same mean cross-entropy, built from the primitives only."""
    classes = logits.shape[1]
    shifted = logits - logits.data.max(axis=1, keepdims=True)  # a constant shift, no gradient
    log_norm = shifted.exp().sum(axis=1, keepdims=True).log()  # (n, 1)
    one_hot = np.eye(classes)[labels]
    return (log_norm - (shifted * one_hot).sum(axis=1, keepdims=True)).mean()


fused_rng = np.random.default_rng(0)
Z0, y0 = fused_rng.normal(size=(6, 4)) * 3, fused_rng.integers(0, 4, size=6)
z_fused, z_composed = Tensor(Z0), Tensor(Z0)
loss_fused, loss_composed = cross_entropy(z_fused, y0), cross_entropy_composed(z_composed, y0)
loss_fused.backward()
loss_composed.backward()
fused_nodes, composed_nodes = len(graph_nodes(loss_fused)), len(graph_nodes(loss_composed))
fused_gap = float(np.max(np.abs(z_fused.grad - z_composed.grad)))
print(f"fused:    loss {float(loss_fused.data):.10f}, {fused_nodes} nodes")
print(f"composed: loss {float(loss_composed.data):.10f}, {composed_nodes} nodes")
print(f"largest difference between the two gradients: {fused_gap:.2e}")
close(loss_fused.data, loss_composed.data, "the fused loss against the composed one")
close(z_fused.grad, z_composed.grad, "the fused gradient against the composed one", tol=1e-15)

# %% [markdown]
# Equal to the last printed digit, and the gradients agree to a few units of $10^{-17}$. The
# composed version is exact too because it shifts by the same maximum; without the shift it
# would overflow at the first logit of 1000. The fused node does the stable part once, in one
# place, and keeps the graph at two nodes instead of seventeen.
#
# ## 6 · Activity 3: the training loop
#
# With gradients you can trust, training is a short loop, and every line of it matters. Per
# minibatch, in this order:
#
# 1. forward: the logits of the batch and their loss;
# 2. `zero_grad(params)`: set every parameter's `.grad` to zeros of its shape. The engine only
#    ever adds, so without this each update would use the sum of all gradients so far;
# 3. `loss.backward()`;
# 4. `sgd_step(params, lr)`: `data -= lr * grad` for every parameter, in place. Leave `.grad` as
#    it is, as `optimizer.step()` does.
#
# **In place**, here, means that `sgd_step` changes the entries of the very array each
# parameter's `.data` is, and never binds `.data` to a new array: whoever else holds that array
# (an optimiser's list, a caller, the arrays handed to `numerical_grad`) sees the step, as
# PyTorch's optimisers update the tensors you gave them. `p.data = p.data - lr * p.grad` makes
# a new array and leaves them all with the old values; `p.data[:] -= ...` fails on a 0-d
# parameter, which has no axis to slice. `zero_grad`, on the other hand, must leave zeros
# whatever `.grad` held before, inf and NaN included ($0 \cdot \infty$ is NaN).
#
# ### Activity 3 · `zero_grad`, `sgd_step` and `train_epoch` (3 points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# `train_epoch(forward, params, X, y, order, batch_size, lr)` runs one epoch: it walks through
# the row indices in `order` (a permutation of the examples, drawn by the caller), `batch_size`
# at a time (the last batch may be smaller), and performs the four steps for each batch with
# `cross_entropy(forward(X[rows]), y[rows])` as the loss. `forward` maps a NumPy array of
# inputs to a Tensor of logits; `params` is the list of the Tensors it uses. Return the list of
# the batch losses as Python floats, each computed before its update.
#
# The check runs your epoch and a float64 PyTorch copy of it (same weights, same order) and
# compares them update by update.

# %% tags=["stub"] activity="3"
def zero_grad(params):
    """Set the .grad of every Tensor in params to zeros of its shape."""
    raise NotImplementedError("Complete Activity 3: zero_grad")


def sgd_step(params, lr):
    """data <- data - lr * grad, in place, for every Tensor in params."""
    raise NotImplementedError("Complete Activity 3: sgd_step")


def train_epoch(forward, params, X, y, order, batch_size, lr):
    """One epoch of minibatch SGD over the rows of X in `order`; the batch losses as floats."""
    raise NotImplementedError("Complete Activity 3: train_epoch")


# %% tags=["reference"] activity="3"
def zero_grad(params):
    for p in params:
        p.grad = np.zeros_like(p.data)


def sgd_step(params, lr):
    for p in params:
        p.data -= lr * p.grad


def train_epoch(forward, params, X, y, order, batch_size, lr):
    losses = []
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        loss = cross_entropy(forward(X[rows]), y[rows])
        zero_grad(params)  # before backward: the engine only adds
        loss.backward()  # fills every parameter's .grad
        sgd_step(params, lr)  # then moves them
        losses.append(float(loss.data))
    return losses


# %% tags=["check"] activity="3" points=3
def torch_epoch(arrays, X, y, order, batch_size, lr):
    """The same epoch in PyTorch: (batch losses, parameters afterwards). arrays = [W1, b1, ...]."""
    leaves = [t64(a) for a in arrays]
    history = []
    for first in range(0, len(order), batch_size):
        batch = order[first:first + batch_size]
        act = t64(X[batch], grad=False)
        for k in range(0, len(leaves), 2):
            act = act @ leaves[k] + leaves[k + 1]
            act = torch.relu(act) if k + 2 < len(leaves) else act
        batch_loss = F.cross_entropy(act, torch.tensor(y[batch]))
        grads = torch.autograd.grad(batch_loss, leaves)
        with torch.no_grad():
            for leaf, grad in zip(leaves, grads):
                leaf -= lr * grad
        history.append(batch_loss.item())
    return history, [leaf.detach().numpy() for leaf in leaves]


def check_epoch(sizes, n, batch_size, lr, seed):
    rng = np.random.default_rng(seed)
    X, y = rng.normal(size=(n, sizes[0])), rng.integers(0, sizes[-1], size=n)
    arrays = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        arrays += [rng.normal(size=(n_in, n_out)) / np.sqrt(n_in), 0.1 * rng.normal(size=n_out)]
    params = [Tensor(a) for a in arrays]
    for param in params:
        param.grad = np.full(param.shape, 0.5)  # stale, as an earlier backward would leave it

    def forward(inputs):
        h = Tensor(inputs)
        for k in range(0, len(params), 2):
            h = matmul(h, params[k]) + params[k + 1]
            h = relu(h) if k + 2 < len(params) else h
        return h

    order = rng.permutation(n)
    what = f"train_epoch with layers {sizes}, {n} examples, batches of {batch_size}, lr {lr}"
    losses = train_epoch(forward, params, X, y, order, batch_size, lr)
    expected_losses, expected_params = torch_epoch(arrays, X, y, order, batch_size, lr)
    assert isinstance(losses, list) and len(losses) == len(expected_losses), \
        f"{what}: expected a list of {len(expected_losses)} batch losses, got {losses!r:.80}"
    for number, (got, want) in enumerate(zip(losses, expected_losses), start=1):
        close(got, want, f"{what}: the loss of batch {number} (before its update)")
    for number, (p, want) in enumerate(zip(params, expected_params)):
        close(p.data, want, f"{what}: parameter {number} after the epoch")


def attempt(what, function, *args, **kwargs):
    """function(*args, **kwargs); an error it raises becomes a message that names `what`."""
    try:
        return function(*args, **kwargs)
    except NotImplementedError:
        raise  # an activity still to do
    except Exception as error:
        raise AssertionError(f"{what} raised {type(error).__name__}: {error}") from None


stale = [Tensor(np.ones((2, 3))), Tensor(np.ones(3)), Tensor(np.ones(()))]
for p in stale:
    p.grad = np.full(p.shape, 7.0)
stale[1].grad[:2] = np.inf, np.nan  # what a diverging step leaves behind
attempt("zero_grad on parameters of shapes (2, 3), (3,) and () (a 0-d array has no axis to slice)", zero_grad, stale)
for number, p in enumerate(stale):
    close(p.grad, np.zeros(p.shape), f"parameter {number}'s .grad after zero_grad")
    close(p.data, np.ones(p.shape), f"parameter {number}'s .data after zero_grad (it must not change)")
moving = [Tensor([[1.0, 2.0], [3.0, 4.0]]), Tensor([0.5, -0.5]), Tensor(2.0)]
moving[0].grad, moving[1].grad = np.array([[1.0, -1.0], [0.5, 0.0]]), np.array([2.0, 4.0])
moving[2].grad = np.array(-3.0)
held = [p.data for p in moving]  # as an optimiser or a caller holds them
attempt("sgd_step on parameters of shapes (2, 2), (2,) and () (a 0-d array has no axis to slice)", sgd_step, moving,
        0.1)
close(moving[0].data, [[0.9, 2.1], [2.95, 4.0]], "W after sgd_step(lr 0.1): data - lr * grad")
close(moving[1].data, [0.3, -0.9], "b after sgd_step(lr 0.1): data - lr * grad")
close(moving[2].data, 2.3, "a 0-d parameter after sgd_step(lr 0.1): data - lr * grad")
for name, array, want in zip(["W", "b", "the 0-d parameter"], held, [[[0.9, 2.1], [2.95, 4.0]], [0.3, -0.9], 2.3]):
    close(array, want, f"the array {name}.data was before sgd_step (update it in place, so that whoever holds it "
          "sees the step)")
close(moving[1].grad, [2.0, 4.0], "b.grad after sgd_step (a step leaves the gradients alone)")
check_epoch([3, 2], 10, 4, 0.5, seed=1)  # batches of 4, 4 and 2
check_epoch([3, 5, 3], 9, 3, 0.2, seed=2)
check_epoch([2, 4, 3], 5, 8, 1.0, seed=3)  # a single batch, smaller than batch_size
print("Activity 3 passed: zero_grad (inf and NaN included), sgd_step in place (0-d parameters included), and "
      "epochs that agree with PyTorch update by update.")

# %% [markdown]
# ## 7 · Activities 4 and 5: a network, pinned against two oracles
#
# The `MLP` below is a fully connected network with a ReLU after every layer except the last. It
# stores its parameters in one ordered list, `params = [W1, b1, W2, b2, ...]`, each $W$ of shape
# (inputs, outputs) so that a layer is `h @ W + b`; `model(X)` returns the logits and
# `model.zero_grad()` clears every `.grad`. It delegates to two functions that you write.
#
# The data generator of this section is given too: `spiral(points_per_class, rng)` lays out
# three arms, class $k$ at angles $2\pi k/3 + 4r$ (plus noise of standard deviation 0.2) for radii
# $r$ evenly spaced from 0 to 1. All three arms start at the centre, so their first points
# coincide.

# %%
class MLP:
    """A fully connected ReLU network; Activity 4 writes the two functions it calls."""

    def __init__(self, sizes, rng):
        self.sizes = list(sizes)
        self.params = init_mlp(self.sizes, rng)

    def __call__(self, X):
        return mlp_forward(self.params, X)

    def zero_grad(self):
        zero_grad(self.params)


def spiral(points_per_class, rng):
    """Three interleaved spiral arms in the plane: points (3 * points_per_class, 2) and labels."""
    radius = np.linspace(0.0, 1.0, points_per_class)
    points, labels = [], []
    for k in range(3):
        angle = 2 * np.pi * k / 3 + 4.0 * radius + rng.normal(0.0, 0.2, points_per_class)
        points.append(np.column_stack([radius * np.cos(angle), radius * np.sin(angle)]))
        labels.append(np.full(points_per_class, k))
    return np.concatenate(points), np.concatenate(labels)


# %% [markdown]
# ### Activity 4 · The MLP and a gradient check (2 points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# * `init_mlp(sizes, rng)`: for each pair of consecutive sizes (`fan_in`, `fan_out`), in order,
#   draw `W = rng.normal(0.0, np.sqrt(2.0 / fan_in), size=(fan_in, fan_out))` (He
#   initialisation) and set `b` to zeros of shape (`fan_out`,). Return the list
#   `[W1, b1, W2, b2, ...]` of new Tensors. Draw in exactly this order: the digits run below
#   relies on it.
# * `mlp_forward(params, X)`: start from `as_tensor(X)`, apply `h @ W + b` layer by layer, with
#   `relu` after every layer but the last, and return the logits Tensor. `X` may be an array or
#   a Tensor (the output of another network, say); a Tensor stays in the graph and gets its
#   gradient too.
# * `gradient_check(model, X, y, h=1e-6)`: the first oracle. Clear the model's gradients, run
#   `cross_entropy(model(X), y).backward()`, keep a copy of every parameter's `.grad`, then
#   estimate the same gradients with your `numerical_grad` on the parameters' `.data` arrays.
#   Return the worst, over every entry of every parameter, of
#   $|\hat g - g| / \max(1, |g|)$ as a float. (Relative where gradients are large, absolute
#   where they are tiny.) Difference with the step `h` you are given.
#
# The checker may not change the parameters. A checker is only worth something if it fails on
# a wrong engine, so the check also hands it models with a wrong gradient on one parameter
# (built by `Tampered` below), some with gradients well above 1, and models whose `.grad` still
# holds an earlier gradient.

# %% tags=["stub"] activity="4"
def init_mlp(sizes, rng):
    """He-initialised parameters [W1, b1, W2, b2, ...] as new Tensors."""
    raise NotImplementedError("Complete Activity 4: init_mlp")


def mlp_forward(params, X):
    """The logits Tensor of the network with parameters `params` for the inputs X."""
    raise NotImplementedError("Complete Activity 4: mlp_forward")


def gradient_check(model, X, y, h=1e-6):
    """The worst |numeric - engine| / max(1, |engine|) over every entry of every parameter."""
    raise NotImplementedError("Complete Activity 4: gradient_check")


# %% tags=["reference"] activity="4"
def init_mlp(sizes, rng):
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        params.append(Tensor(rng.normal(0.0, np.sqrt(2.0 / fan_in), size=(fan_in, fan_out))))
        params.append(Tensor(np.zeros(fan_out)))
    return params


def mlp_forward(params, X):
    h = as_tensor(X)
    for layer in range(0, len(params), 2):
        h = h @ params[layer] + params[layer + 1]
        if layer + 2 < len(params):  # no relu on the logits
            h = h.relu()
    return h


def gradient_check(model, X, y, h=1e-6):
    model.zero_grad()  # stale gradients would be added to the new ones
    cross_entropy(model(X), y).backward()  # the engine's gradients
    engine = [p.grad.copy() for p in model.params]
    estimates = numerical_grad(lambda: float(cross_entropy(model(X), y).data), [p.data for p in model.params], h)
    return max(float(np.max(np.abs(e - g) / np.maximum(1.0, np.abs(g)))) for e, g in zip(estimates, engine))



# %% [markdown]
# `Tampered` wraps a model and breaks it on purpose, in the forward pass (`no_relu=True`: the
# hidden layers skip their ReLU) or in the backward pass (`scale={k: s}`: the gradient reaching
# parameter `k` is multiplied by `s`, while the values stay right). It has the same `params`,
# `__call__` and `zero_grad` as an `MLP`.

# %%
class Tampered:
    """A network like MLP with a deliberate fault, to see whether a checker notices it."""

    def __init__(self, params, *, no_relu=False, scale=None):
        self.params, self.no_relu, self.scale = params, no_relu, dict(scale or {})

    def passed(self, k):
        """Parameter k as the forward pass sees it: same data, gradient scaled on the way back."""
        p = self.params[k]
        if k not in self.scale:
            return p
        view = Tensor(p.data, (p,), "scaled")

        def send():
            p.grad += self.scale[k] * view.grad

        view._backward = send
        return view

    def __call__(self, X):
        z = as_tensor(X)
        for k in range(0, len(self.params), 2):
            z = matmul(z, self.passed(k)) + self.passed(k + 1)
            if k + 2 < len(self.params) and not self.no_relu:
                z = relu(z)
        return z

    def zero_grad(self):
        for p in self.params:
            p.grad = np.zeros(p.shape)


# %% tags=["check"] activity="4" points=2
def torch_loss(leaves, X, y, relu=True):
    """The loss of the standard network (without its hidden ReLUs unless relu) in PyTorch."""
    act = X
    for k in range(0, len(leaves), 2):
        act = act @ leaves[k] + leaves[k + 1]
        act = torch.relu(act) if relu and k + 2 < len(leaves) else act
    return F.cross_entropy(act, torch.tensor(y))


def true_gradients(model, X, y):
    """PyTorch's loss and gradients for the standard network with model's weights."""
    leaves = [t64(p.data) for p in model.params]
    loss = torch_loss(leaves, t64(X, grad=False), y)
    return loss.item(), [g.numpy() for g in torch.autograd.grad(loss, leaves)]


def torch_central(model, X, y, h):
    """PyTorch's central differences of the loss with step h, for every entry of every parameter."""
    leaves, inputs = [t64(p.data, grad=False) for p in model.params], t64(X, grad=False)
    per_leaf = []
    for leaf in leaves:
        slope = np.zeros(tuple(leaf.shape))
        for index in np.ndindex(*slope.shape):
            kept = leaf[index].item()
            leaf[index] = kept + h
            above = torch_loss(leaves, inputs, y).item()
            leaf[index] = kept - h
            slope[index] = (above - torch_loss(leaves, inputs, y).item()) / (2 * h)
            leaf[index] = kept
        per_leaf.append(slope)
    return per_leaf


def copies(params):
    return [Tensor(p.data) for p in params]


rng4 = np.random.default_rng(11)
model = MLP([3, 4, 2], rng4)
assert isinstance(model.params, list) and len(model.params) == 4, \
    "init_mlp([3, 4, 2], rng) must return the list [W1, b1, W2, b2]"
drawn = np.random.default_rng(11)
for number, (p, shape) in enumerate(zip(model.params, [(3, 4), (4,), (4, 2), (2,)])):
    assert isinstance(p, Tensor), f"init_mlp: params[{number}] must be a Tensor, got a {type(p).__name__}"
    fan_in = shape[0] if len(shape) == 2 else None
    want = drawn.standard_normal(shape) * np.sqrt(2.0 / fan_in) if fan_in else np.zeros(shape)
    close(p.data, want, f"init_mlp([3, 4, 2], rng): params[{number}] (order W1, b1, W2, b2; He scale "
          "sqrt(2 / fan_in); zero biases)")
    close(p.grad, np.zeros(shape), f"init_mlp: params[{number}].grad")
X4, y4 = spiral(4, np.random.default_rng(12))
model = MLP([2, 5, 4, 3], np.random.default_rng(13))
for p in model.params[1::2]:
    p.data += 0.1  # move the biases off zero
loss4 = cross_entropy(model(X4), y4)
expected_loss, expected_grads = true_gradients(model, X4, y4)
close(loss4.data, expected_loss, "the loss of MLP([2, 5, 4, 3]) on 12 spiral points (mlp_forward)")
loss4.backward()
for number, (p, g) in enumerate(zip(model.params, expected_grads)):
    close(p.grad, g, f"MLP([2, 5, 4, 3]): params[{number}].grad after backward (mlp_forward)")

kept = [p.data.copy() for p in model.params]
for p in model.params:
    p.grad = np.full(p.shape, 3.0)  # stale: the checkers must clear it
worst = gradient_check(model, X4, y4)
assert isinstance(worst, float), f"gradient_check must return a float, got a {type(worst).__name__}"
assert worst < 1e-7, f"gradient_check on a correct model with stale .grad returned {worst:.3g}, expected below 1e-7"
for number, (p, k) in enumerate(zip(model.params, kept)):
    close(p.data, k, f"params[{number}].data after gradient_check (put every entry back)", tol=1e-12)
worst = gradient_check(model, X4, y4, h=1e-4)  # central: error ~ h^2; one-sided: ~ h
assert worst < 1e-7, (f"gradient_check with h = 1e-4 on a correct model returned {worst:.3g}; central differences "
                      "stay below 1e-7 there (one-sided ones do not)")
for k, s, scale in [(5, 1.5, 1.0), (0, 0.5, 1.0), (2, 0.5, 40.0)]:
    fault = Tampered(copies(model.params), scale={k: s})
    _, true = true_gradients(fault, X4 * scale, y4)
    want = max(float(np.max(np.abs(g - s * g) / np.maximum(1.0, np.abs(s * g)))) if j == k else 0.0
               for j, g in enumerate(true))
    inputs = "" if scale == 1.0 else f", on inputs {scale:g} times as large (gradients above 1: divide by max(1, |g|))"
    close(gradient_check(fault, X4 * scale, y4), want, f"gradient_check on a model whose gradient for params[{k}] is "
          f"multiplied by {s}{inputs} (the worst error over every parameter)", tol=1e-6)
coarse = max(float(np.max(np.abs(c - g) / np.maximum(1.0, np.abs(g))))
             for c, g in zip(torch_central(model, X4, y4, 0.1), expected_grads))
close(gradient_check(model, X4, y4, h=0.1), coarse, "gradient_check(model, X, y, h=0.1) on a correct model: central "
      "differences with that step miss the gradient by this much (difference with the h you are given)", tol=1e-6)
leaf4 = Tensor(X4)
logits4 = attempt("mlp_forward(params, X) with X a Tensor (start from as_tensor(X))", mlp_forward, model.params, leaf4)
cross_entropy(logits4, y4).backward()
twin4 = t64(X4)
(input_grad,) = torch.autograd.grad(torch_loss([t64(p.data, grad=False) for p in model.params], twin4, y4), twin4)
close(leaf4.grad, input_grad.numpy(), "X.grad after cross_entropy(mlp_forward(params, X), y).backward() with X a "
      "Tensor (as_tensor keeps it in the graph)")

print("Activity 4 passed: init_mlp and mlp_forward; gradient_check near zero on a correct model and exact "
      "about the faults.")

# %% [markdown]
# ### Activity 5 · A PyTorch witness (1 point)
#
# * `torch_witness(model, X, y)`: the second oracle. Clear the gradients and run the engine's
#   loss and `backward` as in `gradient_check`; rebuild the same network in PyTorch, float64, with
#   the same weights (`W` is already (inputs, outputs), so `h @ W + b` carries over), run
#   `F.cross_entropy` and its backward. Return the pair `(loss_gap, grad_gap)`: the absolute
#   difference of the two losses and the largest absolute difference between an engine gradient
#   and PyTorch's, over all parameters, as floats.
#
# PyTorch is the point here, so this is the one activity graded with PyTorch available. Like
# `gradient_check`, the witness may not change the parameters, and the check hands it models
# with a wrong forward pass or a wrong gradient on one parameter.

# %% tags=["stub"] activity="5"
def torch_witness(model, X, y):
    """(loss gap, largest gradient gap) between the engine and a float64 PyTorch copy."""
    raise NotImplementedError("Complete Activity 5: torch_witness")


# %% tags=["reference"] activity="5"
def torch_witness(model, X, y):
    model.zero_grad()  # as in gradient_check
    loss = cross_entropy(model(X), y)
    loss.backward()  # the engine's side
    copies = [torch.tensor(p.data, dtype=torch.float64, requires_grad=True) for p in model.params]
    z = torch.tensor(X, dtype=torch.float64)
    for layer in range(0, len(copies), 2):
        z = z @ copies[layer] + copies[layer + 1]
        if layer + 2 < len(copies):
            z = torch.relu(z)
    reference_loss = F.cross_entropy(z, torch.as_tensor(y, dtype=torch.long))
    reference_loss.backward()
    loss_gap = abs(float(loss.data) - reference_loss.item())
    grad_gap = max(float(np.max(np.abs(p.grad - c.grad.numpy()))) for p, c in zip(model.params, copies))
    return loss_gap, grad_gap


# %% tags=["check"] activity="5" points=1
model = MLP([2, 5, 4, 3], np.random.default_rng(13))
for p in model.params[1::2]:
    p.data += 0.1  # the network of Activity 4's check
_, expected_grads = true_gradients(model, X4, y4)
for p in model.params:
    p.grad = np.full(p.shape, -2.0)
gaps = torch_witness(model, X4, y4)
assert isinstance(gaps, tuple) and len(gaps) == 2, "torch_witness must return the pair (loss_gap, grad_gap)"
assert max(gaps) < 1e-12, f"torch_witness on a correct model with stale .grad returned {gaps}, expected ~1e-16"
rng5 = np.random.default_rng(12)
lower = []  # weights for which the network without ReLUs has the lower loss
for fan_in, fan_out in [(2, 5), (5, 4), (4, 3)]:
    lower += [rng5.normal(0.0, np.sqrt(2.0 / fan_in), size=(fan_in, fan_out)), np.full(fan_out, 0.1)]
for arrays, side in [([p.data for p in model.params], "above"), (lower, "below")]:
    leaves = [t64(a, grad=False) for a in arrays]
    plain_loss, relu_loss = (torch_loss(leaves, t64(X4, grad=False), y4, relu).item() for relu in (False, True))
    loss_gap, _ = torch_witness(Tampered([Tensor(a) for a in arrays], no_relu=True), X4, y4)
    close(loss_gap, abs(plain_loss - relu_loss), f"torch_witness's loss gap for a model without ReLUs, whose loss "
          f"is {side} PyTorch's (the gap is an absolute difference)", tol=1e-9)
for k, s in [(5, 2.0), (2, 0.5)]:
    fault = Tampered(copies(model.params), scale={k: s})
    _, grad_gap = torch_witness(fault, X4, y4)
    close(grad_gap, abs(s - 1) * np.max(np.abs(expected_grads[k])), f"torch_witness's grad gap when the gradient of "
          f"params[{k}] is multiplied by {s} (it must compare every parameter)", tol=1e-9)
print("Activity 5 passed: torch_witness near zero on a correct model and exact about the faults.")

# %% [markdown]
# ## 8 · Handwritten digits
#
# scikit-learn ships 1,797 digits of 8 × 8 pixels with intensities 0 to 16; the cell below scales
# them to [0, 1] and splits them 60/20/20, stratified by digit, with `random_state=0` for both
# splits. Then a 64-128-10 ReLU network, He-initialised from `np.random.default_rng(0)`, is
# trained with your `train_epoch`: learning rate 0.2, batches of 32, 40 epochs, each in a fresh
# order drawn from the same generator. No line of it differentiates anything by hand.
#
# **Predict** before running: after about 1,400 updates, what test accuracy do you expect?

# %% requires="1a 1b 2 3 4"
from sklearn.datasets import load_digits  # imported where they are first needed
from sklearn.model_selection import train_test_split

digits = load_digits()
pixels, digit_labels = digits.data / 16.0, digits.target
X_rest, X_test, y_rest, y_test = train_test_split(pixels, digit_labels, test_size=0.2, stratify=digit_labels,
                                                  random_state=0)
X_train, X_val, y_train, y_val = train_test_split(X_rest, y_rest, test_size=0.25, stratify=y_rest,
                                                  random_state=0)
print(f"{len(X_train)} training, {len(X_val)} validation and {len(X_test)} test images of {pixels.shape[1]} pixels")


def accuracy(model, X, y):
    return float(np.mean(model(X).data.argmax(axis=1) == y))


digit_rng = np.random.default_rng(0)
digit_model = MLP([64, 128, 10], digit_rng)
digit_report = {}
for epoch in range(1, 41):
    batch_losses = train_epoch(digit_model, digit_model.params, X_train, y_train,
                               digit_rng.permutation(len(X_train)), 32, 0.2)
    if epoch % 10 == 0:
        digit_report[epoch] = (batch_losses[-1], accuracy(digit_model, X_val, y_val))
        print(f"epoch {epoch}: last batch loss {batch_losses[-1]:.4f}, validation accuracy "
              f"{digit_report[epoch][1]:.3f}")
digit_test_accuracy = accuracy(digit_model, X_test, y_test)
print(f"test accuracy: {digit_test_accuracy:.3f}")

# %% [markdown]
# About 97% of the test digits, from four local rules (add, matmul, ReLU and the fused loss) and
# a generic backward pass. A new kind of layer would only need its forward computation written in
# Tensor operations, with no backward code of its own.
#
# ## 9 · The spiral project
#
# Three arms that wind around each other: no straight line separates any of them, so a network
# has to bend its decision regions around the centre. First the two oracles on small networks,
# then the training run.
#
# * Finite differences: `gradient_check` on an `MLP([2, 16, 16, 3])` with 60 spiral points;
# * PyTorch: `torch_witness` on an `MLP([2, 32, 16, 3])` with 120 points.

# %% requires="1a 1b 2 3 4 5"
X_small, y_small = spiral(20, np.random.default_rng(1))
spiral_worst = gradient_check(MLP([2, 16, 16, 3], np.random.default_rng(2)), X_small, y_small)
X_mid, y_mid = spiral(40, np.random.default_rng(4))
spiral_gaps = torch_witness(MLP([2, 32, 16, 3], np.random.default_rng(4)), X_mid, y_mid)
print(f"gradient_check, worst error against central differences: {spiral_worst:.2e}")
print(f"torch_witness, loss gap:                                 {spiral_gaps[0]:.2e}")
print(f"torch_witness, largest gradient gap:                     {spiral_gaps[1]:.2e}")

# %% [markdown]
# Against central differences the engine is right to about $10^{-9}$, the noise floor of a
# difference quotient with $h = 10^{-6}$ on a loss of order one; against PyTorch, to a few units
# of $10^{-17}$, the rounding of float64 itself: the same gradients, computed in a different
# order. The two losses are identical here; with other seeds they sometimes differ in the last
# bit, $2.2 \times 10^{-16}$, because PyTorch averages the per-example losses in another order.
#
# **Training.** 100 points per arm from `np.random.default_rng(0)`, an `MLP([2, 64, 64, 3])`
# from `np.random.default_rng(0)`, plain gradient descent: every step is one `train_epoch` whose
# single batch is the whole set, at learning rate 0.5, for 1,000 steps. Since the three arms
# start at the same point, at most 298 of the 300 points can be classified correctly: an
# accuracy of 0.9933 is the ceiling. The cell ends by drawing the decision regions and the loss
# curve.

# %% requires="1a 1b 2 3 4"
import matplotlib.pyplot as plt  # imported where it is first needed

X_spiral, y_spiral = spiral(100, np.random.default_rng(0))
spiral_model = MLP([2, 64, 64, 3], np.random.default_rng(0))
everything = np.arange(len(X_spiral))
spiral_losses, spiral_report = [], {}
for step in range(1, 1001):
    spiral_losses += train_epoch(spiral_model, spiral_model.params, X_spiral, y_spiral, everything,
                                 len(X_spiral), 0.5)
    if step in (1, 100, 250, 500, 1000):
        spiral_report[step] = accuracy(spiral_model, X_spiral, y_spiral)
        print(f"step {step:>4}: loss {spiral_losses[-1]:.4f}, training accuracy {spiral_report[step]:.4f}")
spiral_accuracy = spiral_report[1000]

grid_x, grid_y = np.meshgrid(np.linspace(-1.2, 1.2, 241), np.linspace(-1.2, 1.2, 241))
regions = spiral_model(np.column_stack([grid_x.ravel(), grid_y.ravel()])).data.argmax(axis=1)
regions = regions.reshape(grid_x.shape)
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
left.contourf(grid_x, grid_y, regions, levels=[-0.5, 0.5, 1.5, 2.5], colors=["#c6dbef", "#fdd0a2", "#c7e9c0"])
left.scatter(X_spiral[:, 0], X_spiral[:, 1], c=y_spiral, cmap="brg", edgecolor="black", s=16)
left.set(title="decision regions after 1,000 steps", xlabel="$x_1$", ylabel="$x_2$", aspect="equal")
right.semilogy(np.arange(1, len(spiral_losses) + 1), spiral_losses, color="#1f5f9e")
right.set(title="training loss", xlabel="gradient-descent step", ylabel="mean cross-entropy (log scale)")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 10 · The same machinery in PyTorch
#
# PyTorch's autograd is this design with the industrial parts added. The cells below run on
# PyTorch alone; run each, then answer the questions that follow it.
#
# **The graph.** Every tensor computed from tensors that require gradients carries a `grad_fn`,
# the node that made it; `grad_fn.next_functions` points to its inputs' nodes, as `_prev` does.

# %%
xt = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
yt = torch.tensor(-3.0, dtype=torch.float64, requires_grad=True)
ft = (xt * yt + xt) ** 2
ft.backward()
print(f"df/dx = {xt.grad.item()}, df/dy = {yt.grad.item()}")
grad_fn_chain, step_fn = [], ft.grad_fn
while step_fn is not None:  # follow the first input of every node down to a leaf
    grad_fn_chain.append(type(step_fn).__name__)
    step_fn = next((fn for fn, _ in step_fn.next_functions if fn is not None), None)
for depth, name in enumerate(grad_fn_chain):
    print("  " * depth + name)
print("x is a leaf:", xt.is_leaf, "  x.grad_fn:", xt.grad_fn)

# %% [markdown]
# **Accumulation.** Three backward passes through three fresh graphs of the same leaf, with no
# zeroing in between.

# %%
w_t = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
accumulated = []
for i in range(3):
    (w_t ** 2).sum().backward()  # the gradient is 2w = [2, -4] every time
    accumulated.append(w_t.grad.tolist())
    print(f"after backward #{i + 1}: w.grad = {accumulated[-1]}")
w_t.grad.zero_()
print("after w.grad.zero_():", w_t.grad.tolist())

# %% [markdown]
# **Freeing the graph.** After `backward`, PyTorch releases the values its nodes saved for the
# backward pass, unless told to keep them with `retain_graph=True`.

# %%
a_t = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
out_t = (a_t.exp() * a_t).sum()
out_t.backward(retain_graph=True)
once = a_t.grad.clone()
out_t.backward()  # allowed: the saved values were kept
print("a.grad after two passes / after one:", (a_t.grad / once).tolist())
try:
    out_t.backward()  # the second pass freed them
except RuntimeError as error:
    retain_message = str(error).split(".")[0]
    print("a third pass raises RuntimeError:", retain_message)

# %% [markdown]
# **Switching recording off.** Inside `torch.no_grad()` nothing is recorded; `detach()` returns a
# tensor that shares the data but has no history.

# %%
v_t = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
with torch.no_grad():
    scaled_t = v_t * 3.0
    v_t -= 0.5 * torch.ones(2, dtype=torch.float64)  # an in-place update of a leaf, allowed here
cut_t = v_t.detach()
print("under no_grad:  requires_grad", scaled_t.requires_grad, " grad_fn", scaled_t.grad_fn)
print("detached:       requires_grad", cut_t.requires_grad, " shares memory with v:",
      cut_t.data_ptr() == v_t.data_ptr())
print("v after the update:", v_t.tolist(), " still a leaf:", v_t.is_leaf)

# %% [markdown]
# **The version counter.** Every tensor counts its in-place modifications. A node that saved a
# tensor for its backward pass remembers the count it saw and refuses to use the tensor if it
# has changed since.

# %%
s_t = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
e_t = s_t.exp()  # exp keeps its output for the backward pass
total_t = (e_t * e_t).sum()
print("version of e before:", e_t._version)
with torch.no_grad():
    e_t.add_(1.0)  # an in-place change after the forward pass
print("version of e after: ", e_t._version)
try:
    total_t.backward()
except RuntimeError as error:
    version_message = str(error).split(";")[0]
    print("backward raises RuntimeError:", version_message)

# %% [markdown]
# Your engine has no such counter. A ReLU's closure reads its input's `.data` when it runs, so
# changing that array between the forward and the backward pass changes the gradient, silently:

# %% requires="1a 2"
silent = Tensor([1.0, -2.0, 3.0])
silent_total = silent.relu().sum()
silent.data *= -1.0  # after the forward pass
silent_total.backward()
print("gradient of sum(relu(x)) at x = [1, -2, 3]:", silent.grad.tolist(), " (correct: [1.0, 0.0, 1.0])")

# %% [markdown]
# **Questions.**
#
# 1. The chain printed `PowBackward0`, `AddBackward0`, `MulBackward0`, `AccumulateGrad`. Which
#    function of your engine plays the part of each, and which line of your code does
#    `AccumulateGrad` correspond to?
# 2. After three passes `w.grad` was `[6, -12]`. Which line of Activity 3 prevents this in your
#    training loop, and when can accumulating over several passes be what you want?
# 3. What does your engine do if you call `backward` twice on the same loss? Compare with
#    PyTorch's first two passes above (`retain_graph=True`, then a plain one).
# 4. Where would a `no_grad` switch pay off in this lab, and what would it have to change in
#    the `Tensor` class?
# 5. Which of your backward rules read the input's `.data`, and which the output's? Which of them
#    could the relu experiment above break?

# %% [markdown] tags=["reference"]
# **Instructor answers.**
#
# 1. `PowBackward0` has no counterpart (the engine has no power; `x ** 2` would be `x * x`),
#    `AddBackward0` is `add`'s closure, `MulBackward0` is `multiply`'s. `AccumulateGrad` is the
#    `+=` into a leaf's `.grad` inside those closures: the engine adds into every node, leaves
#    included, where PyTorch adds only into leaves and passes gradients between interior nodes
#    without storing them (unless `retain_grad()` is called).
# 2. `zero_grad(params)` in `train_epoch`, before `loss.backward()`. Accumulation is useful when
#    a batch does not fit in memory: several backward passes over its parts, then one update.
# 3. It runs, because nothing is freed, and it is wrong: `backward` seeds the root with ones
#    again, but every interior node still holds its gradient from the first pass and adds the new
#    one to it, then passes the sum on. A leaf that feeds the root directly gets one more
#    gradient; a leaf behind an interior node gets two more or, deeper down, even more. PyTorch
#    with `retain_graph=True` adds exactly one more gradient (the ratio printed was 2), because it
#    keeps no gradient on interior nodes; without it, PyTorch refuses.
# 4. In evaluation and plotting (`accuracy`, the decision-region grid of 58,081 points), where
#    graphs are built and never used. A module-level flag checked in each primitive would skip
#    `_prev` and `_backward`, returning a plain leaf; Optional B does this.
# 5. Input: `multiply`, `matmul` (the other factor), `log` and `relu`. Output: `exp`. `reduce_sum`
#    reads neither. Any rule that reads an array modified in place after the forward pass
#    computes with the new values; here the mask of `relu` flipped. PyTorch's version counter
#    exists to turn that into an error.

# %% [markdown]
# ## 11 · Optional activities: the engine grows up (A–F)
#
# Six extensions turn the engine into something you would recognise in a real framework. Each is
# optional and worth bonus points; they do not depend on each other, only on the required
# activities. Every one is written in NumPy: PyTorch appears only in the check cells, as the
# witness.
#
# | id | you write | bonus points |
# |---|---|---|
# | A | `adam_step`: Adam's moment estimates and bias correction | 2 |
# | B | `no_grad`: a context in which nothing is recorded | 1 |
# | C | forward mode: dual-number rules, `jvp` and `jacobian_fwd` | 2 |
# | D | double backprop: `vjp_tensor`, `grad`, `hvp` and `newton_step` | 2 |
# | E | `conv2d` with its backward rule, and a small CNN on the digits | 2 |
# | F | `to_dot`: the tape as Graphviz text | 1 |
#
# ## Optional A · Adam (2 bonus points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# Plain gradient descent moves every parameter by the same multiple of its gradient. Adam keeps,
# per parameter entry, a running mean of the gradient $m$ and of its square $v$, and divides one
# by the square root of the other, so each entry gets its own step size. With gradient $g$ at
# step $t = 1, 2, \dots$:
#
# $$m \leftarrow \beta_1 m + (1 - \beta_1) g, \qquad v \leftarrow \beta_2 v + (1 - \beta_2) g^2,
# \qquad \hat m = \frac{m}{1 - \beta_1^t}, \quad \hat v = \frac{v}{1 - \beta_2^t}, \qquad
# \theta \leftarrow \theta - \mathrm{lr}\,\frac{\hat m}{\sqrt{\hat v} + \varepsilon}.$$
#
# $m$ and $v$ start at zero, so early on they are biased towards zero; the divisions by
# $1 - \beta^t$ undo exactly that bias (at $t = 1$, $\hat m = g$ and $\hat v = g^2$).
#
# Write `adam_step(params, state, lr, betas=(0.9, 0.999), eps=1e-8)`: one update of every Tensor
# in `params`, in place. `state` is a dictionary that is empty before the first step; fill it
# then (a step counter and one zero array of each kind per parameter) and update it on every
# call. Leave `.grad` alone. The class `Adam` below wraps it with PyTorch's interface.
#
# Everything Adam remembers lives in `state`, nothing on the Tensors. A new, empty `state` on
# parameters that were trained before starts again from zero moments and step 1, as a new
# `torch.optim.Adam` does; two states over the same parameters (two `Adam` objects) each keep
# moments and a step count of their own. The check runs `adam_step` beside `torch.optim.Adam`
# on the same float64 parameters, step by step, with the default hyper-parameters and with
# others, and then restarts it with a new state, and lets two states take turns.

# %%
class Adam:
    """The optimiser object around adam_step: Adam(params, lr, betas, eps), then zero_grad() and step()."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        self.params, self.lr, self.betas, self.eps = list(params), lr, betas, eps
        self.state = {}

    def zero_grad(self):
        zero_grad(self.params)

    def step(self):
        adam_step(self.params, self.state, self.lr, self.betas, self.eps)


# %% tags=["stub"] activity="A"
def adam_step(params, state, lr, betas=(0.9, 0.999), eps=1e-8):
    """One Adam update of every Tensor in params, in place; `state` carries the step count and moments."""
    raise NotImplementedError("Complete Activity A: adam_step")


# %% tags=["reference"] activity="A"
def adam_step(params, state, lr, betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    if not state:
        state.update(t=0, m=[np.zeros_like(p.data) for p in params], v=[np.zeros_like(p.data) for p in params])
    state["t"] += 1  # the first step is t = 1: at t = 0 the bias correction would divide by zero
    for p, m, v in zip(params, state["m"], state["v"]):
        m[...] = beta1 * m + (1 - beta1) * p.grad
        v[...] = beta2 * v + (1 - beta2) * p.grad ** 2
        m_hat, v_hat = m / (1 - beta1 ** state["t"]), v / (1 - beta2 ** state["t"])
        p.data -= lr * m_hat / (np.sqrt(v_hat) + eps)


# %% tags=["check"] activity="A" points=2
def check_adam(shapes, steps, lr, betas, eps, seed, grad_scale=1.0, states=None):
    """adam_step beside torch.optim.Adam; `states` names the state dict of every step (a new number:
    a new, empty dict, and a new torch.optim.Adam over the same parameters)."""
    rng = np.random.default_rng(seed)
    params = [Tensor(rng.normal(size=shape)) for shape in shapes]
    twins = [t64(p.data) for p in params]
    mine, theirs = {}, {}
    what = f"adam_step with lr {lr}, betas {betas}, eps {eps}"
    if states is not None:
        what += f", the state dicts of steps 1 to {steps} numbered {states} (a new number: a new, empty dict)"
    for step, which in enumerate(states or [0] * steps, start=1):
        for p, twin in zip(params, twins):
            p.grad = grad_scale * rng.normal(size=p.shape)
            twin.grad = torch.tensor(p.grad.copy())
        sent = [p.grad.copy() for p in params]
        if which not in theirs:
            theirs[which] = torch.optim.Adam(twins, lr=lr, betas=betas, eps=eps)
        adam_step(params, mine.setdefault(which, {}), lr, betas, eps)
        theirs[which].step()
        for number, (p, twin, g) in enumerate(zip(params, twins, sent)):
            close(p.data, twin.detach().numpy(), f"{what}: parameter {number} after step {step} "
                  "(torch.optim.Adam on the same gradients; every state dict keeps its own moments and step count)")
            close(p.grad, g, f"{what}: parameter {number}'s .grad after step {step} (a step leaves it alone)")


check_adam([(3, 2), (2,)], 4, 0.05, (0.9, 0.999), 1e-8, seed=0)
check_adam([(2, 2)], 3, 0.3, (0.5, 0.8), 0.1, seed=1, grad_scale=0.01)  # eps of the size of sqrt(v)
check_adam([(4,)], 6, 0.01, (0.0, 0.99), 1e-8, seed=2)  # beta1 = 0: no momentum
check_adam([(2, 3)], 5, 0.05, (0.8, 0.9), 1e-8, seed=3, states=[0, 0, 0, 1, 1])  # a restart on trained Tensors
check_adam([(3,), (2, 2)], 5, 0.05, (0.8, 0.9), 1e-8, seed=4, states=[0, 1, 1, 0, 1])  # two optimisers
print("Activity A passed: adam_step agrees with torch.optim.Adam step by step, at default and other "
      "betas and eps, restarted with a new state and with two states over the same parameters.")

# %% [markdown]
# **SGD against Adam on the spiral.** The cell trains the network of Section 9 again, from the same
# initial weights (`np.random.default_rng(0)`), with `Adam(lr=0.01)` and full batches, and draws
# its loss next to the first 300 steps of the SGD run above (learning rate 0.5). Same network,
# same data, same number of steps; only the update rule differs.

# %% requires="1a 1b 2 3 4 A"
adam_model = MLP([2, 64, 64, 3], np.random.default_rng(0))
optimiser = Adam(adam_model.params, lr=0.01)


def adam_update():
    """One full-batch Adam step on the spiral; the loss before it."""
    spiral_loss = cross_entropy(adam_model(X_spiral), y_spiral)
    optimiser.zero_grad()
    spiral_loss.backward()
    optimiser.step()
    return float(spiral_loss.data)


adam_losses = [adam_update() for _ in range(300)]
for step in (1, 50, 100, 300):
    print(f"step {step:>3}: SGD loss {spiral_losses[step - 1]:.4f}, Adam loss {adam_losses[step - 1]:.4f}")
for target in (0.2, 0.05):
    reached = {name: next((i + 1 for i, loss in enumerate(losses[:300]) if loss < target), None)
               for name, losses in [("SGD", spiral_losses), ("Adam", adam_losses)]}
    print(f"first step with a loss below {target}: SGD {reached['SGD']}, Adam {reached['Adam']}")

fig, ax = plt.subplots(figsize=(6, 4))
ax.semilogy(np.arange(1, 301), spiral_losses[:300], color="#1f5f9e", label="SGD, lr 0.5")
ax.semilogy(np.arange(1, 301), adam_losses, color="#d95f02", label="Adam, lr 0.01")
ax.set(title="spiral, [2, 64, 64, 3]: the same 300 full-batch steps", xlabel="step",
       ylabel="mean cross-entropy (log scale)")
ax.legend()
fig.tight_layout()
plt.show()

# %% [markdown] tags=["reference"]
# **Instructor note.** Adam's loss falls below SGD's within the first few dozen steps and stays
# an order of magnitude lower by step 300. SGD's single learning rate must suit the steepest
# direction, so it creeps along the flat ones; Adam's per-entry scaling by $\sqrt{\hat v}$ makes
# every entry move by about `lr` per step, whatever the size of its gradient.

# %% [markdown]
# ## Optional B · `no_grad` (1 bonus point)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# When you only want the output (an accuracy, the decision regions of a plot) the tape is waste:
# every result keeps its parents and a closure alive until the whole graph is dropped. The
# `Tensor` class already honours a switch: while the module-level flag `grad_enabled` is `False`,
# a new node records no parents, and a node without parents keeps no backward rule.
#
# Write `no_grad()`, a context manager (a generator decorated with `contextmanager`, imported
# below) so that inside `with no_grad():` the flag is `False`, and afterwards it is back to the
# value it had before, whether the block ended normally or with an exception (which must still
# reach the caller). Every exception counts, those that are not an `Exception` too: the
# `KeyboardInterrupt` of Jupyter's stop button, and the `GeneratorExit` raised inside the block
# when a generator paused in it is closed. It can be nested: leaving an inner `no_grad`, normally
# or by an exception the outer block catches, must not switch recording on inside an outer one.
# The check looks at structure, not at the clock; whatever your `no_grad` does, the check puts
# `grad_enabled` back to `True` before it reports, so the cells after it are not affected.

# %%
import time  # imported where they are first needed
import tracemalloc
from contextlib import contextmanager, nullcontext


# %% tags=["stub"] activity="B"
def no_grad():
    """A context manager inside which new nodes record nothing (grad_enabled is False)."""
    raise NotImplementedError("Complete Activity B: no_grad")


# %% tags=["reference"] activity="B"
@contextmanager
def no_grad():
    global grad_enabled
    before = grad_enabled
    grad_enabled = False
    try:
        yield
    finally:
        grad_enabled = before  # not True: an outer no_grad must stay in force


# %% tags=["check"] activity="B" points=1
def recorded(expression):
    """Whether a node made now records its parents, whether backward from it reaches the leaves, and its value."""
    a, b = Tensor([[1.0, -2.0]]), Tensor([[0.5], [-3.0]])
    out = eval(expression, globals(), {"a": a, "b": b})
    try:
        backward(out)
    except NotImplementedError:
        raise
    except Exception as error:
        raise AssertionError(f"backward from {expression}, a root of shape {out.shape}, raised {type(error).__name__}: "
                             f"{error} (this check runs your backward of Activity 2 on roots that are not scalars: "
                             "seed the root with ones of its shape)") from None
    return bool(out._prev), bool(a.grad.any() or b.grad.any()), out.data


try:
    expressions = ["a + a", "a @ b", "(a @ b).relu() * 2.0", "(a * a).sum()", "a.T.exp().log()"]
    for expression in expressions:
        recording, sends, value = recorded(expression)
        assert recording and sends, f"{expression} outside no_grad must record its parents (did no_grad leave " \
            "grad_enabled False?)"
        with no_grad():
            assert grad_enabled is False, "inside `with no_grad():` grad_enabled must be False"
            recording, sends, quiet_value = recorded(expression)
        assert not recording, f"{expression} inside no_grad: the result's _prev must be empty"
        assert not sends, f"{expression} inside no_grad: backward from the result must add nothing to the leaves"
        close(quiet_value, value, f"{expression} inside no_grad: the value (it must equal the recorded one)")
    with no_grad():
        with no_grad():
            pass
        assert not recorded("a + a")[0], "nested no_grad: after the inner block ends, recording must stay off " \
            "until the outer one ends (restore the value you found, not True)"
    assert recorded("a + a")[0] and grad_enabled is True, "after nested no_grad blocks recording must be on again"
    with no_grad():
        try:
            with no_grad():
                raise KeyError("raised inside the inner no_grad")
        except KeyError:
            pass
        assert not recorded("a + a")[0], "an exception left an inner no_grad and the outer block caught it: " \
            "recording must stay off until the outer block ends (restore the value you found, however the block ends)"
    # KeyboardInterrupt: Jupyter's stop button; GeneratorExit: what closing a generator paused inside the block
    # raises there. Neither is an Exception.
    for interruption in (KeyError("raised inside no_grad"), KeyboardInterrupt(), GeneratorExit()):
        try:
            with no_grad():
                raise interruption
        except type(interruption):
            pass
        else:
            raise AssertionError(f"a {type(interruption).__name__} raised inside `with no_grad():` must propagate to "
                                 "the caller")
        assert grad_enabled is True and recorded("a + a")[0], \
            f"after a {type(interruption).__name__} inside no_grad, recording must be on again (restore the flag in " \
            "a finally clause, which runs whatever was raised, not only an Exception)"
except BaseException:
    grad_enabled = True  # whatever no_grad did, the cells after this check record again
    raise
print("Activity B passed: no_grad records nothing, keeps values, nests, and restores the flag however its block "
      "ends (an exception, a KeyboardInterrupt, a closed generator).")

# %% [markdown]
# **What it saves.** The spiral network of Section 9 evaluated on the 58,081 points of its
# decision-region grid, with the tape and without: the nodes each result keeps reachable, the
# peak memory of the pass (traced by `tracemalloc`) and the time of the pass (best of 5). The
# speed-up depends on the machine and on how much of the memory the pass needs comes fresh from
# the operating system (between about 1x and 20x here), so it is printed, in a cell of its own,
# but not graded; the course keeps its executed notebooks without that cell's output (the
# `timing` tag), so that every figure they store is one a second run reproduces exactly.

# %% requires="1a 1b 2 3 4 B"
def grid_pass():
    return spiral_model(np.column_stack([grid_x.ravel(), grid_y.ravel()]))


def footprint(context):
    """The nodes the grid's logits keep reachable, and the pass's peak memory in MiB."""
    with context():
        tracemalloc.start()
        logits = grid_pass()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return len(graph_nodes(logits)), peak / 2 ** 20


# no_grad first: in a notebook without Activity B, this cell stops at its stub.
footprints = {"under no_grad": footprint(no_grad), "with the tape": footprint(nullcontext)}
for name in ["with the tape", "under no_grad"]:
    nodes, megabytes = footprints[name]
    print(f"{name:<14} nodes reachable from the logits {nodes:>2}, peak memory {megabytes:6.1f} MiB")

# %% tags=["timing"] requires="1a 1b 2 3 4 B"
def fastest_pass(context, repeats=5):
    with context():
        seconds = []
        for _ in range(repeats):
            started = time.perf_counter()
            grid_pass()
            seconds.append(time.perf_counter() - started)
    return min(seconds)


quiet_seconds, recording_seconds = fastest_pass(no_grad), fastest_pass(nullcontext)
speed_up = recording_seconds / quiet_seconds
print(f"the forward pass under no_grad took {quiet_seconds * 1e3:.0f} ms against {recording_seconds * 1e3:.0f} ms "
      f"with the tape: a speed-up of {speed_up:.1f}x on this machine")

# %% [markdown]
# ## Optional C · Forward mode with dual numbers (2 bonus points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# Reverse mode computes a vector-Jacobian product: one backward pass gives the gradient of one
# output with respect to every input. Forward mode computes a Jacobian-vector product: it carries
# beside every value $x$ its derivative $\dot x$ along one input direction $u$, and pushes both
# forward together, operation by operation. A pair $(x, \dot x)$ is a **dual number**; its rules
# are the derivatives you know, applied to the tangent:
#
# | function | value | tangent |
# |---|---|---|
# | `dual_add(a, b)` (given) | $a + b$ | $\dot a + \dot b$ |
# | `dual_sum(a, axis, keepdims)` (given) | $\sum a$ | $\sum \dot a$ |
# | `dual_multiply(a, b)` | $a \odot b$ | $\dot a \odot b + a \odot \dot b$ |
# | `dual_matmul(a, b)` | $AB$ | $\dot A B + A \dot B$ |
# | `dual_exp(a)` | $e^a$ | $e^a \odot \dot a$ |
# | `dual_log(a)` | $\log a$ | $\dot a / a$ |
#
# No graph, no closures, no second pass: the derivative is ready when the value is. The `Dual`
# class below inherits the same `DerivedOps` as `Tensor`, so `-`, `mean` and `tanh` come for free
# and one function definition can be run on either.
#
# Write the four rules, then
#
# * `jvp(f, x, u)`: evaluate `f` once on `Dual(x, u)` and return the pair `(value, tangent)` of
#   its result, as NumPy arrays. A result that does not depend on the input has tangent zero, of
#   the result's shape, and that includes a function that ignores its input and returns a plain
#   array or number rather than a `Dual`;
# * `jacobian_fwd(f, x)`: the Jacobian of `f` at `x` from one JVP per input entry (the basis
#   directions $e_j$, each of `x`'s shape), as an array of shape `f(x).shape + x.shape`, like
#   `torch.func.jacfwd`.

# %%
class Dual(DerivedOps):
    """A value and its tangent (the derivative along one input direction), arrays of one shape."""

    def __init__(self, value, tangent):
        self.value = np.array(value, dtype=np.float64)
        self.tangent = np.broadcast_to(np.asarray(tangent, dtype=np.float64), self.value.shape).copy()

    @staticmethod
    def lift(x):
        return as_dual(x)

    @property
    def shape(self):
        return self.value.shape

    def __repr__(self):
        return f"Dual(shape={self.shape})"

    def __add__(self, other):
        return dual_add(self, as_dual(other))

    def __mul__(self, other):
        return dual_multiply(self, as_dual(other))

    def __matmul__(self, other):
        return dual_matmul(self, as_dual(other))

    def __rmatmul__(self, other):
        return dual_matmul(as_dual(other), self)

    def sum(self, axis=None, keepdims=False):
        return dual_sum(self, axis, keepdims)

    def exp(self):
        return dual_exp(self)

    def log(self):
        return dual_log(self)


def as_dual(x):
    """Duals pass through; numbers and arrays become constants, with tangent zero."""
    return x if isinstance(x, Dual) else Dual(x, 0.0)


def dual_add(a, b):
    return Dual(a.value + b.value, a.tangent + b.tangent)


def dual_sum(a, axis=None, keepdims=False):
    return Dual(a.value.sum(axis=axis, keepdims=keepdims), a.tangent.sum(axis=axis, keepdims=keepdims))


# %% tags=["stub"] activity="C"
def dual_multiply(a, b):
    raise NotImplementedError("Complete Activity C: dual_multiply")


def dual_matmul(a, b):
    raise NotImplementedError("Complete Activity C: dual_matmul")


def dual_exp(a):
    raise NotImplementedError("Complete Activity C: dual_exp")


def dual_log(a):
    raise NotImplementedError("Complete Activity C: dual_log")


def jvp(f, x, u):
    """(f(x), the derivative of f at x along u), by one forward pass on Dual(x, u)."""
    raise NotImplementedError("Complete Activity C: jvp")


def jacobian_fwd(f, x):
    """The Jacobian of f at x, of shape f(x).shape + x.shape, from one JVP per input entry."""
    raise NotImplementedError("Complete Activity C: jacobian_fwd")


# %% tags=["reference"] activity="C"
def dual_multiply(a, b):
    return Dual(a.value * b.value, a.tangent * b.value + a.value * b.tangent)  # the product rule


def dual_matmul(a, b):
    return Dual(a.value @ b.value, a.tangent @ b.value + a.value @ b.tangent)


def dual_exp(a):
    value = np.exp(a.value)
    return Dual(value, value * a.tangent)


def dual_log(a):
    return Dual(np.log(a.value), a.tangent / a.value)


def jvp(f, x, u):
    out = as_dual(f(Dual(x, u)))
    return out.value, out.tangent


def jacobian_fwd(f, x):
    x = np.asarray(x, dtype=np.float64)
    columns = []
    for j in range(x.size):
        direction = np.zeros(x.size)
        direction[j] = 1.0
        columns.append(jvp(f, x, direction.reshape(x.shape))[1])
    stacked = np.stack(columns, axis=-1)  # one column per input entry
    return stacked.reshape(stacked.shape[:-1] + x.shape)


# %% tags=["check"] activity="C" points=2
def check_forward(expression, x, constants, u):
    """jvp and jacobian_fwd on f(x) = expression against torch.func.jvp and torch.func.jacfwd."""
    what = f"f(x) = {expression} at x of shape {np.shape(x)}"

    def f(x):
        return eval(expression, globals(), {"x": x, **constants})

    def f_torch(x):
        return eval(expression, {}, {"x": x, **{k: torch.tensor(v) for k, v in constants.items()}})

    try:
        value, tangent = jvp(f, x, u)
        jacobian = jacobian_fwd(f, x)
    except NotImplementedError:
        raise
    except Exception as error:
        raise AssertionError(f"jvp or jacobian_fwd of {what} raised {type(error).__name__}: {error} (f may return a "
                             "plain array or number instead of a Dual)") from None
    want_value, want_tangent = torch.func.jvp(f_torch, (torch.tensor(x),), (torch.tensor(u),))
    close(value, want_value.numpy(), f"jvp: the value of {what}")
    close(tangent, want_tangent.numpy(), f"jvp: the tangent of {what} along u (torch.func.jvp)")
    close(jacobian, torch.func.jacfwd(f_torch)(torch.tensor(x)).numpy(),
          f"jacobian_fwd of {what} (torch.func.jacfwd; shape f(x).shape + x.shape)")


gen_c = np.random.default_rng(30)
check_forward("x * x * 3.0", gen_c.normal(size=3), {}, gen_c.normal(size=3))
check_forward("(x @ W).exp().sum(axis=1)", gen_c.normal(size=(2, 3)), {"W": gen_c.normal(size=(3, 4))},
              gen_c.normal(size=(2, 3)))
check_forward("W @ x.log()", gen_c.uniform(0.5, 2.0, size=(3, 2)), {"W": gen_c.normal(size=(4, 3))},
              gen_c.normal(size=(3, 2)))
check_forward("(x * V + 1.0).tanh().mean()", gen_c.normal(size=4), {"V": gen_c.normal(size=4)},
              gen_c.normal(size=4))
check_forward("(x * 0.0 + C).sum()", gen_c.normal(size=2), {"C": gen_c.normal(size=2)}, gen_c.normal(size=2))
check_forward("C", gen_c.normal(size=2), {"C": gen_c.normal(size=(3, 2))}, gen_c.normal(size=2))  # f ignores x
print("Activity C passed: the dual rules, jvp and jacobian_fwd agree with torch.func.jvp and "
      "torch.func.jacfwd.")

# %% [markdown]
# **Which mode wins?** Count passes instead of timing them. Forward mode needs one pass per input
# entry ($n$ JVPs); reverse mode one forward pass to record the tape, then one backward pass per
# output entry ($m$ VJPs). The cell builds the full Jacobian both ways for two functions of the
# same shape of code: `wide` maps 40 inputs to one number (a loss), `tall` maps 2 inputs to 40
# outputs. `jacobian_rev` is reverse mode on your engine: before each backward pass it clears
# every node's `.grad`, since the engine accumulates (Section 10, question 3).

# %% requires="1a 1b 2 C"
def jacobian_rev(f, x, counts):
    """The Jacobian of f at x by reverse mode: one forward pass, one backward pass per output entry."""
    start = Tensor(x)
    out = f(start)
    counts["forward"] += 1
    nodes = graph_nodes(out)
    rows = []
    for j in range(out.data.size):
        for node in nodes:
            node.grad = np.zeros(node.shape)
        seed = np.zeros(out.data.size)
        seed[j] = 1.0
        (out * seed.reshape(out.shape)).sum().backward()
        counts["backward"] += 1
        rows.append(start.grad.copy())
    return np.array(rows).reshape(out.shape + start.shape)


pass_rng = np.random.default_rng(31)
W_wide, W_tall = pass_rng.normal(size=(40, 3)), pass_rng.normal(size=(2, 40))
shapes_of = {"wide": (lambda x: (x @ W_wide).tanh().sum(), (1, 40)),
             "tall": (lambda x: (x @ W_tall).tanh(), (1, 2))}
pass_counts = {}
for name, (function, shape) in shapes_of.items():
    point = pass_rng.normal(size=shape)
    evaluations = {"forward": 0}

    def counted(x, function=function, evaluations=evaluations):
        evaluations["forward"] += 1
        return function(x)

    forward_jacobian = jacobian_fwd(counted, point)
    reverse_counts = {"forward": 0, "backward": 0}
    reverse_jacobian = jacobian_rev(function, point, reverse_counts)
    close(forward_jacobian, reverse_jacobian, f"the Jacobian of {name} by forward and by reverse mode")
    pass_counts[name] = (evaluations["forward"], reverse_counts["forward"], reverse_counts["backward"])
    n_in, n_out = int(np.prod(shape)), int(np.prod(forward_jacobian.shape)) // int(np.prod(shape))
    print(f"{name}: R^{n_in} -> R^{n_out}: forward mode {evaluations['forward']} passes; reverse mode "
          f"{reverse_counts['forward']} forward + {reverse_counts['backward']} backward passes")

# %% [markdown]
# **Question.** Which mode wins for `wide`, which for `tall`, and by how much? Which of the two
# shapes does training a network have, and which a sensitivity analysis of a simulation with a
# handful of parameters and thousands of outputs?

# %% [markdown] tags=["reference"]
# **Instructor answer.** `wide` ($n = 40$, $m = 1$): 40 forward-mode passes against one forward
# and one backward pass, so reverse mode wins by about a factor 20 (a backward pass costs a small
# multiple of a forward one). `tall` ($n = 2$, $m = 40$): 2 forward-mode passes against 1 + 40,
# forward mode wins by about as much. Training has the first shape (one loss, many weights), which
# is why frameworks are built around reverse mode; the simulation has the second. Forward mode
# also stores no tape: its memory does not grow with the length of the computation.

# %% [markdown]
# ## Optional D · Double backprop (2 bonus points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# The closures of Activity 1a work on arrays, so the gradient they leave in `.grad` is a plain
# array: the computation that produced it was not recorded, and it cannot be differentiated
# again. Written in **Tensor operations** instead, the backward pass is itself a graph, and the
# gradient a Tensor you can differentiate: that is PyTorch's `create_graph=True`, and it gives
# Hessian-vector products, and with them Newton steps, at the cost of a couple of passes.
#
# Write
#
# * `vjp_tensor(node, g)`: for an operation node and the Tensor `g` holding $\partial L/\partial$
#   node, the list of its contributions to its parents (in `_prev` order), each a Tensor computed
#   from Tensor operations only (`g`, the node, its parents, and constants), with the labels
#   `"+"`, `"*"`, `"@"`, `"T"`, `"sum"`, `"exp"`, `"log"` and `"relu"`. Undo broadcasting with
#   `sum_to` below, the Tensor-operation version of `unbroadcast`. For `"sum"`, handle the sums
#   this section uses, over everything or with `keepdims=True`, whose gradient broadcasts back
#   as it is (multiply it by ones of the input's shape); raise `ValueError` for any other sum and
#   any other label. `x.reciprocal()` is $1/x$ for positive $x$.
# * `grad(y, xs, create_graph=False)`: the gradients of the scalar Tensor `y` with respect to
#   each Tensor of the list `xs`, as a list of Tensors: walk the nodes in reverse topological
#   order, seed `y` with a Tensor of ones, and add up every node's contributions with Tensor `+`.
#   An `x` that `y` does not depend on gets zeros. With `create_graph=False`, return new leaves
#   holding the values (nothing recorded behind them). `.grad` is never touched.
# * `hvp(f, x, v)`: the Hessian of the scalar function `f` at the array `x`, times `v`:
#   $\nabla_x \langle \nabla f(x), v\rangle$. One `grad(..., create_graph=True)`, then the
#   engine's ordinary `backward` on $\langle g, v\rangle$; return the array of `x`'s shape.
# * `newton_step(f, x)`: $x - H^{-1}\nabla f(x)$, with $H$ built column by column from `hvp` on
#   the basis vectors (`x` flattened; `np.linalg.solve` is allowed); return an array of `x`'s
#   shape.
#
# Use smooth functions here: ReLU's second derivative is zero wherever it exists, so its
# Hessian carries no information.

# %%
def sum_to(g, shape):
    """unbroadcast in Tensor operations: the sums are recorded, so they can be differentiated."""
    if g.data.ndim > len(shape):
        g = reduce_sum(g, tuple(range(g.data.ndim - len(shape))))
    stretched = tuple(i for i, size in enumerate(shape) if size == 1 and g.shape[i] != 1)
    return reduce_sum(g, stretched, True) if stretched else g


# %% tags=["stub"] activity="D"
def vjp_tensor(node, g):
    """The contributions of `node` to its parents' gradients, as Tensors built from Tensor operations."""
    raise NotImplementedError("Complete Activity D: vjp_tensor")


def grad(y, xs, create_graph=False):
    """[dy/dx for x in xs] as Tensors; recorded (differentiable) when create_graph is True."""
    raise NotImplementedError("Complete Activity D: grad")


def hvp(f, x, v):
    """The Hessian of the scalar function f at x, times v, as an array of x's shape."""
    raise NotImplementedError("Complete Activity D: hvp")


def newton_step(f, x):
    """x - H^-1 grad f(x), with H from one hvp per entry of x."""
    raise NotImplementedError("Complete Activity D: newton_step")


# %% tags=["reference"] activity="D"
def vjp_tensor(node, g):
    a, b = (node._prev + (None,))[:2]
    if node._op == "+":
        return [sum_to(g, a.shape), sum_to(g, b.shape)]
    if node._op == "*":
        return [sum_to(g * b, a.shape), sum_to(g * a, b.shape)]  # b and a as Tensors: recorded
    if node._op == "@":
        return [g @ b.T, a.T @ g]
    if node._op == "T":
        return [g.T]
    if node._op == "sum" and g.data.ndim in (0, a.data.ndim):
        return [g * np.ones(a.shape)]
    if node._op == "exp":
        return [g * node]
    if node._op == "log":
        return [g * a.reciprocal()]
    if node._op == "relu":
        return [g * (a.data > 0)]
    raise ValueError(f"vjp_tensor has no rule for a {node._op!r} node of shape {node.shape}")


def grad(y, xs, create_graph=False):
    order, placed = [], set()

    def place(node):
        if id(node) not in placed:
            placed.add(id(node))
            for parent in node._prev:
                place(parent)
            order.append(node)

    place(y)
    grads = {id(y): Tensor(np.ones(y.shape))}
    for node in reversed(order):
        if node._prev and id(node) in grads:
            for parent, part in zip(node._prev, vjp_tensor(node, grads[id(node)])):
                grads[id(parent)] = grads[id(parent)] + part if id(parent) in grads else part
    found = [grads.get(id(x), Tensor(np.zeros(x.shape))) for x in xs]
    return found if create_graph else [Tensor(g.data) for g in found]


def hvp(f, x, v):
    leaf = Tensor(x)
    (g,) = grad(f(leaf), [leaf], create_graph=True)
    backward((g * v).sum())  # the gradient of <grad f, v>, into leaf.grad
    return leaf.grad.copy()


def newton_step(f, x):
    x = np.asarray(x, dtype=np.float64)
    columns = []
    for j in range(x.size):
        direction = np.zeros(x.size)
        direction[j] = 1.0
        columns.append(hvp(f, x, direction.reshape(x.shape)).ravel())
    leaf = Tensor(x)
    (g,) = grad(f(leaf), [leaf])
    return x - np.linalg.solve(np.stack(columns, axis=1), g.data.ravel()).reshape(x.shape)


# %% tags=["check"] activity="D" points=2
def check_second_order(expression, x, constants, v):
    what = f"f(x) = {expression} at x of shape {np.shape(x)}"

    def f(x):
        return eval(expression, globals(), {"x": x, **constants})

    def f_torch(x):
        return eval(expression, {}, {"x": x, **{k: torch.tensor(v) for k, v in constants.items()}})

    twin = t64(x)
    (want_grad,) = torch.autograd.grad(f_torch(twin), twin)
    watched = Tensor(x)
    found = grad(f(watched), [watched])
    assert isinstance(found, list) and len(found) == 1 and isinstance(found[0], Tensor), \
        f"grad of {what}: expected a list holding one Tensor, got {found!r:.80}"
    close(found[0].data, want_grad.numpy(), f"grad of {what} (torch.autograd.grad)")
    assert not found[0]._prev, f"grad of {what} with create_graph=False must return leaves"
    close(watched.grad, np.zeros(np.shape(x)), f"x.grad after grad of {what} (grad leaves .grad alone)")
    (recorded_grad,) = grad(f(Tensor(x)), [Tensor(x)], create_graph=True)
    close(recorded_grad.data, np.zeros(np.shape(x)), f"grad of {what} with respect to a Tensor it does not use")
    _, want_hvp = torch.autograd.functional.hvp(f_torch, torch.tensor(x), torch.tensor(v))
    close(hvp(f, x, v), want_hvp.numpy(), f"hvp of {what} (torch.autograd.functional.hvp)")
    hessian = torch.autograd.functional.hessian(f_torch, torch.tensor(x)).numpy().reshape(np.size(x), -1)
    want_step = x - torch.linalg.solve(torch.tensor(hessian), want_grad.reshape(-1)).numpy().reshape(np.shape(x))
    close(newton_step(f, x), want_step, f"newton_step on {what} (torch.linalg.solve with the Hessian)", tol=1e-8)


gen_d = np.random.default_rng(40)
check_second_order("(x * x * x).sum()", np.array([[1.0, -2.0, 0.5]]), {}, np.array([[1.0, 0.5, -1.0]]))
check_second_order("((x @ W).exp() + 1.0).log().sum() + (x * x).sum() * 0.5", gen_d.normal(size=(1, 3)),
                   {"W": gen_d.normal(size=(3, 4))}, gen_d.normal(size=(1, 3)))
check_second_order("(x @ W + c).tanh().sum() + (x * x).sum()", gen_d.normal(size=(1, 4)) * 0.5,
                   {"W": gen_d.normal(size=(4, 3)), "c": gen_d.normal(size=3)}, gen_d.normal(size=(1, 4)))
check_second_order("(x.T @ x).exp().sum() * 0.1 + (x * x).mean()", gen_d.normal(size=(1, 2)) * 0.3, {},
                   gen_d.normal(size=(1, 2)))
# x's row sums broadcast over x: the sum's incoming gradient, and the contribution summed back to the
# broadcast operand, both depend on x, so their rules are differentiated again
check_second_order("(x * x.sum(axis=1, keepdims=True)).tanh().sum() + (x * x).sum() * 2.0",
                   gen_d.normal(size=(2, 2)) * 0.5, {}, gen_d.normal(size=(2, 2)))
print("Activity D passed: grad, hvp and newton_step agree with torch.autograd.grad, "
      "torch.autograd.functional.hvp and torch.linalg.solve on the Hessian.")

# %% [markdown]
# **Newton against gradient descent.** On the smooth, convex
# $f(x) = \sum \operatorname{softplus}(x W) + \tfrac12 \lVert x \rVert^2$ in 6 dimensions, four
# Newton steps and four gradient-descent steps (learning rate 0.1) from the same start:

# %% requires="1a 1b 2 D"
newton_rng = np.random.default_rng(41)
W_newton = newton_rng.normal(size=(6, 8))


def softplus_objective(x):
    return ((x @ W_newton).exp() + 1.0).log().sum() + (x * x).sum() * 0.5


x_newton = x_descent = newton_rng.normal(size=(1, 6))
for step in range(1, 5):
    x_newton = newton_step(softplus_objective, x_newton)
    x_leaf = Tensor(x_descent)
    x_descent = x_descent - 0.1 * grad(softplus_objective(x_leaf), [x_leaf])[0].data
    newton_leaf = Tensor(x_newton)
    newton_norm = np.linalg.norm(grad(softplus_objective(newton_leaf), [newton_leaf])[0].data)
    descent_leaf = Tensor(x_descent)
    descent_norm = np.linalg.norm(grad(softplus_objective(descent_leaf), [descent_leaf])[0].data)
    print(f"step {step}: |gradient| after Newton {newton_norm:.2e}, after gradient descent {descent_norm:.2e}")

# %% [markdown]
# Newton's gradient norm collapses quadratically, its number of correct digits roughly doubling
# per step, while gradient descent shrinks it by a steady factor. Each Newton step cost 6
# Hessian-vector products here; for a network with a million weights nobody forms $H$, but
# Hessian-vector products still drive conjugate-gradient (truncated) Newton methods and curvature
# estimates.

# %% [markdown]
# ## Optional E · A convolution (2 bonus points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# A 2-D convolution layer, as PyTorch's `F.conv2d` computes it (a cross-correlation: the filter
# is not flipped). Inputs `x` of shape (N, C, H, W), filters `w` of shape (F, C, kh, kw), a bias
# `b` of shape (F,): the input is padded with `padding` zeros on every side, and each filter
# slides over it in steps of `stride`, giving an output of shape (N, F, OH, OW) with
# $OH = \lfloor (H + 2p - k_h)/s \rfloor + 1$ (and the same for OW):
#
# $$\text{out}[n, f, i, j] = b_f + \sum_{c, u, v} w[f, c, u, v]\; x_\text{pad}[n, c, s i + u, s j + v].$$
#
# Write `conv2d(x, w, b, stride=1, padding=0)` as a primitive: one node with the parents
# `(x, w, b)`, the label `"conv2d"`, and a closure that adds the three gradients. Every input
# entry is read by several outputs, so its gradient is a sum, and the bias is broadcast over
# the batch and both spatial axes, which its gradient sums away, as `unbroadcast` would. A
# compact way to write both passes is a loop over the $k_h k_w$ filter positions $(u, v)$: for
# each, the strided slice `x_pad[:, :, u:u + s*OH:s, v:v + s*OW:s]` of shape (N, C, OH, OW) meets
# `w[:, :, u, v]` of shape (F, C) (`np.einsum` or `np.tensordot`), and the backward pass adds
# into the same slices of a padded gradient, whose border you then drop. Loops over every output
# pixel are right too, and slow. As with every rule, a second `backward` through the same graph
# runs the closure again, and the check runs it twice.

# %% tags=["stub"] activity="E"
def conv2d(x, w, b, stride=1, padding=0):
    """The cross-correlation of x (N, C, H, W) with w (F, C, kh, kw), plus b (F,), as a new Tensor."""
    raise NotImplementedError("Complete Activity E: conv2d")


# %% tags=["reference"] activity="E"
def conv2d(x, w, b, stride=1, padding=0):
    height, width = x.shape[2:]
    kh, kw = w.shape[2:]
    edge = ((0, 0), (0, 0), (padding, padding), (padding, padding))
    padded = np.pad(x.data, edge)
    oh, ow = (height + 2 * padding - kh) // stride + 1, (width + 2 * padding - kw) // stride + 1
    spots = [(u, v, (slice(None), slice(None), slice(u, u + stride * oh, stride), slice(v, v + stride * ow, stride)))
             for u in range(kh) for v in range(kw)]
    total = sum(np.einsum("nchw,fc->nfhw", padded[window], w.data[:, :, u, v]) for u, v, window in spots)
    out = Tensor(total + b.data[:, None, None], (x, w, b), "conv2d")

    def _backward():
        g = out.grad
        grad_padded = np.zeros(padded.shape)
        for u, v, window in spots:
            w.grad[:, :, u, v] += np.einsum("nfhw,nchw->fc", g, padded[window])
            grad_padded[window] += np.einsum("nfhw,fc->nchw", g, w.data[:, :, u, v])  # windows overlap: add
        x.grad += grad_padded[:, :, padding:padding + height, padding:padding + width]
        b.grad += g.sum(axis=(0, 2, 3))  # b was broadcast over the batch and both spatial axes

    out._backward = _backward
    return out


# %% tags=["check"] activity="E" points=2
def check_conv(shape_x, shape_w, stride, padding, seed):
    rng = np.random.default_rng(seed)
    arrays = [rng.normal(size=shape_x), rng.normal(size=shape_w), rng.normal(size=shape_w[0])]
    what = f"conv2d with x {shape_x}, w {shape_w}, stride {stride}, padding {padding}"
    leaves = [Tensor(a) for a in arrays]
    earlier = [rng.normal(size=a.shape) for a in arrays]
    for leaf, prior in zip(leaves, earlier):
        leaf.grad = prior.copy()
    out = conv2d(*leaves, stride=stride, padding=padding)
    assert isinstance(out, Tensor), f"{what}: expected a new Tensor, got a {type(out).__name__}"
    assert len(out._prev) == 3 and all(p is leaf for p, leaf in zip(out._prev, leaves)), \
        f"{what}: the new node's _prev must be (x, w, b)"
    twins = [t64(a) for a in arrays]
    expected = F.conv2d(twins[0], twins[1], twins[2], stride=stride, padding=padding)
    close(out.data, expected.detach().numpy(), f"{what}: out.data (F.conv2d)")
    upstream = rng.normal(size=tuple(expected.shape))
    grads = torch.autograd.grad(expected, twins, torch.tensor(upstream))
    out.grad = upstream.copy()
    out._backward()
    for name, leaf, prior, g, sent in zip("xwb", leaves, earlier, grads, arrays):
        close(leaf.grad, prior + g.numpy(), f"{what}: {name}.grad after out._backward() (it held an earlier "
              "gradient; random out.grad)")
        close(leaf.data, sent, f"{what}: {name}.data (the inputs must not change)")
    out.grad = upstream.copy()
    out._backward()
    for name, leaf, prior, g in zip("xwb", leaves, earlier, grads):
        close(leaf.grad, prior + 2 * g.numpy(), f"{what}: {name}.grad after a second out._backward() (each run adds "
              "the same gradient: allocate the gradient buffers inside the closure)")


check_conv((1, 1, 4, 4), (1, 1, 3, 3), 1, 0, seed=50)
check_conv((2, 3, 5, 5), (4, 3, 3, 3), 1, 1, seed=51)
check_conv((2, 2, 7, 6), (3, 2, 3, 2), 2, 1, seed=52)
check_conv((1, 2, 8, 8), (2, 2, 2, 2), 2, 0, seed=53)
check_conv((3, 1, 5, 4), (2, 1, 1, 3), 3, 2, seed=54)
print("Activity E passed: conv2d values and the gradients of x, w and b agree with F.conv2d over strides, "
      "paddings and channel counts.")

# %% [markdown]
# **A small CNN on the digits.** The digits of Section 8, as images of one channel, 1 × 8 × 8:
#
# | layer | output |
# |---|---|
# | `conv2d` 1 → 8 channels, 3 × 3, stride 1, padding 1, ReLU | 8 × 8 × 8 |
# | `conv2d` 8 → 16 channels, 3 × 3, stride 2, padding 1, ReLU | 16 × 4 × 4 |
# | `flatten`, then a linear layer 256 → 10 | 10 logits |
#
# Constants, chosen to keep the run to a few seconds: He-initialised weights from
# `np.random.default_rng(0)`, zero biases, `train_epoch` (plain SGD) with batches of 32 at
# learning rate 0.1, 8 epochs. `flatten` is one more given primitive: a reshape, whose backward
# rule reshapes the gradient back.

# %% requires="1a 1b 2 3 4 E"
def flatten(a):
    """(N, ...) -> (N, everything else) as a new Tensor."""
    out = Tensor(a.data.reshape(len(a.data), -1), (a,), "flatten")

    def push_back():
        a.grad += out.grad.reshape(a.shape)

    out._backward = push_back
    return out


def he(rng, shape, fan_in):
    return Tensor(rng.normal(0.0, np.sqrt(2.0 / fan_in), size=shape))


cnn_rng = np.random.default_rng(0)
cnn_params = [he(cnn_rng, (8, 1, 3, 3), 9), Tensor(np.zeros(8)), he(cnn_rng, (16, 8, 3, 3), 72), Tensor(np.zeros(16)),
              he(cnn_rng, (256, 10), 256), Tensor(np.zeros(10))]


def cnn(images):
    w1, b1, w2, b2, w3, b3 = cnn_params
    h = conv2d(as_tensor(images), w1, b1, stride=1, padding=1).relu()
    h = conv2d(h, w2, b2, stride=2, padding=1).relu()
    return flatten(h) @ w3 + b3


def as_images(rows):
    return rows.reshape(-1, 1, 8, 8)


for epoch in range(1, 9):
    cnn_losses = train_epoch(cnn, cnn_params, as_images(X_train), y_train, cnn_rng.permutation(len(X_train)), 32, 0.1)
    if epoch % 2 == 0:
        print(f"CNN epoch {epoch}: last batch loss {cnn_losses[-1]:.4f}, validation accuracy "
              f"{accuracy(cnn, as_images(X_val), y_val):.3f}")
cnn_test_accuracy = accuracy(cnn, as_images(X_test), y_test)
print(f"CNN test accuracy: {cnn_test_accuracy:.3f} (the MLP of Section 8: {digit_test_accuracy:.3f})")

# %% [markdown]
# ## Optional F · The tape, drawn (1 bonus point)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# Graphviz draws graphs described in its DOT language. Write `to_dot(root)`, which walks `_prev`
# from `root` (`graph_nodes` of Section 2 lists every node once) and returns DOT text with
#
# * the first line `digraph tape {` and the last `}`;
# * one line per node of the graph, each node once however many paths reach it:
#   `n<id> [label="<op> <shape>"];`, where `<id>` is `id(node)` (unique while the graph lives),
#   `<op>` the node's `_op`, or `leaf` when it is empty, and `<shape>` its shape as Python prints
#   it, e.g. `n140 [label="@ (5, 8)"];`. A result made under `no_grad` has no parents but keeps
#   its `_op`, and is labelled with it;
# * one line per entry of every node's `_prev`, however many there are (conv2d's node has three):
#   `n<parent id> -> n<node id>;`. An entry that appears twice (`x * x`) gets two edges.
#
# The cell after the check renders the graph of a two-layer MLP's loss with the `graphviz`
# package, where the `dot` program is installed.

# %% tags=["stub"] activity="F"
def to_dot(root):
    """The graph behind `root` as Graphviz DOT text: a node per Tensor, an edge per _prev entry."""
    raise NotImplementedError("Complete Activity F: to_dot")


# %% tags=["reference"] activity="F"
def to_dot(root):
    lines = ["digraph tape {"]
    for node in graph_nodes(root):  # each node once, however many paths reach it
        lines.append(f'  n{id(node)} [label="{node._op or "leaf"} {node.shape}"];')
        lines += [f"  n{id(parent)} -> n{id(node)};" for parent in node._prev]  # x * x: two edges
    return "\n".join(lines + ["}"])


# %% tags=["check"] activity="F" points=1
def read_dot(text):
    """(labels by node name, the list of edges) of DOT text written in the format above."""
    lines = [line.strip() for line in text.strip().splitlines()]
    assert lines[0].startswith("digraph") and lines[0].endswith("{") and lines[-1] == "}", \
        "to_dot: the text must start with 'digraph tape {' and end with '}'"
    labels, edges = {}, []
    for line in lines[1:-1]:
        if "->" in line:
            parent, child = (part.strip(" ;") for part in line.split("->"))
            edges.append((parent, child))
        elif line:
            name, label = line.split("[label=")
            assert name.strip() not in labels, f"to_dot: the node {name.strip()} is listed twice"
            labels[name.strip()] = label.rstrip("];").strip('"')
    return labels, edges


def check_dot(root, what):
    labels, edges = read_dot(to_dot(root))
    tape = graph_nodes(root)
    want = {f"n{id(node)}": f"{node._op or 'leaf'} {node.shape}" for node in tape}
    assert set(labels) == set(want), f"to_dot on {what}: {len(labels)} nodes, expected {len(want)}, one per Tensor"
    for name, label in want.items():
        assert labels[name] == label, f"to_dot on {what}: the label of a node is {labels[name]!r}, expected {label!r}"
    expected_edges = sorted((f"n{id(p)}", f"n{id(node)}") for node in tape for p in node._prev)
    assert sorted(edges) == expected_edges, \
        f"to_dot on {what}: {len(edges)} edges, expected {len(expected_edges)}, parent -> node, one per _prev entry"


x_dot = Tensor([[1.0, -2.0]])
check_dot(x_dot, "a single leaf")
check_dot((x_dot * x_dot).sum(), "sum(x * x), where x is both parents")
shared = x_dot.relu()
check_dot((shared + shared.exp()) @ Tensor([[1.0], [2.0]]), "a node reached by two paths")
unrecorded = Tensor(x_dot.data.T @ x_dot.data, (), "@")  # what `x_dot.T @ x_dot` gives under no_grad
check_dot((unrecorded * Tensor(np.ones((2, 2)))).relu() + unrecorded,
          "a result made under no_grad (an operation without parents) used by recorded ones")
convolved = Tensor(np.zeros((1, 3, 3, 3)), (Tensor(np.ones((1, 2, 5, 5))), Tensor(np.ones((3, 2, 3, 3))),
                                            Tensor(np.ones(3))), "conv2d")
check_dot(convolved.relu().sum(), "a node with three parents, as conv2d's x, w and b")
tape_rng = np.random.default_rng(61)
check_dot(cross_entropy(MLP([3, 5, 2], tape_rng)(tape_rng.normal(size=(4, 3))), np.array([0, 1, 1, 0])),
          "the loss of an MLP([3, 5, 2])")
print("Activity F passed: to_dot lists every node once with its operation and shape, and every _prev "
      "entry as an edge.")

# %% [markdown]
# The two-layer MLP's loss, drawn. Node names hold memory addresses, which change from run to
# run, so they are renamed `t0`, `t1`, ... in order of appearance before drawing.

# %% requires="1a 1b 2 3 4 F"
import re
import shutil

dot_rng = np.random.default_rng(60)
dot_model = MLP([2, 8, 3], dot_rng)
mlp_loss = cross_entropy(dot_model(dot_rng.normal(size=(5, 2))), np.array([0, 1, 2, 1, 0]))
mlp_dot = to_dot(mlp_loss)
names = {}
mlp_dot = re.sub(r"\bn\d+\b", lambda match: names.setdefault(match.group(), f"t{len(names)}"), mlp_dot)
print(f"the graph of the MLP's loss: {len(names)} nodes, {mlp_dot.count('->')} edges")
if shutil.which("dot") is None:
    print("Graphviz's dot program is not installed, so the graph is not drawn (install the Debian "
          "package graphviz, or conda's python-graphviz); the DOT text:\n" + mlp_dot)
else:
    import graphviz
    from IPython.display import SVG, display

    # The picture itself, not the Source object, whose text form holds a memory address.
    display(SVG(graphviz.Source(mlp_dot.replace("digraph tape {", "digraph tape {\n  rankdir=BT;")).pipe(format="svg")))


# %% [markdown]
# ## 12 · Discuss
#
# 1. `multiply` passes its contributions through `unbroadcast`, `matmul` does not. What would
#    `matmul` need if it accepted batches of matrices, (B, m, n) @ (n, k)?
# 2. `cross_entropy` is one node with a hand-written rule. Name two costs of composing it from
#    primitives, and one advantage.
# 3. Why does `gradient_check` take $\max(1, |g|)$ in the denominator instead of $|g|$?
# 4. `gradient_check` agrees to about $10^{-9}$, `torch_witness` to about $10^{-17}$. Why is one
#    oracle so much sharper than the other, and why is the blunter one still worth having?

# %% [markdown] tags=["reference"]
# **Instructor answers.**
#
# 1. The batch axis B of the first operand is a broadcast of the second: the gradient of the
#    (n, k) matrix must be summed over B, `a.data.T @ out.grad` taken per batch and summed,
#    which is exactly what `unbroadcast` does for elementwise operations.
# 2. Costs: 17 nodes (memory and Python overhead) instead of 2, and the stability trick has to be
#    remembered by whoever composes it (without the shift, `exp` overflows). Advantage: no new
#    backward rule to derive and check; the composed graph is right as soon as its primitives are.
# 3. Near a zero gradient the relative error $|\hat g - g|/|g|$ explodes from noise alone;
#    flooring the denominator at 1 makes the test absolute there and relative elsewhere.
# 4. Central differences have an error of order $h^2$ plus rounding of order
#    $\varepsilon_\text{machine}/h$, about $10^{-10}$ at $h = 10^{-6}$; PyTorch computes the same
#    exact gradient, so only float64 rounding separates the two. But PyTorch shares the
#    engine's assumptions (the same model, written again), while finite differences assume
#    nothing about derivatives at all: a derivative derived wrongly twice is caught only by the
#    blunter oracle.

# %% [markdown]
# ## Sources
#
# * Andrej Karpathy's *micrograd*, whose `Value` design the `Tensor` class follows, with arrays.
# * A. G. Baydin, B. A. Pearlmutter, A. A. Radul and J. M. Siskind, "Automatic differentiation in
#   machine learning: a survey", JMLR 18 (2018).
# * A. Paszke et al., "PyTorch: an imperative style, high-performance deep learning library",
#   NeurIPS 2019; PyTorch documentation, "Autograd mechanics".
# * K. He, X. Zhang, S. Ren and J. Sun, "Delving deep into rectifiers" (2015), for the
#   $\sqrt{2/n_\text{in}}$ initialisation.
# * Data: `sklearn.datasets.load_digits` (shipped with scikit-learn, nothing is downloaded), and
#   the spiral generated on the spot.
