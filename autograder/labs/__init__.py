"""A lab's grading knowledge: the interface every lab implements, checked whenever it is loaded.

Beside the labs' folders lie the modules they are written in (vocabulary.py, contracts.py), which
activities are graded without PyTorch (policy.py), and the release and solved notebooks of a lab
(notebooks.py), which the release build and the mistake catalogue both make. This package imports
only isolation/ and the lab model (course) below it.

A lab named ``<lab>`` is

* ``source/<lab>/<lab>.py`` (Jupytext percent format) and its executed ``<lab>.ipynb``: the
  activities, their points, stubs, references, visible checks and given code;
* the files in ``data/`` that the notebook's metadata names (``course: data:``);
* ``autograder/labs/<lab>/``, what the grader knows about it, one file per job:

  ``cases.py``     ``DEPENDS = {activity: (activities whose functions it calls), ...}``,
                   ``USES_PYTORCH = (activity, ...)``, the activities whose point is PyTorch
                   itself (every other one is graded in a worker without PyTorch, and its
                   text in the notebook says so: see autograder/labs/policy.py), and ``cases(seed)``,
                   returning ``{activity: [Case, ...]}``: the hidden checks, with the expected
                   values computed there (with PyTorch) and the input classes each activity's
                   cases are generated from documented beside them. ``seed`` is a non-negative
                   integer of up to 64 bits, the submission's own (autograder/grading/secret.py): every
                   random value a case holds is drawn from a generator built from it and a
                   constant of the lab's (``np.random.default_rng([seed, 20261129])``), so
                   that inputs seen in one submission say nothing about another's. What makes
                   an input class (shapes, graph shapes, a zero, a tie, a value at a kink) is
                   fixed; the values around it are drawn. The same seed gives the same cases;
                   two seeds give cases of the same structure (the same activities, number of
                   cases, probes and argument shapes) with other values. Optionally ``APART =
                   (probe, ...)``: the probes of what teaches a method, where the submission's
                   process could work out a correct reply without it: they run in a worker of
                   the grader's that holds no submission code, on proxies of the submission's
                   objects (autograder/isolation/worker.py, ``apart``);
  ``probes.py``    functions the sandbox runs in the submission's namespace; every Case names
                   one of them and its keyword arguments. They return plain data, know no
                   expected value and judge nothing (the only file of the three a submission's
                   process ever receives); what must be recorded before student code runs
                   again goes out through ``_observe`` (a Case's ``observations``);
  ``contracts.py`` ``CONTRACTS = [Contract, ...]`` (autograder/labs/contracts.py): what the notebook
                   allows each function an activity asks for, declared once; ``cases.py`` draws
                   its inputs from it and names the boundaries each Case holds (``Case.drawn``);
                   tests/test_contracts.py and tests/test_contract_coverage.py check them;
  ``mistakes.py``  ``MISTAKES = [Mistake, ...]``: plausible wrong answers, at least three per
                   activity, which the grader must catch (``python -m autograder mistakes``),
                   each with the ``advice`` a student whose answer behaves like it reads
                   (autograder/diagnosis/matching.py).

``Case`` and ``Mistake`` come from ``autograder.labs.vocabulary`` and ``Contract`` from
``autograder.labs.contracts``: the lab's modules import these two of the grader, and each other. ``probes.py`` imports nothing of the grader (it runs in
the sandbox); its top-level code runs in a copy of the student's namespace, so its own helpers
and imports carry a leading underscore (``import numpy as _np``) to leave the student's names
alone. No line of the three files may appear in the release (a test looks). A lab's name is a
lower-case Python identifier that no installed module has. Nothing else in the grader names a
lab: it finds them in ``source/``.

The check run when a lab is loaded (on the cases of the first seed asked for): every activity of the
notebook has hidden cases and at least three mistakes, each with its own description and its advice; no case, mistake or ``DEPENDS`` entry
names an activity the notebook lacks; every case's probe is a function of ``probes.py``; every
mistake replaces functions its activity defines; ``USES_PYTORCH`` names only the notebook's
activities, and exactly the others carry the sentence ``policy.NUMPY_ONLY`` in their text. A lab that fails it cannot be graded: its submissions get the status
``lab_not_gradable`` with the reason, and the test suite fails naming the lab and the part.
"""
import ast
import gc
import importlib
import sys
from dataclasses import dataclass
from dataclasses import replace
from functools import cache, lru_cache
from pathlib import Path
from threading import Lock

from autograder.isolation.errors import GraderError, GradingProblem
from autograder.labs.policy import policy_problems
from course.labs import find_labs
from course.syntax import parse

