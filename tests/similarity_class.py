"""A class to measure the similarity check on (tests/test_similarity.py, bench/similarity_cost.py).

Per lab, independent authors: the solved notebook's answers (`reference`) and two styles written
for this (`ana`, `ben`, `cal`), each answering the activities it names in its own way; more students who
write the solved answers' form on their own, each in their own words (`solved-*`), since in a
class the solved form is the one many students reach; the catalogue's common wrong answers, one
student each (the reference with the mistake's functions in place, so the solved form again); and
copies of every author's answers disguised as students disguise them (`DISGUISES`). Activities an
author does not answer are left as their stub, as students leave them.

The solved form is thus the class's common one, as it is in a real class, and the copy of the
`reference` author cannot be told from the others who write that form: a fragment held by that
many students is no evidence (engine.py). It is the one copy not expected to be similar
(`COMMON_FORM_COPY`); the written styles are each one author's, and every copy of them is.
"""
import ast
import random
import textwrap

from autograder.labs import grading_for
from autograder.measuring.catalogue import patched
from autograder.reports.similarity.engine import FEWEST_COMMON
from autograder.reports.similarity.normalise import bound_names, names

STYLES = {
    "pt03_autodiff": {
        "ana": {
            "1a": '''
def add_vjp(a, b, v):
    # d(a + b) = da + db: the adjoint passes to both sides unchanged
    grad_a = v
    grad_b = v
    return grad_a, grad_b


def multiply_vjp(a, b, v):
    grad_a = np.multiply(v, b)
    grad_b = np.multiply(v, a)
    return grad_a, grad_b


def matmul_vjp(a, b, v):
    A = np.atleast_2d(a) if a.ndim == 2 else a.reshape(1, -1)
    B = b if b.ndim == 2 else b.reshape(-1, 1)
    V = np.asarray(v, dtype=float).reshape(A.shape[0], B.shape[1])
    grad_A = V.dot(B.T)
    grad_B = A.T.dot(V)
    return grad_A.reshape(a.shape), grad_B.reshape(b.shape)
''',
            "1b": '''
def sum_to_shape(v, shape):
    result = np.array(v, dtype=np.float64)
    target = tuple(shape)
    if result.ndim < len(target):
        raise ValueError("the adjoint has fewer axes than " + str(target))
    while result.ndim > len(target):
        result = np.sum(result, axis=0)
    for axis in range(len(target)):
        if target[axis] == 1 and result.shape[axis] > 1:
            result = np.sum(result, axis=axis, keepdims=True)
    if result.shape != target:
        raise ValueError("cannot reduce to " + str(target))
    return result
''',
            "1c": '''
def tanh_vjp(y, v):
    slope = 1 - np.square(y)
    return slope * v


def relu_vjp(x, v):
    mask = (x > 0).astype(float)
    return mask * v
''',
            "2": '''
def topological_order(output):
    done = {output}
    result = []
    stack = [[output, iter(output.parents)]]
    while stack:
        node, parents = stack[-1]
        parent = next(parents, None)
        if parent is None:
            stack.pop()
            result.append(node)
        elif parent not in done:
            done.add(parent)
            stack.append([parent, iter(parent.parents)])
    return result


def backward(output, seed=None):
    nodes = topological_order(output)
    grads = initial_adjoints(nodes, output, seed)
    for node in nodes[::-1]:
        if node.vjp is None:
            continue
        parts = node.vjp(grads[node])
        assert len(parts) == len(node.parents), "one adjoint per parent"
        for k in range(len(parts)):
            piece = np.asarray(parts[k], dtype=float)
            if piece.shape != node.parents[k].value.shape:
                raise ValueError("wrong adjoint shape from " + node.name)
            grads[node.parents[k]] = grads[node.parents[k]] + piece
    return grads
''',
        },
        "ben": {
            "1a": '''
def add_vjp(a, b, v):
    return (v, v)


def multiply_vjp(a, b, v):
    return (b * v, a * v)


def matmul_vjp(a, b, v):
    if a.ndim == 1 and b.ndim == 1:
        return (b * v, a * v)
    if b.ndim == 1:
        return (np.einsum("i,j->ij", v, b), np.einsum("ij,i->j", a, v))
    if a.ndim == 1:
        return (np.einsum("jk,k->j", b, v), np.einsum("j,k->jk", a, v))
    return (np.einsum("ik,jk->ij", v, b), np.einsum("ij,ik->jk", a, v))
''',
            "1b": '''
def sum_to_shape(v, shape):
    out = np.asarray(v, dtype=np.float64)
    lead = out.ndim - len(shape)
    if lead < 0:
        raise ValueError("more axes wanted than the adjoint has")
    padded = (1,) * lead + tuple(shape)
    axes = tuple(i for i, (have, want) in enumerate(zip(out.shape, padded)) if want == 1 and have != 1)
    out = out.sum(axis=axes, keepdims=True).reshape(tuple(shape))
    return out
''',
            "1c": '''
def tanh_vjp(y, v):
    return v - v * y ** 2


def relu_vjp(x, v):
    out = np.zeros_like(np.asarray(v, dtype=float) * np.ones_like(x, dtype=float))
    out[x > 0] = (v * np.ones_like(x, dtype=float))[x > 0]
    return out
''',
            "2": '''
def topological_order(output):
    indegree, nodes, frontier = {}, [], [output]
    while frontier:
        node = frontier.pop()
        if node in indegree:
            continue
        indegree[node] = 0
        nodes.append(node)
        frontier += list(node.parents)
    for node in nodes:
        for parent in set(node.parents):
            indegree[parent] += 1
    ready, order = [output], []
    while ready:
        node = ready.pop()
        order.append(node)
        for parent in set(node.parents):
            indegree[parent] -= 1
            if indegree[parent] == 0:
                ready.append(parent)
    return order[::-1]


def backward(output, seed=None):
    adj = initial_adjoints(topological_order(output), output, seed)
    for node in reversed(topological_order(output)):
        if node.vjp:
            got = list(node.vjp(adj[node]))
            if len(got) != len(node.parents):
                raise ValueError(f"{node.name}: {len(got)} adjoints for {len(node.parents)} parents")
            for parent, g in zip(node.parents, got):
                g = np.asarray(g, dtype=np.float64)
                if g.shape != parent.value.shape:
                    raise ValueError(f"{node.name}: adjoint of shape {g.shape}, parent of {parent.value.shape}")
                adj[parent] = adj[parent] + g
    return adj
''',
        },
        "cal": {
            "1a": '''
def add_vjp(a, b, v):
    v = np.asarray(v, dtype=float)
    return v.copy(), v.copy()


def multiply_vjp(a, b, v):
    return np.asarray(b) * v, np.asarray(a) * v


def matmul_vjp(a, b, v):
    # A vector is a one-row (left) or one-column (right) matrix: the matrix rule, then the added
    # axes dropped again.
    left = a[np.newaxis, :] if a.ndim == 1 else a
    right = b[:, np.newaxis] if b.ndim == 1 else b
    upstream = np.reshape(v, (left.shape[0], right.shape[1]))
    return np.reshape(upstream @ right.T, a.shape), np.reshape(left.T @ upstream, b.shape)
''',
            "1b": '''
def sum_to_shape(v, shape):
    v = np.asarray(v, dtype=np.float64)
    shape = tuple(shape)
    try:
        np.broadcast_to(np.empty(shape), v.shape)
    except ValueError:
        raise ValueError(f"{shape} does not broadcast to {v.shape}") from None
    lead = v.ndim - len(shape)
    summed = [axis for axis in range(v.ndim) if axis < lead or shape[axis - lead] == 1]
    return np.add.reduce(v, axis=tuple(summed)).reshape(shape)
''',
            "1c": '''
def tanh_vjp(y, v):
    return np.multiply(v, 1.0 - np.power(y, 2))


def relu_vjp(x, v):
    return v * np.heaviside(x, 0.0)
''',
            "2": '''
def topological_order(output):
    placed, order, path = set(), [], [output]
    while path:
        node = path[-1]
        if node in placed:
            path.pop()
            continue
        waiting = [parent for parent in node.parents if parent not in placed]
        if waiting:
            path.extend(waiting)
        else:
            placed.add(node)
            order.append(node)
            path.pop()
    return order


def backward(output, seed=None):
    order = topological_order(output)
    adjoints = initial_adjoints(order, output, seed)
    for node in order[::-1]:
        if node.vjp is None:
            continue
        received = tuple(node.vjp(adjoints[node]))
        if len(received) != len(node.parents):
            raise ValueError("%s gave %d adjoints to %d parents" % (node.name, len(received), len(node.parents)))
        for position, parent in enumerate(node.parents):
            contribution = np.asarray(received[position], dtype=np.float64)
            if contribution.shape != parent.value.shape:
                raise ValueError("%s: adjoint %s for a parent %s" % (node.name, contribution.shape,
                                                                    parent.value.shape))
            adjoints[parent] = contribution + adjoints[parent]
    return adjoints
''',
        },
    },
    "scalar_engine": {
        "ana": {
            "1a": '''
def add(a, b):
    result = Value(a.data + b.data, (a, b), "+")

    def propagate():
        a.grad = a.grad + 1.0 * result.grad
        b.grad = b.grad + 1.0 * result.grad

    result._backward = propagate
    return result


def multiply(a, b):
    result = Value(a.data * b.data, (a, b), "*")

    def propagate():
        da = b.data * result.grad
        db = a.data * result.grad
        a.grad = a.grad + da
        b.grad = b.grad + db

    result._backward = propagate
    return result
''',
            "2": '''
def topological_order(root):
    ordered = []
    visited = set()
    stack = [(root, 0)]
    while stack:
        v, i = stack.pop()
        children = list(v._prev)
        if i == 0:
            if v in visited:
                continue
            visited.add(v)
        if i < len(children):
            stack.append((v, i + 1))
            if children[i] not in visited:
                stack.append((children[i], 0))
        else:
            ordered.append(v)
    return ordered


def backward(root):
    nodes = topological_order(root)
    root.grad = root.grad + 1
    i = len(nodes) - 1
    while i >= 0:
        nodes[i]._backward()
        i = i - 1
''',
            "3": '''
def logistic_loss(scores, targets):
    total = Value(0.0)
    for score, label in zip(scores, targets):
        margin = score * (-label)
        if margin.data > 0:
            term = margin + ((-margin).exp() + 1).log()
        else:
            term = (margin.exp() + 1).log()
        total = total + term
    return total * (1.0 / len(scores))


def train_step(model, X, targets, lr):
    predictions = []
    for x in X:
        predictions.append(model([Value(float(number)) for number in x]))
    loss = logistic_loss(predictions, targets)
    for weight in model.parameters():
        weight.grad = 0
    backward(loss)
    for weight in model.parameters():
        weight.data = weight.data - lr * weight.grad
    return loss
''',
        },
        "ben": {
            "1a": '''
def add(a, b):
    node = Value(a.data + b.data, _prev=[a, b], _op="+")
    def step():
        for parent in (a, b):
            parent.grad += node.grad
    node._backward = step
    return node


def multiply(a, b):
    node = Value(a.data * b.data, _prev=[a, b], _op="*")
    def step():
        for parent, other in ((a, b), (b, a)):
            parent.grad += other.data * node.grad
    node._backward = step
    return node
''',
            "2": '''
def topological_order(root):
    seen, order, stack = set(), [], [iter([root])]
    path = []
    while stack:
        node = next(stack[-1], None)
        if node is None:
            stack.pop()
            if path:
                order.append(path.pop())
        elif node not in seen:
            seen.add(node)
            path.append(node)
            stack.append(iter(node._prev))
    return order


def backward(root):
    order = topological_order(root)
    root.grad += 1
    for v in order[::-1]:
        v._backward()
''',
            "3": '''
def logistic_loss(scores, targets):
    losses = []
    for z, t in zip(scores, targets):
        m = -(z * t)
        big = m.data > 0
        tail = ((-m if big else m).exp() + 1).log()
        losses.append(m + tail if big else tail)
    return sum(losses, Value(0.0)) / len(losses)


def train_step(model, X, targets, lr):
    loss = logistic_loss([model(list(map(Value, row))) for row in X], targets)
    params = list(model.parameters())
    for p in params:
        p.grad = 0.0
    backward(loss)
    for p in params:
        p.data += -lr * p.grad
    return loss
''',
        },
        "cal": {
            "1a": '''
def _node(data, parents, op, slopes):
    # one rule for every primitive: each parent gets its local slope times the output's gradient
    out = Value(data, parents, op)

    def _backward():
        for parent, slope in zip(parents, slopes):
            parent.grad += slope * out.grad

    out._backward = _backward
    return out


def add(a, b):
    return _node(a.data + b.data, (a, b), "+", (1.0, 1.0))


def multiply(a, b):
    return _node(a.data * b.data, (a, b), "*", (b.data, a.data))
''',
            "2": '''
def topological_order(root):
    reachable, frontier = {root}, [root]
    while frontier:
        for parent in frontier.pop()._prev:
            if parent not in reachable:
                reachable.add(parent)
                frontier.append(parent)
    users = dict.fromkeys(reachable, 0)
    for node in reachable:
        for parent in node._prev:
            users[parent] += 1
    ready, backwards = [root], []
    while ready:
        node = ready.pop()
        backwards.append(node)
        for parent in node._prev:
            users[parent] -= 1
            if not users[parent]:
                ready.append(parent)
    backwards.reverse()
    return backwards


def backward(root):
    root.grad += 1.0
    order = topological_order(root)
    while order:
        order.pop()._backward()
''',
            "3": '''
def logistic_loss(scores, targets):
    total = 0.0
    for score, target in zip(scores, targets):
        u = score * (-1.0 * target)
        top = max(u.data, 0.0)
        # log(e^0 + e^u) with both exponents shifted down by the larger one
        total = total + ((u - top).exp() + math.exp(-top)).log() + top
    return total / len(scores)


def train_step(model, X, targets, lr):
    weights = list(model.parameters())
    for w in weights:
        w.grad = 0.0
    outputs = []
    for row in X:
        inputs = [Value(float(x)) for x in row]
        outputs.append(model(inputs))
    loss = logistic_loss(outputs, targets)
    backward(loss)
    step = -lr
    for w in weights:
        w.data += step * w.grad
    return loss
''',
        },
    },
    "tensor_engine": {
        "ana": {
            "1b": '''
def cross_entropy(logits, y):
    x = logits.data
    count = x.shape[0]
    shifted = x - np.max(x, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    probs = np.exp(log_probs)
    loss = Tensor(-np.mean(log_probs[np.arange(count), y]), (logits,), "cross_entropy")

    def _backward():
        onehot = np.zeros_like(probs)
        onehot[np.arange(count), y] = 1
        logits.grad += (probs - onehot) / count * loss.grad

    loss._backward = _backward
    return loss
''',
            "2": '''
def backward(root):
    visited = []
    order = []
    stack = [(root, 0)]
    while stack:
        node, state = stack.pop()
        if state == 1:
            order.append(node)
            continue
        if any(node is seen for seen in visited):
            continue
        visited.append(node)
        stack.append((node, 1))
        for parent in node._prev:
            stack.append((parent, 0))
    root.grad = np.ones(root.data.shape)
    for node in order[::-1]:
        node._backward()


def numerical_grad(f, arrays, h=1e-6):
    result = []
    for a in arrays:
        g = np.zeros(a.shape)
        with np.nditer(a, flags=["multi_index"], op_flags=["readwrite"]) as entries:
            for x in entries:
                old = x.copy()
                x[...] = old + h
                plus = f()
                x[...] = old - h
                minus = f()
                x[...] = old
                g[entries.multi_index] = (plus - minus) / (2 * h)
        result.append(g)
    return result
''',
            "3": '''
def zero_grad(params):
    for i in range(len(params)):
        params[i].grad = np.zeros(params[i].data.shape)


def sgd_step(params, lr):
    for i in range(len(params)):
        params[i].data[...] = params[i].data - lr * params[i].grad


def train_epoch(forward, params, X, y, order, batch_size, lr):
    history = []
    i = 0
    while i < len(order):
        batch = order[i:i + batch_size]
        zero_grad(params)
        batch_loss = cross_entropy(forward(X[batch]), y[batch])
        batch_loss.backward()
        sgd_step(params, lr)
        history.append(batch_loss.data.item())
        i += batch_size
    return history
''',
        },
        "ben": {
            "1b": '''
def cross_entropy(logits, y):
    n = len(y)
    m = logits.data.max(1)[:, None]
    lse = m + np.log(np.exp(logits.data - m).sum(1))[:, None]
    nll = lse[:, 0] - logits.data[range(n), y]
    out = Tensor(nll.sum() / n, (logits,), "ce")
    def _backward():
        g = np.exp(logits.data - lse)
        g[range(n), y] = g[range(n), y] - 1
        logits.grad = logits.grad + g * (out.grad / n)
    out._backward = _backward
    return out
''',
            "2": '''
def backward(root):
    topo = []
    marks = {}
    def dfs(v):
        if marks.get(id(v)):
            return
        marks[id(v)] = True
        for p in v._prev:
            dfs(p)
        topo.append(v)
    dfs(root)
    root.grad = np.ones_like(root.data, dtype=float)
    while topo:
        topo.pop()._backward()


def numerical_grad(f, arrays, h=1e-6):
    def slope(array, index):
        saved = array[index]
        array[index] = saved + h
        up = f()
        array[index] = saved - h
        down = f()
        array[index] = saved
        return (up - down) / (2 * h)
    return [np.array([slope(a, ix) for ix in np.ndindex(a.shape)]).reshape(a.shape) for a in arrays]
''',
            "3": '''
def zero_grad(params):
    for t in params:
        t.grad = t.data * 0.0


def sgd_step(params, lr):
    for t in params:
        np.subtract(t.data, lr * t.grad, out=t.data)


def train_epoch(forward, params, X, y, order, batch_size, lr):
    batches = [order[k:k + batch_size] for k in range(0, len(order), batch_size)]
    out = []
    for idx in batches:
        l = cross_entropy(forward(X[idx]), y[idx])
        zero_grad(params)
        l.backward()
        sgd_step(params, lr)
        out += [float(l.data)]
    return out
''',
        },
        "cal": {
            "1b": '''
def cross_entropy(logits, y):
    scores = logits.data
    picks = (np.arange(scores.shape[0]), np.asarray(y))
    normaliser = np.logaddexp.reduce(scores, axis=1)
    result = Tensor(np.mean(normaliser - scores[picks]), (logits,), "cross_entropy")

    def _backward():
        softmax = np.exp(scores - normaliser[:, np.newaxis])
        softmax[picks] -= 1
        logits.grad += softmax * (result.grad / scores.shape[0])

    result._backward = _backward
    return result
''',
            "2": '''
def backward(root):
    users, stack, nodes = {}, [root], []
    while stack:
        node = stack.pop()
        if id(node) not in users:
            users[id(node)] = 0
            nodes.append(node)
            stack.extend(node._prev)
    for node in nodes:
        for parent in node._prev:
            users[id(parent)] += 1
    root.grad = np.full(np.shape(root.data), 1.0)
    ready = [root]
    while ready:
        node = ready.pop()
        node._backward()
        for parent in node._prev:
            users[id(parent)] -= 1
            if users[id(parent)] == 0:
                ready.append(parent)


def numerical_grad(f, arrays, h=1e-6):
    grads = []
    for array in arrays:
        grad = np.empty(array.size)
        for i in range(array.size):
            original = array.flat[i]
            array.flat[i] = original + h
            f_plus = f()
            array.flat[i] = original - h
            f_minus = f()
            array.flat[i] = original
            grad[i] = (f_plus - f_minus) / (2 * h)
        grads.append(grad.reshape(array.shape))
    return grads
''',
            "3": '''
def zero_grad(params):
    for param in params:
        param.grad = np.full_like(param.data, 0.0, dtype=float)


def sgd_step(params, lr):
    for param in params:
        np.copyto(param.data, param.data - lr * param.grad)


def train_epoch(forward, params, X, y, order, batch_size, lr):
    record = []
    for chosen in np.array_split(order, range(batch_size, len(order), batch_size)):
        zero_grad(params)
        batch_loss = cross_entropy(forward(X[chosen]), y[chosen])
        batch_loss.backward()
        sgd_step(params, lr)
        record.append(float(np.asarray(batch_loss.data)))
    return record
''',
        },
    },
}


