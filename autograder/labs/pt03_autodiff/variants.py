"""The catalogue's slips written another way, as another student would write them: never used to
build the fingerprints, they measure how well the grader names a mistake it was not built from
(`python -m autograder fingerprints --lab pt03_autodiff --measure 99`)."""
from autograder.labs.vocabulary import Variant, slips_of


slip = slips_of("pt03_autodiff")


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
    Variant("matmul_vjp written for matrices only", "matmul_vjp with swapaxes for every case", """
def matmul_vjp(a, b, v):
    return np.matmul(v, np.swapaxes(b, -1, -2)), np.matmul(np.swapaxes(a, -1, -2), v)
"""),
    Variant("guesses the axis from its length, which fails for square batches",
            "sum_to_shape drops the first axis whose length the target lacks", """
def sum_to_shape(v, shape):
    v = np.asarray(v, dtype=np.float64)
    while v.ndim > len(shape):
        sizes = list(v.shape)
        axis = next((i for i in range(len(sizes)) if sizes[i] not in tuple(shape)), len(sizes) - 1)
        v = np.sum(v, axis=axis)
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and v.shape[i] != 1)
    return np.sum(v, axis=stretched, keepdims=True)
"""),
    Variant("reshapes instead of reducing", "sum_to_shape resizes to the target", """
def sum_to_shape(v, shape):
    return np.resize(np.asarray(v, dtype=np.float64), tuple(shape))
"""),
    Variant("if instead of while: only one prepended axis is summed away", "sum_to_shape sums the first axis once",
            slip("sum_to_shape", "v = v.sum(axis=tuple(range(extra)))", "v = v.sum(axis=0) if extra else v")),
    Variant("finds the stretched axis with shape.index(1), so only the first one is summed",
            "sum_to_shape keeps the first stretched axis of its tuple",
            slip("sum_to_shape", "v = v.sum(axis=stretched, keepdims=True)", "v = v.sum(axis=stretched[:1], keepdims=True)")),
    Variant("relu tests the sign bit, so the adjoint passes at +0.0", "relu_vjp masks by copysign",
            slip("relu_vjp", "np.where(x > 0, v, 0.0)", "np.where(np.copysign(1.0, x) > 0, v, 0.0)")),
    Variant("tanh_vjp forms the Jacobian with np.diag, right for vectors only", "tanh_vjp by a diagonal matrix product", """
def tanh_vjp(y, v):
    jacobian = np.diagflat(1.0 - y * y)
    return v @ jacobian
"""),
    Variant("reuses the drawing order of graph_nodes, reversed", "topological_order lists graph_nodes backwards", """
def topological_order(output):
    drawn = list(graph_nodes(output))
    drawn.reverse()
    return drawn
"""),
    Variant("no shape check: a wrong-shaped VJP is broadcast silently", "backward adds shares without comparing shapes",
            slip("backward", """                if share.shape != parent.value.shape:
                    raise ValueError(f"the VJP of {node.name} returned shape {share.shape} "
                                     f"for a parent of shape {parent.value.shape}")
                adjoint[parent] += share""", "                adjoint[parent] = adjoint[parent] + share")),
    Variant("checks the shapes with len(), which has no answer for scalar nodes", "backward compares np.shape(...)[0]",
            slip("backward", "if share.shape != parent.value.shape:", "if share.shape[0] != parent.value.shape[0]:")),
    Variant("tanh instead of ReLU in the hidden layer", "mlp_step's hidden layer through the tanh method",
            slip("mlp_step", "leaf[\"b1\"]).relu()", "leaf[\"b1\"]).tanh()")),
    Variant("updates the parameters passed in, in place", "mlp_step writes the new values into params",
            slip("mlp_step", "return float(loss.value), {key: params[key] - lr * adjoints[leaf[key]] for key in params}",
                 "params.update({key: params[key] - lr * adjoints[leaf[key]] for key in params})\n"
                 "    for key in params:\n        leaf[key].value[...] = params[key]\n"
                 "    return float(loss.value), params")),
    Variant("differentiates with respect to a copy made after the call", "grad looks up a second leaf",
            slip("grad", "return backward(out).get(leaf, np.zeros(leaf.value.shape)).copy()",
                 "return backward(out).get(Tensor(x, name=\"x\"), np.zeros(np.shape(x))).copy()")),
    Variant("no ValueError for a vector result: seeds it with ones", "grad accepts vectors, seeding them with ones",
            slip("grad", """        if out.value.shape != ():
            raise ValueError(f"grad needs a scalar result, got shape {out.value.shape}")
        return backward(out)""", """        if out.value.ndim > 1:
            raise ValueError("grad needs a scalar or a vector result")
        return backward(out, np.ones(out.value.shape))""")),
    Variant("tests the result's size instead of its shape: a (1,) result passes", "grad counts the entries and seeds ones",
            slip("grad", """        if out.value.shape != ():
            raise ValueError(f"grad needs a scalar result, got shape {out.value.shape}")
        return backward(out)""", """        if out.value.size != 1:
            raise ValueError("grad needs a single number")
        return backward(out, np.ones(out.value.shape))""")),
    Variant("grad by central differences of the forward pass, one pass per input", "grad by symmetric differences", """
def grad(function):
    def gradient(x):
        x = np.asarray(x, dtype=np.float64)
        slopes = np.zeros(x.shape)
        for index in np.ndindex(*x.shape):
            step = np.zeros(x.shape)
            step[index] = 1e-6
            up = as_tensor(function(Tensor(x + step))).value
            down = as_tensor(function(Tensor(x - step))).value
            slopes[index] = (up - down) / 2e-6
        return slopes

    return gradient
"""),
    Variant("fails for a function that ignores its input", "jacobian indexes the adjoints by the leaf",
            slip("jacobian", "rows.append(adjoints.get(leaf, np.zeros(leaf.value.shape)))", "rows.append(adjoints[leaf])")),
    Variant("adjoints kept from one call to the next", "backward keeps its adjoints on the function", """
def backward(output, seed=None):
    order = topological_order(output)
    store = backward.__dict__.setdefault("store", {})
    for node, value in initial_adjoints(order, output, seed).items():
        store[node] = store.get(node, 0.0) + value
    for node in reversed(order):
        if node.vjp is not None:
            for parent, share in zip(node.parents, node.vjp(store[node])):
                store[parent] = store[parent] + np.asarray(share, dtype=np.float64)
    return {node: store[node] for node in order}
"""),
    Variant("calls a node's VJP once per parent instead of once per node", "backward asks the VJP inside the parent loop",
            slip("backward", """            contributions = node.vjp(adjoint[node])
            if len(contributions) != len(node.parents):
                raise ValueError(f"the VJP of {node.name} returned {len(contributions)} adjoints "
                                 f"for {len(node.parents)} parents")
            for parent, share in zip(node.parents, contributions):
                share = np.asarray(share, dtype=np.float64)""", """            for position, parent in enumerate(node.parents):
                share = np.asarray(node.vjp(adjoint[node])[position], dtype=np.float64)""")),
    Variant("returns the loss after the update instead of before", "mlp_step reports the loss of the new parameters", """
def mlp_step(X, targets, params, lr):
    def loss_of(values):
        tensors = {key: Tensor(value, name=key) for key, value in values.items()}
        hidden = (Tensor(X, name="X") @ tensors["W1"].T + tensors["b1"]).relu()
        return tensors, cross_entropy(hidden @ tensors["W2"].T + tensors["b2"], targets)

    tensors, loss = loss_of(params)
    adjoints = backward(loss)
    stepped = {key: params[key] - lr * adjoints[tensors[key]] for key in params}
    return float(loss_of(stepped)[1].value), stepped
"""),
]
