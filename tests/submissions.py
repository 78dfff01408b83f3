"""Submissions made for the tests: the solved notebook with one thing changed, and classes of them."""
import copy

import nbformat

from autograder.grading.roster import Submission
from autograder.labs import grading_for
from autograder.measuring.catalogue import patched
from tests.helpers import LABS, ROOT, lab_notebook, read


def answer_cell(notebook, activity):
    return next(cell for cell in notebook.cells if cell.id == f"{activity}-answer")


def with_answer(notebook, activity, source):
    """A copy of `notebook` whose answer cell for `activity` holds `source`."""
    changed = copy.deepcopy(notebook)
    answer_cell(changed, activity).source = source
    return changed


def replaced_function(activity, body):
    """The activity's reference with its first function's body replaced by `body`."""
    signature = f"def {activity.functions[0]}(*args, **kwargs):\n"
    return patched(activity.reference.source, signature + "".join(f"    {line}\n" for line in body.splitlines()))


def with_cell_after(notebook, cell_id, source):
    """A copy with a new code cell (no nbgrader metadata) after the cell `cell_id`."""
    changed = copy.deepcopy(notebook)
    position = next(i for i, cell in enumerate(changed.cells) if cell.id == cell_id)
    changed.cells.insert(position + 1, nbformat.v4.new_code_cell(source, id=f"student-{position}"))
    return changed


def save(notebook, folder, name):
    path = folder / f"{name}.ipynb"
    nbformat.write(notebook, path)
    return path


def variants(lab, solved, blank):
    """A handful of submissions of `lab` that grade differently: (name, notebook, or None for a
    file that is not a notebook at all)."""
    last = list(lab.activities)[-1]
    mistake = grading_for(lab.name).mistakes[0]
    wrong = patched(lab.activities[mistake.activity].reference.source, mistake.code)
    return [("solved", solved), ("blank", blank),
            (f"missing-{last}", with_answer(solved, last, answer_cell(blank, last).source)),
            (f"wrong-{mistake.activity}", with_answer(solved, mistake.activity, wrong)), ("not-a-notebook", None)]


def save_class(folder, lab, kinds, count):
    """`count` students in nbgrader's submitted/<student>/<lab>/ layout under `folder`, each
    handing in the next of `kinds` in turn; returns the submitted/ folder."""
    for number in range(count):
        target = folder / "submitted" / f"student-{number:02d}" / lab.name
        target.mkdir(parents=True, exist_ok=True)
        _, notebook = kinds[number % len(kinds)]
        if notebook is None:
            (target / f"{lab.name}.ipynb").write_text("this is not a notebook")
        else:
            save(notebook, target, lab.name)
    return folder / "submitted"


def claiming(lab, other):
    """`lab`'s release notebook claiming, in its metadata, to be `other` and defining one of
    `other`'s functions."""
    notebook = read(lab_notebook(ROOT / "release", lab))
    notebook.metadata["course"] = {"lab": other.name, "title": other.title}
    function = next(iter(other.activities.values())).functions[0]
    notebook.cells.append(nbformat.v4.new_code_cell(f"def {function}(*args):\n    return None\n"))
    return notebook


def handed(student, notebook, lab=LABS[0]):
    """The roster's record of `student` handed in as `notebook` in nbgrader's layout."""
    return Submission(student, lab.name, notebook, expected=lab.name, nbgrader=True)
