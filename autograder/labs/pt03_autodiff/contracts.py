"""What pt03_autodiff's notebook promises about each function an activity asks for.

Written from the notebook's text and stubs, not from the cases: cases.py draws its hidden inputs
from these declarations and labels every case with the boundaries it holds.

The engine works in float64 throughout (Section 1), so every numeric argument is a float64
array; the notebook says nothing of infinities or NaN in the engine, so the ranges are finite.
"""
from autograder.labs.contracts import Arg, Contract, Values, drawn  # noqa: F401 -- cases.py labels its cases with it

REALS = Values()
# tanh_vjp receives the forward *output* y = tanh(x), which lies in [-1, 1]; both ends are
# reached in float64 (tanh(20.0) == 1.0).
TANH_OUTPUTS = Values(low=-1.0, high=1.0)
# relu's rule changes at 0: the notebook fixes the derivative there to 0, like PyTorch.
RELU_INPUTS = Values(kinks=(0.0,))
# A learning rate is not negative; 0 is allowed (no step). Beyond 1e3 the parameters' scale
# says nothing more about the update.
RATES = Values(low=0.0, large=1e3)

ARRAY_SHAPES = ("0-d", "size-1", "1-d", "2-d", "2-d with a size-1 axis")
ELEMENTWISE_RESULT = ("tuple of 2 ndarray", "list of 2 ndarray")  # a pair, as the stub's docstring says
INTEGER_LABELS = ("int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", "uint64")
CLOSE = "relative error 1e-9 per entry, the absolute floor scaled to the magnitudes summed into the entry"
UNTOUCHED = "every argument comes back as it was sent, compared with array_equal"


def operands(*names):
    return tuple(Arg(name, shapes=ARRAY_SHAPES, values=REALS) for name in names)