class Disguise(ast.NodeTransformer):
    """What a student does to a copy, one kind at a time (`kind`), or every kind at once ("all")."""

    def __init__(self, kind, renamed, seed):
        self.kind, self.seed, self.names = kind, seed, {name: f"my_{name}_{len(name)}" for name in renamed}

    def wants(self, kind):
        return self.kind in (kind, "all")

    def visit_Name(self, node):
        if self.wants("rename") and node.id in self.names:
            node.id = self.names[node.id]
        return node

    def visit_arg(self, node):
        if self.wants("rename") and node.arg in self.names:
            node.arg = self.names[node.arg]
        return node

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        if self.wants("rename") and node.name in self.names:
            node.name = self.names[node.name]
        if self.wants("reorder"):
            node.body = reordered(node.body)
        if self.wants("assignments merged"):
            node.body = merged(node.body)
        if self.wants("dead code"):  # each copy its own, as each student pads a copy differently
            padding = DEAD_CODE[sum(map(ord, self.seed + node.name)) % len(DEAD_CODE)]
            node.body[:0] = ast.parse(padding).body
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if self.wants("swap operands") and isinstance(node.op, (ast.Mult, ast.Add)):
            node.left, node.right = node.right, node.left
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if self.wants("conditions flipped") and len(node.ops) == 1 and type(node.ops[0]) in FLIPPED:
            node.left, node.comparators, node.ops = node.comparators[0], [node.left], [FLIPPED[type(node.ops[0])]()]
        return node

    def visit_If(self, node):
        self.generic_visit(node)
        if self.wants("conditions flipped") and node.orelse:
            node.test, node.body, node.orelse = ast.UnaryOp(ast.Not(), node.test), node.orelse, node.body
        return node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if self.wants("expand +="):
            load = ast.parse(ast.unparse(node.target), mode="eval").body
            return ast.copy_location(ast.Assign([node.target], ast.BinOp(load, node.op, node.value)), node)
        return node

    def visit_Assign(self, node):
        self.generic_visit(node)
        if self.wants("loop for comprehension") and isinstance(node.value, ast.ListComp) and \
                len(node.value.generators) == 1 and isinstance(node.targets[0], ast.Name):
            name, comp = node.targets[0].id, node.value
            loop = ast.For(comp.generators[0].target, comp.generators[0].iter,
                           [ast.Expr(ast.parse(f"{name}.append(0)").body[0].value)], [])
            loop.body[0].value.args = [comp.elt]
            for condition in comp.generators[0].ifs:
                loop.body = [ast.If(condition, loop.body, [])]
            return [ast.Assign([ast.Name(name, ast.Store())], ast.List([], ast.Load())), loop]
        return node


