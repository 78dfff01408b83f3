"""Plausible wrong answers the catalogue does not hold, which fail the checks its mistakes fail:
for each, the right diagnosis is none. They measure whether a name is earned by what an answer
computes (`python -m autograder fingerprints --lab pt03_autodiff --measure 99`); the fingerprints
are never built from them. `of` is empty: no catalogued mistake is theirs."""
from autograder.labs.vocabulary import Variant, slips_of


slip = slips_of("pt03_autodiff")


STRANGERS = [
    # 1a, beside "add_vjp gives the second input no adjoint" and "multiply_vjp forgets v".
    Variant("", "add_vjp negates the second input's adjoint", slip("add_vjp", "return v, v", "return v, -v")),
    Variant("", "add_vjp splits the adjoint in halves", slip("add_vjp", "return v, v", "return v / 2, v / 2")),
    Variant("", "multiply_vjp forgets v for the second input only",
            slip("multiply_vjp", "return v * b, v * a", "return v * b, a")),
    Variant("", "matmul_vjp transposes b_bar's factors but leaves b untransposed in a_bar",
            slip("matmul_vjp", "return v @ b.T, a.T @ v", "return v @ b, a.T @ v")),
    # 1b, beside "averages instead of summing" and "sums the extra axes at the end".
    Variant("", "sum_to_shape averages the prepended axes only",
            slip("sum_to_shape", "v.sum(axis=tuple(range(extra)))", "v.mean(axis=tuple(range(extra)))")),
    Variant("", "sum_to_shape keeps the largest entry along stretched axes",
            slip("sum_to_shape", "v.sum(axis=stretched, keepdims=True)", "v.max(axis=stretched, keepdims=True)")),
    # 1c, beside "tanh_vjp drops the square" and "relu lets the adjoint through where x is negative".
    Variant("", "tanh_vjp adds the square instead of subtracting it",
            slip("tanh_vjp", "v * (1.0 - y * y)", "v * (1.0 + y * y)")),
    Variant("", "tanh_vjp squares the whole derivative", slip("tanh_vjp", "v * (1.0 - y * y)", "v * (1.0 - y * y) ** 2")),
    Variant("", "relu_vjp leaks a hundredth of the adjoint where x is negative",
            slip("relu_vjp", "np.where(x > 0, v, 0.0)", "np.where(x > 0, v, 0.01 * v)")),
    Variant("", "relu_vjp passes |v| where x is positive",
            slip("relu_vjp", "np.where(x > 0, v, 0.0)", "np.where(x > 0, np.abs(v), 0.0)")),
    # 2, beside "= instead of +=" and "walks the nodes forward".
    Variant("", "backward subtracts each contribution", slip("backward", "adjoint[parent] += share",
                                                             "adjoint[parent] -= share")),
    Variant("", "backward never runs the output's own VJP",
            slip("backward", "for node in reversed(order):", "for node in reversed(order[:-1]):")),
    Variant("", "topological_order lists a node when it is first reached (pre-order)",
            slip("topological_order", """        if expanded:
            order.append(node)
        elif node not in visited:
            visited.add(node)""", """        if expanded:
            pass
        elif node not in visited:
            visited.add(node)
            order.append(node)""")),
    # 3, beside "forgets to update the bias" and "divides the gradient by the batch size a second time".
    Variant("", "classifier_step forgets the learning rate for the bias",
            slip("classifier_step", '"b": b - lr * db}', '"b": b - db}')),
    Variant("", "classifier_step divides the step, not the gradients, by the batch size",
            slip("classifier_step", '"W": W - lr * dW, "b": b - lr * db}',
                 '"W": W - lr * dW / len(X), "b": b - lr * db / len(X)}')),
    # A, beside "never updates the output bias b2".
    Variant("", "mlp_step never updates the first layer's weights W1",
            slip("mlp_step", "{key: params[key] - lr * adjoints[leaf[key]] for key in params}",
                 "{key: params[key] if key == \"W1\" else params[key] - lr * adjoints[leaf[key]] for key in params}")),
    # B, beside "no ValueError for a vector result" and "returns the function's value".
    Variant("", "grad differentiates at x cast to float32",
            slip("grad", 'leaf = Tensor(x, name="x")', 'leaf = Tensor(np.asarray(x, dtype=np.float32), name="x")')),
    Variant("", "grad returns the negated gradient",
            slip("grad", "return backward(out).get(leaf, np.zeros(leaf.value.shape)).copy()",
                 "return -backward(out).get(leaf, np.zeros(leaf.value.shape))")),
    # C, beside "arranges the result input-first (the transposed Jacobian)".
    Variant("", "jacobian reshapes its rows input shape first, without transposing",
            slip("jacobian", "return np.array(rows).reshape(out.value.shape + leaf.value.shape)",
                 "return np.array(rows).reshape(leaf.value.shape + out.value.shape)")),
    Variant("", "jacobian seeds each pass with a one-hot vector of twos",
            slip("jacobian", "seed[j] = 1.0", "seed[j] = 2.0")),
]
