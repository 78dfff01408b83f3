"""Questions the grader asks a tensor_engine submission, run inside the sandbox.

Each function runs in a copy of the submission's namespace (so `Tensor`, `MLP` and the student's
functions are globals here), calls the student's code on the inputs the grader sent, and returns
plain data: numbers, lists, dicts and arrays. A Tensor is never sent back as it is; its arrays are
read out here. The graphs of activities 2 and F and the networks of activity 4 are built here with
backward rules of this file's own, so that they test one activity at a time. Nothing in this file
knows an expected value or judges. A probe that must record something before handing control to
the student's code again (B's results inside a block, F's node names) sends it with `_observe`,
which the worker puts in its scope: it leaves the sandbox at once (autograder/isolation/worker.py). Probes
bind it to a local first, so rebinding the global later changes nothing.

The probes cases.APART names run apart from the submission's process, on
proxies of its objects (worker.apart): the arrays they are given and read back cross by value,
they reach the submission's builtins and globals through _student, _made and _set_global, and
_lend lets its code read a network's attributes.
"""
# ruff: noqa: F821 -- Tensor, MLP and the student's functions come from the submission's namespace
import numpy as _np


def _kind(thing):
    return type(thing).__name__


def _snap(value):
    """A copy of a plain array (taken now, before later code can change it); anything else as it is."""
    return value.copy() if type(value) is _np.ndarray else value


def _parents(node, known):
    """Which of `known` the entries of node._prev are (their positions; -1 for anything else)."""
    prev = getattr(node, "_prev", None)
    if not isinstance(prev, (tuple, list)):
        return _kind(prev)
    return [next((i for i, leaf in enumerate(known) if leaf is p), -1) for p in prev]


def _sum_to(grad, shape):
    """The probe's own undoing of broadcasting (independent of the notebook's unbroadcast)."""
    while len(grad.shape) > len(shape):
        grad = grad.sum(axis=0)
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad


# ---------------------------------------------------------------- 1a, 1b: one node at a time
def node(expression, leaves, priors, upstream):
    """The node `expression` makes from Tensor leaves (their .grad set to `priors`), with its
    _backward run once at out.grad = upstream. Activity 1a."""
    made = {key: Tensor(array) for key, array in leaves.items()}
    known = list(made.values())
    for key, leaf in made.items():
        leaf.grad = _np.array(priors[key], dtype=_np.float64)
    out = eval(expression, globals(), {**made})
    if not isinstance(out, Tensor):
        return {"kind": _kind(out)}
    if any(out is leaf for leaf in known):
        return {"kind": "input"}
    reply = {"kind": "Tensor", "data": _snap(out.data), "prev": _parents(out, known)}
    out.grad = _np.array(upstream, dtype=_np.float64)
    out._backward()
    reply["grads"] = [_snap(leaf.grad) for leaf in known]
    reply["data_after"] = [_snap(leaf.data) for leaf in known]
    return reply


def loss_node(logits, labels, prior, upstream):
    """cross_entropy on a leaf holding `logits` (.grad = prior), its _backward run with
    out.grad = upstream, then once more, as a second backward through the graph would. Activity 1b."""
    z = Tensor(logits)
    z.grad = _np.array(prior, dtype=_np.float64)
    out = cross_entropy(z, labels)
    if not isinstance(out, Tensor):
        return {"kind": _kind(out)}
    reply = {"kind": "Tensor", "data": _snap(out.data), "prev": _parents(out, [z])}
    out.grad = _np.array(upstream, dtype=_np.float64)
    out._backward()
    reply["grad"] = _snap(z.grad)
    out.grad = _np.array(upstream, dtype=_np.float64)
    out._backward()
    reply["grad_again"] = _snap(z.grad)
    reply["data_after"] = _snap(z.data)
    return reply


# ---------------------------------------------------------------- 2: backward, numerical_grad
def _rule(node, parents, op, calls, index):
    """The backward rule of a graph node, written here; it records that it ran."""
    def rule():
        calls.append(index)
        g = node.grad
        if op == "add":
            parents[0].grad += _sum_to(g, parents[0].data.shape)
            parents[1].grad += _sum_to(g, parents[1].data.shape)
        elif op == "mul":
            parents[0].grad += _sum_to(g * parents[1].data, parents[0].data.shape)
            parents[1].grad += _sum_to(g * parents[0].data, parents[1].data.shape)
        elif op == "matmul":
            parents[0].grad += g @ parents[1].data.T
            parents[1].grad += parents[0].data.T @ g
        elif op == "relu":
            parents[0].grad += g * (parents[0].data > 0)
        elif op == "rowsum":
            parents[0].grad += _np.broadcast_to(g, parents[0].data.shape)
        elif op == "total":
            parents[0].grad += _np.broadcast_to(g, parents[0].data.shape)
        else:  # scale by a constant
            parents[0].grad += node.constant * g
    return rule


