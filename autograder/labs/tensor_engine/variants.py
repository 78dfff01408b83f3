"""The catalogue's slips written another way, as another student would write them: never used to
build the fingerprints, they measure how well the grader names a mistake it was not built from
(`python -m autograder fingerprints --lab tensor_engine --measure 99`). Many are one slip in the
reference answer, made with the catalogue's own `variant`."""
from autograder.labs.tensor_engine.mistakes import CONV2D, TO_DOT, variant
from autograder.vocabulary import Variant, reference_function


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
]
