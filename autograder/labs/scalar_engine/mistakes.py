"""Wrong answers students plausibly write for scalar_engine, to test the checks themselves.

Each mistake replaces one or more functions of an activity's reference answer. `hint` is a
phrase the grader's message must contain, so that the message points at what is wrong.
"""
from dataclasses import replace

from autograder.labs.vocabulary import Mistake

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

# What a student whose answer behaves like a mistake reads (autograder/diagnosis/matching.py), by
# description. Mistakes the hidden cases cannot tell apart share one advice.
UPDATE = ("Your train_step moves the parameters the wrong way or not all of them: every weight and every bias "
          "takes a small step against its own gradient. Look at the update loop.")
ADVICE = {
    "add assigns the gradient instead of adding it":
        "Your add rule replaces a parent's .grad instead of accumulating into it, so a value used twice keeps "
        "only its last contribution.",
    "multiply swaps the factors in its rule":
        "Your multiply rule gives each factor its own value as the slope: the slope of a*b with respect to a is "
        "the other factor.",
    "multiply forgets the gradient that reached the new node":
        "Your multiply rule leaves out out.grad: the chain rule scales each local slope by the gradient that "
        "reached the product.",
    "add records no parents":
        "Your add builds a node without its parents, so backward never reaches a or b. Look at what the new "
        "Value is given as its _prev.",
    "multiply reads out.grad when the node is created, not when the rule runs":
        "Your multiply rule uses out.grad as it was when the node was built (zero), not when backward runs "
        "the rule. Read it inside the rule.",
    "multiply keys its slopes by parent, so a * a keeps one contribution":
        "Your multiply loses a contribution when both factors are the same Value (a * a): each factor's share "
        "must be added separately.",
    "power forgets to lower the exponent: k a^k":
        "Your power rule keeps the exponent k in the slope: the derivative of a^k lowers it by one.",
    "power writes k a^(k-1) as k * out / a, which divides by zero at a = 0":
        "Your power rule divides by the base, which fails at a zero base. Compute the slope from the base "
        "raised to the lowered exponent instead.",
    "power's rule sets the slope to 0 at a zero base, to avoid 0 ** (k - 1)":
        "Your power rule treats a zero base as slope 0, but for exponent 1 the slope there is 1. Let the "
        "lowered power handle zero itself.",
    "exp's rule assigns into a.grad instead of adding":
        "Your exp rule replaces a.grad instead of accumulating into it, so a parent that already had gradient "
        "loses it.",
    "tanh written with exponentials, which overflow far from 0":
        "Your tanh overflows for large inputs (e to the power of hundreds): use NumPy's or math's tanh, which "
        "stays within [-1, 1].",
    "exp's rule uses the input instead of the output":
        "Your exp rule uses the input as the slope: the derivative of e^a is e^a itself, the node's output.",
    "log's rule multiplies by a instead of dividing":
        "Your log rule multiplies by the input: the derivative of log a is one over a.",
    "tanh's rule squares the input instead of the output":
        "Your tanh rule squares the input: the slope 1 - tanh(a)^2 uses the node's output.",
    "tanh's rule drops the square":
        "Your tanh rule uses 1 - tanh(a) without the square. Check the derivative of tanh.",
    "relu lets the gradient through at exactly 0":
        "Your relu passes gradient at an input of exactly 0; the course (as PyTorch) gives slope 0 there. "
        "Look at the comparison in the rule.",
    "relu masks by the sign of the incoming gradient":
        "Your relu decides on the sign of the incoming gradient; whether gradient flows depends on the input "
        "of the relu.",
    "a recursive topological_order":
        "Your topological_order recurses, which breaks on deep graphs (a chain of 10,000 operations). Walk "
        "the graph with an explicit stack.",
    "a recursive topological_order under a recursion limit raised to 10,000":
        "Your topological_order recurses even with a raised limit, and a 10,000-step chain still overflows "
        "the C stack. Walk the graph with an explicit stack.",
    "an explicit stack that marks a node seen when it is pushed, not when it is placed":
        "Your walk marks nodes as seen when they are pushed, so a node reached again by a longer path can be "
        "placed before a node that uses it. Mark a node when it is placed.",
    "backward overwrites the root's .grad with the seed instead of adding it":
        "Your backward sets the root's gradient to 1 and loses what it held; as in PyTorch, the seed is added "
        "to it.",
    "an explicit stack without a set of seen nodes":
        "Your walk has no record of visited nodes, so a node reached by two paths is listed twice and its "
        "rule runs twice.",
    "lists nodes as they are discovered, root first":
        "Your order lists nodes as they are discovered: every node must come after all the nodes it uses, "
        "leaves first and the root last.",
    "backward runs the rules from the first node to the last":
        "Your backward runs the rules in topological order; gradients flow from the root down, so run them "
        "in reverse.",
    "backward forgets the seed":
        "Your backward never seeds the root's gradient, so every rule multiplies zeros.",
    "backward resets every .grad first, the training loop's job":
        "Your backward zeroes every gradient before it runs, which discards gradient a caller meant to "
        "accumulate; resetting is the training loop's job.",
    "backward propagates recursively without an order (the naive version)":
        "Your backward calls the parents' rules before all of a node's gradient has arrived, so shared nodes "
        "pass on partial gradients. Run the rules in reverse topological order.",
    "backward skips the root's own rule":
        "Your backward never runs the root's own rule, so nothing reaches the nodes below it.",
    "logistic_loss sums instead of averaging":
        "Your loss sums over the examples; the logistic loss here is their mean.",
    "logistic_loss loses the minus sign: log(1 + e^(tz))":
        "Your loss has the wrong sign inside the exponential: a correct, confident prediction must give a loss "
        "near 0.",
    "logistic_loss as log(1 + e^(-tz)) for every margin, which overflows for a large wrong-sign score":
        "Your loss overflows when a score is far on the wrong side (e to a large power). Rewrite it so that the "
        "exponential never grows, for example by the sign of the margin.",
    "train_step never resets the gradients":
        "Your train_step never clears the gradients, so each step adds to the last one's. Zero them before "
        "backward.",
    "train_step resets the gradients after backward, so nothing moves":
        "Your train_step clears the gradients after backward and before the update, so the parameters never "
        "move.",
    "train_step climbs the gradient": UPDATE,
    "train_step returns the loss after the update":
        "Your train_step returns the loss measured after the update; return the loss it computed before "
        "stepping.",
    "train_step updates the weights but not the biases": UPDATE,
    "sigmoid composed from existing operations":
        "Your sigmoid is built from other operations, so its graph has extra nodes; it should be one node "
        "with its own rule.",
    "sigmoid as 1 / (1 + e^-a) for every input, which overflows for a very negative one":
        "Your sigmoid overflows for very negative inputs. Compute it so that the exponential never grows, "
        "depending on the sign of a.",
    "sigmoid's rule forgets the incoming gradient":
        "Your sigmoid rule leaves out out.grad: the local slope must be scaled by the gradient that reached "
        "the node.",
    "sigmoid's rule uses the input in place of sigma":
        "Your sigmoid rule builds its slope from the input; sigma(1 - sigma) uses the node's output.",
    "sigmoid's forward rule loses the minus sign":
        "Your sigmoid's value has the wrong sign in the exponent, so it computes sigma(-a).",
    "sigmoid assigns the gradient instead of adding it":
        "Your sigmoid rule replaces a.grad instead of accumulating into it.",
    "dual_mul keeps one term of the product rule":
        "Your dual_mul keeps one term of the product rule: the derivative of a*b has two terms.",
    "dual_mul multiplies the derivatives":
        "Your dual_mul multiplies the two derivatives; the product rule combines each value with the other's "
        "derivative.",
    "dual_add drops the second derivative":
        "Your dual_add carries only one operand's derivative: the derivative of a sum is the sum of both.",
    "dual_sin forgets the chain rule":
        "Your dual_sin gives cos of the value without the incoming derivative: apply the chain rule.",
    "dual_sin differentiates sin to -cos":
        "Your dual_sin has the wrong sign: the derivative of sin is cos.",
    "dual_add adds into its first operand and returns it":
        "Your dual_add changes its first operand and returns it; make a new Dual and leave the inputs alone.",
    "dual_exp forgets the chain rule":
        "Your dual_exp gives e^value without the incoming derivative: apply the chain rule.",
    "relu_backward lets the gradient through at exactly 0":
        "Your relu_backward passes gradient where x is exactly 0; as PyTorch does, give 0 there. Look at the "
        "comparison that builds the mask.",
    "relu_backward returns the mask, not the masked gradient":
        "Your relu_backward returns the mask alone: multiply the incoming gradient by it.",
    "relu_backward masks by the sign of the incoming gradient":
        "Your relu_backward decides by the incoming gradient's sign; the mask comes from the saved input x.",
    "relu_backward zeroes grad_output in place and returns it":
        "Your relu_backward writes into grad_output, which other parts of the graph may share; build a new "
        "tensor.",
    "relu_forward keeps x as an attribute of ctx instead of saving it":
        "Your relu_forward stores x on ctx directly, so PyTorch cannot tell when it is changed before "
        "backward; save it with save_for_backward.",
    "relu_forward clamps x in place":
        "Your relu_forward changes x in place; return a new tensor and leave the input as it was.",
    "relu_forward returns its input unchanged":
        "Your relu_forward returns its input: negative entries must become 0.",
}
MISTAKES = [replace(mistake, advice=ADVICE.get(mistake.description, "")) for mistake in MISTAKES]
