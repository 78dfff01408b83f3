"""The catalogue's slips written another way, as another student would write them: never used to
build the fingerprints, they measure how well the grader names a mistake it was not built from
(`python -m autograder fingerprints --lab scalar_engine --measure 99`)."""
from autograder.labs.vocabulary import Variant

VARIANTS = [
    Variant("add assigns the gradient instead of adding it", "add sets each parent's gradient through a loop", """
def add(a, b):
    result = Value(a.data + b.data, (a, b), "+")

    def _backward():
        for parent in (a, b):
            parent.grad = 1.0 * result.grad

    result._backward = _backward
    return result
"""),
    Variant("multiply swaps the factors in its rule", "multiply scales each parent by itself, written with locals", """
def multiply(a, b):
    x, y = a.data, b.data
    out = Value(x * y, (a, b), "*")

    def _backward():
        g = out.grad
        a.grad += x * g
        b.grad += y * g

    out._backward = _backward
    return out
"""),
    Variant("multiply forgets the gradient that reached the new node", "multiply adds the bare local slopes", """
def multiply(a, b):
    out = Value(a.data * b.data, (a, b), "*")

    def _backward():
        local = {"a": b.data, "b": a.data}
        a.grad += local["a"]
        b.grad += local["b"]

    out._backward = _backward
    return out
"""),
    Variant("add records no parents", "add keeps its parents in a list it never hands to the node", """
def add(a, b):
    parents = [a, b]
    out = Value(a.data + b.data, (), "+")

    def _backward():
        for p in parents:
            p.grad += out.grad

    out._backward = _backward
    return out
"""),
    Variant("multiply reads out.grad when the node is created, not when the rule runs",
            "multiply captures the upstream gradient as a default argument", """
def multiply(a, b):
    out = Value(a.data * b.data, (a, b), "*")

    def _backward(upstream=out.grad):
        a.grad += b.data * upstream
        b.grad += a.data * upstream

    out._backward = _backward
    return out
"""),
    Variant("power forgets to lower the exponent: k a^k", "power multiplies its output by k", """
def power(a, k):
    value = a.data**k
    out = Value(value, (a,), f"**{k}")

    def _backward():
        a.grad += out.grad * (k * value)

    out._backward = _backward
    return out
"""),
    Variant("power writes k a^(k-1) as k * out / a, which divides by zero at a = 0",
            "power's slope as the output times k over the base", """
def power(a, k):
    out = Value(a.data**k, (a,), f"**{k}")

    def _backward():
        a.grad += out.grad * (out.data * k) / a.data

    out._backward = _backward
    return out
"""),
    Variant("exp's rule assigns into a.grad instead of adding", "exp assigns the chain-rule product in two steps", """
def exp(a):
    e = math.exp(a.data)
    out = Value(e, (a,), "exp")

    def _backward():
        contribution = e * out.grad
        a.grad = contribution

    out._backward = _backward
    return out
"""),
    Variant("tanh written with exponentials, which overflow far from 0", "tanh as a ratio of sinh and cosh by exp", """
def tanh(a):
    plus, minus = math.exp(a.data), math.exp(-a.data)
    t = (plus - minus) / (plus + minus)
    out = Value(t, (a,), "tanh")

    def _backward():
        a.grad += (1.0 - t**2) * out.grad

    out._backward = _backward
    return out
"""),
    Variant("exp's rule uses the input instead of the output", "exp's slope from the input, read off the parent", """
def exp(a):
    out = Value(math.exp(a.data), (a,), "exp")

    def _backward():
        (parent,) = out._prev
        parent.grad += out.grad * parent.data

    out._backward = _backward
    return out
"""),
    Variant("log's rule multiplies by a instead of dividing", "log's slope written as a power of +1", """
def log(a):
    out = Value(math.log(a.data), (a,), "log")

    def _backward():
        a.grad += a.data ** 1 * out.grad

    out._backward = _backward
    return out
"""),
    Variant("tanh's rule squares the input instead of the output", "tanh's slope from the input, squared by multiplying", """
def tanh(a):
    x = a.data
    out = Value(math.tanh(x), (a,), "tanh")

    def _backward():
        a.grad += out.grad * (1 - x * x)

    out._backward = _backward
    return out
"""),
    Variant("tanh's rule drops the square", "tanh's slope from the node's own output, unsquared", """
def tanh(a):
    out = Value(math.tanh(a.data), (a,), "tanh")

    def _backward():
        a.grad += out.grad * (1 - out.data)

    out._backward = _backward
    return out
"""),
    Variant("relu lets the gradient through at exactly 0", "relu's rule tests for not negative", """
def relu(a):
    out = Value(a.data if a.data > 0 else 0.0, (a,), "relu")

    def _backward():
        a.grad += out.grad * (0.0 if a.data < 0 else 1.0)

    out._backward = _backward
    return out
"""),
    Variant("relu masks by the sign of the incoming gradient", "relu's rule passes positive gradients only", """
def relu(a):
    out = Value(a.data if a.data > 0 else 0.0, (a,), "relu")

    def _backward():
        if out.grad > 0:
            a.grad += out.grad

    out._backward = _backward
    return out
"""),
    Variant("a recursive topological_order", "a recursive walk that builds the order by returning lists", """
def topological_order(root):
    seen = set()

    def walk(node):
        if node in seen:
            return []
        seen.add(node)
        placed = []
        for source in node._prev:
            placed += walk(source)
        return placed + [node]

    return walk(root)
"""),
    Variant("backward overwrites the root's .grad with the seed instead of adding it",
            "backward seeds the root by multiplying by zero and adding one", """
def backward(root):
    root.grad = root.grad * 0 + 1.0
    for node in topological_order(root)[::-1]:
        node._backward()
"""),
    Variant("an explicit stack without a set of seen nodes", "an explicit stack of (node, parents left) pairs", """
def topological_order(root):
    order, stack = [], [(root, list(root._prev))]
    while stack:
        node, left = stack[-1]
        if left:
            parent = left.pop(0)
            stack.append((parent, list(parent._prev)))
        else:
            stack.pop()
            order.append(node)
    return order
"""),
    Variant("backward runs the rules from the first node to the last", "backward runs the rules by index, leaves first", """
def backward(root):
    nodes = topological_order(root)
    root.grad = 1.0
    for i in range(len(nodes)):
        nodes[i]._backward()
"""),
    Variant("backward forgets the seed", "backward walks the reversed order and never seeds", """
def backward(root):
    for node in list(reversed(topological_order(root))):
        node._backward()
"""),
    Variant("backward resets every .grad first, the training loop's job", "backward clears the graph's gradients as it seeds", """
def backward(root):
    nodes = list(topological_order(root))
    for node in nodes:
        node.grad = 1.0 if node is root else 0.0
    for node in nodes[::-1]:
        node._backward()
"""),
    Variant("backward skips the root's own rule", "backward starts below the root", """
def backward(root):
    root.grad = 1.0
    placed = topological_order(root)
    placed.pop()
    for node in reversed(placed):
        node._backward()
"""),
    Variant("logistic_loss sums instead of averaging", "logistic_loss accumulates the terms in a loop", """
def logistic_loss(scores, targets):
    total = softplus(-scores[0] * float(targets[0]))
    for z, t in zip(scores[1:], targets[1:]):
        total = total + softplus(-z * float(t))
    return total
"""),
    Variant("train_step never resets the gradients", "train_step without zeroing, updating through a list", """
def train_step(model, X, targets, lr):
    predictions = [model([Value(v) for v in row]) for row in X]
    loss = logistic_loss(predictions, targets)
    backward(loss)
    params = list(model.parameters())
    for p in params:
        p.data = p.data - lr * p.grad
    return loss
"""),
    Variant("train_step climbs the gradient", "train_step steps with a negated learning rate", """
def train_step(model, X, targets, lr):
    loss = logistic_loss([model([Value(v) for v in row]) for row in X], targets)
    weights = list(model.parameters())
    for w in weights:
        w.grad = 0.0
    backward(loss)
    step = -lr
    for w in weights:
        w.data -= step * w.grad
    return loss
"""),
    Variant("sigmoid's rule forgets the incoming gradient", "sigmoid's rule adds the local slope from the output", """
def sigmoid(a):
    s = 1.0 / (1.0 + math.exp(-a.data)) if a.data >= 0 else math.exp(a.data) / (1.0 + math.exp(a.data))
    out = Value(s, (a,), "sigmoid")

    def _backward():
        a.grad += out.data - out.data ** 2

    out._backward = _backward
    return out
"""),
    Variant("sigmoid's rule uses the input in place of sigma", "sigmoid's slope as x - x^2", """
def sigmoid(a):
    s = 1.0 / (1.0 + math.exp(-a.data)) if a.data >= 0 else math.exp(a.data) / (1.0 + math.exp(a.data))
    out = Value(s, (a,), "sigmoid")

    def _backward():
        x = a.data
        a.grad += (x - x * x) * out.grad

    out._backward = _backward
    return out
"""),
    Variant("sigmoid assigns the gradient instead of adding it", "sigmoid assigns the slope times the gradient", """
def sigmoid(a):
    s = 1.0 / (1.0 + math.exp(-a.data)) if a.data >= 0 else math.exp(a.data) / (1.0 + math.exp(a.data))
    out = Value(s, (a,), "sigmoid")

    def _backward():
        a.grad = out.grad * out.data * (1 - out.data)

    out._backward = _backward
    return out
"""),
    Variant("dual_mul keeps one term of the product rule", "dual_mul keeps the term of the second operand", """
def dual_mul(a, b):
    return Dual(a.val * b.val, a.val * b.der)
"""),
    Variant("dual_mul multiplies the derivatives", "dual_mul builds the derivative from both ders", """
def dual_mul(a, b):
    value = a.val * b.val
    slope = b.der * a.der
    return Dual(value, slope)
"""),
    Variant("dual_add drops the second derivative", "dual_add keeps the second operand's derivative only", """
def dual_add(a, b):
    return Dual(b.val + a.val, b.der)
"""),
    Variant("dual_sin forgets the chain rule", "dual_sin's derivative is the cosine alone", """
def dual_sin(a):
    s, c = math.sin(a.val), math.cos(a.val)
    return Dual(s, c)
"""),
    Variant("dual_sin differentiates sin to -cos", "dual_sin multiplies the incoming derivative by minus cosine", """
def dual_sin(a):
    return Dual(math.sin(a.val), a.der * (0.0 - math.cos(a.val)))
"""),
    Variant("dual_exp forgets the chain rule", "dual_exp reuses its value as its derivative", """
def dual_exp(a):
    e = math.exp(a.val)
    return Dual(e, e)
"""),
    Variant("relu_backward returns the mask, not the masked gradient", "relu_backward returns a 0/1 tensor by where", """
def relu_backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    return torch.where(x > 0, torch.ones_like(x), torch.zeros_like(x))
"""),
    Variant("relu_backward masks by the sign of the incoming gradient", "relu_backward keeps positive gradient entries", """
def relu_backward(ctx, grad_output):
    return grad_output * (grad_output > 0)
"""),
    Variant("relu_forward clamps x in place", "relu_forward zeroes negative entries of x by masking", """
def relu_forward(ctx, x):
    ctx.save_for_backward(x)
    x[x < 0] = 0.0
    return x
"""),
    Variant("relu_forward returns its input unchanged", "relu_forward returns a copy of x", """
def relu_forward(ctx, x):
    ctx.save_for_backward(x)
    return x.clone()
"""),
    Variant("power's rule sets the slope to 0 at a zero base, to avoid 0 ** (k - 1)",
            "power guards the zero base with a conditional expression", """
def power(a, k):
    out = Value(a.data**k, (a,), f"**{k}")

    def _backward():
        a.grad += out.grad * (0.0 if a.data == 0.0 else k * a.data ** (k - 1))

    out._backward = _backward
    return out
"""),
    Variant("backward propagates recursively without an order (the naive version)",
            "backward walks breadth-first from the root, running each rule as it is reached", """
def backward(root):
    root.grad = 1.0
    queue = [root]
    while queue:
        node = queue.pop(0)
        node._backward()
        queue.extend(node._prev)
"""),
    Variant("lists nodes as they are discovered, root first", "topological_order lists a breadth-first walk, reversed", """
def topological_order(root):
    found, queue, seen = [], [root], {root}
    while queue:
        node = queue.pop(0)
        found.append(node)
        for source in node._prev:
            if source not in seen:
                seen.add(source)
                queue.append(source)
    return list(reversed(found))
"""),
    Variant("logistic_loss loses the minus sign: log(1 + e^(tz))", "logistic_loss averages softplus of the plain margin", """
def logistic_loss(scores, targets):
    margins = [z * float(t) for z, t in zip(scores, targets)]
    total = softplus(margins[0])
    for m in margins[1:]:
        total = total + softplus(m)
    return total / len(margins)
"""),
    Variant("train_step resets the gradients after backward, so nothing moves",
            "train_step zeroes the gradients between backward and the step", """
def train_step(model, X, targets, lr):
    loss = logistic_loss([model([Value(v) for v in row]) for row in X], targets)
    backward(loss)
    weights = list(model.parameters())
    for w in weights:
        w.grad = 0.0
    for w in weights:
        w.data = w.data - lr * w.grad
    return loss
"""),
    Variant("train_step returns the loss after the update", "train_step measures the loss again before returning", """
def train_step(model, X, targets, lr):
    def measured():
        return logistic_loss([model([Value(v) for v in row]) for row in X], targets)

    loss = measured()
    weights = list(model.parameters())
    for w in weights:
        w.grad = 0.0
    backward(loss)
    for w in weights:
        w.data -= lr * w.grad
    return measured()
"""),
    Variant("sigmoid's forward rule loses the minus sign", "sigmoid computes e^a / (1 + e^a) of minus a", """
def sigmoid(a):
    x = -a.data
    s = 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))
    out = Value(s, (a,), "sigmoid")

    def _backward():
        a.grad += s * (1.0 - s) * out.grad

    out._backward = _backward
    return out
"""),
    Variant("dual_add adds into its first operand and returns it", "dual_add updates the second operand", """
def dual_add(a, b):
    b.val = a.val + b.val
    b.der = a.der + b.der
    return b
"""),
    Variant("relu_backward lets the gradient through at exactly 0", "relu_backward masks where x is not negative", """
def relu_backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    return torch.where(x < 0, torch.zeros_like(grad_output), grad_output)
"""),
    Variant("relu_backward zeroes grad_output in place and returns it", "relu_backward multiplies grad_output in place", """
def relu_backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    grad_output.mul_(x > 0)
    return grad_output
"""),
    Variant("multiply keys its slopes by parent, so a * a keeps one contribution",
            "multiply collects the slopes in a dict comprehension", """
def multiply(a, b):
    out = Value(a.data * b.data, (a, b), "*")

    def _backward():
        slopes = {id(p): (p, s) for p, s in ((a, b.data), (b, a.data))}
        for parent, slope in slopes.values():
            parent.grad += out.grad * slope

    out._backward = _backward
    return out
"""),
    Variant("logistic_loss as log(1 + e^(-tz)) for every margin, which overflows for a large wrong-sign score",
            "logistic_loss with the exponential of the negated margin", """
def logistic_loss(scores, targets):
    losses = []
    for z, t in zip(scores, targets):
        margin = z * float(t)
        losses.append(((-margin).exp() + 1).log())
    return sum(losses) / len(losses)
"""),
    Variant("train_step updates the weights but not the biases", "train_step steps every neuron's weights", """
def train_step(model, X, targets, lr):
    loss = logistic_loss([model([Value(v) for v in row]) for row in X], targets)
    for w in model.parameters():
        w.grad = 0.0
    backward(loss)
    weights = [w for layer in model.layers for neuron in layer for w in neuron.w]
    for w in weights:
        w.data = w.data - lr * w.grad
    return loss
"""),
    Variant("sigmoid composed from existing operations", "sigmoid as e^a / (1 + e^a) from Value operations", """
def sigmoid(a):
    e = a.exp()
    return e / (e + 1)
"""),
    Variant("sigmoid as 1 / (1 + e^-a) for every input, which overflows for a very negative one",
            "sigmoid by math.exp of the negated input", """
def sigmoid(a):
    s = 1.0 / (math.exp(-a.data) + 1.0)
    out = Value(s, (a,), "sigmoid")

    def _backward():
        a.grad += out.grad * out.data * (1.0 - out.data)

    out._backward = _backward
    return out
"""),
    Variant("relu_forward keeps x as an attribute of ctx instead of saving it", "relu_forward stores x in a ctx field", """
def relu_forward(ctx, x):
    ctx.saved_input = x
    return torch.relu(x)


def relu_backward(ctx, grad_output):
    return grad_output * (ctx.saved_input > 0).to(grad_output.dtype)
"""),
]