def graph(spec, priors, repeat=1):
    """Build the graph `spec` ([op, parent indices, extra] per node, leaves first as
    ["leaf", array]) with this file's backward rules, give every node the .grad in `priors`
    (None: left as made), and run the student's backward on the last node `repeat` times. Every
    node's .grad afterwards, the rules that ran (by node index), and every node's data."""
    calls, nodes = [], []
    for index, (op, *rest) in enumerate(spec):
        if op == "leaf":
            nodes.append(Tensor(rest[0]))
            continue
        parents = [nodes[i] for i in rest[0]]
        data = [p.data for p in parents]
        if op == "add":
            value = data[0] + data[1]
        elif op == "mul":
            value = data[0] * data[1]
        elif op == "matmul":
            value = data[0] @ data[1]
        elif op == "relu":
            value = _np.maximum(data[0], 0.0)
        elif op == "rowsum":
            value = data[0].sum(axis=1, keepdims=True)
        elif op == "total":
            value = data[0].sum()
        else:
            value = rest[1] * data[0]
        made = Tensor(value, parents, op)
        made.constant = rest[1] if op == "scale" else None
        made._backward = _rule(made, parents, op, calls, index)
        nodes.append(made)
    for made, prior in zip(nodes, priors):
        if prior is not None:
            made.grad = _np.array(prior, dtype=_np.float64)
    for _ in range(repeat):
        backward(nodes[-1])
    return {"grads": [_snap(n.grad) for n in nodes], "calls": calls, "data_after": [_snap(n.data) for n in nodes]}


def _laid_out(value, layout):
    """`value` as an array of the same entries laid out in memory as `layout` says: "C"-ordered,
    a "transposed" view of a C-ordered array, "fortran"-ordered, or "sliced" (all but the last
    column of a wider array)."""
    value = _np.array(value, dtype=_np.float64)
    if layout == "transposed":
        return _np.ascontiguousarray(value.T).T
    if layout == "fortran":
        return _np.asfortranarray(value)
    if layout == "sliced" and value.ndim:
        wide = _np.zeros(value.shape[:-1] + (value.shape[-1] + 1,))
        wide[..., :-1] = value
        return wide[..., :-1]
    return value


def numeric(expression, arrays, h, layout):
    """numerical_grad on f() = the NumPy `expression` of the named `arrays`, laid out as `layout`
    says (h left at its default when None): what it returned, the arrays afterwards, and how
    often f ran."""
    held = {name: _laid_out(value, layout) for name, value in arrays.items()}
    functions = {"exp": _np.exp, "log": _np.log, "tanh": _np.tanh}
    runs = []

    def f():
        runs.append(1)
        return float(eval(expression, {}, {**functions, **held}))

    order = [held[name] for name in arrays]
    result = numerical_grad(f, order) if h is None else numerical_grad(f, order, h)
    if isinstance(result, (list, tuple)):
        result = type(result)(_snap(r) for r in result)
    return {"result": result, "after": [_snap(a) for a in order], "runs": len(runs)}


# ---------------------------------------------------------------- 3: the training loop
def zero(datas, grads, unbounded, nan_at=()):
    """zero_grad on Tensors holding `datas` with .grad = `grads`, whose first entry is inf and last
    NaN when `unbounded` (a 0-d .grad, both first and last, NaN), and NaN at each [parameter,
    flat index] of `nan_at`."""
    params = [Tensor(d) for d in datas]
    for p, g in zip(params, grads):
        p.grad = _np.array(g, dtype=_np.float64)
        if unbounded:
            p.grad.flat[0], p.grad.flat[-1] = _np.inf, _np.nan
    for k, i in nan_at:
        params[int(k)].grad.flat[int(i)] = _np.nan
    zero_grad(params)
    return {"grads": [_snap(p.grad) for p in params], "datas": [_snap(p.data) for p in params]}


