"""Attacks on what a hidden check certifies, for the labs whose activities they target.

Two kinds, each expecting 0 for the activity it aims at and full marks elsewhere:

* Reaching into the grader's probe, which runs in the student's process (issue 22, class 2):
  a to_dot that walks up to the probe's frame and empties the lists the expected nodes and
  edges were read from; a no_grad whose __exit__ rewrites what the probe recorded inside the
  block; a gradient_check that reads where the test network planted its fault instead of
  differencing anything. The grader now keeps its expectations (the graph spec, where the fault
  is) in its own process and takes each observation out of the sandbox as it is made.
* Right values by the wrong method (class 3): grad and jacobian by central differences of the
  forward pass instead of reverse mode, jacobian_fwd by reverse mode instead of forward mode, jvp
  and hvp by central differences, and double backprop whose vjp_tensor is still the stub (grad
  using rules of its own).
"""
from autograder.labs import catalogued_mistakes
from autograder.measuring.catalogue import patched
from tests.adversarial.common import Attack, answer, reference

PT03, TENSOR = "pt03_autodiff", "tensor_engine"

EMPTYING_TO_DOT = """
import sys


def to_dot(root):
    for value in list(sys._getframe(1).f_locals.values()):
        if isinstance(value, list):
            value.clear()
    return "digraph tape {\\n}"
"""
REWRITING_NO_GRAD = """
import sys


class no_grad:
    def __enter__(self):
        return self

    def __exit__(self, *raised):
        for record in sys._getframe(1).f_locals.values():
            if isinstance(record, dict):
                for seen in record.values():
                    if isinstance(seen, dict) and "parents" in seen:
                        seen["parents"], seen["sent"] = 0, False
        return False
"""
READING_GRADIENT_CHECK = """
def gradient_check(model, X, y, h=1e-6):
    scaled, factor = getattr(model, "scaled", -1), getattr(model, "factor", 1.0)
    model.zero_grad()
    cross_entropy(model(X), y).backward()
    if scaled is None or scaled < 0:
        return 0.0
    engine = model.params[scaled].grad
    return float(np.max(np.abs(engine / factor - engine) / np.maximum(1.0, np.abs(engine))))
"""
# Right values to about 1e-10: the notebook's own checks accept them, so they are attacks here
# rather than catalogued mistakes (a catalogued mistake must fail the visible check too).
JACOBIAN_BY_DIFFERENCES = """
def jacobian(function, value, h=1e-6):
    x = np.asarray(value, dtype=np.float64)
    out = as_tensor(function(Tensor(x))).value
    found = np.zeros(np.shape(out) + x.shape)
    for index in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[index] += h
        down[index] -= h
        rise = as_tensor(function(Tensor(up))).value - as_tensor(function(Tensor(down))).value
        found[(Ellipsis, *index)] = rise / (2 * h)
    return found
"""
JVP_BY_DIFFERENCES = """
def jvp(f, x, u, h=1e-6):
    value = as_dual(f(Dual(x, 0.0))).value
    up, down = as_dual(f(Dual(x + h * u, 0.0))).value, as_dual(f(Dual(x - h * u, 0.0))).value
    return value, (up - down) / (2 * h)
"""
HVP_BY_DIFFERENCES = """
def hvp(f, x, v, h=1e-5):
    def slope(point):
        leaf = Tensor(point)
        return grad(f(leaf), [leaf])[0].data
    return (slope(x + h * v) - slope(x - h * v)) / (2 * h)
"""
OWN_RULES_VJP = """
def vjp_tensor(node, g):
    raise NotImplementedError("Complete Activity D: vjp_tensor")
"""


def mistake_code(lab, description):
    """The code of the lab's catalogued mistake with this description (read unchecked: the suite
    asks while it is collected)."""
    return next(m.code for m in catalogued_mistakes(lab.name) if m.description == description)


def replaced(lab, activity, code):
    """A build step: the solved notebook with the activity's answer the reference patched by `code`."""
    return lambda lab_, solved, blank, context: answer(solved, activity, patched(reference(lab, activity), code))


def without_vjp_tensor(lab):
    """D's reference with grad calling its own copy of the rules and vjp_tensor left a stub."""
    own = reference(lab, "D").replace("def vjp_tensor(node, g):", "def _own_rules(node, g):", 1)
    own = own.replace("vjp_tensor(node, grads[id(node)])", "_own_rules(node, grads[id(node)])")
    assert "_own_rules(node, grads" in own, "tensor_engine's grad no longer calls vjp_tensor as expected"
    return lambda lab_, solved, blank, context: answer(solved, "D", own.rstrip() + "\n\n" + OWN_RULES_VJP)


def pt03_attacks(lab):
    assert lab.name == PT03, f"the {PT03} method attacks were asked for {lab.name}"
    return [
        Attack("grad-by-differences", "B answered by central differences of the forward pass", zero=frozenset({"B"}),
               build=replaced(lab, "B", mistake_code(lab, "grad by central differences of the forward pass, one pass "
                                                          "per input"))),
        Attack("jacobian-by-differences", "C answered by central differences of the forward pass",
               zero=frozenset({"C"}),
               build=replaced(lab, "C", JACOBIAN_BY_DIFFERENCES)),
    ]


def tensor_attacks(lab):
    assert lab.name == TENSOR, f"the {TENSOR} method attacks were asked for {lab.name}"
    return [
        Attack("frames-empty-expected-graph", "to_dot empties the probe's lists through sys._getframe",
               zero=frozenset({"F"}), build=replaced(lab, "F", EMPTYING_TO_DOT)),
        Attack("exit-rewrites-observations", "no_grad records as usual and rewrites the probe's records in __exit__",
               zero=frozenset({"B"}), build=replaced(lab, "B", REWRITING_NO_GRAD)),
        Attack("reads-planted-fault", "gradient_check reads the test network's fault instead of differencing",
               zero=frozenset({"4"}), build=replaced(lab, "4", READING_GRADIENT_CHECK)),
        Attack("jacobian-fwd-by-reverse-mode", "jacobian_fwd by one backward pass per output",
               zero=frozenset({"C"}),
               build=replaced(lab, "C", mistake_code(lab, "jacobian_fwd by reverse mode, one backward pass per "
                                                          "output"))),
        Attack("jvp-by-differences", "jvp by central differences of the forward pass", zero=frozenset({"C"}),
               build=replaced(lab, "C", JVP_BY_DIFFERENCES)),
        Attack("hvp-by-differences", "hvp by central differences of the answer's own gradient", zero=frozenset({"D"}),
               build=replaced(lab, "D", HVP_BY_DIFFERENCES)),
        Attack("stubbed-vjp-tensor", "D with vjp_tensor a stub, grad using rules of its own", zero=frozenset({"D"}),
               build=without_vjp_tensor(lab)),
    ]
