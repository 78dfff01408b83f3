"""Which answers name PyTorch, and what students are told about activities graded without it.

The grader (autograder/labs/policy.py) decides which activities those are and keeps PyTorch out of
their workers; the student's check only reads the notebook, so it warns before submitting."""
import ast
import re

# What the notebook says under the heading of every activity graded without PyTorch.
NUMPY_ONLY = "Graded with NumPy only: PyTorch is not available to these functions when graded."
TORCH_MODULES = re.compile(r"^(torch|functorch|torchgen)(\.|$)")


def pytorch_names(given_code, parse=ast.parse):
    """The names the lab's given code (its locked code cells' text) binds to PyTorch: its imports
    of torch modules and the given functions and classes that use them (a given helper that calls
    PyTorch). The grader passes its own `parse`, which threads may call at once."""
    names, definitions = set(), {}
    for source in given_code:
        try:
            tree = parse(source)
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


def pytorch_mentions(names, source):
    """The first line of an answer cell that names PyTorch or one of `names` (pytorch_names), as
    (line number, text), or None: the static first message, never the guard."""
    words = set(names) | {"torch"}
    for number, line in enumerate(source.splitlines(), start=1):
        code = line.split("#", 1)[0]
        if any(re.search(rf"\b{re.escape(word)}\b", code) for word in words):
            return number, line.strip()
    return None