def step(datas, grads, lr):
    """sgd_step on Tensors holding `datas` with .grad = `grads`; also the arrays that were their
    .data before the step, as a caller holding them sees them afterwards."""
    params = [Tensor(d) for d in datas]
    for p, g in zip(params, grads):
        p.grad = _np.array(g, dtype=_np.float64)
    held = [p.data for p in params]
    sgd_step(params, lr)
    return {"grads": [_snap(p.grad) for p in params], "datas": [_snap(p.data) for p in params],
            "held": [_snap(a) for a in held]}


def epoch(arrays, stale, X, y, order, batch_size, lr):
    """train_epoch on the network [W1, b1, ...] = arrays (ReLU between layers), whose
    parameters' .grad start at `stale`: the losses it returned and the parameters afterwards."""
    weights = [Tensor(w) for w in arrays]
    for p, g in zip(weights, stale):
        p.grad = _np.array(g, dtype=_np.float64)

    def forward(inputs):
        h = Tensor(inputs)
        for j in range(0, len(weights), 2):
            h = h @ weights[j] + weights[j + 1]
            if j + 2 < len(weights):
                h = h.relu()
        return h

    returned = train_epoch(forward, weights, X, y, order, batch_size, lr)
    if isinstance(returned, (list, tuple)):
        returned = list(returned)
    return {"losses": returned, "params": [_snap(p.data) for p in weights]}


# ---------------------------------------------------------------- 4: the MLP and its checkers
def init(sizes, seed):
    """init_mlp(sizes, default_rng(seed)): each entry's type, data and grad."""
    params = init_mlp(sizes, _np.random.default_rng(seed))
    if not isinstance(params, list):
        return {"kind": _kind(params)}
    return {"kind": "list", "params": [{"kind": _kind(p), "data": _snap(p.data), "grad": _snap(p.grad)}
                                       if isinstance(p, Tensor) else {"kind": _kind(p)} for p in params]}


def forward_pass(arrays, X, y, tensor_input):
    """mlp_forward on Tensors holding `arrays`, given X as an array or, when `tensor_input`, as a
    Tensor: the logits, then every parameter's .grad (and X's) after
    cross_entropy(logits, y).backward()."""
    params = [Tensor(w) for w in arrays]
    inputs = Tensor(X) if tensor_input else X
    out = mlp_forward(params, inputs)
    if not isinstance(out, Tensor):
        return {"kind": _kind(out)}
    reply = {"kind": "Tensor", "data": _snap(out.data)}
    cross_entropy(out, y).backward()
    reply["grads"] = [_snap(p.grad) for p in params]
    if tensor_input:
        reply["input_grad"] = _snap(inputs.grad)
    return reply


class _Bent:
    """The network [W1, b1, ...] (ReLU between layers) in which every parameter p enters as
    p + depth (p - centre) exp(-((p - centre) / width)^2), while the gradient the engine gets back
    is the plain network's. Every network of activity 4 is built so, correct or not: where no
    entry lies near `centre` the bend is nil; at an entry equal to `centre` the value is p but the
    slope is 1 + depth, so the engine's gradient is wrong at that entry alone, and only a
    derivative of the forward pass (a finite difference) shows where and by how much.

    This probe runs apart, where every use of the submission's objects crosses the line, and a
    checker runs the network twice per parameter entry. So the whole network is one node of the
    submission's Tensor, whose parents are the parameters (and X, when it is a Tensor): its
    value and its backward rule are computed here in NumPy, with the operations and in the order
    of the notebook's own matmul, add and relu, so an engine's numbers are what a graph of those
    nodes gives. Activity 4 judges the checker, not the engine's nodes (mlp_forward's cases do)."""

    def __init__(self, arrays, stale, centre, width, depth):
        self.params = [Tensor(a) for a in arrays]
        for p, g in zip(self.params, stale):
            p.grad = _np.array(g, dtype=_np.float64)
        self._bend = (centre, width, depth)

    def __call__(self, X):
        given = isinstance(X, Tensor)
        centre, width, depth = self._bend
        seen = []
        for p in self.params:
            data = p.data  # read once: it is the submission's, and a checker moves its entries between calls
            offset = data - centre
            seen.append(data + depth * offset * _np.exp(-(offset / width) ** 2))
        h, layers = _np.asarray(X.data if given else X, dtype=_np.float64), []
        for j in range(0, len(seen), 2):
            below = h
            h = h @ seen[j] + seen[j + 1]
            layers.append((below, h if j + 2 < len(seen) else None))  # None: no ReLU on the logits
            if j + 2 < len(seen):
                h = _np.maximum(h, 0.0)
        parents = (*self.params, X) if given else tuple(self.params)
        out = Tensor(h, parents, "probe")
        params = self.params

        def rule():
            grad = out.grad
            for layer in reversed(range(len(layers))):
                below, before_relu = layers[layer]
                if before_relu is not None:
                    grad = grad * (before_relu > 0)
                params[2 * layer + 1].grad += _sum_to(grad, seen[2 * layer + 1].shape)
                params[2 * layer].grad += below.T @ grad
                if layer or given:
                    grad = grad @ seen[2 * layer].T
            if given:
                X.grad += grad

        out._backward = rule
        return out

    def zero_grad(self):
        for p in self.params:
            p.grad = _np.zeros(p.data.shape)


