"""What scalar_engine's notebook promises of each function it asks for, the domain its hidden
inputs are drawn from (autograder/labs/contracts.py). Written from the notebook's text, stubs and
signatures: every Value holds one Python float, every rule adds into .grad, parents are kept in
argument order with multiplicity, and every node is labelled."""
from autograder.labs.contracts import Arg, Contract, Values, drawn  # noqa: F401 -- cases.py labels its cases with it

# Exp's argument stays below log(max float64): math.exp raises OverflowError beyond it, and the
# notebook says so (Activity 1b).
EXP_LIMIT = 709.78

ANY = Values()
# A Value's number: any finite float. The notebook mentions no infinities, and its tanh and
# sigmoid are asked to stay finite, not to take infinite inputs.
VALUE = Arg("a", kinds=("Value",), dtypes=("float",), shapes=("0-d",), values=ANY)
NODE_STATES = (".grad of a parent already holding an earlier gradient", "one Value passed as both operands")
NODE_COMPARED = ("out.data with relative error 1e-9 (far tails included)",
                 "_prev exactly: the parents as an ordered tuple, in argument order, with multiplicity",
                 "_op exactly, as the notebook names it",
                 "each parent's .grad after one call of out._backward() with relative error 1e-9, "
                 "down to the rounding of the reference formula where it is ill-conditioned",
                 "the parents' .data unchanged")
NODE_IN_PLACE = ("the parents' .grad, when the backward rule runs (it adds)",)


def unary(function, activity, values, op, note=""):
    return Contract(function, activity, (Arg("a", kinds=("Value",), dtypes=("float",), shapes=("0-d",),
                                             values=values),),
                    results=("a new Value",), states=NODE_STATES[:1], in_place=NODE_IN_PLACE,
                    note=f"label {op!r}, parents (a,). " + note, compared=NODE_COMPARED)


def binary(function, activity, op, values=ANY):
    args = tuple(Arg(name, kinds=("Value",), dtypes=("float",), shapes=("0-d",), values=values) for name in "ab")
    return Contract(function, activity, args, results=("a new Value",), states=NODE_STATES,
                    in_place=NODE_IN_PLACE, compared=NODE_COMPARED,
                    note=f"label {op!r}, parents (a, b); plain numbers reach it as constant leaves through the "
                         "given operators, on either side")


def dual(function, args, values=ANY):
    return Contract(function, "B", tuple(Arg(name, kinds=("Dual",), dtypes=("float",), shapes=("0-d",),
                                             values=values) for name in args),
                    results=("a new Dual",), states=("one Dual passed as both operands",),
                    note="val and der both take the declared values; plain numbers reach the rules as "
                         "constants (der 0) through the given operators",
                    compared=("val and der with relative error 1e-9", "the inputs' val and der unchanged"))