def reordered(statements):
    """`statements` with the first two that touch different names swapped (an independent pair)."""
    for i in range(len(statements) - 1):
        first, second = statements[i], statements[i + 1]
        if isinstance(first, ast.Assign) and isinstance(second, ast.Assign) and \
                not names(first) & names(second):
            return statements[:i] + [second, first] + statements[i + 2:]
    return statements


def merged(statements):
    """`statements` with two consecutive assignments to names written as one, `a, b = x, y`, where
    neither value reads a name either assigns."""
    result = []
    for statement in statements:
        before = result[-1] if result else None
        if all(isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
               for s in (before, statement)) and \
                not (names(before.targets[0]) | names(statement.targets[0])) & (names(before.value) | names(statement.value)):
            result[-1] = ast.Assign([ast.Tuple([before.targets[0], statement.targets[0]], ast.Store())],
                                    ast.Tuple([before.value, statement.value], ast.Load()))
        else:
            result.append(statement)
    return result


FLIPPED = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}  # `a < b` written `b > a`


DEAD_CODE = ("unused_total = 0\nfor _ in range(0):\n    unused_total += 1",
             "if False:\n    print('debug', 42)",
             "checked = None\nlimit = 10 ** 6\nwhile limit < 0:\n    limit -= 1",
             "trace = []\ntrace.clear()\ntrace.extend([])",
             "try:\n    pass\nexcept ZeroDivisionError:\n    raise")