class _Network:
    """The network [W1, b1, ...] with a fault or none: hidden layers without their ReLU, or the
    gradient reaching parameter `scaled` multiplied by `factor`. Every witness network is built
    the same way, faulty or not: each parameter enters through a node of its value whose backward
    rule passes on its gradient times a factor (1 but for the scaled parameter), and the hidden
    layers' activation is fixed when the network is made. No attribute names the fault."""

    def __init__(self, arrays, stale, no_relu, scaled, factor):
        self.params = [Tensor(a) for a in arrays]
        for p, g in zip(self.params, stale):
            p.grad = _np.array(g, dtype=_np.float64)
        self._through = [self._pass(p, factor if k == scaled else 1.0) for k, p in enumerate(self.params)]
        self._between = (lambda h: h) if no_relu else (lambda h: h.relu())

    @staticmethod
    def _pass(p, factor):
        def through():
            stand_in = Tensor(p.data, (p,), "probe")

            def rule():
                p.grad += factor * stand_in.grad

            stand_in._backward = rule
            return stand_in
        return through

    def __call__(self, X):
        h = X if isinstance(X, Tensor) else Tensor(X)
        for j in range(0, len(self.params), 2):
            h = h @ self._through[j]() + self._through[j + 1]()
            if j + 2 < len(self.params):
                h = self._between(h)
        return h

    def zero_grad(self):
        for p in self.params:
            p.grad = _np.zeros(p.data.shape)


def checked(arrays, stale, X, y, h, bend):
    """gradient_check on a _Bent network (h left at its default when None); `bend` is its
    (centre, width, depth)."""
    model = _Bent(arrays, stale, *bend)
    lent = _lend(model)  # gradient_check reads its params and calls its zero_grad
    result = gradient_check(lent, X, y) if h is None else gradient_check(lent, X, y, h)
    return {"result": result, "after": [_snap(p.data) for p in model.params]}


def checked_mlp(sizes, seed, X, y):
    """gradient_check on the notebook's MLP(sizes, default_rng(seed))."""
    model = MLP(sizes, _lend(_np.random.default_rng(seed)))  # MLP draws from it: rng.normal(...)
    before = [_snap(p.data) for p in model.params]
    result = gradient_check(model, X, y)
    return {"result": result, "before": before, "after": [_snap(p.data) for p in model.params]}


def witnessed(arrays, stale, X, y, no_relu, scaled, factor):
    """torch_witness on a network of this file."""
    model = _Network(arrays, stale, no_relu, scaled, factor)
    result = torch_witness(model, X, y)
    return {"result": result, "after": [_snap(p.data) for p in model.params]}


# ---------------------------------------------------------------- A: adam_step
def adam(datas, grads, lr, betas, eps, history, defaults=False):
    """adam_step on Tensors holding `datas`, once per entry of `grads` (the gradients of every
    parameter at that step), given at each step the state dict `history` names (a number not
    seen before: a new, empty dict), with betas and eps left out when `defaults`: the data and
    .grad of every parameter after each step."""
    params = [Tensor(d) for d in datas]
    states, trail = {}, []
    for step_grads, which in zip(grads, history):
        for p, g in zip(params, step_grads):
            p.grad = _np.array(g, dtype=_np.float64)
        if which not in states:  # made in the submission's process, so that adam_step's writes stay in it
            states[which] = _made("dict")
        if defaults:  # betas and eps left out: the call relies on the signature's defaults
            adam_step(params, states[which], lr)
        else:
            adam_step(params, states[which], lr, tuple(betas), eps)
        trail.append({"datas": [_snap(p.data) for p in params], "grads": [_snap(p.grad) for p in params]})
    return trail


