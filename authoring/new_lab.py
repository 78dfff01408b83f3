"""Start a new lab from a small complete example, ready to edit.

    python -m authoring.new_lab NAME        (or: make new-lab NAME=...)

Writes source/NAME/NAME.py (the instructor notebook: one activity, `square_vjp`) and
autograder/labs/NAME/ (cases.py, probes.py, mistakes.py, variants.py, strangers.py, contracts.py), checks them as the grader will,
executes the notebook into its paired .ipynb, rebuilds release/ and builds the catalogue's
fingerprints (autograder/labs/NAME/fingerprints.json). If any step fails, what
was written is removed again, so the command can simply be run again.
"""
import importlib
import importlib.util
import keyword
import re
import shutil
import sys

from course.cells import LabError
from course.labs import ROOT, Lab, find_labs

NAME = re.compile(r"^[a-z][a-z0-9_]*$")

NOTEBOOK = '''\
# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   course:
#     lab: __LAB__
#     title: __LAB__ · The VJP of an elementwise square
#     data: []
# ---

# %% [markdown]
# # __LAB__ · The VJP of an elementwise square
#
# A lab with a single activity: the vector-Jacobian product (VJP) of $y = x^2$, taken entry by
# entry, checked against central differences.
#
# | Activity | You write | Points |
# |---|---|---|
# | 1 | `square_vjp` | 2 |

# %% [markdown] tags=["reference"]
# **Instructor note.** `make new-lab` wrote this lab as an example to copy. To make it yours,
# replace, keeping the `# %%` lines' tags and metadata in step:
#
# 1. the title, here and in the header (`course: title:`), and the text; list the data files
#    the notebook reads under `course: data:` and put them in `data/`;
# 2. per activity: its heading (id and points) and, unless `USES_PYTORCH` in `cases.py` lists
#    it, the "Graded with NumPy only" line under it; the stub (each function raises
#    `NotImplementedError("Complete Activity <id>: <function>")`), the reference cell right
#    after the stub, and a check cell whose `points=` match the heading;
# 3. in `autograder/labs/__LAB__/`: the hidden cases of each activity (`cases.py`), the probes
#    they call (`probes.py`), and three or more wrong answers per activity (`mistakes.py`).
#
# Then run `make instructor LAB=__LAB__`, `make release` and `make test`.

# %% [markdown]
# ## Setup
#
# All arithmetic is float64 NumPy. `close(actual, expected, quantity)` compares the shapes,
# then the values, and its error names `quantity`.

# %%
import numpy as np


def close(actual, expected, quantity, *, atol=1e-6, rtol=1e-6):
    """Raise an AssertionError naming `quantity` unless shapes and values agree."""
    got, want = np.asarray(actual), np.asarray(expected, dtype=np.float64)
    if got.dtype.kind not in "biuf":
        raise AssertionError(f"{quantity}: expected an array of numbers, got {type(actual).__name__}")
    if got.shape != want.shape:
        raise AssertionError(f"{quantity}: shape {got.shape}, expected {want.shape}")
    if not np.allclose(got, want, atol=atol, rtol=rtol):
        worst = np.unravel_index(np.argmax(np.abs(got - want)), want.shape)
        raise AssertionError(f"{quantity}: at index {worst} got {got[worst]:.6g}, expected {want[worst]:.6g}")


# %% [markdown]
# ### Activity 1 · The VJP of an elementwise square (2 points)
#
# > Graded with NumPy only: PyTorch is not available to these functions when graded.
#
# $y = x^2$ squares each entry of $x$, an array of any shape: a scalar, a vector, a matrix.
# Its VJP receives $v = \\bar y$, an array shaped like $y$, and returns $\\bar x$, shaped like
# $x$. Write `square_vjp(x, v)`. Return a new array; leave `x` and `v` as they are.

# %% tags=["stub"] activity="1"
def square_vjp(x, v):
    raise NotImplementedError("Complete Activity 1: square_vjp")


# %% tags=["reference"] activity="1"
# The solution: define every function the stub above defines, with the same names.
def square_vjp(x, v):
    return 2 * x * v


# %% tags=["check"] activity="1" points=2
def check_square_vjp():
    """square_vjp against central differences, for a scalar, a vector and a matrix."""
    rng = np.random.default_rng(5)
    h = 1e-6
    for shape in [(), (4,), (2, 3)]:
        x, v = rng.normal(size=shape), rng.normal(size=shape)
        x_sent, v_sent = x.copy(), v.copy()
        x_bar = square_vjp(x, v)
        case = f"square_vjp(x, v) with x of shape {shape}"
        if not (np.array_equal(x, x_sent) and np.array_equal(v, v_sent)):
            raise AssertionError(f"{case}: x or v was modified in place; return a new array")
        # y = x ** 2 acts entry by entry, so its Jacobian is diagonal: one central difference,
        # all entries nudged at once, gives every dy/dx, and x_bar is v times it.
        slope = ((x_sent + h) ** 2 - (x_sent - h) ** 2) / (2 * h)
        close(x_bar, v_sent * slope, f"{case}: x_bar")


check_square_vjp()
print("Activity 1 passed: square_vjp agrees with central differences for a scalar, a vector and a matrix.")
'''