HERE = Path(__file__).resolve().parent
FILES = ("cases.py", "probes.py", "mistakes.py")
MIN_MISTAKES = 3
CHECK_SEED = 0  # the seed of the cases the lab check looks at, and of callers that grade nothing
CACHED_SEEDS = 8  # seeds asked again soon (a retried task, the tests); one seed's cases hold up to about 20 MiB


class LabNotGradable(GradingProblem):
    def __init__(self, lab_name, problems):
        super().__init__("lab_not_gradable", f"lab {lab_name} cannot be graded: " + "; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Grading:
    """Everything the grader knows about one lab, checked."""
    lab: object  # course.labs.Lab
    depends: dict
    uses_pytorch: frozenset  # the activities graded with PyTorch available
    cases: dict  # activity -> [Case], for one seed
    probes: str  # the source of probes.py, sent into the sandbox
    mistakes: tuple
    apart: frozenset = frozenset()  # the probes that run outside the submission's process


@cache
def course_labs():
    """Every lab of source/, by name, whether or not it can be graded."""
    return {lab.name: lab for lab in find_labs()}


def _import(lab_name, part):
    module = importlib.import_module(f"autograder.labs.{lab_name}.{part}")
    if "torch" in sys.modules:
        # The expected values are small tensors, computed one lab at a time: PyTorch's threads
        # only spin. Beside two CPU-bound processes, two threads took 4 times the CPU of one for
        # tensor_engine's cases (2.4 s per seed against 0.6 s).
        sys.modules["torch"].set_num_threads(1)
    return module


def declared_depends(lab_name):
    """The lab's DEPENDS as its cases.py declares it, read without checking the lab (as
    catalogued_mistakes reads its mistakes)."""
    return dict(_import(lab_name, "cases").DEPENDS)


def catalogued_mistakes(lab_name):
    """The lab's MISTAKES as its mistakes.py defines them, read without checking the lab: the
    check computes a seed's hidden cases."""
    return tuple(_import(lab_name, "mistakes").MISTAKES)


def problems_of(lab, folder=None, seed=CHECK_SEED):
    """What is missing or inconsistent in `lab`'s grading knowledge, looking at the cases of
    `seed`; [] when it is complete. Returns the loaded Grading too when the files could be read."""
    folder = folder or HERE / lab.name
    missing = [f"autograder/labs/{lab.name}/{name} is missing" for name in FILES if not (folder / name).is_file()]
    if missing:
        return missing, None
    try:
        cases_module, mistakes_module = _import(lab.name, "cases"), _import(lab.name, "mistakes")
        depends = getattr(cases_module, "DEPENDS", None)
        uses_pytorch = getattr(cases_module, "USES_PYTORCH", None)
        apart = getattr(cases_module, "APART", ())
        cases = cases_module.cases(seed) if callable(getattr(cases_module, "cases", None)) else None
        mistakes = getattr(mistakes_module, "MISTAKES", None)
    except Exception as error:  # a lab's own bug: report it, never crash the grader
        return [f"loading its grading files raised {type(error).__name__}: {error}"], None
    probes = (folder / "probes.py").read_text()
    problems = []
    activities = lab.activities
    if not isinstance(depends, dict):
        problems.append("cases.py must define DEPENDS, a dict from activity to the activities it calls")
        depends = {}
    if not isinstance(uses_pytorch, (tuple, list, set, frozenset)) or \
            not all(isinstance(a, str) for a in uses_pytorch):
        problems.append("cases.py must define USES_PYTORCH, the activities whose point is PyTorch itself "
                        "(a tuple of activity ids; () when every activity is graded without PyTorch)")
        uses_pytorch = ()
    problems += policy_problems(lab, uses_pytorch)
    if not isinstance(cases, dict):
        problems.append("cases.py must define cases(seed), returning a dict from activity to a list of Case")
        cases = {}
    if not isinstance(mistakes, (list, tuple)):
        problems.append("mistakes.py must define MISTAKES, a list of Mistake")
        mistakes = ()
    for activity, needs in depends.items():
        for name in (activity, *needs):
            if name not in activities:
                problems.append(f"DEPENDS names activity {name}, which the notebook does not have")
    try:
        probe_names = {node.name for node in parse(probes).body if isinstance(node, ast.FunctionDef)}
    except SyntaxError as error:
        problems.append(f"probes.py is not valid Python: {error}")
        probe_names = set()
    problems += [f"APART names probe {name}, which probes.py does not define" for name in apart
                 if name not in probe_names]
    for activity in activities:
        if not cases.get(activity):
            problems.append(f"activity {activity} has no hidden cases in cases.py")
        count = sum(m.activity == activity for m in mistakes)
        if count < MIN_MISTAKES:
            problems.append(f"activity {activity} has {count} catalogued mistakes in mistakes.py; "
                            f"at least {MIN_MISTAKES} are needed")
    for activity, listed in cases.items():
        if activity not in activities:
            problems.append(f"cases(seed) has cases for activity {activity}, which the notebook does not have")
            continue
        for case in listed:
            if case.activity != activity:
                problems.append(f"case '{case.title}' is listed under {activity} but says activity {case.activity}")
            if case.probe not in probe_names:
                problems.append(f"case '{case.title}' asks probe {case.probe}, which probes.py does not define")
    descriptions = [m.description for m in mistakes]
    for repeated in sorted({d for d in descriptions if descriptions.count(d) > 1}):
        problems.append(f"two mistakes share the description '{repeated}'; each needs its own")
    for mistake in mistakes:
        if mistake.activity not in activities:
            problems.append(f"mistake '{mistake.description}' names activity {mistake.activity}, "
                            "which the notebook does not have")
            continue
        try:
            replaced = {n.name for n in parse(mistake.code).body if isinstance(n, ast.FunctionDef)}
        except SyntaxError as error:
            problems.append(f"mistake '{mistake.description}' is not valid Python: {error}")
            continue
        if not isinstance(mistake.advice, str) or not mistake.advice.strip():
            problems.append(f"mistake '{mistake.description}' has no advice: the sentence a student whose answer "
                            "behaves like it reads (what it does wrong and where to look)")
        if not replaced or not replaced <= set(activities[mistake.activity].functions):
            problems.append(f"mistake '{mistake.description}' must redefine functions of activity "
                            f"{mistake.activity} ({', '.join(activities[mistake.activity].functions)})")
    grading = Grading(lab, {k: tuple(v) for k, v in depends.items()}, frozenset(uses_pytorch), cases, probes,
                      tuple(mistakes), frozenset(apart))
    return problems, grading


# Grading threads ask for a lab when its first submission comes up; one computes, the rest wait.
_loading = Lock()


def grading_for(lab_name, seed=CHECK_SEED):
    """The checked grading knowledge of a lab of source/, with the hidden cases of `seed`, or
    LabNotGradable naming what is wrong. A lab is checked the first time it is asked for, on
    the cases of the seed asked for then (a run of one submission computes its cases once); the
    cases of another seed are computed when first asked for and kept for the next CACHED_SEEDS
    asks. GraderError when the lab's cases(seed) fails for a seed other than CHECK_SEED."""
    with _loading:  # one lab's cases at a time: PyTorch's autograd levels are shared by threads
        return _seeded(lab_name, seed)


@lru_cache(maxsize=CACHED_SEEDS)
def _seeded(lab_name, seed):
    checked_on, checked = _checked(lab_name, seed)
    if seed == checked_on:
        return checked
    try:
        cases = _import(lab_name, "cases").cases(seed)
    except Exception as error:  # a lab's own bug, met by this seed alone: one submission's problem
        raise GraderError(f"lab {lab_name}'s cases(seed) raised {type(error).__name__}: {error} for this "
                          "submission's seed; a person needs to look at this lab") from None
    return replace(checked, cases=cases)


_checks = {}  # lab name -> (the seed it was checked on, its Grading with that seed's cases)


def _checked(lab_name, seed):
    """(seed, Grading) of the lab's check, made on `seed`'s cases the first time. Where those
    fail the check, it is made again on CHECK_SEED's, so that a seed's own failure stays that
    submission's problem (GraderError, from _seeded) and is not taken for the lab's."""
    if lab_name not in _checks:
        problems, grading = problems_of(course_labs()[lab_name], seed=seed)
        if problems and seed != CHECK_SEED:
            seed = CHECK_SEED
            problems, grading = problems_of(course_labs()[lab_name], seed=seed)
        if problems:
            raise LabNotGradable(lab_name, problems)
        _checks[lab_name] = seed, grading
        # The lab's modules, PyTorch's and the checked cases live as long as the process: kept out
        # of the cycle collector's later passes, each of which walked them all again (drawing
        # a seed's cases makes tens of thousands of lists, and took half again as long).
        gc.freeze()
    return _checks[lab_name]


def _clear():
    _checks.clear()
    _seeded.cache_clear()


grading_for.cache_clear = _clear  # for tests that swap a lab's files


def gradable_labs():
    """The labs whose grading knowledge passes the check, by name."""
    found = {}
    for name in course_labs():
        try:
            found[name] = grading_for(name)
        except LabNotGradable:
            pass
    return found