# ---------------------------------------------------------------- B: no_grad
def quiet(expression, leaves):
    """`expression` on fresh Tensor leaves, then backward from it, outside no_grad, inside it,
    inside an outer no_grad after an inner one ended, after both ended, after an exception left a
    no_grad block, inside an outer no_grad that caught an inner one's exception, after a
    KeyboardInterrupt left a block, and after a generator suspended inside a block was closed:
    each time how many parents the result kept, whether a leaf received a gradient, and the
    value, observed as soon as it is known; and whether the exceptions came out of their blocks.
    The switch is put back as it was found, whatever no_grad did."""
    try:
        found = grad_enabled
    except NameError:
        found = None

    def run():
        made = {key: Tensor(value) for key, value in leaves.items()}
        out = eval(expression, globals(), made)
        backward(out)
        return {"parents": len(out._prev), "sent": any(bool(_np.any(t.grad)) for t in made.values()),
                "data": _snap(out.data)}

    class _Raised(Exception):
        pass

    def paused():
        with no_grad():
            yield

    def left_by(error):
        """Whether `error`, raised inside a no_grad block, came out of it."""
        try:
            with no_grad():
                raise error
        except type(error):
            return True
        return False

    observe = _observe
    try:  # observed in the order of cases.QUIET_OBSERVED
        observe(run())
        with no_grad():
            observe(run())  # sent before the block's __exit__ can touch it
            with no_grad():
                pass
            observe(run())
        observe(run())
        observe(left_by(_Raised()))
        observe(run())
        with no_grad():
            try:
                with no_grad():
                    raise _Raised()
            except _Raised:
                pass
            observe(run())
        observe(left_by(KeyboardInterrupt()))
        observe(run())
        suspended = paused()
        next(suspended)
        suspended.close()  # raises GeneratorExit inside the block
        observe(run())
    finally:
        _set_global("grad_enabled", found)


# ---------------------------------------------------------------- C: forward mode
def _function(expression, constants):
    """f(x) = `expression`, with the named constants (arrays) in scope."""
    return lambda x: eval(expression, globals(), {"x": x, **constants})


def _drawn(seed, shapes):
    """Arrays of the given shapes, drawn in order from default_rng(seed): inputs too large to
    send, which the grader draws the same way."""
    rng = _np.random.default_rng(seed)
    return {name: rng.standard_normal(shape) for name, shape in shapes.items()}


def tangent_drawn(expression, seed, shapes):
    """tangent() on x, u and the constants drawn from `seed` (`shapes` names x, u, then them)."""
    drawn = _drawn(seed, shapes)
    x, u = drawn.pop("x"), drawn.pop("u")
    return tangent(expression, x, drawn, u)


def jacobian_drawn(expression, seed, shapes):
    """jacobian() on x and the constants drawn from `seed` (`shapes` names x, then them)."""
    drawn = _drawn(seed, shapes)
    return jacobian(expression, drawn.pop("x"), drawn)


def tangent(expression, x, constants, u):
    """jvp(f, x, u) for f = `expression`: the pair it returned."""
    value, slope = jvp(_function(expression, constants), x, u)
    return {"value": _snap(value), "tangent": _snap(slope)}


def jacobian(expression, x, constants):
    """jacobian_fwd(f, x) for f = `expression`."""
    return {"jacobian": _snap(jacobian_fwd(_function(expression, constants), x))}


# ---------------------------------------------------------------- D: double backprop
def contributions(expression, leaves, g, weights):
    """vjp_tensor on the node `expression` makes from Tensor leaves, with the Tensor leaf g
    holding dL/dnode: each contribution's data, then the engine's backward from
    sum_i sum(contribution_i * weights_i), which shows whether the contributions were built from
    Tensor operations: the .grad of every leaf and of g."""
    made = {key: Tensor(array) for key, array in leaves.items()}
    node = eval(expression, globals(), dict(made))
    upstream = Tensor(g)
    found = vjp_tensor(node, upstream)
    if not isinstance(found, (list, tuple)) or not all(isinstance(c, Tensor) for c in found):
        return {"kind": _kind(found)}
    reply = {"kind": "list", "datas": [_snap(c.data) for c in found]}
    if len(found) != len(weights):
        return reply
    total = None
    for part, weight in zip(found, weights):
        term = (part * Tensor(weight)).sum()
        total = term if total is None else total + term
    backward(total)
    reply["grads"] = [_snap(leaf.grad) for leaf in made.values()]
    reply["g_grad"] = _snap(upstream.grad)
    return reply