DISGUISES = ("rename", "reorder", "comments and blank lines", "dead code", "swap operands", "expand +=",
             "loop for comprehension", "conditions flipped", "assignments merged", "all")


def disguised(source, kind, required, seed=""):
    """A copy of `source` disguised by `kind`; the `required` function names stay (the grader
    calls them), helpers are renamed."""
    tree = ast.parse(source)
    tree = ast.fix_missing_locations(Disguise(kind, bound_names(tree) - set(required), seed).visit(tree))
    if kind in ("reorder", "all"):
        functions = [s for s in tree.body if isinstance(s, ast.FunctionDef)]
        rest = [s for s in tree.body if not isinstance(s, ast.FunctionDef)]
        tree.body = rest + functions[::-1]
    text = ast.unparse(tree)  # the original's comments and blank lines go with the text
    if kind in ("comments and blank lines", "all"):
        text = "\n\n".join(f"{line}  # step {number}" if line.strip() and not line.rstrip().endswith(":") else line
                           for number, line in enumerate(text.splitlines()))
    return "# my own work\n" + text + "\n"


def authors(lab):
    """{author: {activity: answer}}: the reference answers every activity a style answers."""
    styles = STYLES[lab.name]
    answered = {activity for style in styles.values() for activity in style}
    found = {"reference": {a: lab.activities[a].reference.source for a in answered}}
    for name, style in styles.items():
        found[name] = {activity: textwrap.dedent(code).strip() + "\n" for activity, code in style.items()}
    return found


