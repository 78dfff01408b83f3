"""Plausible wrong answers the catalogue does not hold, which fail the checks its mistakes fail:
for each, the right diagnosis is none. They measure whether a name is earned by what an answer
computes (`python -m autograder fingerprints --lab scalar_engine --measure 99`); the fingerprints
are never built from them. `of` is empty: no catalogued mistake is theirs."""
from autograder.labs.vocabulary import Variant, slips_of


slip = slips_of("scalar_engine")


STRANGERS = [
    # 1a, beside "add assigns the gradient" and "multiply swaps the factors in its rule".
    Variant("", "add's rule subtracts from the second term", slip("add", "b.grad += out.grad", "b.grad -= out.grad")),
    Variant("", "add's rule splits the gradient between its terms",
            slip("add", """        a.grad += out.grad  # the sum moves one for one with each term
        b.grad += out.grad""", """        a.grad += out.grad / 2
        b.grad += out.grad / 2""")),
    Variant("", "multiply swaps the factor for the second parent only",
            slip("multiply", "b.grad += out.grad * a.data", "b.grad += out.grad * b.data")),
    # 1b, beside "power forgets to lower the exponent", "log's rule multiplies by a", "tanh's rule
    # drops the square" and "relu lets the gradient through at exactly 0".
    Variant("", "power raises the exponent instead of lowering it",
            slip("power", "k * a.data ** (k - 1)", "k * a.data ** (k + 1)")),
    Variant("", "power lowers the factor with the exponent: (k - 1) a^(k-1)",
            slip("power", "k * a.data ** (k - 1)", "(k - 1) * a.data ** (k - 1)")),
    Variant("", "log's rule divides by the output instead of the input",
            slip("log", "out.grad / a.data", "out.grad / out.data")),
    Variant("", "tanh's rule adds the square", slip("tanh", "(1.0 - t * t)", "(1.0 + t * t)")),
    Variant("", "exp's rule forgets the incoming gradient", slip("exp", "out.data * out.grad", "out.data")),
    Variant("", "relu leaks a hundredth of the gradient below 0",
            slip("relu", """        if positive:  # at exactly 0 nothing passes, as in PyTorch
            a.grad += out.grad""", """        a.grad += out.grad if positive else 0.01 * out.grad""")),
    # 2, beside "backward overwrites the root's .grad" and "lists nodes as they are discovered".
    Variant("", "backward seeds the root only when its gradient is still 0",
            slip("backward", "root.grad += 1.0", "root.grad = root.grad or 1.0")),
    Variant("", "topological_order lists a node when it is first reached (pre-order)",
            slip("topological_order", """        if ready:
            order.append(node)  # its parents were appended before it
        elif node not in seen:
            seen.add(node)""", """        if ready:
            pass
        elif node not in seen:
            seen.add(node)
            order.append(node)""")),
    # 3, beside "logistic_loss sums instead of averaging", "train_step never resets the gradients".
    Variant("", "logistic_loss with a hinge's margin: log(1 + e^(1 - tz))",
            slip("logistic_loss", "softplus(-z * float(t))", "softplus(1 - z * float(t))")),
    Variant("", "train_step resets the gradients after the step instead of before backward",
            slip("train_step", """    for p in parameters:
        p.grad = 0.0  # zero_grad: the engine only ever adds
    backward(loss)  # fills every p.grad
    for p in parameters:
        p.data -= lr * p.grad  # plain SGD""", """    backward(loss)
    for p in parameters:
        p.data -= lr * p.grad
        p.grad = 0.0""")),
    Variant("", "train_step divides the step by the number of examples",
            slip("train_step", "p.data -= lr * p.grad", "p.data -= lr * p.grad / len(X)")),
    # A, beside "sigmoid's rule forgets the incoming gradient" and "uses the input in place of sigma".
    Variant("", "sigmoid's rule adds s instead of subtracting it: s (1 + s)",
            slip("sigmoid", "s * (1.0 - s) * out.grad", "s * (1.0 + s) * out.grad")),
    Variant("", "sigmoid's rule drops the factor 1 - s", slip("sigmoid", "s * (1.0 - s) * out.grad", "s * out.grad")),
    Variant("", "sigmoid returns 1 / (1 + e^a) for a negative input",
            slip("sigmoid", "s = e / (1.0 + e)", "s = 1.0 / (1.0 + e)")),
    # B, beside "dual_mul keeps one term" and "dual_sin differentiates sin to -cos".
    Variant("", "dual_mul subtracts the second term, as in the quotient rule",
            slip("dual_mul", "a.der * b.val + a.val * b.der", "a.der * b.val - a.val * b.der")),
    Variant("", "dual_sin differentiates sin to sin", slip("dual_sin", "math.cos(a.val) * a.der",
                                                           "math.sin(a.val) * a.der")),
    Variant("", "dual_exp's derivative is the input times the tangent", slip("dual_exp", "e * a.der", "a.val * a.der")),
    # C, beside "relu_backward lets the gradient through at exactly 0" and "relu_forward returns its input".
    Variant("", "relu_backward passes the gradient where x is negative", slip("relu_backward", "grad_output * (x > 0)",
                                                                             "grad_output * (x < 0)")),
    Variant("", "relu_forward clamps from above", slip("relu_forward", "x.clamp(min=0.0)", "x.clamp(max=0.0)")),
    Variant("", "relu_forward returns |x|", slip("relu_forward", "x.clamp(min=0.0)", "x.abs()")),
]
