"""The vocabulary a lab's grading knowledge is written in: `Case`, `Mistake`, and the
comparisons its judges share.

A lab's ``cases.py`` builds Cases: a question for the submission (a probe function of the lab's
``probes.py`` and its keyword arguments) with a judge that receives the decoded answer (and,
for a probe that observes as it goes, the list of its observations) and returns ``None`` or a
sentence the student can act on. Judges run in the grader's process with
the grader's own expected values. A lab's ``mistakes.py`` lists Mistakes: wrong answers the
checks must catch. Both the labs and the grader's runners import this module; labs import
nothing else of the grader.
"""
import ast
from dataclasses import dataclass
from typing import Callable

import numpy as np

from autograder.isolation.worker import Opaque
from autograder.labs import course_labs
from course.syntax import parse


@dataclass(frozen=True)
class Case:
    activity: str
    title: str  # what was asked, in the student's terms: "matmul_vjp with a (3, 4) and b (4,)"
    probe: str  # a function of the lab's probes.py
    args: dict
    judge: Callable[..., str | None]
    # How many times the probe calls `_observe` (worker.py): each observation leaves the sandbox
    # the moment it is made. A case with observations has its judge called as
    # judge(answer, observations); a reply with another count fails the case as tampered.
    observations: int = 0
    # The contract boundaries the case holds (autograder/labs/contracts.py `drawn` labels), so that a
    # test can show every declared boundary is asked about whatever the seed.
    drawn: tuple = ()
    # What of a reply the diagnosis compares (answer_sketch.py), as sketch_of(answer, observations),
    # for replies that hold names which change from run to run (object ids): the same slip must
    # sketch alike in the catalogue's run and in the student's. None compares the reply itself.
    sketch_of: Callable | None = None


@dataclass(frozen=True)
class Mistake:
    activity: str
    description: str
    hint: str  # a word the grader's message must contain, so that it points at the wrong quantity
    code: str  # function definitions that replace the reference's
    # What a student whose answer behaves like this one reads (autograder/diagnosis/matching.py): what the
    # answer does wrong and where to look, never the line that fixes it.
    advice: str = ""


@dataclass(frozen=True)
class Variant:
    """A catalogued mistake's slip written another way, kept apart from the catalogue: the
    fingerprints are built from the catalogue alone, and variants measure how they generalise."""
    of: str  # the description of the catalogued Mistake it is a variant of
    description: str
    code: str  # function definitions that replace the reference's


def plural(count, word, many=None):
    """'1 check', '3 checks', '2 activities' (pass `many` where adding an s is wrong)."""
    return f"{count} {word if count == 1 else many or word + 's'}"


def listing(words):
    """'a', 'a and b', 'a, b and c'."""
    words = list(words)
    return " and ".join(filter(None, [", ".join(words[:-1]), words[-1] if words else ""]))


def number(value):
    """A number as a person writes it: 6, -0.5, 1.2346e-07; never np.float64(6.0)."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return f"{float(value):.6g}"


def apart(got, expected):
    """`got` and `expected` written with 6 significant digits, or as many more as it takes to
    show how they differ (a 1e-8 slip would otherwise read "got 0.113561, expected 0.113561")."""
    for digits in range(6, 18):
        shown = f"{float(got):.{digits}g}", f"{float(expected):.{digits}g}"
        if shown[0] != shown[1]:
            break
    return shown


def describe(value):
    """A short phrase naming what a student function returned."""
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    if isinstance(value, Opaque):
        return repr(value)
    if isinstance(value, (list, tuple, dict)):
        return f"a {type(value).__name__} of length {len(value)}"
    if value is None:
        return "None"
    if isinstance(value, (int, float, np.generic)):
        return f"the number {number(value)} ({type(value).__name__})"
    if isinstance(value, str):
        return f"the text {value[:60]!r}"
    return f"a {type(value).__name__}"


def as_numbers(value):
    """`value` as a float64 array when it is numeric (array, scalar, or list of numbers), else None."""
    if isinstance(value, np.ndarray) or isinstance(value, (np.generic, int, float)) and not isinstance(value, bool):
        array = np.asarray(value)
        return array.astype(np.float64) if array.dtype.kind in "biuf" else None
    if isinstance(value, (list, tuple)) and all(isinstance(v, (int, float, np.generic)) for v in value):
        return np.asarray(value, dtype=np.float64)
    return None


def array_problem(got, expected, quantity, *, atol=1e-9, rtol=1e-9):
    """None when `got` matches `expected` in shape and values, else what is wrong with it."""
    expected = np.asarray(expected, dtype=np.float64)
    numbers = as_numbers(got)
    if numbers is None:
        return f"{quantity}: expected a NumPy array, got {describe(got)}"
    if numbers.shape != expected.shape:
        return f"{quantity}: shape {numbers.shape}, expected {expected.shape}"
    wrong = ~np.isclose(numbers, expected, atol=atol, rtol=rtol)
    if wrong.any() and expected.shape == ():
        return "{}: got {}, expected {}".format(quantity, *apart(numbers[()], expected[()]))
    if wrong.any():
        where = tuple(int(i) for i in np.argwhere(wrong)[0])
        count = int(wrong.sum())
        return (f"{quantity}: {count} of {plural(wrong.size, 'entry', 'entries')} "
                f"{'is' if count == 1 else 'are'} wrong; at index {where} "
                "got {}, expected {}".format(*apart(numbers[where], expected[where])))
    return None


def unchanged_problem(after, sent, what):
    """None when an argument came back as it was sent, else a message about in-place changes."""
    numbers = as_numbers(after)
    if numbers is None or numbers.shape != np.shape(sent) or not np.array_equal(numbers, sent):
        return f"{what} was modified in place; work on new arrays instead"
    return None


def first_problem(*problems):
    return next((p for p in problems if p), None)


def reference_function(lab_name, name):
    """The source of function `name` as the lab's instructor notebook solves it, so that a
    catalogued mistake can be one slip in the reference instead of a copy of it."""
    for activity in course_labs()[lab_name].activities.values():
        source = activity.reference.source
        for node in parse(source).body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                return "\n".join(source.splitlines()[first - 1:node.end_lineno]) + "\n"
    raise LookupError(f"{lab_name}'s reference answers define no function {name}")


def slips_of(lab_name):
    """slip(name, wrong, instead): the reference answer of `name` with its one `wrong` written as
    `instead`, so that a variant or a stranger is one slip in the reference, not a copy of it."""
    def slip(name, wrong, instead):
        correct = reference_function(lab_name, name)
        assert correct.count(wrong) == 1, wrong
        return correct.replace(wrong, instead)
    return slip
