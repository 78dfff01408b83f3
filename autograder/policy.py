"""Which activities are graded without PyTorch, and what students are told about it.

A lab's ``cases.py`` declares ``USES_PYTORCH``: the activities whose point is PyTorch itself (a
custom ``torch.autograd.Function``, a witness that compares with PyTorch). Every other activity
is graded in a worker that never imported PyTorch and cannot import it, so no route (an import,
one built from strings, a reference saved earlier, ``sys.modules``, a given helper that calls
PyTorch) lets an answer hand its work to PyTorch. The activity's text in the notebook says so.
"""
import ast
import re

from autograder.sandbox import WITHOUT_PYTORCH
from course.syntax import parse

# What the notebook says under the heading of every activity graded without PyTorch.
NUMPY_ONLY = "Graded with NumPy only: PyTorch is not available to these functions when graded."
NEEDED_PYTORCH = ("This activity is graded with NumPy only, and your code needed PyTorch, which is not "
                  "available to this activity's functions when graded: write them with NumPy.")
TORCH_MODULES = re.compile(r"^(torch|functorch|torchgen)(\.|$)")


def hidden_for(grading, activity):
    """The modules a worker grading `activity` must not be able to import."""
    return () if activity in grading.uses_pytorch else WITHOUT_PYTORCH


def pytorch_names(lab):
    """The names the lab's given code binds to PyTorch: its imports of torch modules and the
    given functions and classes that use them (a given helper that calls PyTorch)."""
    names, definitions = set(), {}
    for cell in lab.cells:
        if cell.role != "given" or cell.cell_type != "code":
            continue
        try:
            tree = parse(cell.source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names if TORCH_MODULES.match(a.name)}
            elif isinstance(node, ast.ImportFrom) and node.module and TORCH_MODULES.match(node.module):
                names |= {a.asname or a.name for a in node.names}
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                definitions[node.name] = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    grown = True
    while grown:  # a helper that calls a helper that calls PyTorch
        found = {name for name, used in definitions.items() if used & names} - names
        names |= found
        grown = bool(found)
    return names


def pytorch_mentions(lab, source):
    """The first line of an answer cell that names PyTorch or a given helper built on it, as
    (line number, text), or None: the static first message, never the guard."""
    words = pytorch_names(lab) | {"torch"}
    for number, line in enumerate(source.splitlines(), start=1):
        code = line.split("#", 1)[0]
        if any(re.search(rf"\b{re.escape(word)}\b", code) for word in words):
            return number, line.strip()
    return None


def policy_problems(lab, uses_pytorch):
    """What is inconsistent between a lab's USES_PYTORCH and its notebook's activity texts."""
    problems = [f"USES_PYTORCH names activity {a}, which the notebook does not have"
                for a in uses_pytorch if a not in lab.activities]
    starts = [activity.stub.index for activity in lab.activities.values()]
    for (activity_id, activity), previous in zip(lab.activities.items(), [-1, *starts]):
        text = " ".join(c.source for c in lab.cells[previous + 1:activity.stub.index] if c.cell_type == "markdown")
        says = NUMPY_ONLY in re.sub(r"\s+", " ", re.sub(r"(?m)^>\s?", "", text))
        if activity_id in uses_pytorch and says:
            problems.append(f"activity {activity_id} uses PyTorch (USES_PYTORCH), but its text says "
                            f"'{NUMPY_ONLY}'")
        elif activity_id not in uses_pytorch and not says:
            problems.append(f"activity {activity_id} is graded without PyTorch, so its text must say "
                            f"'{NUMPY_ONLY}'")
    return problems
