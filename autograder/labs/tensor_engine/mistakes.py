"""Wrong answers students plausibly write for tensor_engine, to test the checks themselves.

Each mistake replaces one or more functions of an activity's reference answer. `hint` is a
phrase the grader's message must contain, so that the message points at what is wrong.
"""
from dataclasses import replace

from autograder.labs.vocabulary import Mistake, reference_function


def variant(correct, wrong, instead):
    """`correct` with its one occurrence of `wrong` replaced by `instead`: many optional
    activities' mistakes below are each one slip in the reference answer."""
    assert correct.count(wrong) == 1, wrong
    return correct.replace(wrong, instead)


ADAM = reference_function("tensor_engine", "adam_step")
NO_GRAD = reference_function("tensor_engine", "no_grad")
VJP_TENSOR = reference_function("tensor_engine", "vjp_tensor")
GRAD = reference_function("tensor_engine", "grad")
CROSS_ENTROPY = reference_function("tensor_engine", "cross_entropy")
SGD_STEP = reference_function("tensor_engine", "sgd_step")
ZERO_GRAD = reference_function("tensor_engine", "zero_grad")
MLP_FORWARD = reference_function("tensor_engine", "mlp_forward")
GRADIENT_CHECK = reference_function("tensor_engine", "gradient_check")
TORCH_WITNESS = reference_function("tensor_engine", "torch_witness")
BACKWARD = reference_function("tensor_engine", "backward")
# Answers shaped otherwise than the reference (the filters in a name of their own; an explicit
# walk of the graph), so that their slips are ones such answers make.
CONV2D = """
def conv2d(x, w, b, stride=1, padding=0):
    height, width = x.shape[2:]
    kh, kw = w.shape[2:]
    padded = np.pad(x.data, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh, ow = (height + 2 * padding - kh) // stride + 1, (width + 2 * padding - kw) // stride + 1
    spots = [(u, v, (slice(None), slice(None), slice(u, u + stride * oh, stride), slice(v, v + stride * ow, stride)))
             for u in range(kh) for v in range(kw)]
    filters = w.data
    total = sum(np.einsum("nchw,fc->nfhw", padded[window], filters[:, :, u, v]) for u, v, window in spots)
    out = Tensor(total + b.data[:, None, None], (x, w, b), "conv2d")

    def _backward():
        g = out.grad
        grad_padded = np.zeros(padded.shape)
        for u, v, window in spots:
            w.grad[:, :, u, v] += np.einsum("nfhw,nchw->fc", g, padded[window])
            grad_padded[window] += np.einsum("nfhw,fc->nchw", g, filters[:, :, u, v])
        x.grad += grad_padded[:, :, padding:padding + height, padding:padding + width]
        b.grad += g.sum(axis=(0, 2, 3))

    out._backward = _backward
    return out
"""
TO_DOT = """
def to_dot(root):
    lines, seen, todo = ["digraph tape {"], set(), [root]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        lines.append(f'  n{id(node)} [label="{node._op or "leaf"} {node.shape}"];')
        for parent in node._prev:
            lines.append(f"  n{id(parent)} -> n{id(node)};")
            todo.append(parent)
    return "\\n".join(lines + ["}"])
"""