CASES = '''\
"""How __LAB__ is graded: the hidden checks, with PyTorch's answers, computed here.

The grader sends each Case's probe (probes.py) and arguments into the sandbox, and judges the
reply here, in its own process. Write one generator per activity and list them in cases(seed).
Each submission has its own seed (autograder/grading/secret.py): draw every random value from the
generator cases(seed) builds, so that the inputs one submission sees say nothing about
another's; keep fixed only the values that make an input class (a zero, a tie).
"""
import itertools

import numpy as np
import torch

from autograder.labs.vocabulary import Case, array_problem, first_problem, unchanged_problem

from .contracts import CONTRACTS, drawn

# Activities whose functions call those of earlier ones, e.g. {"2": ("1",)}: when 2 and 1
# both fail, 2 is graded again with the reference answer of 1. Nothing here calls anything.
DEPENDS = {}

# Activities whose point is PyTorch itself, graded with PyTorch available. Every other one is
# graded in a worker without PyTorch, and its heading says so (see autograder/labs/policy.py).
USES_PYTORCH = ()


# ---------------------------------------------------------------- 1: square_vjp
# The input classes, every shape with every kind of x (itertools.product):
#   shape: a scalar (), a vector (5,), a matrix (3, 4)
#   x:     "normal", random entries of both signs; "whole", whole numbers from -3 to 3
# v is always random (never all ones), so an answer that forgets v fails every case.
SHAPES = [(), (5,), (3, 4)]
KINDS = ["normal", "whole"]


def square_case(shape, kind, rng):
    drawn = rng.normal(size=shape) if kind == "normal" else rng.integers(-3, 4, size=shape)
    x, v = np.asarray(drawn, dtype=np.float64), rng.standard_normal(shape)
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    (x_bar,) = torch.autograd.grad(tx ** 2, tx, torch.tensor(v, dtype=torch.float64))
    expected = x_bar.numpy()
    title = f"square_vjp(x, v) with x of shape {shape} ({kind} entries)"

    def judge(answer):
        return first_problem(
            array_problem(answer["result"], expected, f"{title}: x_bar"),
            *(unchanged_problem(after, sent, f"{title}: argument {name}")
              for name, after, sent in zip("xv", answer["args_after"], (x, v))))

    return Case("1", title, "call", {"function": "square_vjp", "args": [x, v]}, judge)


def boundary_case(argument, rng):
    """square_vjp on a vector holding every boundary contracts.py declares for `argument`, each in
    an entry of its own, the other argument drawn as usual; the case names them (Case.drawn)."""
    contract = next(c for c in CONTRACTS if c.function == "square_vjp")
    found = contract.arg(argument).values.boundaries()
    sent = {"x": rng.standard_normal(len(found)), "v": rng.standard_normal(len(found))}
    sent[argument] = np.array(list(found.values()))
    tx = torch.tensor(sent["x"], dtype=torch.float64, requires_grad=True)
    (x_bar,) = torch.autograd.grad(tx ** 2, tx, torch.tensor(sent["v"], dtype=torch.float64))
    expected = x_bar.numpy()
    title = f"square_vjp(x, v) with {argument} holding 0, tiny, subnormal and large entries"

    def judge(answer):
        # relative to each entry's size (1e-12 returned as 0 is wrong), but for subnormals, where rounding is coarse
        return first_problem(
            array_problem(answer["result"], expected, f"{title}: x_bar", atol=1e-300),
            *(unchanged_problem(after, sent[name], f"{title}: argument {name}")
              for name, after in zip("xv", answer["args_after"])))

    return Case("1", title, "call", {"function": "square_vjp", "args": [sent["x"], sent["v"]]}, judge,
                drawn=tuple(drawn("square_vjp", argument, name) for name in found))


def cases_1(rng):
    drawn_cases = [square_case(shape, kind, rng) for shape, kind in itertools.product(SHAPES, KINDS)]
    return drawn_cases + [boundary_case(argument, rng) for argument in ("x", "v")]


def cases(seed):
    """Every hidden check, by activity, with the values drawn from the submission's `seed`."""
    rng = np.random.default_rng([seed, 1])
    return {"1": cases_1(rng)}
'''

