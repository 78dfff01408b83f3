"""What the attacks share: the Attack record, notebook surgery, and the choices an attack makes
from a lab (which activity to leave unsolved, which function to subvert, a wrong answer)."""
import ast
import copy
from dataclasses import dataclass

import nbformat

SKIPPED = "skipped"  # the status of an attack the roster must leave out, with its reason: no record at all


@dataclass
class Attack:
    name: str
    description: str
    status: str = "graded"  # or SKIPPED
    zero: frozenset = frozenset()  # activities that must score 0; all others full marks
    build: object = None  # (lab, solved, blank, context) -> notebook, bytes for a raw file, or
    # a function that makes the attack's entry at the path it is given (files.py)
    host_check: object = None  # (context) -> None or a message about a trace left on the machine
    result_check: object = None  # (result) -> None or what the result gives away that it must not
    # The attack works on the worker or the machine (files, signals, limits, pipes), not on what a
    # check believes: its result could depend on how workers start and how busy the machine is.
    on_the_process: bool = False

    def expected(self):
        if self.status == SKIPPED:
            return "skipped, no record"
        if self.status != "graded":
            return self.status
        return "0 for " + ", ".join(sorted(self.zero)) if self.zero else "full marks"


# ----------------------------------------------------------------------- choices from a lab
def nth(lab, index):
    """The lab's activity at `index` in notebook order, or its last one when it has fewer:
    attacks spread over the first activities, and all land on the one of a one-activity lab."""
    ids = list(lab.activities)
    return ids[min(index, len(ids) - 1)]


def last(lab):
    return list(lab.activities)[-1]


def function(lab, activity, index):
    """The activity's function at `index` in the order its stub defines them, or its last."""
    names = lab.activities[activity].functions
    return names[min(index, len(names) - 1)]


def reference(lab, activity):
    return lab.activities[activity].reference.source


def first_mistake(lab, activity):
    from autograder.labs import catalogued_mistakes  # unchecked: some attacks ask while the suite is collected

    return next(m for m in catalogued_mistakes(lab.name) if m.activity == activity)


def wrong_answer(lab, activity):
    """The activity's reference with the lab's first catalogued mistake for it put in: an answer
    the grader is known to catch (tests/test_mistakes.py), so an attack built on it can only earn
    the points through its trick."""
    from autograder.measuring.catalogue import patched

    return patched(reference(lab, activity), first_mistake(lab, activity).code)


def check_helpers(lab):
    """Functions of the lab's given code that its check cells call and that judge: they raise
    AssertionError or assert. Redefining anything else could break the honest activities."""
    called = set()
    for activity in lab.activities.values():
        for check in activity.checks:
            called |= {node.id for node in ast.walk(ast.parse(check.source)) if isinstance(node, ast.Name)}
    found = []
    for cell in lab.cells:
        if cell.role != "given" or cell.cell_type != "code":
            continue
        for node in ast.parse(cell.source).body:
            if isinstance(node, ast.FunctionDef) and node.name in called and any(
                    isinstance(inner, ast.Assert) or isinstance(inner, ast.Raise) and "AssertionError"
                    in ast.unparse(inner) for inner in ast.walk(node)):
                found.append(node.name)
    return found


def success_line(lab, activity):
    """The line the activity's check prints when it passes, as a print statement."""
    for check in lab.activities[activity].checks:
        for line in check.source.splitlines():
            if line.startswith("print(") and f"Activity {activity} passed" in line:
                return line
    return f"print('Activity {activity} passed')"


# ----------------------------------------------------------------------- notebook surgery
def cell(notebook, cell_id):
    return next(c for c in notebook.cells if c.id == cell_id)


def stubbed(solved, blank, *activities):
    notebook = copy.deepcopy(solved)
    for activity in activities:
        cell(notebook, f"{activity}-answer").source = cell(blank, f"{activity}-answer").source
    return notebook


def add_cell(notebook, source, after):
    position = next(i for i, c in enumerate(notebook.cells) if c.id == after) + 1
    notebook.cells.insert(position, nbformat.v4.new_code_cell(source, id=f"added-{position}"))
    return notebook


def answer(notebook, activity, source):
    cell(notebook, f"{activity}-answer").source = source
    return notebook


def indent(source):
    return "\n".join("    " + line if line.strip() else line for line in source.splitlines())


def wrapped(base, names, prelude, body):
    """`base` (an answer cell's code), then `prelude`, then every function in `names` replaced
    by one that runs `body`, where `args`, `kwargs` are its arguments and `plain` the function
    as `base` defined it."""
    source = base.rstrip() + "\n\n\n" + prelude.strip() + "\n"
    for name in names:
        source += (f"\n\n_plain_{name} = {name}\n\n\ndef {name}(*args, **kwargs):\n"
                   f"    plain = _plain_{name}\n{indent(body.strip())}\n")
    return source