MISTAKES = [
    # ------------------------------------------------------------------ 1a
    Mistake("1a", "multiply assigns into .grad instead of adding (a missing +=)", "a.grad", """
def multiply(a, b):
    out = Tensor(a.data * b.data, (a, b), "*")

    def _backward():
        a.grad = unbroadcast(out.grad * b.data, a.shape)
        b.grad = unbroadcast(out.grad * a.data, b.shape)

    out._backward = _backward
    return out
"""),
    Mistake("1a", "multiply gives each factor its own value as slope", "a.grad", """
def multiply(a, b):
    out = Tensor(a.data * b.data, (a, b), "*")

    def _backward():
        a.grad += unbroadcast(out.grad * a.data, a.shape)
        b.grad += unbroadcast(out.grad * b.data, b.shape)

    out._backward = _backward
    return out
"""),
    Mistake("1a", "multiply forgets to undo broadcasting", "broadcast", """
def multiply(a, b):
    out = Tensor(a.data * b.data, (a, b), "*")

    def _backward():
        a.grad += out.grad * b.data
        b.grad += out.grad * a.data

    out._backward = _backward
    return out
"""),
    Mistake("1a", "multiply undoes broadcasting by summing the wrong axes (the trailing ones)", "b.grad", """
def multiply(a, b):
    out = Tensor(a.data * b.data, (a, b), "*")

    def reduce(grad, shape):
        while len(grad.shape) > len(shape):
            grad = grad.sum(axis=-1)
        for axis, size in enumerate(shape):
            if size == 1 and grad.shape[axis] != 1:
                grad = grad.sum(axis=axis, keepdims=True)
        return grad

    def _backward():
        a.grad += reduce(out.grad * b.data, a.shape)
        b.grad += reduce(out.grad * a.data, b.shape)

    out._backward = _backward
    return out
"""),
    Mistake("1a", "multiply finds and sums one stretched axis per operand, not all of them", "multiply", """
def multiply(a, b):
    out = Tensor(a.data * b.data, (a, b), "*")

    def reduce(grad, shape):
        for _ in range(grad.ndim - len(shape)):
            grad = grad.sum(axis=0)
        if grad.shape != shape:
            stretched = next(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
            grad = grad.sum(axis=stretched, keepdims=True)
        return grad

    def _backward():
        a.grad += reduce(out.grad * b.data, a.shape)
        b.grad += reduce(out.grad * a.data, b.shape)

    out._backward = _backward
    return out
"""),
    Mistake("1a", "matmul leaves out the transposes", "a.grad", """
def matmul(a, b):
    out = Tensor(a.data @ b.data, (a, b), "@")

    def _backward():
        a.grad += out.grad @ b.data
        b.grad += a.data @ out.grad

    out._backward = _backward
    return out
"""),
    Mistake("1a", "reduce_sum broadcasts the gradient back without reinserting the summed axes", "reduce_sum", """
def reduce_sum(a, axis=None, keepdims=False):
    out = Tensor(a.data.sum(axis=axis, keepdims=keepdims), (a,), "sum")

    def _backward():
        a.grad += np.broadcast_to(out.grad, a.shape)

    out._backward = _backward
    return out
"""),
    Mistake("1a", "reduce_sum ignores keepdims in the forward pass", "keepdims", """
def reduce_sum(a, axis=None, keepdims=False):
    out = Tensor(a.data.sum(axis=axis), (a,), "sum")

    def _backward():
        g = out.grad if axis is None else np.expand_dims(out.grad, axis)
        a.grad += np.broadcast_to(g, a.shape)

    out._backward = _backward
    return out
"""),
    Mistake("1a", "reduce_sum puts the summed axes back one at a time, in the order given", "reduce_sum", """
def reduce_sum(a, axis=None, keepdims=False):
    out = Tensor(a.data.sum(axis=axis, keepdims=keepdims), (a,), "sum")

    def _backward():
        upstream = out.grad
        if axis is not None and not keepdims:
            for one in (axis if isinstance(axis, tuple) else (axis,)):
                upstream = np.expand_dims(upstream, one)
        a.grad += np.broadcast_to(upstream, a.shape)

    out._backward = _backward
    return out
"""),
    Mistake("1a", "reduce_sum turns a negative axis positive when it comes alone, not inside a tuple", "reduce_sum",
            """
def reduce_sum(a, axis=None, keepdims=False):
    out = Tensor(a.data.sum(axis=axis, keepdims=keepdims), (a,), "sum")
    if axis is None:
        axes = tuple(range(a.data.ndim))
    elif isinstance(axis, int):
        axes = (axis % a.data.ndim,)
    else:
        axes = axis
    kept = tuple(1 if i in axes else size for i, size in enumerate(a.shape))

    def _backward():
        a.grad += np.broadcast_to(np.reshape(out.grad, kept), a.shape)

    out._backward = _backward
    return out
"""),
    Mistake("1a", "exp's rule multiplies by the input instead of the output", "exp", """
def exp(a):
    out = Tensor(np.exp(a.data), (a,), "exp")

    def _backward():
        a.grad += out.grad * a.data

    out._backward = _backward
    return out
"""),
    Mistake("1a", "log's rule multiplies by the input instead of dividing", "log", """
def log(a):
    out = Tensor(np.log(a.data), (a,), "log")

    def _backward():
        a.grad += out.grad * a.data

    out._backward = _backward
    return out
"""),
    Mistake("1a", "relu lets the gradient through at exactly 0", "relu", """
def relu(a):
    out = Tensor(np.maximum(a.data, 0.0), (a,), "relu")

    def _backward():
        a.grad += out.grad * (a.data >= 0)

    out._backward = _backward
    return out
"""),
    # ------------------------------------------------------------------ 1b
    Mistake("1b", "cross_entropy exponentiates the logits without subtracting the row maximum", "1000", """
def cross_entropy(logits, y):
    e = np.exp(logits.data)
    probs = e / e.sum(axis=1, keepdims=True)
    rows, n = np.arange(len(y)), len(y)
    out = Tensor(-np.log(probs[rows, y]).mean(), (logits,), "cross_entropy")

    def _backward():
        slope = probs.copy()
        slope[rows, y] -= 1.0
        logits.grad += out.grad * slope / n

    out._backward = _backward
    return out
"""),
    Mistake("1b", "cross_entropy's rule forgets to divide by n", "logits.grad", """
def cross_entropy(logits, y):
    z = logits.data - logits.data.max(axis=1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    rows = np.arange(len(y))
    out = Tensor(-log_probs[rows, y].mean(), (logits,), "cross_entropy")

    def _backward():
        slope = np.exp(log_probs)
        slope[rows, y] -= 1.0
        logits.grad += out.grad * slope

    out._backward = _backward
    return out
"""),
    Mistake("1b", "cross_entropy's rule ignores the gradient that reached the loss", "logits.grad", """
def cross_entropy(logits, y):
    z = logits.data - logits.data.max(axis=1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    rows, n = np.arange(len(y)), len(y)
    out = Tensor(-log_probs[rows, y].mean(), (logits,), "cross_entropy")

    def _backward():
        slope = np.exp(log_probs)
        slope[rows, y] -= 1.0
        logits.grad += slope / n

    out._backward = _backward
    return out
"""),
    Mistake("1b", "cross_entropy assigns logits.grad instead of adding to it", "logits.grad", """
def cross_entropy(logits, y):
    z = logits.data - logits.data.max(axis=1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    rows, n = np.arange(len(y)), len(y)
    out = Tensor(-log_probs[rows, y].mean(), (logits,), "cross_entropy")

    def _backward():
        slope = np.exp(log_probs)
        slope[rows, y] -= 1.0
        logits.grad = out.grad * slope / n

    out._backward = _backward
    return out
"""),
    Mistake("1b", "cross_entropy is composed from the primitives instead of being one node", "_prev", """
def cross_entropy(logits, y):
    moved = logits - logits.data.max(axis=1, keepdims=True)
    lse = moved.exp().sum(axis=1, keepdims=True).log()
    picked = (moved * np.eye(logits.shape[1])[y]).sum(axis=1, keepdims=True)
    return (lse - picked).mean()
"""),
    Mistake("1b", "cross_entropy's rule writes P - Y into the softmax its forward pass saved", "second",
            variant(variant(CROSS_ENTROPY, "        slope = np.exp(log_probs)  # P\n", ""),
                    "    rows, n =", "    slope = np.exp(log_probs)\n    rows, n =")),
    # ------------------------------------------------------------------ 2
    Mistake("2", "backward seeds the root with a 0-d 1.0 whatever the root's shape", "root",
            variant(BACKWARD, "np.ones_like(root.data)", "np.array(1.0)")),
    Mistake("2", "backward recurses into the parents at once, with no order and no memory", "exactly once", """
def backward(root):
    root.grad = np.ones_like(root.data)

    def push(node):
        node._backward()
        for parent in node._prev:
            push(parent)

    push(root)
"""),
    Mistake("2", "backward runs each rule in the order a depth-first search discovers the nodes", "after backward", """
def backward(root):
    root.grad = np.ones_like(root.data)
    found, seen, todo = [], set(), [root]
    while todo:
        node = todo.pop()
        if id(node) not in seen:
            seen.add(id(node))
            found.append(node)
            todo.extend(node._prev)
    for node in found:
        node._backward()
"""),
    Mistake("2", "backward zeroes every .grad in the graph before it starts", "held an earlier gradient", """
def backward(root):
    order, placed = [], set()

    def place(node):
        if id(node) in placed:
            return
        placed.add(id(node))
        for parent in node._prev:
            place(parent)
        order.append(node)

    place(root)
    for node in order:
        node.grad = np.zeros_like(node.data)
    root.grad = np.ones_like(root.data)
    for node in reversed(order):
        node._backward()
"""),
    Mistake("2", "numerical_grad takes a one-sided difference", "numerical_grad", """
def numerical_grad(f, arrays, h=1e-6):
    estimates = []
    for array in arrays:
        slopes = np.zeros(array.shape)
        for index in np.ndindex(*array.shape):
            kept = array[index]
            base = f()
            array[index] = kept + h
            slopes[index] = (f() - base) / h
            array[index] = kept
        estimates.append(slopes)
    return estimates
"""),
    Mistake("2", "numerical_grad divides the central difference by h instead of 2h", "numerical_grad", """
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
            array[index] = kept
            slopes[index] = (above - below) / h
        estimates.append(slopes)
    return estimates
"""),
    Mistake("2", "numerical_grad leaves every entry at x - h", "numerical_grad", """
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
            slopes[index] = (above - below) / (2 * h)
        estimates.append(slopes)
    return estimates
"""),
    Mistake("2", "numerical_grad perturbs a copy, which f never sees", "numerical_grad", """
def numerical_grad(f, arrays, h=1e-6):
    estimates = []
    for array in arrays:
        work = array.copy()
        slopes = np.zeros(array.shape)
        for index in np.ndindex(*array.shape):
            kept = work[index]
            work[index] = kept + h
            above = f()
            work[index] = kept - h
            below = f()
            work[index] = kept
            slopes[index] = (above - below) / (2 * h)
        estimates.append(slopes)
    return estimates
"""),
    Mistake("2", "numerical_grad perturbs array.reshape(-1), a copy unless the array is in C order", "numerical_grad",
            """
def numerical_grad(f, arrays, h=1e-6):
    estimates = []
    for array in arrays:
        flat = array.reshape(-1)
        slopes = np.zeros(flat.size)
        for i in range(flat.size):
            kept = flat[i]
            flat[i] = kept + h
            above = f()
            flat[i] = kept - h
            below = f()
            flat[i] = kept
            slopes[i] = (above - below) / (2 * h)
        estimates.append(slopes.reshape(array.shape))
    return estimates
"""),
    # ------------------------------------------------------------------ 3
    Mistake("3", "train_epoch never zeroes the gradients", "train_epoch", """
def train_epoch(forward, params, X, y, order, batch_size, lr):
    losses = []
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        loss = cross_entropy(forward(X[rows]), y[rows])
        loss.backward()
        sgd_step(params, lr)
        losses.append(float(loss.data))
    return losses
"""),
    Mistake("3", "train_epoch walks through the rows in their stored order, not in `order`", "train_epoch", """
def train_epoch(forward, params, X, y, order, batch_size, lr):
    losses = []
    for start in range(0, len(order), batch_size):
        loss = cross_entropy(forward(X[start:start + batch_size]), y[start:start + batch_size])
        zero_grad(params)
        loss.backward()
        sgd_step(params, lr)
        losses.append(float(loss.data))
    return losses
"""),
    Mistake("3", "train_epoch drops the last, smaller batch", "train_epoch", """
def train_epoch(forward, params, X, y, order, batch_size, lr):
    losses = []
    for start in range(0, len(order) - batch_size + 1, batch_size):
        rows = order[start:start + batch_size]
        loss = cross_entropy(forward(X[rows]), y[rows])
        zero_grad(params)
        loss.backward()
        sgd_step(params, lr)
        losses.append(float(loss.data))
    return losses
"""),
    Mistake("3", "sgd_step climbs the gradient instead of descending", "sgd_step", """
def sgd_step(params, lr):
    for p in params:
        p.data += lr * p.grad
"""),
    Mistake("3", "zero_grad clears only the first parameter", "zero_grad", """
def zero_grad(params):
    params[0].grad = np.zeros_like(params[0].data)
"""),
    Mistake("3", "sgd_step rebinds .data to a new array, so whoever holds the old one sees no step", "in place",
            variant(SGD_STEP, "p.data -= lr * p.grad", "p.data = p.data - lr * p.grad")),
    Mistake("3", "sgd_step writes through p.data[:], which a 0-d parameter does not have", "sgd_step",
            variant(SGD_STEP, "p.data -= lr * p.grad", "p.data[:] -= lr * p.grad")),
    Mistake("3", "zero_grad multiplies .grad by 0, which leaves NaN where it held inf or NaN", "zero_grad",
            variant(ZERO_GRAD, "p.grad = np.zeros_like(p.data)", "p.grad *= 0.0")),
    Mistake("3", "zero_grad writes zeros through p.grad[:], which a 0-d parameter does not have", "zero_grad",
            variant(ZERO_GRAD, "p.grad = np.zeros_like(p.data)", "p.grad[:] = 0.0")),
    # ------------------------------------------------------------------ 4
    Mistake("4", "mlp_forward wraps X in Tensor(X), which fails when X is a Tensor already", "mlp_forward",
            variant(MLP_FORWARD, "as_tensor(X)", "Tensor(X)")),
    Mistake("4", "gradient_check returns the largest absolute error, without dividing by max(1, |g|)",
            "gradient_check", variant(GRADIENT_CHECK, "np.abs(e - g) / np.maximum(1.0, np.abs(g))", "np.abs(e - g)")),
    Mistake("4", "gradient_check ignores its h and differences at numerical_grad's default step", "gradient_check",
            variant(GRADIENT_CHECK, "[p.data for p in model.params], h)", "[p.data for p in model.params])")),
    Mistake("4", "init_mlp scales the weights by sqrt(2 / fan_out)", "init_mlp", """
def init_mlp(sizes, rng):
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        params.append(Tensor(rng.normal(0.0, np.sqrt(2.0 / fan_out), size=(fan_in, fan_out))))
        params.append(Tensor(np.zeros(fan_out)))
    return params
"""),
    Mistake("4", "mlp_forward applies relu to the logits too", "mlp_forward", """
def mlp_forward(params, X):
    h = as_tensor(X)
    for layer in range(0, len(params), 2):
        h = (h @ params[layer] + params[layer + 1]).relu()
    return h
"""),
    Mistake("4", "gradient_check compares only the first parameter", "gradient_check", """
def gradient_check(model, X, y, h=1e-6):
    model.zero_grad()
    loss = cross_entropy(model(X), y)
    loss.backward()
    engine = model.params[0].grad.copy()
    (estimate,) = numerical_grad(lambda: float(cross_entropy(model(X), y).data), [model.params[0].data], h)
    return float(np.max(np.abs(estimate - engine) / np.maximum(1.0, np.abs(engine))))
"""),
    Mistake("4", "gradient_check does not clear the gradients before backward", "gradient_check", """
def gradient_check(model, X, y, h=1e-6):
    loss = cross_entropy(model(X), y)
    loss.backward()
    engine = [p.grad.copy() for p in model.params]
    estimates = numerical_grad(lambda: float(cross_entropy(model(X), y).data), [p.data for p in model.params], h)
    return max(float(np.max(np.abs(e - g) / np.maximum(1.0, np.abs(g)))) for e, g in zip(estimates, engine))
"""),
    Mistake("4", "gradient_check takes one-sided differences of its own", "gradient_check", """
def gradient_check(model, X, y, h=1e-6):
    model.zero_grad()
    base = cross_entropy(model(X), y)
    base.backward()
    worst = 0.0
    for p in model.params:
        for index in np.ndindex(*p.data.shape):
            kept = p.data[index]
            p.data[index] = kept + h
            estimate = (float(cross_entropy(model(X), y).data) - float(base.data)) / h
            p.data[index] = kept
            worst = max(worst, abs(estimate - p.grad[index]) / max(1.0, abs(p.grad[index])))
    return float(worst)
"""),
    Mistake("5", "torch_witness compares only the first parameter's gradient", "torch_witness", """
def torch_witness(model, X, y):
    model.zero_grad()
    loss = cross_entropy(model(X), y)
    loss.backward()
    copies = [torch.tensor(p.data, dtype=torch.float64, requires_grad=True) for p in model.params]
    z = torch.tensor(X, dtype=torch.float64)
    for layer in range(0, len(copies), 2):
        z = z @ copies[layer] + copies[layer + 1]
        if layer + 2 < len(copies):
            z = torch.relu(z)
    reference_loss = F.cross_entropy(z, torch.as_tensor(y, dtype=torch.long))
    reference_loss.backward()
    loss_gap = abs(float(loss.data) - reference_loss.item())
    grad_gap = float(np.max(np.abs(model.params[0].grad - copies[0].grad.numpy())))
    return loss_gap, grad_gap
"""),
    Mistake("5", "torch_witness reads the engine's .grad without running its backward", "torch_witness", """
def torch_witness(model, X, y):
    loss = cross_entropy(model(X), y)
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
"""),
    Mistake("5", "torch_witness copies the network into PyTorch in float32", "for a correct network", """
def torch_witness(model, X, y):
    model.zero_grad()
    loss = cross_entropy(model(X), y)
    loss.backward()
    copies = [torch.tensor(p.data, dtype=torch.float32, requires_grad=True) for p in model.params]
    z = torch.tensor(X, dtype=torch.float32)
    for layer in range(0, len(copies), 2):
        z = z @ copies[layer] + copies[layer + 1]
        if layer + 2 < len(copies):
            z = torch.relu(z)
    reference_loss = F.cross_entropy(z, torch.as_tensor(y, dtype=torch.long))
    reference_loss.backward()
    loss_gap = abs(float(loss.data) - reference_loss.item())
    grad_gap = max(float(np.max(np.abs(p.grad - c.grad.numpy()))) for p, c in zip(model.params, copies))
    return loss_gap, grad_gap
"""),
    Mistake("5", "torch_witness returns the signed difference of the two losses", "loss_gap",
            variant(TORCH_WITNESS, "abs(float(loss.data) - reference_loss.item())",
                    "float(loss.data) - reference_loss.item()")),
    # ------------------------------------------------------------------ A
    Mistake("A", "adam_step leaves out the bias correction", "after step 1",
            variant(ADAM, 'm / (1 - beta1 ** state["t"]), v / (1 - beta2 ** state["t"])', "m, v")),
    Mistake("A", "adam_step keeps a running mean of |g| instead of g squared", "after step 1",
            variant(ADAM, "p.grad ** 2", "np.abs(p.grad)")),
    Mistake("A", "adam_step adds eps inside the square root", "eps",
            variant(ADAM, "(np.sqrt(v_hat) + eps)", "np.sqrt(v_hat + eps)")),
    Mistake("A", "adam_step rebinds its moment arrays, so state keeps the zeros of step 1", "after step 2",
            variant(variant(ADAM, "m[...] =", "m ="), "v[...] =", "v =")),
    Mistake("A", "adam_step keeps the moments on the Tensors, so a new state starts from the old moments",
            "fresh state", """
def adam_step(params, state, lr, betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    state["t"] = state.get("t", 0) + 1
    for p in params:
        if not hasattr(p, "m"):
            p.m, p.v = np.zeros_like(p.data), np.zeros_like(p.data)
        p.m = beta1 * p.m + (1 - beta1) * p.grad
        p.v = beta2 * p.v + (1 - beta2) * p.grad ** 2
        m_hat, v_hat = p.m / (1 - beta1 ** state["t"]), p.v / (1 - beta2 ** state["t"])
        p.data -= lr * m_hat / (np.sqrt(v_hat) + eps)
"""),
    Mistake("A", "adam_step counts the steps on each Tensor, as PyTorch counts them per parameter", "step count",
            variant(ADAM, 'm_hat, v_hat = m / (1 - beta1 ** state["t"]), v / (1 - beta2 ** state["t"])',
                    'p.steps = getattr(p, "steps", 0) + 1\n'
                    '        m_hat, v_hat = m / (1 - beta1 ** p.steps), v / (1 - beta2 ** p.steps)')),
    # ------------------------------------------------------------------ B
    Mistake("B", "no_grad assigns grad_enabled without `global`, so the module's flag never changes", "_prev", """
@contextmanager
def no_grad():
    grad_enabled = False
    try:
        yield
    finally:
        grad_enabled = True
"""),
    Mistake("B", "no_grad switches recording back on when it ends, even inside an outer no_grad", "nested",
            variant(NO_GRAD, "grad_enabled = before", "grad_enabled = True")),
    Mistake("B", "no_grad restores the flag without try/finally, so an exception leaves recording off", "exception",
            variant(NO_GRAD, "    try:\n        yield\n    finally:\n        grad_enabled = before",
                    "    yield\n    grad_enabled = before")),
    Mistake("B", "no_grad swallows an exception raised inside its block", "propagate",
            variant(NO_GRAD, "        yield\n", "        yield\n    except Exception:\n        pass\n")),
    Mistake("B", "no_grad restores the flag in `except Exception`, so a KeyboardInterrupt leaves recording off",
            "KeyboardInterrupt",
            variant(NO_GRAD, "    finally:\n        grad_enabled = before",
                    "    except Exception:\n        grad_enabled = before\n        raise\n    grad_enabled = before")),
    Mistake("B", "no_grad switches recording on when an exception leaves it, even inside an outer no_grad",
            "caught inside an outer", variant(
                NO_GRAD, "    finally:\n        grad_enabled = before",
                "    except BaseException:\n        grad_enabled = True\n        raise\n    grad_enabled = before")),
    # ------------------------------------------------------------------ C
    Mistake("C", "dual_multiply keeps only one term of the product rule", "tangent", """
def dual_multiply(a, b):
    return Dual(a.value * b.value, a.tangent * b.value)
"""),
    Mistake("C", "dual_exp forgets to multiply by the incoming tangent", "tangent", """
def dual_exp(a):
    value = np.exp(a.value)
    return Dual(value, value)
"""),
    Mistake("C", "dual_log multiplies the tangent by the value instead of dividing", "tangent", """
def dual_log(a):
    return Dual(np.log(a.value), a.tangent * a.value)
"""),
    Mistake("C", "dual_matmul drops the term of the right operand's tangent", "tangent", """
def dual_matmul(a, b):
    return Dual(a.value @ b.value, a.tangent @ b.value)
"""),
    Mistake("C", "jvp reads .value and .tangent of f's result, which a function returning a plain array lacks",
            "no Dual coming back", """
def jvp(f, x, u):
    out = f(Dual(x, u))
    return out.value, out.tangent
"""),
    Mistake("C", "jvp gives a result that is not a Dual a zero tangent of x's shape", "tangent", """
def jvp(f, x, u):
    out = f(Dual(x, u))
    if not isinstance(out, Dual):
        return np.asarray(out, dtype=np.float64), np.zeros_like(u)
    return out.value, out.tangent
"""),
    Mistake("C", "jacobian_fwd lays each JVP out as a row, transposing the Jacobian", "jacobian_fwd", """
def jacobian_fwd(f, x):
    x = np.asarray(x, dtype=np.float64)
    rows = []
    for j in range(x.size):
        direction = np.zeros(x.size)
        direction[j] = 1.0
        rows.append(np.ravel(jvp(f, x, direction.reshape(x.shape))[1]))
    out_shape = np.shape(jvp(f, x, np.zeros(x.shape))[0])
    return np.array(rows).reshape(out_shape + x.shape)
"""),
    Mistake("C", "jacobian_fwd by reverse mode, one backward pass per output", "jacobian_fwd", """
def jacobian_fwd(f, x):
    x = np.asarray(x, dtype=np.float64)
    shape = np.shape(f(Tensor(x)).data)
    rows = []
    for i in range(int(np.prod(shape))):
        leaf = Tensor(x)
        seed = np.zeros(shape)
        seed.flat[i] = 1.0
        backward((f(leaf) * seed).sum())
        rows.append(leaf.grad.copy())
    return np.array(rows).reshape(shape + x.shape)
"""),
    # ------------------------------------------------------------------ D
    Mistake("D", "grad ignores create_graph and always returns detached values", "hvp",
            variant(GRAD, "return found if create_graph else [Tensor(g.data) for g in found]",
                    "return [Tensor(g.data) for g in found]")),
    Mistake("D", "vjp_tensor's exp rule multiplies by the output's data, a constant", "hvp",
            variant(VJP_TENSOR, "[g * node]", "[g * node.data]")),
    Mistake("D", "vjp_tensor's multiply rule uses the other factor's data, a constant", "hvp",
            variant(VJP_TENSOR, "[sum_to(g * b, a.shape), sum_to(g * a, b.shape)]",
                    "[sum_to(g * b.data, a.shape), sum_to(g * a.data, b.shape)]")),
    Mistake("D", "grad keeps only the last contribution that reaches a node", "the gradient of x",
            variant(GRAD, "grads[id(parent)] + part if id(parent) in grads else part", "part")),
    Mistake("D", "vjp_tensor's multiply rule does not sum the right operand's contribution back to its shape",
            "the gradient of x",
            variant(VJP_TENSOR, "sum_to(g * a, b.shape)]", "g * a]")),
    Mistake("D", "vjp_tensor's sum rule spreads g's data, a constant", "hvp",
            variant(VJP_TENSOR, "[g * np.ones(a.shape)]", "[Tensor(g.data * np.ones(a.shape))]")),
    Mistake("D", "newton_step adds the Newton direction instead of subtracting it", "newton_step",
            variant(reference_function("tensor_engine", "newton_step"), "return x - ", "return x + ")),
    Mistake("D", "vjp_tensor starts from a copy of g's data, so the contributions forget how g was made", "hvp",
            variant(VJP_TENSOR, "    a, b = (node._prev + (None,))[:2]\n",
                    "    g = Tensor(g.data)\n    a, b = (node._prev + (None,))[:2]\n")),
    # ------------------------------------------------------------------ E
    Mistake("E", "conv2d's x gradient keeps the padded border", "x.grad",
            variant(CONV2D, "x.grad += grad_padded[:, :, padding:padding + height, padding:padding + width]",
                    "x.grad += grad_padded")),
    Mistake("E", "conv2d's bias gradient sums the first example's gradient only", "b.grad",
            variant(CONV2D, "b.grad += g.sum(axis=(0, 2, 3))", "b.grad += g[0].sum(axis=(1, 2))")),
    Mistake("E", "conv2d flips the filter, a convolution in the textbook sense instead of F.conv2d's", "out.data",
            variant(CONV2D, "filters = w.data\n", "filters = w.data[:, :, ::-1, ::-1]\n")),
    Mistake("E", "conv2d's backward assigns into overlapping windows of the x gradient", "x.grad",
            variant(CONV2D, "grad_padded[window] +=", "grad_padded[window] =")),
    Mistake("E", "conv2d allocates its padded gradient buffer in the forward pass, so a second backward adds to the "
            "first one's sums", "second",
            variant(variant(CONV2D, "        grad_padded = np.zeros(padded.shape)\n", ""),
                    "    filters = w.data\n", "    filters = w.data\n    grad_padded = np.zeros(padded.shape)\n")),
    # ------------------------------------------------------------------ F
    Mistake("F", "to_dot draws every edge from the node to its parent", "edge",
            variant(TO_DOT, "n{id(parent)} -> n{id(node)}", "n{id(node)} -> n{id(parent)}")),
    Mistake("F", "to_dot lists a node once per path that reaches it", "listed twice",
            variant(TO_DOT, "        if id(node) in seen:\n            continue\n", "")),
    Mistake("F", "to_dot keeps a set of edges, so x * x gets a single edge", "edge",
            variant(TO_DOT, "in node._prev:\n", "in dict.fromkeys(node._prev):\n")),
    Mistake("F", "to_dot labels leaves with their empty _op", "label",
            variant(TO_DOT, '{node._op or "leaf"}', "{node._op}")),
    Mistake("F", "to_dot calls every node without parents a leaf, operations made under no_grad too", "label",
            variant(TO_DOT, '{node._op or "leaf"}', '{node._op if node._prev else "leaf"}')),
    Mistake("F", "to_dot draws the edges of the first two parents only, as if no operation had three", "three parents",
            variant(TO_DOT, "in node._prev:\n", "in node._prev[:2]:\n")),
]