def refused(expression, leaves, g):
    """vjp_tensor on a node it has no rule for: whether it raised ValueError, as the notebook asks,
    or what it returned."""
    made = {key: Tensor(array) for key, array in leaves.items()}
    node = eval(expression, globals(), dict(made))
    try:
        found = vjp_tensor(node, Tensor(g))
    except ValueError:
        return {"kind": "ValueError"}
    return {"kind": _kind(found)}


def gradient_of(expression, x, constants):
    """grad(f(x), [x, unused]) on a leaf x, with create_graph left at its default (False) and
    with create_graph=True: what each returned (data and number of parents of every entry) and
    x.grad afterwards."""
    f = _function(expression, constants)
    reply = {}
    for create in (False, True):
        leaf, unused = Tensor(x), Tensor(_np.ones(2))
        found = grad(f(leaf), [leaf, unused], create_graph=True) if create else grad(f(leaf), [leaf, unused])
        if not isinstance(found, list) or not all(isinstance(g, Tensor) for g in found):
            return {"kind": _kind(found)}
        reply[str(create)] = {"datas": [_snap(g.data) for g in found], "parents": [len(g._prev) for g in found],
                              "leaf_grad": _snap(leaf.grad)}
    reply["kind"] = "list"
    return reply


def curvature(expression, x, constants, v, h):
    """hvp(f, x, v) for f = `expression`, and the central difference of the student's own grad
    along v, (grad f(x + h v) - grad f(x - h v)) / 2h, which it should match."""
    f = _function(expression, constants)
    reply = {"result": _snap(hvp(f, x, v))}

    def slope(point):
        leaf = Tensor(point)
        return grad(f(leaf), [leaf])[0].data

    reply["central"] = (slope(x + h * v) - slope(x - h * v)) / (2 * h)
    return reply


def newton(expression, x, constants):
    """newton_step(f, x) for f = `expression`."""
    return {"result": _snap(newton_step(_function(expression, constants), x))}


# ---------------------------------------------------------------- E: conv2d
def convolution(x, w, b, stride, padding, priors, upstream, defaults=False):
    """conv2d on leaves holding x, w and b (their .grad set to `priors`), its _backward run at
    out.grad = upstream, then once more, as a second backward through the graph would (stride
    and padding left out of the call when `defaults`)."""
    leaves = [Tensor(x), Tensor(w), Tensor(b)]
    for leaf, prior in zip(leaves, priors):
        leaf.grad = _np.array(prior, dtype=_np.float64)
    if defaults:  # stride and padding left out: the call relies on the signature's defaults
        out = conv2d(leaves[0], leaves[1], leaves[2])
    else:
        out = conv2d(leaves[0], leaves[1], leaves[2], stride=stride, padding=padding)
    if not isinstance(out, Tensor):
        return {"kind": _kind(out)}
    reply = {"kind": "Tensor", "data": _snap(out.data), "prev": _parents(out, leaves)}
    out.grad = _np.array(upstream, dtype=_np.float64)
    try:
        out._backward()
    except (ValueError, IndexError) as error:  # a contribution of the wrong shape: say so, naming shapes
        reply["failed"] = f"{type(error).__name__}: {error}"
        return reply
    reply["grads"] = [_snap(leaf.grad) for leaf in leaves]
    out.grad = _np.array(upstream, dtype=_np.float64)
    out._backward()
    reply["grads_again"] = [_snap(leaf.grad) for leaf in leaves]
    reply["data_after"] = [_snap(leaf.data) for leaf in leaves]
    return reply


# ---------------------------------------------------------------- F: to_dot
def tape(spec):
    """to_dot on the graph `spec` ([label, parent indices, shape] per node, leaves with no
    parents), rooted at its last node: the text. Every node's name, n<id>, is observed before
    to_dot runs; the grader knows the rest of the graph from its own spec."""
    observe, identity = _observe, _student("id")
    nodes = []
    for label, parents, shape in spec:
        nodes.append(Tensor(_np.zeros(shape), [nodes[i] for i in parents], label))
    observe([f"n{identity(n)}" for n in nodes])
    return to_dot(nodes[-1])
