"""What tensor_engine's notebook promises of each function it asks for, declared once.

Written from the notebook's text, tables and stubs (source/tensor_engine/tensor_engine.py), not
from the cases. `values` is declared for the arguments whose entries are numbers the student's
code computes with; cases.py plants every boundary of those in some hidden case (Case.drawn).
Arguments that are graphs, networks, functions, parameter lists or small integers (sizes,
batch sizes, axes) carry their classes in `shapes` and `states` instead.
"""
from autograder.labs.contracts import Arg, Contract, Values, drawn  # noqa: F401 -- drawn: re-exported for cases.py

# Any real number: the entries of a Tensor the primitives take.
REAL = Values()
# The primitives' inputs are finite: the notebook promises nothing at infinities (only
# zero_grad's .grad may hold them), so a rule exact on every finite input, relu as a * (a > 0)
# among them, is right. exp stays finite below log(max float64) = 709.78.
EXP_DOMAIN = Values(high=709.78)
# log of a positive number.
LOG_DOMAIN = Values(low=0.0, open_low=True)
# relu's kink at 0 (slope 0 there, as in PyTorch).
RELU_DOMAIN = Values(kinks=(0.0,))
# A step (a learning rate or a difference's h): positive; the cases go up to 1.
STEP = Values(low=0.0, open_low=True, large=1.0)
# What a .grad may hold when zero_grad meets it: anything, overflowed sums included.
ANY_GRAD = Values(nonfinite=("inf", "-inf", "nan"))

TENSOR = ("Tensor",)
SHAPES_BROADCAST = ("0-d", "size-1", "1-d", "2-d", "3-d", "2-d with a size-1 axis", "3-d with a size-1 axis",
                    "non-square", "square (a transposed rule keeps the shape)")
ELEMENTWISE_SHAPES = ("0-d", "2-d")
STALE = ("the parents' .grad holding an earlier gradient (the rule adds)",
         "the rule run twice (a second backward through the same graph adds the same amounts)",
         "one Tensor as both parents")
ELEMENTWISE_STATES = ("the parent's .grad holding an earlier gradient (the rule adds)",
                      "the parent's .grad at zero (a tail contribution of 1e-17 must show)")
NODE = ("a new Tensor (never one of its inputs)",)
NODE_COMPARED = ("out.data within 1e-9 (relative where magnitudes vary: the boundary cases compare each entry "
                 "to 1e-9 of its own size, within 1e-300)",
                 "_prev: the parents in argument order, with multiplicity", "every .grad after one run of _backward",
                 "the parents' .data exactly as sent")