PROBES = '''\
"""What the grader asks a __LAB__ submission, run inside the sandbox in the submission's namespace.

A probe calls the student's code on the arguments the grader sent and returns what came back
as plain data (numbers, strings, arrays, lists, dicts). It knows no expected value and judges
nothing: that happens in cases.py, in the grader's own process.
"""


def call(function, args):
    """Call a student function; return its result and the arguments afterwards (in-place edits)."""
    if function not in globals():
        raise NameError(f"name '{function}' is not defined")
    result = globals()[function](*args)
    return {"result": result, "args_after": list(args)}
'''

MISTAKES = '''\
"""Wrong answers students plausibly write for __LAB__: the grader must catch each one.

Each mistake replaces functions of its activity's reference answer; `hint` is a word the
grader's message must contain; `advice` is what a student whose answer behaves like it reads:
what the answer does wrong and where to look, never the line that fixes it. Check with
`python -m autograder mistakes --lab __LAB__`; after any change to the cases or the mistakes,
`python -m autograder fingerprints --lab __LAB__` rebuilds what names them.
"""
from autograder.labs.vocabulary import Mistake

MISTAKES = [
    Mistake("1", "forgets the incoming adjoint v", "x_bar", """
def square_vjp(x, v):
    return 2 * x
""", advice="Your VJP returns the local derivative alone: the adjoint v that arrives from the output "
            "must scale it."),
    Mistake("1", "negates the derivative", "x_bar", """
def square_vjp(x, v):
    return -2 * x * v
""", advice="Your VJP has the wrong sign everywhere: check the sign of the derivative of x squared."),
    Mistake("1", "right values, but written into x in place", "in place", """
def square_vjp(x, v):
    x *= 2 * v
    return x
""", advice="Your VJP writes its result into x, the caller's array: compute into a new array."),
]
'''


VARIANTS = '''\
"""The catalogue's slips written another way: they measure how well the grader names a mistake
it was not built from (`python -m autograder fingerprints --lab __LAB__ --measure 99`).
"""
from autograder.labs.vocabulary import Variant

VARIANTS = [
    Variant("forgets the incoming adjoint v", "doubles x and stops there", """
def square_vjp(x, v):
    return x + x
"""),
    Variant("negates the derivative", "subtracts the adjoint's share from zero", """
def square_vjp(x, v):
    x_bar = np.zeros_like(x)
    x_bar -= 2 * x * v
    return x_bar
"""),
    Variant("right values, but written into x in place", "multiplies into x with out=", """
def square_vjp(x, v):
    return np.multiply(2 * v, x, out=x)
"""),
]
'''


CONTRACTS = '''\
"""What __LAB__'s notebook promises about each function an activity asks for, declared once: the
domain its hidden inputs are drawn from (autograder/labs/contracts.py). cases.py plants every boundary
declared here in some case and names it (Case.drawn); tests/test_contracts.py checks both, and
that each function of the notebook has one contract that follows its signature."""
from autograder.labs.contracts import Arg, Contract, Values, drawn  # noqa: F401 (cases.py names its boundaries with drawn)

ANY_SHAPE = ("0-d", "1-d", "2-d")

CONTRACTS = [
    Contract("square_vjp", "1", (Arg("x", shapes=ANY_SHAPE, values=Values()), Arg("v", shapes=ANY_SHAPE, values=Values())),
             ("ndarray",), in_place=(), note="x_bar = 2 x v, of x's shape; x and v come back as they were sent",
             compared=("relative error 1e-9 per entry", "shapes exactly", "x and v with array_equal")),
]
'''