# What a student whose answer behaves like a mistake reads (autograder/diagnosis/matching.py), by
# description. Mistakes the hidden cases cannot tell apart share one advice.
ADAM = ("Your adam_step's moment estimates are off after the first step: check that the second moment averages "
        "the squared gradient, that both moments persist in the state between calls, and the bias correction.")
NO_GRAD_EXIT = ("Your no_grad does not put the recording flag back as it was in every way its block can end: "
                "normally, by any exception (KeyboardInterrupt too), and inside another no_grad.")
ADVICE = {
    "multiply assigns into .grad instead of adding (a missing +=)":
        "Your multiply rule replaces a parent's .grad instead of accumulating into it, so a Tensor used twice "
        "keeps only its last contribution.",
    "multiply gives each factor its own value as slope":
        "Your multiply rule uses each factor's own value as its slope: the gradient of a*b for a involves b.",
    "multiply forgets to undo broadcasting":
        "Your multiply rule gives a broadcast operand a gradient of the broadcast shape: sum it back to the "
        "operand's own shape.",
    "multiply undoes broadcasting by summing the wrong axes (the trailing ones)":
        "Your multiply rule sums the wrong axes when it undoes broadcasting: broadcasting adds axes on the "
        "left and stretches size-1 axes.",
    "multiply finds and sums one stretched axis per operand, not all of them":
        "Your multiply rule undoes only one stretched axis per operand; an operand of shape (1, 3, 1) can be "
        "stretched along several at once.",
    "matmul leaves out the transposes":
        "Your matmul rule multiplies the incoming gradient by the other operand without transposing it, so the "
        "shapes or values come out wrong.",
    "reduce_sum broadcasts the gradient back without reinserting the summed axes":
        "Your reduce_sum rule broadcasts the gradient without putting back the axes it summed, so it lines up "
        "with the wrong axes.",
    "reduce_sum ignores keepdims in the forward pass":
        "Your reduce_sum drops the summed axes even when keepdims is true. Check the forward result's shape.",
    "reduce_sum puts the summed axes back one at a time, in the order given":
        "Your reduce_sum rule reinserts summed axes in the order given, which goes wrong for tuples like (2, 0) "
        "or negative axes. Normalise and sort them first.",
    "reduce_sum turns a negative axis positive when it comes alone, not inside a tuple":
        "Your reduce_sum handles a negative axis alone but not inside a tuple such as (-1, 0).",
    "exp's rule multiplies by the input instead of the output":
        "Your exp rule scales by the input: the derivative of exp is exp itself, the node's output.",
    "log's rule multiplies by the input instead of dividing":
        "Your log rule multiplies by the input: the derivative of log x is 1 / x.",
    "relu lets the gradient through at exactly 0":
        "Your relu passes gradient at an input of exactly 0; as PyTorch does, give slope 0 there.",
    "cross_entropy exponentiates the logits without subtracting the row maximum":
        "Your cross_entropy overflows for large logits: subtract each row's maximum before exponentiating.",
    "cross_entropy's rule forgets to divide by n":
        "Your cross_entropy gradient is n times too large: the loss is a mean over the batch.",
    "cross_entropy's rule ignores the gradient that reached the loss":
        "Your cross_entropy rule leaves out the incoming gradient: scale the local gradient by it.",
    "cross_entropy assigns logits.grad instead of adding to it":
        "Your cross_entropy rule replaces logits.grad instead of accumulating into it.",
    "cross_entropy is composed from the primitives instead of being one node":
        "Your cross_entropy is built from other operations; it should be one node with its own rule.",
    "cross_entropy's rule writes P - Y into the softmax its forward pass saved":
        "Your cross_entropy rule overwrites the softmax it saved, so a second backward through the same graph "
        "goes wrong. Compute the gradient into a new array.",
    "backward seeds the root with a 0-d 1.0 whatever the root's shape":
        "Your backward seeds a non-scalar root with a single 1.0: the seed must be ones of the root's shape.",
    "backward recurses into the parents at once, with no order and no memory":
        "Your backward calls parents' rules before all of a node's gradient has arrived, and shared nodes run "
        "more than once. Run each rule once, in reverse topological order.",
    "backward runs each rule in the order a depth-first search discovers the nodes":
        "Your backward runs rules in discovery order, so a node can pass on its gradient before every user "
        "has added to it. Use a reverse topological order.",
    "backward zeroes every .grad in the graph before it starts":
        "Your backward zeroes every gradient before it runs, which discards gradient a caller meant to "
        "accumulate; clearing is zero_grad's job.",
    "numerical_grad takes a one-sided difference":
        "Your numerical_grad uses a one-sided difference, which is much less accurate: use the central "
        "difference.",
    "numerical_grad divides the central difference by h instead of 2h":
        "Your numerical_grad is twice the gradient: the central difference spans 2h.",
    "numerical_grad leaves every entry at x - h":
        "Your numerical_grad does not restore each entry after perturbing it, so later entries are measured "
        "at a moved point.",
    "numerical_grad perturbs a copy, which f never sees":
        "Your numerical_grad perturbs a copy of the array, so f sees no change. Perturb the array f reads.",
    "numerical_grad perturbs array.reshape(-1), a copy unless the array is in C order":
        "Your numerical_grad perturbs a flattened view that is a copy for transposed or Fortran-ordered "
        "arrays. Index the array itself.",
    "train_epoch never zeroes the gradients":
        "Your train_epoch never clears the gradients, so each batch's step adds the earlier batches' gradient.",
    "train_epoch walks through the rows in their stored order, not in `order`":
        "Your train_epoch ignores the given order of the rows: batches must be taken in that order.",
    "train_epoch drops the last, smaller batch":
        "Your train_epoch skips the last batch when it is smaller than the others.",
    "sgd_step climbs the gradient instead of descending":
        "Your sgd_step moves the parameters along the gradient; a step of descent goes against it.",
    "zero_grad clears only the first parameter":
        "Your zero_grad clears only one parameter's gradient: every parameter's must be cleared.",
    "sgd_step rebinds .data to a new array, so whoever holds the old one sees no step":
        "Your sgd_step gives each parameter a new array, so a caller holding the old one sees no change. "
        "Update the array in place.",
    "sgd_step writes through p.data[:], which a 0-d parameter does not have":
        "Your sgd_step slices the parameter's array, which fails for a 0-d parameter. Use an in-place "
        "operation that works for any shape.",
    "zero_grad multiplies .grad by 0, which leaves NaN where it held inf or NaN":
        "Your zero_grad multiplies by 0, which leaves NaN where the gradient held inf or NaN. Set the values "
        "to zero instead.",
    "zero_grad writes zeros through p.grad[:], which a 0-d parameter does not have":
        "Your zero_grad slices the gradient array, which fails for a 0-d parameter.",
    "mlp_forward wraps X in Tensor(X), which fails when X is a Tensor already":
        "Your mlp_forward wraps its input in a new Tensor even when it is one already; accept both.",
    "gradient_check returns the largest absolute error, without dividing by max(1, |g|)":
        "Your gradient_check reports absolute errors; the check asks for the error relative to the gradient's "
        "size, max(1, |g|).",
    "gradient_check ignores its h and differences at numerical_grad's default step":
        "Your gradient_check does not pass its own step h on to the finite differences.",
    "init_mlp scales the weights by sqrt(2 / fan_out)":
        "Your init_mlp scales by the number of outputs; He initialisation scales by the layer's fan-in.",
    "mlp_forward applies relu to the logits too":
        "Your mlp_forward applies relu after the last layer as well; the logits must be able to be negative.",
    "gradient_check compares only the first parameter":
        "Your gradient_check compares one parameter only: a fault can be in any of them.",
    "gradient_check does not clear the gradients before backward":
        "Your gradient_check runs backward on gradients left from earlier calls. Clear them first.",
    "gradient_check takes one-sided differences of its own":
        "Your gradient_check uses one-sided differences, which are not accurate enough: use central "
        "differences.",
    "torch_witness compares only the first parameter's gradient":
        "Your torch_witness compares the gradient of one parameter only; compare them all.",
    "torch_witness reads the engine's .grad without running its backward":
        "Your torch_witness reads the engine's gradients without running its backward pass first.",
    "torch_witness copies the network into PyTorch in float32":
        "Your torch_witness builds the PyTorch network in float32, so the gaps are float32 rounding. Use "
        "float64.",
    "torch_witness returns the signed difference of the two losses":
        "Your torch_witness reports a signed loss difference, which is negative when the engine's loss is the "
        "smaller. Report its size.",
    "adam_step leaves out the bias correction": ADAM,
    "adam_step keeps a running mean of |g| instead of g squared": ADAM,
    "adam_step adds eps inside the square root":
        "Your adam_step puts eps inside the square root; it is added to the root of the second moment.",
    "adam_step rebinds its moment arrays, so state keeps the zeros of step 1": ADAM,
    "adam_step keeps the moments on the Tensors, so a new state starts from the old moments":
        "Your adam_step stores its moments on the Tensors, so a fresh optimiser state starts from old "
        "moments. Keep them in the state you are given.",
    "adam_step counts the steps on each Tensor, as PyTorch counts them per parameter":
        "Your adam_step counts steps on each Tensor; the step count belongs to the optimiser state.",
    "no_grad assigns grad_enabled without `global`, so the module's flag never changes":
        "Your no_grad assigns a local variable, so the module's recording flag never changes.",
    "no_grad switches recording back on when it ends, even inside an outer no_grad": NO_GRAD_EXIT,
    "no_grad restores the flag without try/finally, so an exception leaves recording off": NO_GRAD_EXIT,
    "no_grad swallows an exception raised inside its block":
        "Your no_grad hides an exception raised inside its block; it must restore the flag and let the "
        "exception go on.",
    "no_grad restores the flag in `except Exception`, so a KeyboardInterrupt leaves recording off":
        NO_GRAD_EXIT,
    "no_grad switches recording on when an exception leaves it, even inside an outer no_grad": NO_GRAD_EXIT,
    "dual_multiply keeps only one term of the product rule":
        "Your dual_multiply keeps one term of the product rule: the tangent of a*b has two.",
    "dual_exp forgets to multiply by the incoming tangent":
        "Your dual_exp leaves out the incoming tangent: apply the chain rule.",
    "dual_log multiplies the tangent by the value instead of dividing":
        "Your dual_log multiplies by the value: the derivative of log x is 1 / x.",
    "dual_matmul drops the term of the right operand's tangent":
        "Your dual_matmul leaves out the right operand's tangent: the product rule has a term for each.",
    "jvp reads .value and .tangent of f's result, which a function returning a plain array lacks":
        "Your jvp fails when f returns a plain array (a function that ignores its input): treat such a result "
        "as a constant.",
    "jvp gives a result that is not a Dual a zero tangent of x's shape":
        "Your jvp gives a constant result a tangent of the wrong shape: its tangent is zeros shaped like the "
        "output.",
    "jacobian_fwd lays each JVP out as a row, transposing the Jacobian":
        "Your jacobian_fwd places each JVP as a row; a JVP along input j is column j of the Jacobian.",
    "jacobian_fwd by reverse mode, one backward pass per output":
        "Your jacobian_fwd uses reverse mode, one backward pass per output, which is too slow here; this "
        "activity asks for forward mode, one JVP per input.",
    "grad ignores create_graph and always returns detached values":
        "Your grad returns detached gradients even when create_graph is asked for, so they cannot be "
        "differentiated again.",
    "vjp_tensor's exp rule multiplies by the output's data, a constant":
        "Your exp rule in vjp_tensor uses raw data, so the gradient is a constant and second derivatives "
        "vanish. Build it from Tensors.",
    "vjp_tensor's multiply rule uses the other factor's data, a constant":
        "Your multiply rule in vjp_tensor uses raw data, so the gradient does not depend on x for double "
        "backprop. Build it from Tensors.",
    "grad keeps only the last contribution that reaches a node":
        "Your grad keeps one contribution per node; contributions from every path must be added.",
    "vjp_tensor's multiply rule does not sum the right operand's contribution back to its shape":
        "Your multiply rule in vjp_tensor leaves a broadcast operand's contribution in the broadcast shape: "
        "sum it back to the operand's shape.",
    "vjp_tensor's sum rule spreads g's data, a constant":
        "Your sum rule in vjp_tensor spreads raw data, so the incoming gradient's dependence on x is lost. "
        "Build it from Tensors.",
    "newton_step adds the Newton direction instead of subtracting it":
        "Your newton_step moves the wrong way: a Newton step subtracts the Hessian-scaled gradient.",
    "vjp_tensor starts from a copy of g's data, so the contributions forget how g was made":
        "Your vjp_tensor starts from a copy of g's data, so contributions forget how g was made. Start from "
        "g itself.",
    "conv2d's x gradient keeps the padded border":
        "Your conv2d returns the x gradient with the padding still around it; crop it back to x's shape.",
    "conv2d's bias gradient sums the first example's gradient only":
        "Your conv2d's bias gradient sums one example only: sum over the whole batch and every position.",
    "conv2d flips the filter, a convolution in the textbook sense instead of F.conv2d's":
        "Your conv2d flips the filter; F.conv2d computes a cross-correlation, with the filter as it is.",
    "conv2d's backward assigns into overlapping windows of the x gradient":
        "Your conv2d backward assigns into overlapping windows of the x gradient, so overlaps keep only the "
        "last window's share. Accumulate.",
    "conv2d allocates its padded gradient buffer in the forward pass, so a second backward adds to the first "
    "one's sums":
        "Your conv2d reuses a gradient buffer made in the forward pass, so a second backward adds to the "
        "first's. Allocate it in the backward rule.",
    "to_dot draws every edge from the node to its parent":
        "Your to_dot draws edges from a node to its parents; they go from each parent to the node it feeds.",
    "to_dot lists a node once per path that reaches it":
        "Your to_dot lists a node once for every path that reaches it; list each node once.",
    "to_dot keeps a set of edges, so x * x gets a single edge":
        "Your to_dot merges repeated edges, so x * x shows one edge where there are two.",
    "to_dot labels leaves with their empty _op":
        "Your to_dot labels leaves with their empty operation; a leaf's label is leaf.",
    "to_dot calls every node without parents a leaf, operations made under no_grad too":
        "Your to_dot calls every node without parents a leaf; an operation made under no_grad keeps its "
        "operation's label.",
    "to_dot draws the edges of the first two parents only, as if no operation had three":
        "Your to_dot draws two parents' edges at most; an operation such as conv2d has three.",
}
MISTAKES = [replace(mistake, advice=ADVICE.get(mistake.description, "")) for mistake in MISTAKES]