CONTRACTS = [
    Contract("add_vjp", "1a", operands("a", "b", "v"), ELEMENTWISE_RESULT,
             note="a, b and v share one shape (the Tensor class undoes broadcasting with sum_to_shape); "
                  "the result is (a_bar, b_bar), each of the input's exact shape",
             compared=("exactly: a_bar and b_bar equal v", "shapes exactly, not sizes", UNTOUCHED)),
    Contract("multiply_vjp", "1a", operands("a", "b", "v"), ELEMENTWISE_RESULT,
             note="a, b and v share one shape; a_bar = v * b and b_bar = v * a, one rounding each",
             compared=("relative error 1e-12 per entry (one product each)", "shapes exactly", UNTOUCHED)),
    Contract("matmul_vjp", "1a",
             (Arg("a", shapes=("1-d", "2-d", "2-d with a size-1 axis", "size-1"), values=REALS),
              Arg("b", shapes=("1-d", "2-d", "2-d with a size-1 axis", "size-1"), values=REALS),
              Arg("v", shapes=("0-d", "1-d", "2-d", "2-d with a size-1 axis", "size-1"), values=REALS)),
             ELEMENTWISE_RESULT,
             note="all four rank pairings of vectors and matrices; v has the shape of a @ b (0-d for vector @ vector)",
             compared=(CLOSE, "shapes exactly", UNTOUCHED)),
    Contract("sum_to_shape", "1b",
             (Arg("v", shapes=("0-d", "size-1", "1-d", "2-d", "3-d", "4-d", "5-d", "square"), values=REALS),
              Arg("shape", kinds=("tuple", "list"), dtypes=("int",), shapes=("() and any shape v broadcasts from",))),
             ("ndarray", "float64 number for the target ()"),
             note="shape is a target v was broadcast from: leading axes summed away, stretched length-1 axes summed "
                  "with keepdims",
             compared=(CLOSE, "the target shape exactly", UNTOUCHED)),
    Contract("tanh_vjp", "1c",
             (Arg("y", shapes=ARRAY_SHAPES, values=TANH_OUTPUTS), Arg("v", shapes=ARRAY_SHAPES, values=REALS)),
             ("ndarray",),
             note="y is the forward output tanh(x); the result v * (1 - y**2) is shaped like v",
             compared=("relative error 1e-9 per entry, the absolute floor 1e-14 |v| (the rounding of 1 - y**2)",
                       "shapes exactly", UNTOUCHED)),
    Contract("relu_vjp", "1c",
             (Arg("x", shapes=ARRAY_SHAPES, values=RELU_INPUTS), Arg("v", shapes=ARRAY_SHAPES, values=REALS)),
             ("ndarray",),
             note="the adjoint passes where x > 0 and is 0 elsewhere, at x = 0.0 and -0.0 included",
             compared=("relative error 1e-12 per entry and no absolute floor: v passes unchanged or is 0",
                       "shapes exactly", UNTOUCHED)),
    Contract("topological_order", "2",
             (Arg("output", kinds=("Tensor",), dtypes=(), shapes=("a graph: chains of 1500, fan-out, repeated "
                                                                  "parents, unequal paths either way round",)),),
             ("list of Tensor", "tuple of Tensor"),
             states=("the same graph ordered again", "a graph already passed through backward"),
             note="each reachable node exactly once, every parent before the nodes that use it; no recursion",
             compared=("exactly: the set of reachable nodes, each once, by identity", "every parent before its user")),
    Contract("backward", "2",
             (Arg("output", kinds=("Tensor",), dtypes=(), shapes=("a graph of scalar or vector nodes",)),
              Arg("seed", kinds=("ndarray", "float", "None"), shapes=("0-d", "1-d"), values=REALS, default=None)),
             ("dict from Tensor to ndarray",),
             states=("a second backward on the same output", "a backward from an interior node after one from "
                     "the output", "the default seed, omitted"),
             note="the seed defaults to 1 for a scalar output; any other output needs a seed of its shape "
                  "(ValueError otherwise); a VJP contribution of the wrong shape is a ValueError",
             compared=("per entry: relative error 1e-9, the absolute floor scaled to the seed's entry",
                       "every VJP called exactly once per call", "fresh adjoints on every call")),
    Contract("classifier_step", "3",
             (Arg("X", shapes=("2-d", "2-d with a size-1 axis", "square"), values=REALS),
              Arg("targets", kinds=("ndarray",), dtypes=INTEGER_LABELS, shapes=("1-d", "size-1")),
              Arg("W", shapes=("2-d", "square"), values=REALS),
              Arg("b", shapes=("1-d",), values=REALS),
              Arg("lr", kinds=("float",), dtypes=("float64",), shapes=("0-d",), values=RATES)),
             ("dict with the keys logits, loss, dW, db, W, b",),
             states=("called again on its own result (successive updates)",),
             note="targets are integer class indices in 0..C-1 of any integer dtype; loss is a Python float",
             compared=("loss: a Python float, relative error 1e-9",
                       "arrays: relative error 1e-9, shapes exactly; the absolute floor widened by the magnitudes "
                       "that go into each entry (a weight of 1e12 leaves the last digits of the logits to rounding)",
                       "X, W and b come back as sent, compared with array_equal")),
    Contract("mlp_step", "A",
             (Arg("X", shapes=("2-d",), values=REALS),
              Arg("targets", kinds=("ndarray",), dtypes=INTEGER_LABELS, shapes=("1-d", "size-1")),
              Arg("params", kinds=("dict",), dtypes=("float64",), shapes=("W1 (H, 4), b1 (H,), W2 (3, H), b2 (3,)",)),
              Arg("lr", kinds=("float",), dtypes=("float64",), shapes=("0-d",), values=RATES)),
             ("tuple (float, dict)", "list [float, dict]"),
             states=("called again on its own result (successive updates)", "hidden units exactly at relu's kink"),
             note="returns the loss as a Python float and a new dict of updated parameters under the same keys",
             compared=("loss: a Python float, relative error 1e-9", "parameters: relative error 1e-9, shapes exactly",
                       "the arrays passed in come back as sent")),
    Contract("grad", "B",
             (Arg("function", kinds=("callable from Tensor to scalar Tensor",), dtypes=(), shapes=()),),
             ("callable from ndarray to ndarray",),
             note="the gradient function wraps x in a new Tensor; ValueError for a non-scalar result (shape (1,) "
                  "included); zeros when the result ignores x; x is left untouched",
             compared=("relative error 1e-9, shapes exactly", "ValueError by type")),
    Contract("jacobian", "C",
             (Arg("function", kinds=("callable from Tensor to Tensor",), dtypes=(), shapes=()),
              Arg("value", shapes=("0-d", "1-d", "2-d"), values=REALS)),
             ("ndarray of shape output.shape + input.shape",),
             note="one backward pass per output entry with a one-hot seed",
             compared=("relative error 1e-9, the absolute floor scaled to the largest entry",
                       "shape output.shape + input.shape exactly")),
]