STRANGERS = '''\
"""Slips the catalogue lacks that fail the checks its mistakes fail: the right diagnosis of each is
none (`python -m autograder fingerprints --lab __LAB__ --measure 99`).
"""
from autograder.labs.vocabulary import Variant

STRANGERS = [Variant("", description, f"def square_vjp(x, v):\\n    return {body}\\n") for description, body in [
    ("forgets the factor 2", "x * v"),
    ("scales by 4 instead of 2", "4 * x * v"),
    ("squares the adjoint", "2 * x * v ** 2"),
    ("takes |x|", "2 * np.abs(x) * v"),
    ("returns the forward value times v", "x ** 2 * v"),
    ("forgets x", "2 * v"),
    ("passes nothing where x is negative", "np.where(x > 0, 2 * x * v, 0.0)"),
    ("forgets v and negates", "-2 * x"),
]]
'''


class NameRefused(ValueError):
    pass


def check_name(name, root=ROOT):
    """Refuse a name that cannot be a new lab, saying why."""
    if not NAME.match(name) or keyword.iskeyword(name):
        raise NameRefused(f"{name!r} is not a lab name: use lower-case letters, digits and _, "
                          "starting with a letter (a Python identifier, e.g. pt04_jacobians)")
    # autograder/labs/ also holds the interface the labs are written in (vocabulary.py, policy.py...)
    taken = [f"{folder}/{name}{suffix}" for folder in ("source", "autograder/labs", "release") for suffix in ("", ".py")
             if (root / folder / f"{name}{suffix}").exists()]
    if taken:
        raise NameRefused(f"{name!r} is taken: {', '.join(taken)} already exists")
    if importlib.util.find_spec(name) is not None:  # the notebook runs in source/<name>/, beside <name>.py
        raise NameRefused(f"{name!r} is already importable here as a Python module or package, and "
                          f"source/{name}/{name}.py would hide it from the notebook: choose another")


def files_for(name, root=ROOT):
    """Where each template goes, with the lab's name filled in."""
    grading = root / "autograder" / "labs" / name
    texts = {root / "source" / name / f"{name}.py": NOTEBOOK, grading / "cases.py": CASES,
             grading / "probes.py": PROBES, grading / "mistakes.py": MISTAKES, grading / "variants.py": VARIANTS,
             grading / "strangers.py": STRANGERS, grading / "contracts.py": CONTRACTS}
    return {path: text.replace("__LAB__", name) for path, text in texts.items()}


def create(name):
    """Write, check, execute and release the new lab; on any failure remove what was written."""
    import build_student  # the repository root is on sys.path under `python -m`
    from autograder.labs import problems_of
    from authoring.instructor import refresh

    check_name(name)
    find_labs()  # the existing labs must load, or the release below would fail for them
    folders = [ROOT / "source" / name, ROOT / "autograder" / "labs" / name, ROOT / "release" / name]
    try:
        for path, text in files_for(name).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
        importlib.invalidate_caches()
        lab = Lab(ROOT / "source" / name / f"{name}.py")
        problems, _ = problems_of(lab)
        if problems:
            raise LabError(f"the grading files of {name} fail the interface check: " + "; ".join(problems))
        refresh(lab)
        print(f"executed {lab.path.with_suffix('.ipynb').relative_to(ROOT)}")
        if build_student.main([]) != 0:
            raise LabError("build_student.py refused the release (its message is above)")
        build_fingerprints(name)
        print(f"wrote autograder/labs/{name}/fingerprints.json")
    except BaseException:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
        print(f"authoring.new_lab: removed what was written for {name}", file=sys.stderr)
        raise


def build_fingerprints(name):
    from autograder.measuring.fingerprints import build
    from autograder.grading.grade import Options

    for activity, names in build(name, Options(), jobs=2):
        print(f"activity {activity}: the hidden cases cannot tell these mistakes apart: {'; '.join(names)}")


def main(argv):
    if len(argv) != 1:
        print("usage: python -m authoring.new_lab NAME    (or: make new-lab NAME=...)", file=sys.stderr)
        return 2
    name = argv[0]
    try:
        create(name)
    except (NameRefused, LabError) as error:
        print(f"authoring.new_lab: {error}", file=sys.stderr)
        return 2
    print(f"\nNext steps for {name}:\n"
          f"  1. edit source/{name}/{name}.py and autograder/labs/{name}/ (cases, probes, mistakes)\n"
          f"  2. make instructor LAB={name}   (executes the notebook into its .ipynb)\n"
          f"  3. make release   (rebuilds release/)\n"
          f"  4. python -m autograder fingerprints --lab {name}   (after any change to cases or mistakes)\n"
          f"  5. make test   (python -m autograder mistakes --lab {name} shows what the grader catches)\n"
          f"Then commit source/{name}/, autograder/labs/{name}/ and release/{name}/.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