# How the students of the solved form spell it: each a way the normal form undoes in full (not
# reordering or padding, which would give two of them, made alike by one rule, a rare fragment of
# their own), and more of them than a rare fragment's holders can be.
SOLVED_SPELLINGS = ("rename", "comments and blank lines", "swap operands", "expand +=", "loop for comprehension")
assert len(SOLVED_SPELLINGS) > FEWEST_COMMON
COMMON_FORM_COPY = ("copy-of-reference", "reference")


def solved_form(lab):
    """{student: {activity: answer}}: students who reach the solved answers' form on their own, each
    spelling it their way."""
    reference = authors(lab)["reference"]
    return {f"solved-{number}": {a: disguised(code, kind, lab.activities[a].functions, f"solved-{number}")
                                 for a, code in reference.items()}
            for number, kind in enumerate(SOLVED_SPELLINGS, 1)}


def mistaken(lab):
    """{student: {activity: answer}}: one student per catalogued mistake of the activities the authors answer."""
    answered = set(authors(lab)["reference"])
    return {f"mistake-{number:02d}": {m.activity: patched(lab.activities[m.activity].reference.source, m.code)}
            for number, m in enumerate(grading_for(lab.name).mistakes) if m.activity in answered}


def one_text(lab):
    """{(student, student)} of catalogue students whose mistakes are one text: a mistake's code
    written as another's with lines added (a check or a seed left out; scalar_engine's recursive
    topological order, with and without a raised recursion limit). Similar in fact, and not the
    work of two students, so never counted as a pair of independent authors."""
    answered = set(authors(lab)["reference"])
    written = {f"mistake-{number:02d}": {line.strip() for line in m.code.splitlines() if line.strip()}
               for number, m in enumerate(grading_for(lab.name).mistakes) if m.activity in answered}
    return {(first, second) for first in written for second in written
            if first < second and (written[first] <= written[second] or written[second] <= written[first])}


