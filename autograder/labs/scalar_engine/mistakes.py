"""Wrong answers students plausibly write for scalar_engine, to test the checks themselves.

Each mistake replaces one or more functions of an activity's reference answer. `hint` is a
phrase the grader's message must contain, so that the message points at what is wrong.
"""
from autograder.vocabulary import Mistake

MISTAKES = [
    # ------------------------------------------------------------------ 1a
    Mistake("1a", "add assigns the gradient instead of adding it", "a.grad", """
def add(a, b):
    out = Value(a.data + b.data, (a, b), "+")

    def _backward():
        a.grad = out.grad
        b.grad = out.grad

    out._backward = _backward
    return out
"""),
    Mistake("1a", "multiply swaps the factors in its rule", "a.grad", """
def multiply(a, b):
    out = Value(a.data * b.data, (a, b), "*")

    def _backward():
        a.grad += out.grad * a.data
        b.grad += out.grad * b.data

    out._backward = _backward
    return out
"""),
    Mistake("1a", "multiply forgets the gradient that reached the new node", "a.grad", """
def multiply(a, b):
    out = Value(a.data * b.data, (a, b), "*")

    def _backward():
        a.grad += b.data
        b.grad += a.data

    out._backward = _backward
    return out
"""),
    Mistake("1a", "add records no parents", "_prev", """
def add(a, b):
    out = Value(a.data + b.data, (), "+")

    def _backward():
        a.grad += out.grad
        b.grad += out.grad

    out._backward = _backward
    return out
"""),
    Mistake("1a", "multiply reads out.grad when the node is created, not when the rule runs", "a.grad", """
def multiply(a, b):
    out = Value(a.data * b.data, (a, b), "*")
    share_a, share_b = out.grad * b.data, out.grad * a.data

    def _backward():
        a.grad += share_a
        b.grad += share_b

    out._backward = _backward
    return out
"""),
    Mistake("1a", "multiply keys its slopes by parent, so a * a keeps one contribution", "used twice", """
def multiply(a, b):
    out = Value(a.data * b.data, (a, b), "*")

    def _backward():
        for parent, slope in {a: b.data, b: a.data}.items():
            parent.grad += slope * out.grad

    out._backward = _backward
    return out
"""),
    # ------------------------------------------------------------------ 1b
    Mistake("1b", "power forgets to lower the exponent: k a^k", "power", """
def power(a, k):
    out = Value(a.data**k, (a,), f"**{k}")

    def _backward():
        a.grad += k * a.data**k * out.grad

    out._backward = _backward
    return out
"""),
    Mistake("1b", "power writes k a^(k-1) as k * out / a, which divides by zero at a = 0", "zero base", """
def power(a, k):
    out = Value(a.data**k, (a,), f"**{k}")

    def _backward():
        a.grad += k * out.data / a.data * out.grad

    out._backward = _backward
    return out
"""),
    Mistake("1b", "power's rule sets the slope to 0 at a zero base, to avoid 0 ** (k - 1)", "zero base", """
def power(a, k):
    out = Value(a.data**k, (a,), f"**{k}")

    def _backward():
        slope = k * a.data ** (k - 1) if a.data != 0 else 0.0
        a.grad += slope * out.grad

    out._backward = _backward
    return out
"""),
    Mistake("1b", "exp's rule assigns into a.grad instead of adding", "a.grad", """
def exp(a):
    out = Value(math.exp(a.data), (a,), "exp")

    def _backward():
        a.grad = out.data * out.grad

    out._backward = _backward
    return out
"""),
    Mistake("1b", "tanh written with exponentials, which overflow far from 0", "tanh", """
def tanh(a):
    e = math.exp(2.0 * a.data)
    t = (e - 1.0) / (e + 1.0)
    out = Value(t, (a,), "tanh")

    def _backward():
        a.grad += (1.0 - t * t) * out.grad

    out._backward = _backward
    return out
"""),
    Mistake("1b", "exp's rule uses the input instead of the output", "exp", """
def exp(a):
    out = Value(math.exp(a.data), (a,), "exp")

    def _backward():
        a.grad += a.data * out.grad

    out._backward = _backward
    return out
"""),
    Mistake("1b", "log's rule multiplies by a instead of dividing", "log", """
def log(a):
    out = Value(math.log(a.data), (a,), "log")

    def _backward():
        a.grad += out.grad * a.data

    out._backward = _backward
    return out
"""),
    Mistake("1b", "tanh's rule squares the input instead of the output", "tanh", """
def tanh(a):
    out = Value(math.tanh(a.data), (a,), "tanh")

    def _backward():
        a.grad += (1.0 - a.data**2) * out.grad

    out._backward = _backward
    return out
"""),
    Mistake("1b", "tanh's rule drops the square", "tanh", """
def tanh(a):
    t = math.tanh(a.data)
    out = Value(t, (a,), "tanh")

    def _backward():
        a.grad += (1.0 - t) * out.grad

    out._backward = _backward
    return out
"""),
    Mistake("1b", "relu lets the gradient through at exactly 0", "relu", """
def relu(a):
    out = Value(max(a.data, 0.0), (a,), "relu")

    def _backward():
        if a.data >= 0:
            a.grad += out.grad

    out._backward = _backward
    return out
"""),
    Mistake("1b", "relu masks by the sign of the incoming gradient", "relu", """
def relu(a):
    out = Value(max(a.data, 0.0), (a,), "relu")

    def _backward():
        a.grad += max(out.grad, 0.0)

    out._backward = _backward
    return out
"""),
    # ------------------------------------------------------------------ 2
    Mistake("2", "a recursive topological_order", "1,500", """
def topological_order(root):
    order, seen = [], set()

    def place(node):
        if node not in seen:
            seen.add(node)
            for p in node._prev:
                place(p)
            order.append(node)

    place(root)
    return order
"""),
    Mistake("2", "a recursive topological_order under a recursion limit raised to 10,000", "10,000", """
def topological_order(root):
    import sys

    sys.setrecursionlimit(10_000)
    order, seen = [], set()

    def place(node):
        if node not in seen:
            seen.add(node)
            for p in node._prev:
                place(p)
            order.append(node)

    place(root)
    return order
"""),
    Mistake("2", "an explicit stack that marks a node seen when it is pushed, not when it is placed",
            "topological_order", """
def topological_order(root):
    order, seen, todo = [], {root}, [(root, False)]
    while todo:
        node, ready = todo.pop()
        if ready:
            order.append(node)
            continue
        todo.append((node, True))
        for parent in reversed(node._prev):
            if parent not in seen:
                seen.add(parent)
                todo.append((parent, False))
    return order
"""),
    Mistake("2", "backward overwrites the root's .grad with the seed instead of adding it", "a root that is a leaf", """
def backward(root):
    root.grad = 1.0
    for node in reversed(topological_order(root)):
        node._backward()
"""),
    Mistake("2", "an explicit stack without a set of seen nodes", "more than once", """
def topological_order(root):
    order, todo = [], [(root, False)]
    while todo:
        node, ready = todo.pop()
        if ready:
            order.append(node)
        else:
            todo.append((node, True))
            todo.extend((parent, False) for parent in reversed(node._prev))
    return order
"""),
    Mistake("2", "lists nodes as they are discovered, root first", "topological_order", """
def topological_order(root):
    order, seen, todo = [], set(), [root]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            order.append(node)
            todo.extend(reversed(node._prev))
    return order[::-1]
"""),
    Mistake("2", "backward runs the rules from the first node to the last", ".grad after backward", """
def backward(root):
    root.grad = 1.0
    for node in topological_order(root):
        node._backward()
"""),
    Mistake("2", "backward forgets the seed", ".grad after backward", """
def backward(root):
    for node in reversed(topological_order(root)):
        node._backward()
"""),
    Mistake("2", "backward resets every .grad first, the training loop's job", "earlier gradient", """
def backward(root):
    nodes = topological_order(root)
    for node in nodes:
        node.grad = 0.0
    root.grad = 1.0
    for node in reversed(nodes):
        node._backward()
"""),
    Mistake("2", "backward propagates recursively without an order (the naive version)", ".grad after backward", """
def backward(root):
    def push(node):
        node._backward()
        for source in node._prev:
            push(source)

    root.grad = 1.0
    push(root)
"""),
    Mistake("2", "backward skips the root's own rule", ".grad after backward", """
def backward(root):
    root.grad = 1.0
    for node in reversed(topological_order(root)[:-1]):
        node._backward()
"""),
    # ------------------------------------------------------------------ 3
    Mistake("3", "logistic_loss sums instead of averaging", "the loss", """
def logistic_loss(scores, targets):
    return sum(softplus(-z * float(t)) for z, t in zip(scores, targets))
"""),
    Mistake("3", "logistic_loss loses the minus sign: log(1 + e^(tz))", "the loss", """
def logistic_loss(scores, targets):
    terms = [softplus(z * float(t)) for z, t in zip(scores, targets)]
    return sum(terms) / len(terms)
"""),
    Mistake("3", "logistic_loss as log(1 + e^(-tz)) for every margin, which overflows for a large wrong-sign score",
            "logistic_loss", """
def logistic_loss(scores, targets):
    per_example = [(1 + (-z * float(t)).exp()).log() for z, t in zip(scores, targets)]
    return sum(per_example) / len(per_example)
"""),
    Mistake("3", "train_step never resets the gradients", "parameters' .grad", """
def train_step(model, X, targets, lr):
    loss = logistic_loss([model([Value(v) for v in row]) for row in X], targets)
    backward(loss)
    for param in model.parameters():
        param.data -= lr * param.grad
    return loss
"""),
    Mistake("3", "train_step resets the gradients after backward, so nothing moves", "parameters' .grad", """
def train_step(model, X, targets, lr):
    loss = logistic_loss([model([Value(v) for v in row]) for row in X], targets)
    backward(loss)
    for param in model.parameters():
        param.grad = 0.0
        param.data -= lr * param.grad
    return loss
"""),
    Mistake("3", "train_step climbs the gradient", "parameters after the update", """
def train_step(model, X, targets, lr):
    loss = logistic_loss([model([Value(v) for v in row]) for row in X], targets)
    for param in model.parameters():
        param.grad = 0.0
    backward(loss)
    for param in model.parameters():
        param.data += lr * param.grad
    return loss
"""),
    Mistake("3", "train_step returns the loss after the update", "the loss (before the update)", """
def train_step(model, X, targets, lr):
    loss = logistic_loss([model([Value(v) for v in row]) for row in X], targets)
    for param in model.parameters():
        param.grad = 0.0
    backward(loss)
    for param in model.parameters():
        param.data -= lr * param.grad
    return logistic_loss([model([Value(v) for v in row]) for row in X], targets)
"""),
    Mistake("3", "train_step updates the weights but not the biases", ", b", """
def train_step(model, X, targets, lr):
    loss = logistic_loss([model([Value(v) for v in row]) for row in X], targets)
    for param in model.parameters():
        param.grad = 0.0
    backward(loss)
    for layer in model.layers:
        for neuron in layer:
            for w in neuron.w:
                w.data -= lr * w.grad
    return loss
"""),
    # ------------------------------------------------------------------ A
    Mistake("A", "sigmoid composed from existing operations", "_prev", """
def sigmoid(a):
    return 1 / (1 + (-a).exp())
"""),
    Mistake("A", "sigmoid as 1 / (1 + e^-a) for every input, which overflows for a very negative one", "sigmoid", """
def sigmoid(a):
    s = 1.0 / (1.0 + math.exp(-a.data))
    out = Value(s, (a,), "sigmoid")

    def _backward():
        a.grad += s * (1.0 - s) * out.grad

    out._backward = _backward
    return out
"""),
    Mistake("A", "sigmoid's rule forgets the incoming gradient", "a.grad", """
def sigmoid(a):
    s = 1.0 / (1.0 + math.exp(-a.data))
    out = Value(s, (a,), "sigmoid")

    def _backward():
        a.grad += s * (1.0 - s)

    out._backward = _backward
    return out
"""),
    Mistake("A", "sigmoid's rule uses the input in place of sigma", "a.grad", """
def sigmoid(a):
    s = 1.0 / (1.0 + math.exp(-a.data))
    out = Value(s, (a,), "sigmoid")

    def _backward():
        a.grad += a.data * (1.0 - a.data) * out.grad

    out._backward = _backward
    return out
"""),
    Mistake("A", "sigmoid's forward rule loses the minus sign", "out.data", """
def sigmoid(a):
    s = 1.0 / (1.0 + math.exp(a.data))
    out = Value(s, (a,), "sigmoid")

    def _backward():
        a.grad += s * (1.0 - s) * out.grad

    out._backward = _backward
    return out
"""),
    Mistake("A", "sigmoid assigns the gradient instead of adding it", "a.grad", """
def sigmoid(a):
    s = 1.0 / (1.0 + math.exp(-a.data))
    out = Value(s, (a,), "sigmoid")

    def _backward():
        a.grad = s * (1.0 - s) * out.grad

    out._backward = _backward
    return out
"""),
    # ------------------------------------------------------------------ B
    Mistake("B", "dual_mul keeps one term of the product rule", "der", """
def dual_mul(a, b):
    return Dual(a.val * b.val, a.der * b.val)
"""),
    Mistake("B", "dual_mul multiplies the derivatives", "der", """
def dual_mul(a, b):
    return Dual(a.val * b.val, a.der * b.der)
"""),
    Mistake("B", "dual_add drops the second derivative", "der", """
def dual_add(a, b):
    return Dual(a.val + b.val, a.der)
"""),
    Mistake("B", "dual_sin forgets the chain rule", "der", """
def dual_sin(a):
    return Dual(math.sin(a.val), math.cos(a.val))
"""),
    Mistake("B", "dual_sin differentiates sin to -cos", "der", """
def dual_sin(a):
    return Dual(math.sin(a.val), -math.cos(a.val) * a.der)
"""),
    Mistake("B", "dual_add adds into its first operand and returns it", "inputs must not change", """
def dual_add(a, b):
    a.val += b.val
    a.der += b.der
    return a
"""),
    Mistake("B", "dual_exp forgets the chain rule", "der", """
def dual_exp(a):
    return Dual(math.exp(a.val), math.exp(a.val))
"""),
    # ------------------------------------------------------------------ C
    Mistake("C", "relu_backward lets the gradient through at exactly 0", "gradient", """
def relu_backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    return grad_output * (x >= 0)
"""),
    Mistake("C", "relu_backward returns the mask, not the masked gradient", "gradient", """
def relu_backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    return (x > 0).double()
"""),
    Mistake("C", "relu_backward masks by the sign of the incoming gradient", "gradient", """
def relu_backward(ctx, grad_output):
    return grad_output.clamp(min=0.0)
"""),
    Mistake("C", "relu_backward zeroes grad_output in place and returns it", "grad_output", """
def relu_backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    grad_output[x <= 0] = 0.0
    return grad_output
"""),
    Mistake("C", "relu_forward keeps x as an attribute of ctx instead of saving it", "save_for_backward", """
def relu_forward(ctx, x):
    ctx.x = x
    return x.clamp(min=0.0)


def relu_backward(ctx, grad_output):
    return grad_output * (ctx.x > 0)
"""),
    Mistake("C", "relu_forward clamps x in place", "x after the call", """
def relu_forward(ctx, x):
    ctx.save_for_backward(x)
    return x.clamp_(min=0.0)
"""),
    Mistake("C", "relu_forward returns its input unchanged", "output", """
def relu_forward(ctx, x):
    ctx.save_for_backward(x)
    return x
"""),
]
