"""The catalogue's slips written another way, as another student would write them: never used to
build the fingerprints, they measure how well the grader names a mistake it was not built from
(`python -m autograder fingerprints --lab tensor_engine --measure 99`). Many are one slip in the
reference answer, made with the catalogue's own `variant`."""
from autograder.labs.tensor_engine.mistakes import CONV2D, TO_DOT, variant
from autograder.labs.vocabulary import Variant, reference_function


def ref(name):
    return reference_function("tensor_engine", name)


MULTIPLY, MATMUL, REDUCE_SUM = ref("multiply"), ref("matmul"), ref("reduce_sum")
EXP, LOG, RELU, CROSS_ENTROPY = ref("exp"), ref("log"), ref("relu"), ref("cross_entropy")
NUMERICAL_GRAD, SGD_STEP, ZERO_GRAD, TRAIN_EPOCH = (ref("numerical_grad"), ref("sgd_step"), ref("zero_grad"),
                                                    ref("train_epoch"))
BACKWARD = ref("backward")
INIT_MLP, MLP_FORWARD, GRADIENT_CHECK, TORCH_WITNESS = (ref("init_mlp"), ref("mlp_forward"), ref("gradient_check"),
                                                        ref("torch_witness"))
ADAM, NO_GRAD, JVP, JACOBIAN_FWD = ref("adam_step"), ref("no_grad"), ref("jvp"), ref("jacobian_fwd")
VJP_TENSOR, GRAD, NEWTON_STEP = ref("vjp_tensor"), ref("grad"), ref("newton_step")

