"""The catalogue's slips written another way, as another student would write them: never used to
build the fingerprints, they measure how well the grader names a mistake it was not built from
(`python -m autograder fingerprints --lab tensor_engine --measure 99`). Many are one slip in the
reference answer, made with the catalogue's own `variant`."""
from autograder.labs.tensor_engine.mistakes import variant
from autograder.vocabulary import Variant, reference_function


def ref(name):
    return reference_function("tensor_engine", name)


MULTIPLY, MATMUL, REDUCE_SUM = ref("multiply"), ref("matmul"), ref("reduce_sum")
EXP, LOG, RELU, CROSS_ENTROPY = ref("exp"), ref("log"), ref("relu"), ref("cross_entropy")
NUMERICAL_GRAD, SGD_STEP, ZERO_GRAD, TRAIN_EPOCH = (ref("numerical_grad"), ref("sgd_step"), ref("zero_grad"),
                                                    ref("train_epoch"))
BACKWARD = ref("backward")

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
]
