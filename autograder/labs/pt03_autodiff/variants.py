"""The catalogue's slips written another way, as another student would write them: never used to
build the fingerprints, they measure how well the grader names a mistake it was not built from
(`python -m autograder fingerprints --lab pt03_autodiff --measure 99`)."""
from autograder.vocabulary import Variant, reference_function


def slip(name, wrong, instead):
    """The reference answer of `name` with its one `wrong` written as `instead`."""
    correct = reference_function("pt03_autodiff", name)
    assert correct.count(wrong) == 1, wrong
    return correct.replace(wrong, instead)


VARIANTS = [
    Variant("add_vjp gives the second input no adjoint", "add_vjp gives b zeros", """
def add_vjp(a, b, v):
    return v, np.zeros_like(v)
"""),
    Variant("multiply_vjp swaps the two factors", "multiply_vjp pairs each input with itself", """
def multiply_vjp(a, b, v):
    a_bar = np.multiply(v, a)
    b_bar = np.multiply(v, b)
    return a_bar, b_bar
"""),
    Variant("multiply_vjp forgets the incoming adjoint v", "multiply_vjp returns the local slopes", """
def multiply_vjp(a, b, v):
    return np.array(b, dtype=float), np.array(a, dtype=float)
"""),
    Variant("matmul_vjp without the transposes", "matmul_vjp by einsum, contracting the wrong axes",
            slip("matmul_vjp", "return v @ b.T, a.T @ v", "return np.einsum('ik,jk->ij', v, b.T), a @ v")),
    Variant("matmul_vjp leaves b_bar transposed in matrix @ matrix", "matmul_vjp forms b_bar as v.T @ a",
            slip("matmul_vjp", "return v @ b.T, a.T @ v", "return v @ b.T, v.T @ a")),
    Variant("matmul_vjp swaps the outer product in matrix @ vector", "matmul_vjp's matrix-vector outer product as b, v",
            slip("matmul_vjp", "return np.outer(v, b), a.T @ v", "return np.outer(b, v), a.T @ v")),
    Variant("matmul_vjp transposes the vector @ matrix outer product", "matmul_vjp's vector-matrix outer product as v, a",
            slip("matmul_vjp", "return b @ v, np.outer(a, v)", "return b @ v, np.outer(v, a)")),
    Variant("sums the extra axes at the end instead of the front", "sum_to_shape sums the last extra axes",
            slip("sum_to_shape", "v.sum(axis=tuple(range(extra)))", "v.sum(axis=tuple(range(v.ndim - extra, v.ndim)))")),
    Variant("drops keepdims on stretched axes", "sum_to_shape squeezes the stretched axes",
            slip("sum_to_shape", "v.sum(axis=stretched, keepdims=True)", "np.squeeze(v.sum(axis=stretched, keepdims=True), axis=stretched)")),
    Variant("only removes the leading axes, never the stretched ones", "sum_to_shape leaves stretched axes as they are",
            slip("sum_to_shape", "stretched = tuple(i for i, n in enumerate(shape) if n == 1 and v.shape[i] != 1)",
                 "stretched = ()")),
    Variant("averages instead of summing", "sum_to_shape averages the stretched axes too",
            slip("sum_to_shape", "v.sum(axis=stretched, keepdims=True)", "v.mean(axis=stretched, keepdims=True)")),
    Variant("tanh derivative computed as if y were the input", "tanh_vjp takes tanh of y again", """
def tanh_vjp(y, v):
    t = np.tanh(y)
    return v * (1.0 - t ** 2)
"""),
    Variant("tanh_vjp forgets the incoming adjoint", "tanh_vjp returns the local derivative", """
def tanh_vjp(y, v):
    return 1.0 - np.square(y)
"""),
    Variant("tanh_vjp drops the square", "tanh_vjp subtracts y from one", """
def tanh_vjp(y, v):
    return v * (1.0 - y)
"""),
    Variant("relu passes the adjoint at exactly 0", "relu_vjp tests x >= 0",
            slip("relu_vjp", "np.where(x > 0, v, 0.0)", "np.where(x >= 0, v, 0.0)")),
    Variant("relu masks by the sign of v instead of x", "relu_vjp clips v below at zero", """
def relu_vjp(x, v):
    return np.clip(v, 0.0, None)
"""),
    Variant("relu returns the mask, not the masked adjoint", "relu_vjp returns the 0/1 mask as floats", """
def relu_vjp(x, v):
    return (x > 0).astype(np.float64)
"""),
    Variant("relu lets the adjoint through where x is negative", "relu_vjp returns v unchanged", """
def relu_vjp(x, v):
    return np.array(v, dtype=np.float64)
"""),
    Variant("relu zeroes the adjoint v in place", "relu_vjp multiplies v in place by the mask", """
def relu_vjp(x, v):
    v *= (x > 0)
    return v
"""),
    Variant("= instead of +=: the last contribution overwrites the others", "backward stores each share",
            slip("backward", "adjoint[parent] += share", "adjoint[parent] = share")),
    Variant("walks the nodes forward instead of in reverse", "backward iterates the order as it is",
            slip("backward", "for node in reversed(order):", "for node in order:")),
    Variant("ignores the seed and always starts from ones", "backward passes no seed on",
            slip("backward", "initial_adjoints(order, output, seed)", "initial_adjoints(order, output, None)")),
    Variant("no visited set: shared nodes are listed once per path", "topological_order without its visited check",
            slip("topological_order", "elif node not in visited:", "else:")),
    Variant("forgets to update the bias", "classifier_step returns b as it came",
            slip("classifier_step", '"b": b - lr * db}', '"b": b.copy()}')),
    Variant("steps up the gradient instead of down", "classifier_step adds the gradients",
            slip("classifier_step", '"W": W - lr * dW, "b": b - lr * db}', '"W": W + lr * dW, "b": b + lr * db}')),
    Variant("returns the loss as a 0-d array", "classifier_step returns loss.value as an array",
            slip("classifier_step", '"loss": float(loss.value)', '"loss": np.asarray(loss.value)')),
    Variant("divides the gradient by the batch size a second time", "classifier_step scales the gradients by 1/n",
            slip("classifier_step", "dW, db = adjoints[weights], adjoints[bias]",
                 "dW, db = adjoints[weights] / len(X), adjoints[bias] / len(X)")),
    Variant("returns the gradients under each other's names", "classifier_step swaps dW and db in its dict",
            slip("classifier_step", '"dW": dW, "db": db,', '"dW": db, "db": dW,')),
    Variant("returns the function's value, not its gradient", "grad's gradient returns out.value",
            slip("grad", "return backward(out).get(leaf, np.zeros(leaf.value.shape)).copy()",
                 "return np.array(out.value)")),
    Variant("returns the gradient flattened into a vector", "grad ravels its result",
            slip("grad", "return backward(out).get(leaf, np.zeros(leaf.value.shape)).copy()",
                 "return np.ravel(backward(out).get(leaf, np.zeros(leaf.value.shape)))")),
    Variant("returns None when the result does not depend on x", "grad indexes the adjoints with get and no default",
            slip("grad", "return backward(out).get(leaf, np.zeros(leaf.value.shape)).copy()",
                 "found = backward(out).get(leaf)\n        return None if found is None else found.copy()")),
    Variant("arranges the result input-first (the transposed Jacobian)", "jacobian moves the output axes last",
            slip("jacobian", "return np.array(rows).reshape(out.value.shape + leaf.value.shape)",
                 "return np.array(rows).reshape(out.value.shape + leaf.value.shape).T")),
    Variant("seeds every pass with ones instead of a one-hot vector", "jacobian fills the seed with ones",
            slip("jacobian", "seed = np.zeros(out.value.size)", "seed = np.ones(out.value.size)")),
    Variant("counts the outputs with shape[0], as if every output were a vector", "jacobian loops over len(out.value)",
            slip("jacobian", "for j in range(out.value.size):", "for j in range(len(out.value)):")),
    Variant("de-duplicated parents: x * x sends x one contribution", "backward pairs each distinct parent with its share",
            slip("backward", "for parent, share in zip(node.parents, contributions):",
                 "for parent, share in dict(zip(node.parents, contributions)).items():")),
    Variant("recursion instead of an explicit stack", "topological_order by a recursive helper", """
def topological_order(output):
    order, visited = [], set()

    def visit(node):
        if node in visited:
            return
        visited.add(node)
        for source in node.parents:
            visit(source)
        order.append(node)

    visit(output)
    return order
"""),
    Variant("updates W and b in place", "classifier_step subtracts into W and b",
            slip("classifier_step", '"W": W - lr * dW, "b": b - lr * db}',
                 '"W": np.subtract(W, lr * dW, out=W), "b": np.subtract(b, lr * db, out=b)}')),
    Variant("logits X @ W without the transpose", "classifier_step multiplies by W as it is",
            slip("classifier_step", "Tensor(X, name=\"X\") @ weights.T + bias", "Tensor(X, name=\"X\") @ weights + bias")),
    Variant("never updates the output bias b2", "mlp_step steps every parameter but b2",
            slip("mlp_step", "{key: params[key] - lr * adjoints[leaf[key]] for key in params}",
                 "{key: params[key] if key == \"b2\" else params[key] - lr * adjoints[leaf[key]] for key in params}")),
    Variant("forgets the ReLU: a linear model with two layers", "mlp_step's hidden layer without an activation",
            slip("mlp_step", "(Tensor(X, name=\"X\") @ leaf[\"W1\"].T + leaf[\"b1\"]).relu()",
                 "Tensor(X, name=\"X\") @ leaf[\"W1\"].T + leaf[\"b1\"]")),
    Variant("never clears the previous one-hot entry", "jacobian makes its seed once, outside the loop", """
def jacobian(function, value):
    leaf = Tensor(value, name="x")
    out = as_tensor(function(leaf))
    seed = np.zeros(out.value.size)
    rows = []
    for j in range(out.value.size):
        seed[j] = 1.0
        adjoints = backward(out, seed.reshape(out.value.shape))
        rows.append(adjoints.get(leaf, np.zeros(leaf.value.shape)))
    return np.array(rows).reshape(out.value.shape + leaf.value.shape)
"""),
]