VARIANTS = [
    Variant("multiply assigns into .grad instead of adding (a missing +=)", "multiply assigns the right operand's share",
            variant(MULTIPLY, "b.grad += unbroadcast(out.grad * a.data, b.shape)",
                    "b.grad = unbroadcast(a.data * out.grad, b.shape)")),
    Variant("multiply gives each factor its own value as slope", "multiply scales the upstream by the same operand",
            variant(variant(MULTIPLY, "unbroadcast(out.grad * b.data, a.shape)", "unbroadcast(a.data * out.grad, a.shape)"),
                    "unbroadcast(out.grad * a.data, b.shape)", "unbroadcast(b.data * out.grad, b.shape)")),
    Variant("multiply forgets to undo broadcasting", "multiply adds the output-shaped products", """
def multiply(a, b):
    out = Tensor(a.data * b.data, (a, b), "*")

    def _backward():
        a.grad = a.grad + out.grad * b.data
        b.grad = b.grad + out.grad * a.data

    out._backward = _backward
    return out
"""),
    Variant("matmul leaves out the transposes", "matmul's rule with swapaxes left out",
            variant(variant(MATMUL, "out.grad @ b.data.T", "np.matmul(out.grad, b.data)"),
                    "a.data.T @ out.grad", "np.matmul(a.data, out.grad)")),
    Variant("reduce_sum ignores keepdims in the forward pass", "reduce_sum forwards without keepdims",
            variant(REDUCE_SUM, "a.data.sum(axis=axis, keepdims=keepdims)", "np.sum(a.data, axis=axis)")),
    Variant("exp's rule multiplies by the input instead of the output", "exp's rule reads the parent's data",
            variant(EXP, "a.grad += out.grad * out.data", "a.grad += a.data * out.grad")),
    Variant("log's rule multiplies by the input instead of dividing", "log's rule multiplies by the input with np",
            variant(LOG, "a.grad += out.grad / a.data", "a.grad += np.multiply(out.grad, a.data)")),
    Variant("relu lets the gradient through at exactly 0", "relu's mask tests for not negative",
            variant(RELU, "(a.data > 0)", "(~(a.data < 0))")),
    Variant("cross_entropy's rule forgets to divide by n", "cross_entropy's rule averages nothing",
            variant(CROSS_ENTROPY, "logits.grad += out.grad * slope / n", "logits.grad += slope * out.grad")),
    Variant("cross_entropy's rule ignores the gradient that reached the loss", "cross_entropy's rule uses P - Y over n alone",
            variant(CROSS_ENTROPY, "logits.grad += out.grad * slope / n", "logits.grad += slope / len(y)")),
    Variant("cross_entropy assigns logits.grad instead of adding to it", "cross_entropy sets logits.grad",
            variant(CROSS_ENTROPY, "logits.grad += out.grad * slope / n", "logits.grad = slope * (out.grad / n)")),
    Variant("cross_entropy exponentiates the logits without subtracting the row maximum",
            "cross_entropy shifts by zero instead of the maximum",
            variant(CROSS_ENTROPY, "logits.data - logits.data.max(axis=1, keepdims=True)", "logits.data - 0.0")),
    Variant("backward zeroes every .grad in the graph before it starts", "backward clears gradients as it places nodes",
            variant(BACKWARD, "            placed.add(id(node))\n",
                    "            placed.add(id(node))\n            node.grad = np.zeros_like(node.data)\n")),
    Variant("backward seeds the root with a 0-d 1.0 whatever the root's shape", "backward seeds with np.float64(1)",
            variant(BACKWARD, "np.ones_like(root.data)", "np.asarray(1.0)")),
    Variant("numerical_grad takes a one-sided difference", "numerical_grad differences forward from the point",
            variant(variant(NUMERICAL_GRAD, "array[index] = kept - h\n            below = f()",
                            "array[index] = kept\n            below = f()"),
                    "(above - below) / (2 * h)", "(above - below) / h")),
    Variant("numerical_grad divides the central difference by h instead of 2h", "numerical_grad halves nothing",
            variant(NUMERICAL_GRAD, "(above - below) / (2 * h)", "(above - below) * (1 / h)")),
    Variant("numerical_grad leaves every entry at x - h", "numerical_grad never puts the entry back",
            variant(NUMERICAL_GRAD, "            array[index] = kept  # exactly as it was\n", "")),
    Variant("numerical_grad perturbs a copy, which f never sees", "numerical_grad perturbs array.copy()",
            variant(NUMERICAL_GRAD, "    for array in arrays:\n", "    for array in [a.copy() for a in arrays]:\n")),
    Variant("numerical_grad perturbs array.reshape(-1), a copy unless the array is in C order",
            "numerical_grad perturbs np.reshape(array, -1) entry by entry", """
def numerical_grad(f, arrays, h=1e-6):
    estimates = []
    for array in arrays:
        flat = np.reshape(array, -1)
        slopes = np.zeros(flat.shape)
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
    Variant("train_epoch never zeroes the gradients", "train_epoch without its zero_grad call",
            variant(TRAIN_EPOCH, "        zero_grad(params)  # before backward: the engine only adds\n", "")),
    Variant("train_epoch walks through the rows in their stored order, not in `order`",
            "train_epoch slices the rows by position",
            variant(TRAIN_EPOCH, "rows = order[start:start + batch_size]",
                    "rows = np.arange(start, min(start + batch_size, len(order)))")),
    Variant("train_epoch drops the last, smaller batch", "train_epoch counts whole batches only",
            variant(TRAIN_EPOCH, "range(0, len(order), batch_size)",
                    "range(0, len(order) // batch_size * batch_size, batch_size)")),
    Variant("sgd_step climbs the gradient instead of descending", "sgd_step adds the scaled gradient with np.add", """
def sgd_step(params, lr):
    for p in params:
        np.add(p.data, lr * p.grad, out=p.data)
"""),
    Variant("zero_grad clears only the first parameter", "zero_grad returns inside its loop", """
def zero_grad(params):
    for p in params:
        p.grad = np.zeros_like(p.data)
        return
"""),
    Variant("sgd_step rebinds .data to a new array, so whoever holds the old one sees no step",
            "sgd_step assigns the difference to .data", """
def sgd_step(params, lr):
    for p in params:
        p.data = np.subtract(p.data, lr * p.grad)
"""),
    Variant("zero_grad multiplies .grad by 0, which leaves NaN where it held inf or NaN",
            "zero_grad scales the gradient in place by zero", """
def zero_grad(params):
    for p in params:
        p.grad *= 0.0
"""),
    Variant("sgd_step writes through p.data[:], which a 0-d parameter does not have",
            "sgd_step assigns into a full slice", """
def sgd_step(params, lr):
    for p in params:
        p.data[:] = p.data - lr * p.grad
"""),
    Variant("init_mlp scales the weights by sqrt(2 / fan_out)", "init_mlp draws with the layer's output width",
            variant(INIT_MLP, "np.sqrt(2.0 / fan_in)", "(2.0 / fan_out) ** 0.5")),
    Variant("mlp_forward applies relu to the logits too", "mlp_forward applies relu after every layer",
            variant(MLP_FORWARD, "if layer + 2 < len(params):  # no relu on the logits", "if True:")),
    Variant("mlp_forward wraps X in Tensor(X), which fails when X is a Tensor already",
            "mlp_forward makes a new Tensor of X's array", variant(MLP_FORWARD, "as_tensor(X)", "Tensor(np.asarray(X))")),
    Variant("gradient_check returns the largest absolute error, without dividing by max(1, |g|)",
            "gradient_check reports the absolute gap",
            variant(GRADIENT_CHECK, "np.abs(e - g) / np.maximum(1.0, np.abs(g))", "np.abs(g - e)")),
    Variant("gradient_check ignores its h and differences at numerical_grad's default step",
            "gradient_check passes a fixed step", variant(GRADIENT_CHECK, "[p.data for p in model.params], h)",
                                                          "[p.data for p in model.params], 1e-6)")),
    Variant("gradient_check compares only the first parameter", "gradient_check looks at the first pair",
            variant(GRADIENT_CHECK, "for e, g in zip(estimates, engine))", "for e, g in zip(estimates[:1], engine[:1]))")),
    Variant("gradient_check does not clear the gradients before backward", "gradient_check without its zero_grad",
            variant(GRADIENT_CHECK, "    model.zero_grad()  # stale gradients would be added to the new ones\n", "")),
    Variant("torch_witness compares only the first parameter's gradient", "torch_witness measures the first pair",
            variant(TORCH_WITNESS, "for p, c in zip(model.params, copies))", "for p, c in zip(model.params[:1], copies[:1]))")),
    Variant("torch_witness reads the engine's .grad without running its backward",
            "torch_witness builds the engine's loss but never backpropagates it",
            variant(TORCH_WITNESS, "    loss.backward()  # the engine's side\n", "")),
    Variant("torch_witness copies the network into PyTorch in float32", "torch_witness copies with torch.float",
            variant(variant(TORCH_WITNESS, "torch.tensor(p.data, dtype=torch.float64, requires_grad=True)",
                            "torch.tensor(p.data, dtype=torch.float, requires_grad=True)"),
                    "torch.tensor(X, dtype=torch.float64)", "torch.tensor(X, dtype=torch.float)")),
    Variant("torch_witness returns the signed difference of the two losses", "torch_witness subtracts without abs",
            variant(TORCH_WITNESS, "abs(float(loss.data) - reference_loss.item())", "float(loss.data) - reference_loss.item()")),
    Variant("adam_step leaves out the bias correction", "adam_step divides by one",
            variant(ADAM, 'm / (1 - beta1 ** state["t"]), v / (1 - beta2 ** state["t"])', "m / 1.0, v / 1.0")),
    Variant("adam_step adds eps inside the square root", "adam_step takes the root of v_hat + eps",
            variant(ADAM, "(np.sqrt(v_hat) + eps)", "np.sqrt(v_hat + eps)")),
    Variant("adam_step keeps a running mean of |g| instead of g squared", "adam_step averages the absolute gradient",
            variant(ADAM, "(1 - beta2) * p.grad ** 2", "(1 - beta2) * np.abs(p.grad)")),
    Variant("no_grad switches recording back on when it ends, even inside an outer no_grad",
            "no_grad restores True in its finally", variant(NO_GRAD, "grad_enabled = before  # not True", "grad_enabled = True  #")),
    Variant("no_grad restores the flag without try/finally, so an exception leaves recording off",
            "no_grad restores the flag after yield", """
@contextmanager
def no_grad():
    global grad_enabled
    saved = grad_enabled
    grad_enabled = False
    yield
    grad_enabled = saved
"""),
    Variant("no_grad assigns grad_enabled without `global`, so the module's flag never changes",
            "no_grad sets a local flag", """
@contextmanager
def no_grad():
    grad_enabled = False
    try:
        yield
    finally:
        grad_enabled = True
"""),
    Variant("dual_multiply keeps only one term of the product rule", "dual_multiply keeps the second term",
            """
def dual_multiply(a, b):
    return Dual(a.value * b.value, a.value * b.tangent)
"""),
    Variant("dual_exp forgets to multiply by the incoming tangent", "dual_exp's tangent is its value", """
def dual_exp(a):
    e = np.exp(a.value)
    return Dual(e, e.copy())
"""),
    Variant("dual_log multiplies the tangent by the value instead of dividing", "dual_log multiplies with np", """
def dual_log(a):
    return Dual(np.log(a.value), np.multiply(a.tangent, a.value))
"""),
    Variant("dual_matmul drops the term of the right operand's tangent", "dual_matmul keeps the left tangent's term", """
def dual_matmul(a, b):
    return Dual(np.matmul(a.value, b.value), np.matmul(a.tangent, b.value))
"""),
    Variant("jacobian_fwd lays each JVP out as a row, transposing the Jacobian", "jacobian_fwd stacks the JVPs first",
            variant(JACOBIAN_FWD, "np.stack(columns, axis=-1)", "np.stack(columns, axis=0)")),
    Variant("grad ignores create_graph and always returns detached values", "grad detaches whatever it is asked",
            variant(GRAD, "return found if create_graph else [Tensor(g.data) for g in found]",
                    "return [Tensor(np.array(g.data)) for g in found]")),
    Variant("grad keeps only the last contribution that reaches a node", "grad stores each part over the last",
            variant(GRAD, "grads[id(parent)] = grads[id(parent)] + part if id(parent) in grads else part",
                    "grads[id(parent)] = part")),
    Variant("vjp_tensor's exp rule multiplies by the output's data, a constant", "vjp_tensor's exp rule wraps np.exp",
            variant(VJP_TENSOR, "return [g * node]", "return [g * Tensor(np.exp(a.data))]")),
    Variant("vjp_tensor's multiply rule uses the other factor's data, a constant",
            "vjp_tensor's multiply rule multiplies by copies of the factors",
            variant(VJP_TENSOR, "return [sum_to(g * b, a.shape), sum_to(g * a, b.shape)]",
                    "return [sum_to(g * Tensor(b.data.copy()), a.shape), sum_to(g * Tensor(a.data.copy()), b.shape)]")),
    Variant("newton_step adds the Newton direction instead of subtracting it", "newton_step steps with a plus",
            variant(NEWTON_STEP, "return x - np.linalg.solve(", "return x + np.linalg.solve(")),
    Variant("conv2d's x gradient keeps the padded border", "conv2d hands x the whole padded buffer",
            variant(CONV2D, "x.grad += grad_padded[:, :, padding:padding + height, padding:padding + width]",
                    "x.grad = x.grad + grad_padded")),
    Variant("conv2d's bias gradient sums the first example's gradient only", "conv2d sums the bias gradient of g[:1]",
            variant(CONV2D, "b.grad += g.sum(axis=(0, 2, 3))", "b.grad += np.einsum('fhw->f', g[0])")),
    Variant("conv2d flips the filter, a convolution in the textbook sense instead of F.conv2d's",
            "conv2d rotates the filter by np.flip", variant(CONV2D, "filters = w.data\n", "filters = np.flip(w.data, axis=(2, 3))\n")),
    Variant("to_dot draws every edge from the node to its parent", "to_dot writes each edge child first",
            variant(TO_DOT, 'lines.append(f"  n{id(parent)} -> n{id(node)};")',
                    'lines.append("  n%d -> n%d;" % (id(node), id(parent)))')),
    Variant("to_dot labels leaves with their empty _op", "to_dot labels every node by its _op string",
            variant(TO_DOT, '{node._op or "leaf"}', '{str(node._op)}')),
    Variant("to_dot draws the edges of the first two parents only, as if no operation had three",
            "to_dot zips the parents with two slots", variant(TO_DOT, "in node._prev:\n", "in list(node._prev)[0:2]:\n")),
    Variant("multiply undoes broadcasting by summing the wrong axes (the trailing ones)",
            "multiply shrinks a gradient from its last axis", """
def multiply(a, b):
    out = Tensor(a.data * b.data, (a, b), "*")

    def shrink(g, shape):
        while g.ndim > len(shape):
            g = g.sum(axis=g.ndim - 1)
        stretched = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
        return g.sum(axis=stretched, keepdims=True)

    def _backward():
        a.grad += shrink(out.grad * b.data, a.shape)
        b.grad += shrink(out.grad * a.data, b.shape)

    out._backward = _backward
    return out
"""),
    Variant("multiply finds and sums one stretched axis per operand, not all of them",
            "multiply sums the first stretched axis it finds", """
def multiply(a, b):
    out = Tensor(a.data * b.data, (a, b), "*")

    def shrink(g, shape):
        g = g.sum(axis=tuple(range(g.ndim - len(shape))))
        first = next((i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1), None)
        return g if first is None else g.sum(axis=first, keepdims=True)

    def _backward():
        a.grad += shrink(out.grad * b.data, a.shape)
        b.grad += shrink(out.grad * a.data, b.shape)

    out._backward = _backward
    return out
"""),
    Variant("reduce_sum broadcasts the gradient back without reinserting the summed axes",
            "reduce_sum broadcasts the upstream as it came",
            variant(REDUCE_SUM, "upstream = np.expand_dims(upstream, axis)", "upstream = np.asarray(upstream)")),
    Variant("reduce_sum puts the summed axes back one at a time, in the order given",
            "reduce_sum expands one axis per loop turn",
            variant(REDUCE_SUM, "upstream = np.expand_dims(upstream, axis)",
                    "for ax in (axis if isinstance(axis, tuple) else (axis,)): upstream = np.expand_dims(upstream, ax)")),
    Variant("cross_entropy's rule writes P - Y into the softmax its forward pass saved",
            "cross_entropy keeps the probabilities and edits them in backward", """
def cross_entropy(logits, y):
    shifted = logits.data - logits.data.max(axis=1, keepdims=True)
    probs = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    n = len(y)
    out = Tensor(-np.log(probs[np.arange(n), y]).mean(), (logits,), "cross_entropy")

    def _backward():
        probs[np.arange(n), y] -= 1.0
        logits.grad += out.grad * probs / n

    out._backward = _backward
    return out
"""),
    Variant("backward recurses into the parents at once, with no order and no memory",
            "backward spreads from the root by recursion", """
def backward(root):
    root.grad = np.ones_like(root.data)

    def spread(node):
        node._backward()
        for source in node._prev:
            spread(source)

    spread(root)
"""),
    Variant("backward runs each rule in the order a depth-first search discovers the nodes",
            "backward runs the rules in a stack walk's preorder", """
def backward(root):
    found, seen, stack = [], set(), [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        found.append(node)
        stack.extend(node._prev)
    root.grad = np.ones_like(root.data)
    for node in found:
        node._backward()
"""),
    Variant("zero_grad writes zeros through p.grad[:], which a 0-d parameter does not have",
            "zero_grad fills a slice from the start", """
def zero_grad(params):
    for p in params:
        p.grad[0:] = np.zeros_like(p.grad)
"""),
    Variant("gradient_check takes one-sided differences of its own", "gradient_check steps each entry forward only", """
def gradient_check(model, X, y, h=1e-6):
    model.zero_grad()
    engine_loss = cross_entropy(model(X), y)
    engine_loss.backward()
    worst = 0.0
    for p in model.params:
        base = float(cross_entropy(model(X), y).data)
        for index in np.ndindex(*p.data.shape):
            kept = p.data[index]
            p.data[index] = kept + h
            slope = (float(cross_entropy(model(X), y).data) - base) / h
            p.data[index] = kept
            worst = max(worst, abs(slope - p.grad[index]) / max(1.0, abs(p.grad[index])))
    return worst
"""),
    Variant("adam_step rebinds its moment arrays, so state keeps the zeros of step 1", "adam_step assigns new moment arrays",
            variant(variant(ADAM, "m[...] = beta1 * m + (1 - beta1) * p.grad", "m = beta1 * m + (1 - beta1) * p.grad"),
                    "v[...] = beta2 * v + (1 - beta2) * p.grad ** 2", "v = beta2 * v + (1 - beta2) * p.grad ** 2")),
    Variant("no_grad swallows an exception raised inside its block", "no_grad catches Exception and carries on", """
@contextmanager
def no_grad():
    global grad_enabled
    before = grad_enabled
    grad_enabled = False
    try:
        yield
    except Exception:
        pass
    finally:
        grad_enabled = before
"""),
    Variant("no_grad restores the flag in `except Exception`, so a KeyboardInterrupt leaves recording off",
            "no_grad restores in an except clause for Exception and after the block", """
@contextmanager
def no_grad():
    global grad_enabled
    before = grad_enabled
    grad_enabled = False
    try:
        yield
    except Exception:
        grad_enabled = before
        raise
    grad_enabled = before
"""),
    Variant("no_grad switches recording on when an exception leaves it, even inside an outer no_grad",
            "no_grad turns recording on in its except clause", """
@contextmanager
def no_grad():
    global grad_enabled
    before = grad_enabled
    grad_enabled = False
    try:
        yield
    except BaseException:
        grad_enabled = True
        raise
    grad_enabled = before
"""),
    Variant("jvp reads .value and .tangent of f's result, which a function returning a plain array lacks",
            "jvp reads f's result as it comes", variant(JVP, "out = as_dual(f(Dual(x, u)))", "out = f(Dual(x, u))")),
    Variant("jvp gives a result that is not a Dual a zero tangent of x's shape", "jvp answers a constant with zeros like x", """
def jvp(f, x, u):
    out = f(Dual(x, u))
    if not isinstance(out, Dual):
        return np.asarray(out, dtype=np.float64), np.zeros(np.shape(x))
    return out.value, out.tangent
"""),
    Variant("vjp_tensor's multiply rule does not sum the right operand's contribution back to its shape",
            "vjp_tensor's multiply rule hands b its full product",
            variant(VJP_TENSOR, "sum_to(g * a, b.shape)]", "g * a]")),
    Variant("vjp_tensor's sum rule spreads g's data, a constant", "vjp_tensor's sum rule broadcasts g.data",
            variant(VJP_TENSOR, "return [g * np.ones(a.shape)]", "return [Tensor(np.broadcast_to(g.data, a.shape).copy())]")),
    Variant("vjp_tensor starts from a copy of g's data, so the contributions forget how g was made",
            "vjp_tensor rewraps g first", variant(VJP_TENSOR, "    a, b = (node._prev + (None,))[:2]\n",
                                                  "    a, b = (node._prev + (None,))[:2]\n    g = Tensor(np.copy(g.data))\n")),
    Variant("conv2d's backward assigns into overlapping windows of the x gradient", "conv2d's backward overwrites each window",
            variant(CONV2D, "grad_padded[window] +=", "grad_padded[window] = 0 * grad_padded[window] +")),
    Variant("conv2d allocates its padded gradient buffer in the forward pass, so a second backward adds to the first "
            "one's sums", "conv2d makes one zeros_like buffer beside the filters",
            variant(variant(CONV2D, "        grad_padded = np.zeros(padded.shape)\n", "        grad_padded = kept_buffer\n"),
                    "    filters = w.data\n", "    filters = w.data\n    kept_buffer = np.zeros_like(padded)\n")),
    Variant("to_dot lists a node once per path that reaches it", "to_dot discards what it marks",
            variant(TO_DOT, "seen.add(id(node))", "seen.discard(id(node))")),
    Variant("to_dot keeps a set of edges, so x * x gets a single edge", "to_dot walks the set of parents",
            variant(TO_DOT, "in node._prev:\n", "in set(node._prev):\n")),
    Variant("to_dot calls every node without parents a leaf, operations made under no_grad too",
            "to_dot labels by the number of parents", variant(TO_DOT, '{node._op or "leaf"}',
                                                              '{"leaf" if len(node._prev) == 0 else node._op}')),
    Variant("adam_step keeps the moments on the Tensors, so a new state starts from the old moments",
            "adam_step hangs its moments on each parameter", """
def adam_step(params, state, lr, betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    state["t"] = state.get("t", 0) + 1
    for p in params:
        if not hasattr(p, "first_moment"):
            p.first_moment, p.second_moment = np.zeros_like(p.data), np.zeros_like(p.data)
        p.first_moment = beta1 * p.first_moment + (1 - beta1) * p.grad
        p.second_moment = beta2 * p.second_moment + (1 - beta2) * p.grad ** 2
        m_hat = p.first_moment / (1 - beta1 ** state["t"])
        v_hat = p.second_moment / (1 - beta2 ** state["t"])
        p.data -= lr * m_hat / (np.sqrt(v_hat) + eps)
"""),
    Variant("adam_step counts the steps on each Tensor, as PyTorch counts them per parameter",
            "adam_step keeps a step counter on each parameter", """
def adam_step(params, state, lr, betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    if not state:
        state["m"] = [np.zeros_like(p.data) for p in params]
        state["v"] = [np.zeros_like(p.data) for p in params]
    for p, m, v in zip(params, state["m"], state["v"]):
        p.steps_taken = getattr(p, "steps_taken", 0) + 1
        m[...] = beta1 * m + (1 - beta1) * p.grad
        v[...] = beta2 * v + (1 - beta2) * p.grad ** 2
        m_hat = m / (1 - beta1 ** p.steps_taken)
        v_hat = v / (1 - beta2 ** p.steps_taken)
        p.data -= lr * m_hat / (np.sqrt(v_hat) + eps)
"""),
    Variant("reduce_sum turns a negative axis positive when it comes alone, not inside a tuple",
            "reduce_sum keeps the summed axes by a membership test of the raw axis", """
def reduce_sum(a, axis=None, keepdims=False):
    out = Tensor(np.sum(a.data, axis=axis, keepdims=keepdims), (a,), "sum")
    wanted = range(a.data.ndim) if axis is None else [axis % a.data.ndim] if np.isscalar(axis) else list(axis)
    kept = [1 if i in wanted else n for i, n in enumerate(a.shape)]

    def _backward():
        a.grad += np.broadcast_to(out.grad.reshape(kept), a.shape)

    out._backward = _backward
    return out
"""),
    Variant("cross_entropy is composed from the primitives instead of being one node",
            "cross_entropy as a mean of log-sum-exp minus the picked logit, from Tensor operations", """
def cross_entropy(logits, y):
    top = logits.data.max(axis=1, keepdims=True)
    centred = logits - top
    one_hot = np.zeros(logits.shape)
    one_hot[np.arange(len(y)), y] = 1.0
    per_row = centred.exp().sum(axis=1).log() - (centred * one_hot).sum(axis=1)
    return per_row.mean()
"""),
    Variant("jacobian_fwd by reverse mode, one backward pass per output", "jacobian_fwd by one reverse pass per output entry", """
def jacobian_fwd(f, x):
    x = np.asarray(x, dtype=np.float64)
    rows = []
    out_shape = None
    for i in range(np.asarray(f(Tensor(x)).data).size):
        leaf = Tensor(x)
        out = f(leaf)
        out_shape = out.data.shape
        pick = np.zeros(out.data.size)
        pick[i] = 1.0
        backward((out * pick.reshape(out_shape)).sum())
        rows.append(np.array(leaf.grad))
    return np.stack(rows).reshape(out_shape + x.shape)
"""),
]
