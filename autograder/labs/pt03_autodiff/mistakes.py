"""Wrong answers students plausibly write for pt03_autodiff, to test the checks themselves.

Each mistake replaces one or more functions of an activity's reference answer. `hint` is a
word the grader's message must contain, so that the message points at what is wrong.
"""
from dataclasses import replace

from autograder.labs.vocabulary import Mistake

MISTAKES = [
    # ------------------------------------------------------------------ 1a
    Mistake("1a", "add_vjp gives the second input no adjoint", "b_bar", """
def add_vjp(a, b, v):
    return v, np.zeros_like(v)
"""),
    Mistake("1a", "multiply_vjp swaps the two factors", "a_bar", """
def multiply_vjp(a, b, v):
    return v * a, v * b
"""),
    Mistake("1a", "multiply_vjp forgets the incoming adjoint v", "a_bar", """
def multiply_vjp(a, b, v):
    return b, a
"""),
    Mistake("1a", "matmul_vjp swaps the outer product in matrix @ vector", "a_bar", """
def matmul_vjp(a, b, v):
    if a.ndim == 1 and b.ndim == 1:
        return v * b, v * a
    if a.ndim == 2 and b.ndim == 1:
        return np.outer(b, v), a.T @ v
    if a.ndim == 1 and b.ndim == 2:
        return b @ v, np.outer(a, v)
    return v @ b.T, a.T @ v
"""),
    Mistake("1a", "matmul_vjp without the transposes", "matmul_vjp", """
def matmul_vjp(a, b, v):
    if a.ndim == 1 and b.ndim == 1:
        return v * b, v * a
    if a.ndim == 2 and b.ndim == 1:
        return np.outer(v, b), a @ v
    if a.ndim == 1 and b.ndim == 2:
        return b @ v, np.outer(a, v)
    return v @ b, a @ v
"""),
    Mistake("1a", "matmul_vjp written for matrices only", "matmul_vjp", """
def matmul_vjp(a, b, v):
    return v @ b.T, a.T @ v
"""),
    Mistake("1a", "matmul_vjp transposes the vector @ matrix outer product", "b_bar", """
def matmul_vjp(a, b, v):
    if a.ndim == 1 and b.ndim == 1:
        return v * b, v * a
    if a.ndim == 2 and b.ndim == 1:
        return np.outer(v, b), a.T @ v
    if a.ndim == 1 and b.ndim == 2:
        return b @ v, np.outer(v, a)
    return v @ b.T, a.T @ v
"""),
    Mistake("1a", "matmul_vjp reduces every case to matrix @ matrix and squeezes the results back", "matmul_vjp", """
def matmul_vjp(a, b, v):
    left = a.reshape(1, -1) if a.ndim == 1 else a
    right = b.reshape(-1, 1) if b.ndim == 1 else b
    v = np.reshape(v, (left.shape[0], right.shape[1]))
    return np.squeeze(v @ right.T), np.squeeze(left.T @ v)
"""),
    Mistake("1a", "matmul_vjp leaves b_bar transposed in matrix @ matrix", "b_bar", """
def matmul_vjp(a, b, v):
    if a.ndim == 1 and b.ndim == 1:
        return v * b, v * a
    if a.ndim == 2 and b.ndim == 1:
        return np.outer(v, b), a.T @ v
    if a.ndim == 1 and b.ndim == 2:
        return b @ v, np.outer(a, v)
    return v @ b.T, v.T @ a
"""),
    # ------------------------------------------------------------------ 1b
    Mistake("1b", "sums the extra axes at the end instead of the front", "sum_to_shape", """
def sum_to_shape(v, shape):
    v = np.asarray(v, dtype=np.float64)
    while v.ndim > len(shape):
        v = v.sum(axis=-1)
    for axis, size in enumerate(shape):
        if size == 1 and v.shape[axis] != 1:
            v = v.sum(axis=axis, keepdims=True)
    return v
"""),
    Mistake("1b", "drops keepdims on stretched axes", "shape", """
def sum_to_shape(v, shape):
    v = np.asarray(v, dtype=np.float64)
    while v.ndim > len(shape):
        v = v.sum(axis=0)
    for axis in reversed(range(len(shape))):
        if shape[axis] == 1 and v.shape[axis] != 1:
            v = v.sum(axis=axis)
    return v
"""),
    Mistake("1b", "only removes the leading axes, never the stretched ones", "shape", """
def sum_to_shape(v, shape):
    v = np.asarray(v, dtype=np.float64)
    while v.ndim > len(shape):
        v = v.sum(axis=0)
    return v
"""),
    Mistake("1b", "guesses the axis from its length, which fails for square batches", "sum_to_shape", """
def sum_to_shape(v, shape):
    v = np.asarray(v, dtype=np.float64)
    while v.ndim > len(shape):
        axis = next((i for i, n in enumerate(v.shape) if n not in shape), v.ndim - 1)
        v = v.sum(axis=axis)
    for axis, size in enumerate(shape):
        if size == 1 and v.shape[axis] != 1:
            v = v.sum(axis=axis, keepdims=True)
    return v
"""),
    Mistake("1b", "averages instead of summing", "sum_to_shape", """
def sum_to_shape(v, shape):
    v = np.asarray(v, dtype=np.float64)
    while v.ndim > len(shape):
        v = v.mean(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and v.shape[axis] != 1:
            v = v.mean(axis=axis, keepdims=True)
    return v
"""),
    Mistake("1b", "reshapes instead of reducing", "sum_to_shape", """
def sum_to_shape(v, shape):
    return np.resize(np.asarray(v, dtype=np.float64), shape)
"""),
    Mistake("1b", "if instead of while: only one prepended axis is summed away", "sum_to_shape", """
def sum_to_shape(v, shape):
    v = np.asarray(v, dtype=np.float64)
    if v.ndim > len(shape):
        v = v.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and v.shape[axis] != 1:
            v = v.sum(axis=axis, keepdims=True)
    return v
"""),
    Mistake("1b", "finds the stretched axis with shape.index(1), so only the first one is summed", "sum_to_shape", """
def sum_to_shape(v, shape):
    v = np.asarray(v, dtype=np.float64)
    while v.ndim > len(shape):
        v = v.sum(axis=0)
    if 1 in shape:
        v = v.sum(axis=list(shape).index(1), keepdims=True)
    return v
"""),
    # ------------------------------------------------------------------ 1c
    Mistake("1c", "tanh derivative computed as if y were the input", "tanh_vjp", """
def tanh_vjp(y, v):
    return v * (1 - np.tanh(y) ** 2)
"""),
    Mistake("1c", "tanh_vjp forgets the incoming adjoint", "tanh_vjp", """
def tanh_vjp(y, v):
    return 1 - y ** 2
"""),
    Mistake("1c", "tanh_vjp drops the square", "tanh_vjp", """
def tanh_vjp(y, v):
    return v * (1 - y)
"""),
    Mistake("1c", "relu passes the adjoint at exactly 0", "relu_vjp", """
def relu_vjp(x, v):
    return np.where(x >= 0, v, 0.0)
"""),
    Mistake("1c", "relu masks by the sign of v instead of x", "relu_vjp", """
def relu_vjp(x, v):
    return np.where(v > 0, v, 0.0)
"""),
    Mistake("1c", "relu returns the mask, not the masked adjoint", "relu_vjp", """
def relu_vjp(x, v):
    return (x > 0).astype(float)
"""),
    Mistake("1c", "relu lets the adjoint through where x is negative", "relu_vjp", """
def relu_vjp(x, v):
    return np.where(x < 0, v, 0.0)
"""),
    Mistake("1c", "relu tests the sign bit, so the adjoint passes at +0.0", "relu_vjp", """
def relu_vjp(x, v):
    return np.where(np.signbit(x), 0.0, v)
"""),
    Mistake("1c", "tanh_vjp forms the Jacobian with np.diag, right for vectors only", "tanh_vjp", """
def tanh_vjp(y, v):
    return np.diag(1 - y ** 2) @ v
"""),
    Mistake("1c", "relu zeroes the adjoint v in place", "modified in place", """
def relu_vjp(x, v):
    v[x <= 0] = 0.0
    return v
"""),
    # ------------------------------------------------------------------ 2
    Mistake("2", "= instead of +=: the last contribution overwrites the others", "adjoint of node", """
def backward(output, seed=None):
    order = topological_order(output)
    adjoint = initial_adjoints(order, output, seed)
    for node in reversed(order):
        if node.vjp is not None:
            for parent, share in zip(node.parents, node.vjp(adjoint[node])):
                adjoint[parent] = np.asarray(share, dtype=np.float64)
    return adjoint
"""),
    Mistake("2", "de-duplicated parents: x * x sends x one contribution", "adjoint of node", """
def backward(output, seed=None):
    order = topological_order(output)
    adjoint = initial_adjoints(order, output, seed)
    for node in reversed(order):
        if node.vjp is not None:
            shares = dict(zip(node.parents, node.vjp(adjoint[node])))
            for parent, share in shares.items():
                adjoint[parent] += share
    return adjoint
"""),
    Mistake("2", "recursion instead of an explicit stack", "chain of 1500", """
def topological_order(output):
    order, seen = [], set()

    def visit(node):
        if node in seen:
            return
        seen.add(node)
        for p in node.parents:
            visit(p)
        order.append(node)

    visit(output)
    return order
"""),
    Mistake("2", "reuses the drawing order of graph_nodes, reversed", "topological_order", """
def topological_order(output):
    return graph_nodes(output)[::-1]
"""),
    Mistake("2", "adjoints kept from one call to the next", "second backward call", """
_adjoint_cache = {}


def backward(output, seed=None):
    order = topological_order(output)
    fresh = initial_adjoints(order, output, seed)
    for node, value in fresh.items():
        _adjoint_cache[node] = _adjoint_cache.get(node, 0) + value
    adjoint = _adjoint_cache
    for node in reversed(order):
        if node.vjp is not None:
            for parent, share in zip(node.parents, node.vjp(adjoint[node])):
                adjoint[parent] = adjoint[parent] + share
    return {node: adjoint[node] for node in order}
"""),
    Mistake("2", "ignores the seed and always starts from ones", "seed", """
def backward(output, seed=None):
    order = topological_order(output)
    adjoint = {node: np.zeros(node.value.shape) for node in order}
    adjoint[output] = np.ones(output.value.shape)
    for node in reversed(order):
        if node.vjp is not None:
            for parent, share in zip(node.parents, node.vjp(adjoint[node])):
                adjoint[parent] += share
    return adjoint
"""),
    Mistake("2", "no shape check: a wrong-shaped VJP is broadcast silently", "wrong shape", """
def backward(output, seed=None):
    order = topological_order(output)
    adjoint = initial_adjoints(order, output, seed)
    for node in reversed(order):
        if node.vjp is not None:
            for parent, share in zip(node.parents, node.vjp(adjoint[node])):
                adjoint[parent] = adjoint[parent] + share
    return adjoint
"""),
    Mistake("2", "walks the nodes forward instead of in reverse", "adjoint of node", """
def backward(output, seed=None):
    order = topological_order(output)
    adjoint = initial_adjoints(order, output, seed)
    for node in order:
        if node.vjp is not None:
            for parent, share in zip(node.parents, node.vjp(adjoint[node])):
                adjoint[parent] += share
    return adjoint
"""),
    Mistake("2", "no visited set: shared nodes are listed once per path", "topological_order", """
def topological_order(output):
    order, stack = [], [(output, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
        else:
            stack.append((node, True))
            stack.extend((parent, False) for parent in node.parents)
    return order
"""),
    Mistake("2", "calls a node's VJP once per parent instead of once per node", "exactly once", """
def backward(output, seed=None):
    order = topological_order(output)
    adjoint = initial_adjoints(order, output, seed)
    for node in reversed(order):
        if node.vjp is not None:
            for i, parent in enumerate(node.parents):
                share = np.asarray(node.vjp(adjoint[node])[i], dtype=np.float64)
                if share.shape != parent.value.shape:
                    raise ValueError("a VJP returned an adjoint of the wrong shape")
                adjoint[parent] += share
    return adjoint
"""),
    Mistake("2", "checks the shapes with len(), which has no answer for scalar nodes", "scalar nodes", """
def backward(output, seed=None):
    order = topological_order(output)
    adjoint = initial_adjoints(order, output, seed)
    for node in reversed(order):
        if node.vjp is not None:
            for parent, share in zip(node.parents, node.vjp(adjoint[node])):
                if len(share) != len(parent.value):
                    raise ValueError("a VJP returned an adjoint of the wrong length")
                adjoint[parent] += share
    return adjoint
"""),
    # ------------------------------------------------------------------ 3
    Mistake("3", "forgets to update the bias", "b", """
def classifier_step(X, targets, W, b, lr):
    weights, bias = Tensor(W), Tensor(b)
    logits = Tensor(X) @ weights.T + bias
    loss = cross_entropy(logits, targets)
    adjoints = backward(loss)
    dW, db = adjoints[weights], adjoints[bias]
    return {"logits": logits.value, "loss": float(loss.value), "dW": dW, "db": db, "W": W - lr * dW, "b": b}
"""),
    Mistake("3", "returns the loss as a 0-d array", "Python float", """
def classifier_step(X, targets, W, b, lr):
    weights, bias = Tensor(W), Tensor(b)
    logits = Tensor(X) @ weights.T + bias
    loss = cross_entropy(logits, targets)
    adjoints = backward(loss)
    dW, db = adjoints[weights], adjoints[bias]
    return {"logits": logits.value, "loss": loss.value, "dW": dW, "db": db, "W": W - lr * dW, "b": b - lr * db}
"""),
    Mistake("3", "updates W and b in place", "modified in place", """
def classifier_step(X, targets, W, b, lr):
    weights, bias = Tensor(W), Tensor(b)
    logits = Tensor(X) @ weights.T + bias
    loss = cross_entropy(logits, targets)
    adjoints = backward(loss)
    dW, db = adjoints[weights], adjoints[bias]
    W -= lr * dW
    b -= lr * db
    return {"logits": logits.value, "loss": float(loss.value), "dW": dW, "db": db, "W": W, "b": b}
"""),
    Mistake("3", "steps up the gradient instead of down", "W", """
def classifier_step(X, targets, W, b, lr):
    weights, bias = Tensor(W), Tensor(b)
    logits = Tensor(X) @ weights.T + bias
    loss = cross_entropy(logits, targets)
    adjoints = backward(loss)
    dW, db = adjoints[weights], adjoints[bias]
    return {"logits": logits.value, "loss": float(loss.value), "dW": dW, "db": db,
            "W": W + lr * dW, "b": b + lr * db}
"""),
    Mistake("3", "logits X @ W without the transpose", "classifier_step", """
def classifier_step(X, targets, W, b, lr):
    weights, bias = Tensor(W), Tensor(b)
    logits = Tensor(X) @ weights + bias
    loss = cross_entropy(logits, targets)
    adjoints = backward(loss)
    dW, db = adjoints[weights], adjoints[bias]
    return {"logits": logits.value, "loss": float(loss.value), "dW": dW, "db": db, "W": W - lr * dW, "b": b - lr * db}
"""),
    Mistake("3", "divides the gradient by the batch size a second time", "dW", """
def classifier_step(X, targets, W, b, lr):
    weights, bias = Tensor(W), Tensor(b)
    logits = Tensor(X) @ weights.T + bias
    loss = cross_entropy(logits, targets)
    adjoints = backward(loss)
    dW, db = adjoints[weights] / len(X), adjoints[bias] / len(X)
    return {"logits": logits.value, "loss": float(loss.value), "dW": dW, "db": db, "W": W - lr * dW, "b": b - lr * db}
"""),
    Mistake("3", "returns the gradients under each other's names", "dW", """
def classifier_step(X, targets, W, b, lr):
    weights, bias = Tensor(W), Tensor(b)
    logits = Tensor(X) @ weights.T + bias
    loss = cross_entropy(logits, targets)
    adjoints = backward(loss)
    dW, db = adjoints[weights], adjoints[bias]
    return {"logits": logits.value, "loss": float(loss.value), "dW": db, "db": dW, "W": W - lr * dW, "b": b - lr * db}
"""),
    # ------------------------------------------------------------------ A
    Mistake("A", "forgets the ReLU: a linear model with two layers", "mlp_step", """
def mlp_step(X, targets, params, lr):
    leaf = {key: Tensor(value) for key, value in params.items()}
    hidden = Tensor(X) @ leaf["W1"].T + leaf["b1"]
    loss = cross_entropy(hidden @ leaf["W2"].T + leaf["b2"], targets)
    adjoints = backward(loss)
    return float(loss.value), {key: params[key] - lr * adjoints[leaf[key]] for key in params}
"""),
    Mistake("A", "never updates the output bias b2", "b2", """
def mlp_step(X, targets, params, lr):
    leaf = {key: Tensor(value) for key, value in params.items()}
    hidden = (Tensor(X) @ leaf["W1"].T + leaf["b1"]).relu()
    loss = cross_entropy(hidden @ leaf["W2"].T + leaf["b2"], targets)
    adjoints = backward(loss)
    new = {key: params[key] - lr * adjoints[leaf[key]] for key in ("W1", "b1", "W2")}
    return float(loss.value), {**new, "b2": params["b2"]}
"""),
    Mistake("A", "tanh instead of ReLU in the hidden layer", "mlp_step", """
def mlp_step(X, targets, params, lr):
    leaf = {key: Tensor(value) for key, value in params.items()}
    hidden = (Tensor(X) @ leaf["W1"].T + leaf["b1"]).tanh()
    loss = cross_entropy(hidden @ leaf["W2"].T + leaf["b2"], targets)
    adjoints = backward(loss)
    return float(loss.value), {key: params[key] - lr * adjoints[leaf[key]] for key in params}
"""),
    Mistake("A", "returns the loss after the update instead of before", "loss", """
def mlp_step(X, targets, params, lr):
    def forward(values):
        leaf = {key: Tensor(value) for key, value in values.items()}
        hidden = (Tensor(X) @ leaf["W1"].T + leaf["b1"]).relu()
        return leaf, cross_entropy(hidden @ leaf["W2"].T + leaf["b2"], targets)

    leaf, loss = forward(params)
    adjoints = backward(loss)
    new = {key: params[key] - lr * adjoints[leaf[key]] for key in params}
    return float(forward(new)[1].value), new
"""),
    Mistake("A", "updates the parameters passed in, in place", "modified in place", """
def mlp_step(X, targets, params, lr):
    leaf = {key: Tensor(value) for key, value in params.items()}
    hidden = (Tensor(X) @ leaf["W1"].T + leaf["b1"]).relu()
    loss = cross_entropy(hidden @ leaf["W2"].T + leaf["b2"], targets)
    adjoints = backward(loss)
    for key in params:
        params[key] -= lr * adjoints[leaf[key]]
    return float(loss.value), params
"""),
    # ------------------------------------------------------------------ B
    Mistake("B", "no ValueError for a vector result: seeds it with ones", "ValueError", """
def grad(function):
    def gradient(x):
        leaf = Tensor(x)
        out = as_tensor(function(leaf))
        adjoints = backward(out, np.ones(out.value.shape))
        return adjoints.get(leaf, np.zeros(leaf.value.shape))
    return gradient
"""),
    Mistake("B", "returns the function's value, not its gradient", "grad", """
def grad(function):
    def gradient(x):
        leaf = Tensor(x)
        out = as_tensor(function(leaf))
        if out.value.shape != ():
            raise ValueError("grad needs a scalar result")
        backward(out)
        return out.value
    return gradient
"""),
    Mistake("B", "returns None when the result does not depend on x", "const(7.0)", """
def grad(function):
    def gradient(x):
        leaf = Tensor(x)
        out = as_tensor(function(leaf))
        if out.value.shape != ():
            raise ValueError("grad needs a scalar result")
        return backward(out).get(leaf)
    return gradient
"""),
    Mistake("B", "differentiates with respect to a copy made after the call", "grad", """
def grad(function):
    def gradient(x):
        out = as_tensor(function(Tensor(x)))
        if out.value.shape != ():
            raise ValueError("grad needs a scalar result")
        return backward(out).get(Tensor(x), np.zeros(np.shape(x)))
    return gradient
"""),
    Mistake("B", "returns the gradient flattened into a vector", "grad", """
def grad(function):
    def gradient(x):
        leaf = Tensor(x)
        out = as_tensor(function(leaf))
        if out.value.shape != ():
            raise ValueError("grad needs a scalar result")
        return np.ravel(backward(out).get(leaf, np.zeros(leaf.value.shape)))
    return gradient
"""),
    Mistake("B", "grad by central differences of the forward pass, one pass per input", "reverse mode", """
def grad(function, h=1e-6):
    def gradient(x):
        x = np.asarray(x, dtype=np.float64)
        if as_tensor(function(Tensor(x))).value.shape != ():
            raise ValueError("grad needs a scalar result")
        slopes = np.zeros(x.shape)
        for index in np.ndindex(*x.shape):
            up, down = x.copy(), x.copy()
            up[index] += h
            down[index] -= h
            slopes[index] = (as_tensor(function(Tensor(up))).value - as_tensor(function(Tensor(down))).value) / (2 * h)
        return slopes
    return gradient
"""),
    Mistake("B", "tests the result's size instead of its shape: a (1,) result passes", "ValueError", """
def grad(function):
    def gradient(x):
        leaf = Tensor(x)
        out = as_tensor(function(leaf))
        if out.value.size != 1:
            raise ValueError("grad needs a single number")
        adjoints = backward(out, np.ones(out.value.shape))
        return adjoints.get(leaf, np.zeros(leaf.value.shape))
    return gradient
"""),
    # ------------------------------------------------------------------ C
    Mistake("C", "arranges the result input-first (the transposed Jacobian)", "jacobian", """
def jacobian(function, value):
    leaf = Tensor(value)
    out = as_tensor(function(leaf))
    rows = []
    for j in range(out.value.size):
        seed = np.zeros(out.value.size)
        seed[j] = 1.0
        rows.append(backward(out, seed.reshape(out.value.shape)).get(leaf, np.zeros(leaf.value.shape)))
    flat = np.array(rows).reshape(out.value.size, leaf.value.size)
    return flat.T.reshape(leaf.value.shape + out.value.shape)
"""),
    Mistake("C", "seeds every pass with ones instead of a one-hot vector", "jacobian", """
def jacobian(function, value):
    leaf = Tensor(value)
    out = as_tensor(function(leaf))
    rows = []
    for j in range(out.value.size):
        seed = np.ones(out.value.shape)
        rows.append(backward(out, seed).get(leaf, np.zeros(leaf.value.shape)))
    return np.array(rows).reshape(out.value.shape + leaf.value.shape)
"""),
    Mistake("C", "never clears the previous one-hot entry", "jacobian", """
def jacobian(function, value):
    leaf = Tensor(value)
    out = as_tensor(function(leaf))
    rows, seed = [], np.zeros(out.value.size)
    for j in range(out.value.size):
        seed[j] = 1.0
        rows.append(backward(out, seed.reshape(out.value.shape)).get(leaf, np.zeros(leaf.value.shape)))
    return np.array(rows).reshape(out.value.shape + leaf.value.shape)
"""),
    Mistake("C", "fails for a function that ignores its input", "const", """
def jacobian(function, value):
    leaf = Tensor(value)
    out = as_tensor(function(leaf))
    rows = []
    for j in range(out.value.size):
        seed = np.zeros(out.value.size)
        seed[j] = 1.0
        rows.append(backward(out, seed.reshape(out.value.shape))[leaf])
    return np.array(rows).reshape(out.value.shape + leaf.value.shape)
"""),
    Mistake("C", "counts the outputs with shape[0], as if every output were a vector", "jacobian", """
def jacobian(function, value):
    leaf = Tensor(value)
    out = as_tensor(function(leaf))
    rows = []
    for j in range(out.value.shape[0]):
        seed = np.zeros(out.value.shape[0])
        seed[j] = 1.0
        rows.append(backward(out, seed).get(leaf, np.zeros(leaf.value.shape)))
    return np.array(rows)
"""),
]