def disguised_class(lab, kind):
    """(class, copies): {student: {activity: answer}} of the authors, the students of the solved
    form, the mistakes and one copy of each author disguised by `kind`, and {(author, copy)}, the
    copied pairs (COMMON_FORM_COPY among them)."""
    students = {**authors(lab), **solved_form(lab), **mistaken(lab)}
    copies = set()
    for author, answers in authors(lab).items():
        copy = f"copy-of-{author}"
        students[copy] = {a: disguised(code, kind, lab.activities[a].functions, author) for a, code in answers.items()}
        copies.add(tuple(sorted((author, copy))))
    return students, copies


def crowd(lab, size, seed=0):
    """A class of `size` for the benchmark: students drawn at random, with replacement, from the
    classes of every disguise, so answers repeat more than in a real class: longer lists of
    holders per fragment, which is what costs the index most. Each answer ends in a comment of
    its own, so that no two texts are the same and none is read from another's cache."""
    draw = random.Random(seed)
    pool = [answers for kind in DISGUISES for answers in disguised_class(lab, kind)[0].values()]
    return {student: {activity: f"{code}\n# {student}\n" for activity, code in draw.choice(pool).items()}
            for student in (f"s{number:04d}" for number in range(size))}


LAB_NAMES = tuple(STYLES)