CONTRACTS = [
    binary("add", "1a", "+"),
    binary("multiply", "1a", "*"),
    Contract("power", "1b",
             (VALUE, Arg("k", kinds=("float", "int"), dtypes=("float", "int"), shapes=("0-d",),
                         values=Values(low=-3.0, high=3.0))),
             results=("a new Value",), states=NODE_STATES[:1], in_place=NODE_IN_PLACE, compared=NODE_COMPARED,
             note="label f'**{k}', parents (a,); a negative base only with an integer k, a zero base only "
                  "with k >= 1 (elsewhere a^k or its slope is not a real number); the hidden exponents "
                  "stay within [-3, 3], the notebook's own lie in [-1, 3]"),
    unary("exp", "1b", Values(high=EXP_LIMIT, large=1e3), "exp",
          "Inputs up to 709.78, where math.exp still answers; far below 0 it underflows to 0."),
    unary("log", "1b", Values(low=0.0, open_low=True), "log", "Only positive inputs, down to the subnormal."),
    unary("tanh", "1b", ANY, "tanh", "math.tanh answers at every finite input; so must the rule."),
    unary("relu", "1b", Values(kinks=(0.0,)), "relu", "The slope at exactly 0 (+0.0 and -0.0) is 0, as in PyTorch."),
    Contract("topological_order", "2", (Arg("root", kinds=("Value",), shapes=("a graph of Values",)),),
             results=("list of Value",),
             states=("a root that is a leaf", "graphs deeper than the recursion limit",
                     "nodes reached along several paths", "the long path listed as the first parent"),
             note="every node reachable through _prev once, parents before their users, the root last",
             compared=("a valid topological order: each node once, parents before users, the root last",)),
    Contract("backward", "2", (Arg("root", kinds=("Value",), shapes=("a graph of Values",)),),
             results=("None (whatever is returned is ignored)",),
             states=("leaves already holding a gradient", "the root already holding a gradient",
                     "interior nodes already holding a gradient", "a second backward on the same root",
                     "a root that is a leaf"),
             in_place=("every node's .grad (it adds; the seed 1 is added to the root's)",),
             note="resets nothing; runs each node's backward rule once, in reverse topological order",
             compared=("every node's .grad with relative error 1e-9", "each backward rule called exactly once",
                       "every node's .data unchanged")),
    Contract("logistic_loss", "3",
             (Arg("scores", kinds=("list of Value",), shapes=("one or more",), values=ANY),
              Arg("targets", kinds=("list", "tuple", "ndarray"), dtypes=("float64", "int64", "int32", "int"),
                  shapes=("as many as scores",))),
             results=("a Value",),
             note="the mean of log(1 + e^(-tz)), finite at every margin (margins far beyond 709.78 included)",
             compared=("the loss with relative error 1e-9, down to the rounding of log(1 + e^m) near 1",
                       "the scores' .grad after backward(loss) with relative error 1e-9")),
    Contract("train_step", "3",
             (Arg("model", kinds=("MLP",), shapes=("any sizes, hidden layers or none",)),
              Arg("X", kinds=("ndarray",), dtypes=("float64",), shapes=("(n, 2)",), values=Values(large=1e3)),
              Arg("targets", kinds=("ndarray", "list"), dtypes=("float64", "int64", "int32"), shapes=("(n,)",)),
              Arg("lr", kinds=("float",), dtypes=("float",), shapes=("0-d",),
                  values=Values(low=0.0, open_low=True, large=10.0))),
             results=("the loss Value, computed before the update",),
             states=("parameters holding stale gradients", "several calls in a row on the same model"),
             in_place=("every parameter's .data (the update) and .grad (zeroed, then filled)",),
             note="X as given, never scaled; the gradients stay in .grad after the update",
             compared=("the loss, every parameter and every .grad after each call, with relative error 1e-9",)),
    unary("sigmoid", "A", ANY, "sigmoid",
          "One node; finite everywhere, exact on both tails (e^-x overflows below -709.78)."),
    dual("dual_add", "ab"),
    dual("dual_mul", "ab"),
    dual("dual_sin", "a", Values(large=1e3)),
    dual("dual_exp", "a", Values(high=EXP_LIMIT, large=1e3)),
    Contract("relu_forward", "C",
             (Arg("ctx", kinds=("torch.autograd.function context",)),
              Arg("x", kinds=("Tensor",), dtypes=("float64",), shapes=("0-d", "1-d", "2-d"),
                  values=Values(kinks=(0.0,)))),
             results=("a new Tensor",), in_place=("ctx (what save_for_backward keeps)",),
             note="x itself is left as it was; x is saved with ctx.save_for_backward",
             compared=("the output entry by entry, shape exactly", "x unchanged, exactly")),
    Contract("relu_backward", "C",
             (Arg("ctx", kinds=("torch.autograd.function context",)),
              Arg("grad_output", kinds=("Tensor",), dtypes=("float64",), shapes=("0-d", "1-d", "2-d"),
                  values=ANY)),
             results=("a Tensor", "a tuple of one Tensor (PyTorch takes both)"),
             states=("grad_output shared with another term's gradient", "x changed in place after forward"),
             note="grad_output where x > 0, else 0 (0 at +0.0 and -0.0); grad_output is not written into",
             compared=("the input's gradient entry by entry, shape exactly",)),
]


def boundaries(function, argument):
    """{name: value}: the boundaries of `function`'s numeric `argument`, which cases.py plants."""
    contract = next(c for c in CONTRACTS if c.function == function)
    return contract.arg(argument).values.boundaries()