# What a student whose answer behaves like a mistake reads (autograder/diagnosis/matching.py), by
# description. Mistakes the hidden cases cannot tell apart share one advice.
MULTIPLY = ("Your multiply_vjp's adjoints have the wrong values: each input's adjoint is the incoming v times the "
            "derivative with respect to that input, which is the other factor.")
REDUCE = ("Your sum_to_shape changes the values while reducing: the adjoint of a broadcast is a sum over the "
          "stretched and prepended axes, neither a mean nor a reshape.")
TANH = "Your tanh_vjp's local derivative is wrong: with y = tanh(x) it is 1 - y squared, computed from the output y."
MODEL = ("Your training step's losses differ from the first call: check the hidden layer's activation (ReLU) and "
         "that the loss you return is the one computed before the update.")
ADVICE = {
    "add_vjp gives the second input no adjoint":
        "Your add_vjp gives the second input no adjoint; both inputs of a sum receive v.",
    "multiply_vjp swaps the two factors": MULTIPLY,
    "multiply_vjp forgets the incoming adjoint v": MULTIPLY,
    "matmul_vjp swaps the outer product in matrix @ vector":
        "Your matmul_vjp builds the matrix's adjoint for matrix @ vector with the outer product the wrong way "
        "round; check the shapes it must have.",
    "matmul_vjp without the transposes":
        "Your matmul_vjp multiplies by the other operand without transposing it, so shapes or values come out "
        "wrong.",
    "matmul_vjp written for matrices only":
        "Your matmul_vjp handles matrices only; matmul also takes vectors on either side, and their adjoints "
        "need the outer product or a vector result.",
    "matmul_vjp transposes the vector @ matrix outer product":
        "Your matmul_vjp gives the matrix of vector @ matrix a transposed adjoint; check which axis the vector "
        "contracts.",
    "matmul_vjp reduces every case to matrix @ matrix and squeezes the results back":
        "Your matmul_vjp turns vectors into matrices and squeezes afterwards, which loses the right shape when "
        "a dimension is 1.",
    "matmul_vjp leaves b_bar transposed in matrix @ matrix":
        "Your matmul_vjp returns the right operand's adjoint transposed in matrix @ matrix.",
    "sums the extra axes at the end instead of the front":
        "Your sum_to_shape sums the trailing axes; broadcasting prepends axes on the left, so sum the leading "
        "ones.",
    "drops keepdims on stretched axes":
        "Your sum_to_shape drops a stretched size-1 axis after summing it; keep it so the result has the "
        "target shape.",
    "only removes the leading axes, never the stretched ones":
        "Your sum_to_shape sums the prepended axes but not the size-1 axes that were stretched.",
    "guesses the axis from its length, which fails for square batches":
        "Your sum_to_shape picks axes by their length, which is ambiguous when two axes have the same size. "
        "Compare the shapes position by position.",
    "averages instead of summing": REDUCE,
    "reshapes instead of reducing": REDUCE,
    "if instead of while: only one prepended axis is summed away":
        "Your sum_to_shape removes one prepended axis only; there can be several.",
    "finds the stretched axis with shape.index(1), so only the first one is summed":
        "Your sum_to_shape sums the first stretched axis only; a shape can have several size-1 axes to sum.",
    "tanh derivative computed as if y were the input": TANH,
    "tanh_vjp forgets the incoming adjoint":
        "Your tanh_vjp returns the local derivative without multiplying by the incoming adjoint v.",
    "tanh_vjp drops the square": TANH,
    "relu passes the adjoint at exactly 0":
        "Your relu VJP passes the adjoint where x is exactly 0; as PyTorch does, give 0 there.",
    "relu masks by the sign of v instead of x":
        "Your relu VJP decides by the adjoint's sign; the mask comes from the input x.",
    "relu returns the mask, not the masked adjoint":
        "Your relu VJP returns the mask alone: multiply the adjoint by it.",
    "relu lets the adjoint through where x is negative":
        "Your relu VJP passes the adjoint where x is negative; it flows only where x is positive.",
    "relu tests the sign bit, so the adjoint passes at +0.0":
        "Your relu VJP tests the sign bit, so the adjoint passes at +0.0; compare x with 0 instead.",
    "tanh_vjp forms the Jacobian with np.diag, right for vectors only":
        "Your tanh_vjp builds a diagonal Jacobian, which works for vectors only; an elementwise function's VJP "
        "is an elementwise product.",
    "relu zeroes the adjoint v in place":
        "Your relu VJP writes into the adjoint v, which the caller may still use; return a new array.",
    "= instead of +=: the last contribution overwrites the others":
        "Your backward overwrites a node's adjoint with each new contribution; contributions from every path "
        "must be added.",
    "de-duplicated parents: x * x sends x one contribution":
        "Your backward sends x a single contribution for x * x; each parent slot contributes, even when the "
        "same node fills both.",
    "recursion instead of an explicit stack":
        "Your backward recurses, which fails on deep graphs. Walk the graph with an explicit stack.",
    "reuses the drawing order of graph_nodes, reversed":
        "Your backward reuses graph_nodes' order, which is not a topological order. Build your own order.",
    "adjoints kept from one call to the next":
        "Your backward keeps adjoints from an earlier call, so a second call adds to the first's results.",
    "ignores the seed and always starts from ones":
        "Your backward ignores the seed it is given and starts from ones.",
    "no shape check: a wrong-shaped VJP is broadcast silently":
        "Your backward accepts a VJP result of the wrong shape; check each adjoint against its node's shape "
        "and raise.",
    "walks the nodes forward instead of in reverse":
        "Your backward visits nodes from the inputs forward; adjoints flow from the output back, in reverse "
        "topological order.",
    "no visited set: shared nodes are listed once per path":
        "Your order lists a shared node once per path that reaches it, so its VJP runs more than once. Keep a "
        "set of visited nodes.",
    "calls a node's VJP once per parent instead of once per node":
        "Your backward calls a node's VJP once for each parent; call it once per node and share out its "
        "results.",
    "checks the shapes with len(), which has no answer for scalar nodes":
        "Your shape check uses len(), which fails for 0-d (scalar) nodes. Compare shapes.",
    "forgets to update the bias":
        "Your training step leaves the bias unchanged; every parameter takes a step.",
    "returns the loss as a 0-d array":
        "Your training step returns the loss as a 0-d array; return a Python float.",
    "updates W and b in place":
        "Your training step changes the caller's W and b in place; return new arrays.",
    "steps up the gradient instead of down":
        "Your training step moves along the gradient; descent goes against it.",
    "logits X @ W without the transpose":
        "Your logits multiply X by W without transposing W, so the shapes or values are wrong. Check W's "
        "shape.",
    "divides the gradient by the batch size a second time":
        "Your gradient is divided by the batch size twice: the mean in the loss already does it once.",
    "returns the gradients under each other's names":
        "Your training step returns the gradients swapped; check the order of what you return.",
    "forgets the ReLU: a linear model with two layers": MODEL,
    "never updates the output bias b2":
        "Your training step never updates the output bias b2; every parameter takes a step.",
    "tanh instead of ReLU in the hidden layer": MODEL,
    "returns the loss after the update instead of before": MODEL,
    "updates the parameters passed in, in place":
        "Your training step changes the parameters passed in; return new ones and leave the inputs alone.",
    "no ValueError for a vector result: seeds it with ones":
        "Your grad accepts a function with a vector result; the gradient is defined for a scalar result, so "
        "raise a ValueError.",
    "returns the function's value, not its gradient":
        "Your grad returns the function's value; it must return the gradient.",
    "returns None when the result does not depend on x":
        "Your grad returns None when the result does not depend on x; the gradient is then zeros of x's shape.",
    "differentiates with respect to a copy made after the call":
        "Your grad takes the gradient with respect to a copy made after calling f, which is not in f's graph.",
    "returns the gradient flattened into a vector":
        "Your grad returns the gradient flattened; it must have x's shape.",
    "grad by central differences of the forward pass, one pass per input":
        "Your grad uses finite differences, one pass per input, which is too slow and too inexact here; this "
        "activity asks for one reverse pass.",
    "tests the result's size instead of its shape: a (1,) result passes":
        "Your grad accepts a result of shape (1,); only a 0-d result is a scalar here.",
    "arranges the result input-first (the transposed Jacobian)":
        "Your jacobian is transposed: row i holds the gradient of output i.",
    "seeds every pass with ones instead of a one-hot vector":
        "Your jacobian seeds every backward pass with ones; each pass picks one output with a one-hot seed.",
    "never clears the previous one-hot entry":
        "Your jacobian's seed keeps earlier one-hot entries; each pass must select a single output.",
    "fails for a function that ignores its input":
        "Your jacobian fails when f does not depend on x; its Jacobian is then zeros.",
    "counts the outputs with shape[0], as if every output were a vector":
        "Your jacobian counts outputs by the first dimension only; a matrix output has more entries than that.",
}
MISTAKES = [replace(mistake, advice=ADVICE.get(mistake.description, "")) for mistake in MISTAKES]