CONTRACTS = [
    # ---------------------------------------------------------------- 1a
    Contract("multiply", "1a", (Arg("a", TENSOR, shapes=SHAPES_BROADCAST, values=REAL),
                                Arg("b", TENSOR + ("float",), shapes=SHAPES_BROADCAST, values=REAL)),
             NODE, states=STALE, note="a * b with NumPy broadcasting, label '*', contributions summed back to "
                                      "each parent's shape; a number meets a Tensor as a constant leaf",
             compared=NODE_COMPARED),
    Contract("matmul", "1a", (Arg("a", TENSOR, shapes=("2-d", "2-d with a size-1 axis"), values=REAL),
                              Arg("b", TENSOR, shapes=("2-d", "2-d with a size-1 axis"), values=REAL)),
             NODE, states=STALE, note="2-D only, no broadcasting, label '@'", compared=NODE_COMPARED),
    Contract("reduce_sum", "1a",
             (Arg("a", TENSOR, shapes=("2-d", "3-d", "square"), values=REAL),
              Arg("axis", ("None", "int", "negative int", "tuple of int in any order"), dtypes=(), default=None),
              Arg("keepdims", ("bool",), dtypes=(), default=False)),
             NODE, states=STALE[:2], note="a.data.sum(axis=axis, keepdims=keepdims), label 'sum'; calls that omit "
                                          "axis and keepdims rely on their defaults", compared=NODE_COMPARED),
    Contract("exp", "1a", (Arg("a", TENSOR, shapes=ELEMENTWISE_SHAPES, values=EXP_DOMAIN),), NODE,
             states=ELEMENTWISE_STATES, note="label 'exp'; no clipping: 500 to 709.78 stays finite, and the far "
                                             "negative tail is tiny, not 0", compared=NODE_COMPARED),
    Contract("log", "1a", (Arg("a", TENSOR, shapes=ELEMENTWISE_SHAPES, values=LOG_DOMAIN),), NODE,
             states=ELEMENTWISE_STATES, note="label 'log'; no epsilon: log and 1/a at 1e-12 and below are exact",
             compared=NODE_COMPARED),
    Contract("relu", "1a", (Arg("a", TENSOR, shapes=ELEMENTWISE_SHAPES, values=RELU_DOMAIN),), NODE,
             states=ELEMENTWISE_STATES, note="label 'relu'; slope 1 where a > 0 however small a is, 0 at +0.0, "
                                             "-0.0 and below", compared=NODE_COMPARED),
    # ---------------------------------------------------------------- 1b
    Contract("cross_entropy", "1b",
             (Arg("logits", TENSOR, shapes=("(n, K)", "(1, K)", "square (n = K)", "K = 2"), values=REAL),
              Arg("y", ("ndarray",), dtypes=("int64", "int32", "int16", "uint8", "uint64"), shapes=("(n,)",))),
             ("a Tensor of shape () whose only parent is logits",),
             states=("logits.grad holding an earlier gradient", "out.grad other than 1",
                     "the rule run twice (a second backward adds the same gradient again)"),
             note="the mean softmax cross-entropy, stable for any finite logits (a margin of 10 to 20 between the "
                  "label's logit and the others, and far tails where a probability is 1e-17 or less)",
             compared=("the loss relative to 1e-9, within the rounding of its row shift",
                       "each entry of logits.grad relative to 1e-9 (a probability of 1e-17 is not 0)",
                       "_prev == (logits,)", "logits.data exactly as sent")),
    # ---------------------------------------------------------------- 2
    Contract("backward", "2", (Arg("root", TENSOR, shapes=("0-d", "2-d", "a leaf itself")),), ("None",),
             states=("leaves' .grad holding an earlier gradient (added to)",
                     "the root holding a gradient already (seeded with ones, not added to)",
                     "interior nodes holding a gradient already (nothing is reset: it flows on)",
                     "a second backward on the same graph", "a node reached by several paths",
                     "paths of unequal length, the long one or the short one first",
                     "a chain of 200 operations", "1,024 paths through 11 nodes"),
             note="every node's _backward exactly once, parents after every user, root seeded with ones",
             compared=("which rules ran, each exactly once (by node)", "every node's .grad afterwards",
                       "the leaves' .data exactly as sent")),
    Contract("numerical_grad", "2",
             (Arg("f", ("function of no argument returning a float",), dtypes=()),
              Arg("arrays", ("list of ndarray",), shapes=("C-ordered", "transposed view", "Fortran-ordered",
                                                          "a slice of a wider array"), values=REAL),
              Arg("h", ("float",), dtypes=("float64",), values=STEP, default=1e-6)),
             ("list of ndarray, one per array, of its shape",),
             in_place=("the arrays, put back exactly",),
             note="central differences, changing the arrays themselves in place",
             compared=("within 1e-7 of PyTorch's gradient at the default h",
                       "within 1e-8 of the central difference computed here at a given h",
                       "each array afterwards exactly as sent")),
    # ---------------------------------------------------------------- 3
    Contract("zero_grad", "3", (Arg("params", ("list of Tensor",), shapes=("0-d", "1-d", "2-d"), values=ANY_GRAD),),
             ("None",), states=(".grad holding finite numbers", ".grad holding inf, -inf and NaN"),
             in_place=("every parameter's .grad",),
             note="the .grad of every Tensor becomes zeros of its shape; .data untouched",
             compared=("every .grad exactly zero, of the parameter's shape", "every .data exactly as sent")),
    Contract("sgd_step", "3", (Arg("params", ("list of Tensor",), shapes=("0-d", "1-d", "2-d"), values=REAL),
                               Arg("lr", ("float", "int"), values=STEP)),
             ("None",), in_place=("every parameter's .data, the very array it held",),
             note="data <- data - lr * grad in place: whoever holds the array sees the step",
             compared=("every .data and the array it held before, relative to 1e-9", ".grad exactly as sent")),
    Contract("train_epoch", "3",
             (Arg("forward", ("function from an array to a Tensor of logits",), dtypes=()),
              Arg("params", ("list of Tensor",), shapes=("2-d", "1-d")),
              Arg("X", ("ndarray",), shapes=("(n, d)",)),
              Arg("y", ("ndarray",), dtypes=("int64",), shapes=("(n,)",)),
              Arg("order", ("ndarray",), dtypes=("int64",), shapes=("a permutation of n",)),
              Arg("batch_size", ("int",), dtypes=(), shapes=("dividing n", "leaving a smaller last batch",
                                                            "larger than n")),
              Arg("lr", ("float",), values=STEP)),
             ("list of float",), states=("parameters holding stale gradients from an earlier pass",),
             in_place=("the parameters' .data and .grad",),
             note="per batch: loss, zero_grad, backward, sgd_step; each loss taken before its update",
             compared=("every batch loss within 1e-9, in order", "every parameter afterwards within 1e-9")),
    # ---------------------------------------------------------------- 4
    Contract("init_mlp", "4", (Arg("sizes", ("list of int",), dtypes=(), shapes=("2 sizes", "3 sizes", "4 sizes",
                                                                                  "a width of 1")),
                               Arg("rng", ("numpy.random.Generator",), dtypes=())),
             ("list of Tensor [W1, b1, W2, b2, ...]",),
             note="W of shape (fan_in, fan_out) drawn layer by layer from N(0, 2 / fan_in); b zeros of shape "
                  "(fan_out,); every .grad zero",
             compared=("the list's length and order", "each entry a Tensor", "data within 1e-12, exact shapes",
                       "biases exactly zero", ".grad exactly zero")),
    Contract("mlp_forward", "4", (Arg("params", ("list of Tensor",), shapes=("2, 4 or 6 parameters",)),
                                  Arg("X", ("ndarray", "Tensor"), shapes=("(n, d)",), values=REAL)),
             ("Tensor",), note="relu after every layer but the last; a Tensor X stays in the graph",
             compared=("the logits within 1e-9 of the largest", "every parameter's gradient through cross_entropy",
                       "X.grad when X is a Tensor")),
    Contract("gradient_check", "4",
             (Arg("model", ("an MLP-like object with params, __call__ and zero_grad",), dtypes=()),
              Arg("X", ("ndarray",), shapes=("(n, 2)",)),
              Arg("y", ("ndarray",), dtypes=("int64",), shapes=("(n,)",)),
              Arg("h", ("float",), dtypes=("float64",), default=1e-6)),
             ("float",), states=("parameters holding stale gradients",), in_place=("the parameters' .grad",),
             note="the worst |numeric - engine| / max(1, |engine|) over every entry of every parameter; "
                  "h is a difference step (graded at 1e-6 and 1e-4: below, rounding swamps any engine)",
             compared=("within 1e-6 of the worst error", "below 1e-7 for a correct network",
                       "the parameters' .data exactly as sent")),
    # ---------------------------------------------------------------- 5
    Contract("torch_witness", "5", (Arg("model", ("an MLP-like object",), dtypes=()),
                                    Arg("X", ("ndarray",), shapes=("(n, 2)",)),
                                    Arg("y", ("ndarray",), dtypes=("int64",), shapes=("(n,)",))),
             ("tuple of 2 float", "list of 2 float"), states=("parameters holding stale gradients",),
             compared=("each gap within 1e-6 relative, or below 1e-12 for a correct network",
                       "the parameters' .data exactly as sent")),
    # ---------------------------------------------------------------- A
    Contract("adam_step", "A",
             (Arg("params", ("list of Tensor",), shapes=("0-d", "1-d", "2-d")),
              Arg("state", ("dict",), dtypes=()),
              Arg("lr", ("float",), values=STEP),
              Arg("betas", ("tuple of 2 float",), dtypes=(), default=(0.9, 0.999)),
              Arg("eps", ("float",), dtypes=(), default=1e-8)),
             ("None",), states=("a fresh state dict", "a state dict that took earlier steps",
                                "two state dicts taking turns over the same Tensors"),
             in_place=("every parameter's .data", "state"),
             note="torch.optim.Adam's update; moments and step count kept in `state`, never on the Tensors",
             compared=("every parameter after every step within 1e-9", ".grad exactly as sent")),
    # ---------------------------------------------------------------- B
    Contract("no_grad", "B", (), ("a context manager",),
             states=("nested blocks", "an exception inside", "a KeyboardInterrupt inside",
                     "a generator suspended inside, then closed"),
             note="grad_enabled False inside, restored to its value on entry however the block ends",
             compared=("_prev of results inside and after, exactly",)),
    # ---------------------------------------------------------------- C
    Contract("dual_multiply", "C", (Arg("a", ("Dual",), values=REAL), Arg("b", ("Dual",), values=REAL)), ("Dual",),
             note="the product rule; constants are Duals of tangent 0",
             compared=("value and tangent within 1e-9, relative where magnitudes vary",)),
    Contract("dual_matmul", "C", (Arg("a", ("Dual",), shapes=("2-d", "1-d")), Arg("b", ("Dual",), shapes=("2-d",))),
             ("Dual",), note="a constant matrix on either side", compared=("value and tangent within 1e-9",)),
    Contract("dual_exp", "C", (Arg("a", ("Dual",), values=EXP_DOMAIN),), ("Dual",),
             compared=("value and tangent relative to 1e-9",)),
    Contract("dual_log", "C", (Arg("a", ("Dual",), values=LOG_DOMAIN),), ("Dual",),
             compared=("value and tangent relative to 1e-9",)),
    Contract("jvp", "C", (Arg("f", ("function of a Dual",), dtypes=()),
                          Arg("x", ("ndarray",), shapes=("1-d", "2-d", "3-d"), values=REAL),
                          Arg("u", ("ndarray",), shapes=("x's shape",), values=REAL)),
             ("tuple of 2 ndarray",),
             note="f may return a Dual, a plain array or a plain number (tangent zero of its shape)",
             compared=("value and tangent within 1e-9 (1e-13 of the largest entry on the wide inputs)",)),
    Contract("jacobian_fwd", "C", (Arg("f", ("function of a Dual",), dtypes=()),
                                   Arg("x", ("ndarray",), shapes=("1-d", "2-d", "3-d"), values=REAL)),
             ("ndarray of shape f(x).shape + x.shape",),
             compared=("within 1e-9, exact shape",)),
    # ---------------------------------------------------------------- D
    Contract("vjp_tensor", "D", (Arg("node", TENSOR, shapes=("a node of +, *, @, T, sum, exp, log, relu",)),
                                 Arg("g", TENSOR, shapes=("the node's shape",), values=REAL)),
             ("list of Tensor, one per parent",),
             note="contributions built from Tensor operations (differentiable again); the node's inputs range over "
                  "their primitives' domains (log near 1e-12, exp up to 709.78, relu at its kink)",
             compared=("each contribution within 1e-9", "second-order gradients through them within 1e-9")),
    Contract("grad", "D", (Arg("y", ("a 0-d Tensor",), dtypes=()), Arg("xs", ("list of Tensor",), dtypes=()),
                           Arg("create_graph", ("bool",), dtypes=(), default=False)),
             ("list of Tensor",), states=("a Tensor of xs that y does not use",),
             note=".grad never touched; leaves without parents unless create_graph",
             compared=("each gradient within 1e-9", "_prev empty when create_graph is False")),
    Contract("hvp", "D", (Arg("f", ("a smooth scalar function of a Tensor",), dtypes=()),
                          Arg("x", ("ndarray",), shapes=("(1, d)", "(2, d)")),
                          Arg("v", ("ndarray",), shapes=("x's shape",), values=REAL)),
             ("ndarray of x's shape",), compared=("within 1e-13 of the largest entry",)),
    Contract("newton_step", "D", (Arg("f", ("a smooth scalar function of a Tensor",), dtypes=()),
                                  Arg("x", ("ndarray",), shapes=("(1, d)", "(2, d)"))),
             ("ndarray of x's shape",), compared=("within the solve's own rounding",)),
    # ---------------------------------------------------------------- E
    Contract("conv2d", "E", (Arg("x", TENSOR, shapes=("(N, C, H, W)",), values=REAL),
                             Arg("w", TENSOR, shapes=("(F, C, kh, kw)",)),
                             Arg("b", TENSOR, shapes=("(F,)",)),
                             Arg("stride", ("int",), dtypes=(), default=1),
                             Arg("padding", ("int",), dtypes=(), default=0)),
             NODE, states=("every parent's .grad holding an earlier gradient", "the rule run twice"),
             note="F.conv2d's output; _prev (x, w, b)",
             compared=("out.data and every .grad within 1e-9 of the largest entry where magnitudes vary",
                       "_prev == (x, w, b) in order")),
    # ---------------------------------------------------------------- F
    Contract("to_dot", "F", (Arg("root", TENSOR, shapes=("a leaf", "a chain", "shared nodes", "three parents")),),
             ("str",), note="'digraph tape {', one node line per Tensor (n<id>, label '<op or leaf> <shape>'), one "
                            "edge per entry of every _prev, with multiplicity",
             compared=("node names and labels exactly", "edges as a sorted list, with multiplicity")),
]

