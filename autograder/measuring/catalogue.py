"""Test the checks themselves: run a lab's catalogue of wrong answers through the visible check
cells and through the grader, and tabulate what each one catches.

    python -m autograder mistakes [--lab LAB] [--jobs N]
"""
import ast
import copy
import math
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import nbformat
import numpy as np

from autodiff_check.cells import cell_name
from autograder.diagnosis.matching import FINGERPRINT_SEEDS
from autograder.grading.batch import safe_grade, warm
from autograder.grading.grade import Clock, Session, Sessions, judge_activity
from autograder.grading.submission import Step, program, released
from autograder.isolation.sandbox import WorkerFailure
from autograder.labs import grading_for
from autograder.labs.notebooks import solved_notebook, student_notebook
from autograder.labs.vocabulary import Mistake
from course.cells import is_optional
from course.syntax import free_reads, parse


@dataclass
class Row:
    mistake: Mistake
    visible_caught: bool
    visible_message: str
    grader_caught: bool
    lost: int
    elsewhere: dict  # {activity that does not call the mistake yet lost points: its feedback}
    grader_message: str
    named: tuple = ()  # the catalogued mistakes the grader's diagnosis names in its activity
    stopped: bool = False  # a hidden check of its activity hung or killed the worker

    @property
    def others_intact(self):
        return not self.elsewhere


def patched(reference, code):
    """The reference answer with the functions `code` defines replaced by `code`."""
    replaced = {node.name for node in parse(code).body if isinstance(node, ast.FunctionDef)}
    lines = reference.splitlines()
    for node in sorted(parse(reference).body, key=lambda n: n.lineno, reverse=True):
        if isinstance(node, ast.FunctionDef) and node.name in replaced:
            del lines[node.lineno - 1 - len(node.decorator_list):node.end_lineno]
    return "\n".join(lines).rstrip() + "\n\n\n" + code.strip() + "\n"


def visible_steps(lab, activity, answer):
    """The instructor notebook's code up to the activity's check, with `answer` in its place and
    the earlier checks run as a student runs them (a check may use a helper an earlier one
    defines). The code of other optional activities is left out: a student may skip any optional
    activity, so no other check may depend on it (`visible_controls` confirms it). Each step is
    named as grading names it in the solved release with `answer` in its cell (`mistaken`)."""
    cells, places = released(lab)
    steps, demos = [], set()
    for cell in lab.cells:
        if cell.cell_type != "code" or cell.role == "reference":
            continue
        needs = {*cell.requires, cell.activity} - {None, activity}
        if any(is_optional(a) for a in needs):
            continue
        place = places[cell.index]
        if cell.role == "stub":
            source = answer if cell.activity == activity else lab.activities[cell.activity].reference.source
            cells[place] = {"source": source}
            steps.append(Step(source, True, cell_name(cells, place)))
        elif cell.role == "check":
            steps.append(Step(cell.source, False, f"check {cell_name(cells, place)}"))
            if cell.activity == activity:
                return without_idle_demos(steps, demos)
        else:
            if cell.requires:
                demos.add(len(steps))
            steps.append(Step(cell.source, False, f"given {cell_name(cells, place)}"))
    raise ValueError(f"activity {activity} has no check cell")


def without_idle_demos(steps, demos):
    """`steps` without the demonstrations (given code that calls the student's functions: a
    training run, a plot) that bind no name a later step reads. Such a cell cannot change what
    the check says, and the longest took seven seconds, run again for every catalogued mistake.
    A cell that cannot be parsed is kept."""
    kept, read = [], set()
    for index in reversed(range(len(steps))):
        names = names_of(steps[index].source)
        if index in demos and names is not None and not names[0] & read:
            continue
        kept.append(steps[index])
        read |= names[1] if names is not None else set()
    return kept[::-1]


def names_of(source):
    """(names the code binds, names it reads from the namespace), or None if it cannot be
    parsed. A store into an attribute or an item binds the name it starts from (`model.w = ...`);
    a name bound anywhere in the code counts, so a demo is dropped only when it surely binds
    nothing that is read."""
    try:
        tree, read = parse(source), free_reads(source)
    except (SyntaxError, ValueError):
        return None
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
            root = node.value
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name):
                bound.add(root.id)
    return bound, read


def visible_verdict(lab, activity, answer, options):
    """(caught, what the student saw) for the visible check of `activity` on `answer`."""
    steps = visible_steps(lab, activity, answer)
    session = Session(lab, steps, options, Clock(options.limits.submission_seconds))
    try:
        session.start()
    except WorkerFailure as failure:
        return False, f"could not run: {failure}"
    finally:
        session.close()
    check = len(steps) - 1
    if check in session.skipped:
        return False, f"the check did not finish: {session.skipped[check]}"
    if check in session.errors:
        error = session.errors[check]
        return True, f"{error['error']}: {error['message']}".strip()
    return False, "the check passed"


def visible_controls(lab_name, options, jobs):
    """{activity: what its check said} for every activity whose visible check does not pass on
    the reference answer when run as the catalogue runs it; {} when all pass."""
    lab = grading_for(lab_name).lab
    with warm(options) as options, ThreadPoolExecutor(max_workers=jobs) as threads:
        verdicts = dict(zip(lab.activities, threads.map(
            lambda a: visible_verdict(lab, a.id, a.reference.source, options), lab.activities.values())))
    return {activity: message for activity, (_, message) in verdicts.items() if message != "the check passed"}


def run_catalogue(lab_name, options, jobs, visible=True, only=None):
    """A Row per mistake of the lab's catalogue (or of those whose descriptions are in `only`);
    `visible=False` leaves the visible checks out (their verdicts are then None).

    The catalogue asks what a mistake costs on the student's own engine: its activity's points,
    and nothing in any activity that does not call it. The activities that do call it fail too;
    their re-grade on the reference engine is the same for every mistake of the activity, so it
    is left to the grading tests (tests/test_grading.py: each activity missing in turn).

    Each mistake is graded on a seed its stored fingerprint was built from, the seeds taken in
    turn along the catalogue (`catalogue_seed`), so that a Row's `named` says whether the grader's
    own diagnosis names it; `only` keeps each mistake's seed."""
    grading = grading_for(lab_name)
    mistakes = [m for m in grading.mistakes if only is None or m.description in only]
    with warm(replace(options, rejudge=False)) as options:
        return _run_mistakes(grading.lab, mistakes, options, jobs, visible,
                             [catalogue_seed(grading, m) for m in mistakes])


def catalogue_seed(grading, mistake):
    """The fingerprint seed the catalogue grades `mistake` on."""
    return FINGERPRINT_SEEDS[grading.mistakes.index(mistake) % len(FINGERPRINT_SEEDS)]


def run_variants(lab_name, mistakes, options, jobs):
    """A Row per Mistake of `mistakes` (any wrong answers, not only the catalogue's), graded in
    one batch without the visible checks, on the student's own engine as run_catalogue does, each
    on the seed its notebook's bytes give."""
    with warm(replace(options, rejudge=False)) as options:
        return _run_mistakes(grading_for(lab_name).lab, mistakes, options, jobs, False, [None] * len(mistakes))


def mistaken(lab, solved, mistake):
    """(answer, notebook): the solved notebook with `mistake` in its activity's answer cell."""
    answer = patched(lab.activities[mistake.activity].reference.source, mistake.code)
    notebook = copy.deepcopy(solved)
    next(c for c in notebook.cells if c.id == f"{mistake.activity}-answer").source = answer
    return answer, notebook


def _run_mistakes(lab, mistakes, options, jobs, visible, seeds):
    """A Row per mistake, each graded with its seed of `seeds` (None: its notebook's bytes give it)."""
    depends = grading_for(lab.name).depends
    solved = solved_notebook(lab, student_notebook(lab))
    answers = []
    with tempfile.TemporaryDirectory() as scratch, ThreadPoolExecutor(max_workers=jobs) as threads:
        paths = []
        for number, mistake in enumerate(mistakes, start=1):
            answer, notebook = mistaken(lab, solved, mistake)
            answers.append(answer)
            paths.append(Path(scratch) / f"mistake-{number:02d}.ipynb")
            nbformat.write(notebook, paths[-1])
        graded = [result for result, _ in threads.map(
            lambda pair: safe_grade(pair[0], replace(options, seed=pair[1]), lab.name), zip(paths, seeds))]
    verdicts = [(None, None)] * len(mistakes)
    if visible:
        with ThreadPoolExecutor(max_workers=jobs) as threads:
            verdicts = list(threads.map(lambda pair: visible_verdict(lab, pair[0].activity, pair[1], options),
                                    zip(mistakes, answers)))
    rows = []
    for result, mistake, (seen, seen_message) in zip(graded, mistakes, verdicts):
        tests = {test["name"]: test for test in result["tests"]}
        mine = tests.get(mistake.activity, {"score": 0, "max_score": 0, "output": result["output"]})
        callers = set() if options.rejudge else {a for a, needs in depends.items() if mistake.activity in needs}
        elsewhere = {key: t["output"] for key, t in tests.items()
                     if key != mistake.activity and key not in callers and t["score"] != t["max_score"]}
        caught = bool(tests) and mine["score"] == 0 and mistake.hint in mine["output"]
        extra = result.get("extra_data", {})
        named = tuple(extra.get("diagnoses", {}).get(mistake.activity, {}).get("mistakes", ()))
        rows.append(Row(mistake, seen, seen_message, caught, mine["max_score"] - mine["score"], elsewhere,
                        mine["output"], named, mistake.activity in extra.get("stopped", ())))
    return rows


def outcomes_by_seed(lab_name, notebook, seeds, options, activities=None):
    """{activity: [Outcome for each of `seeds`]}: the hidden checks of `activities` (default:
    every one) judged on `notebook` with the inputs each seed gives, as grading judges them. The
    notebook's program runs once per worker and every seed's cases are asked of that worker, so
    that a seed costs only its checks: for showing that a lab's verdicts hold whatever the seed
    (the reference passes, a catalogued mistake fails)."""
    with warm(options) as options:
        return _outcomes_by_seed(grading_for(lab_name), notebook, seeds, options, activities)


def _outcomes_by_seed(grading, notebook, seeds, options, activities=None, halt=False, nudged=()):
    """`nudged`: the seeds of `seeds` whose cases are asked with their inputs nudged (`nudge`)."""
    sessions = Sessions(grading.lab, program(grading.lab, notebook), options,
                        Clock(options.limits.submission_seconds), grading)
    try:
        found = {}
        for activity in activities or grading.lab.activities:
            found[activity] = []
            for seed in seeds:
                if halt and found[activity] and found[activity][-1].stopped:
                    found[activity].append(found[activity][-1])
                    continue
                cases = grading_for(grading.lab.name, seed).cases[activity]
                if seed in nudged:
                    cases = [replace(case, args=nudge(case.args)) for case in cases]
                found[activity].append(judge_activity(sessions.of(activity), grading.probes, cases, sketch=True))
        return found
    finally:
        sessions.close()


def nudge(value):
    """`value` with every float in it (a number, or in an array, at any depth of dicts, lists and
    tuples) one unit in the last place further from zero; zeros, signs, infinities and everything
    else as they were, so that a case's branches stay the same. What an answer replies to a case
    nudged so is what rounding alone changes: another machine's vector code, another BLAS. A
    subnormal's last place is a large part of it, so a case at that edge moves too and is left
    uncompared: a diagnosis errs toward naming nothing."""
    if isinstance(value, dict):
        return {key: nudge(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(nudge(item) for item in value)
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return np.where(np.isfinite(value) & (value != 0), np.nextafter(value, np.copysign(np.inf, value)), value)
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and value != 0:
        return type(value)(np.nextafter(value, math.copysign(math.inf, value)))
    return value


def fingerprints_by_seed(lab_name, mistakes, seeds, options, jobs, halt=False, nudged=()):
    """[[the Outcome of its activity for each of `seeds`] for each of `mistakes`]: each wrong
    answer's activity judged as grading judges it, on the reference engine for the rest, every
    seed in turn in one worker (an Outcome's `fingerprint` holds its tokens, `sketches` what the
    answer replied). `halt`: once an answer's engine stops (it hangs or dies), its later seeds
    are not asked, as grading does not replay it, and repeat that Outcome: each would cost
    another time limit. `nudged`: seeds whose cases' inputs are nudged (`nudge`)."""
    grading = grading_for(lab_name)
    solved = solved_notebook(grading.lab, student_notebook(grading.lab))

    def prints(mistake):
        notebook = mistaken(grading.lab, solved, mistake)[1]
        return _outcomes_by_seed(grading, notebook, seeds, options, [mistake.activity], halt,
                                 nudged)[mistake.activity]

    with warm(options) as options, ThreadPoolExecutor(max_workers=jobs) as threads:
        return list(threads.map(prints, mistakes))


def print_table(rows):
    print(f"{'activity':<9}{'visible':<9}{'grader':<8}{'lost':<6}{'named':<8}mistake")
    for row in rows:
        named = "yes" if row.mistake.description in row.named else "stopped" if row.stopped else "NO"
        print(f"{row.mistake.activity:<9}{'caught' if row.visible_caught else 'MISSED':<9}"
              f"{'caught' if row.grader_caught else 'MISSED':<8}{row.lost:<6}{named:<8}{row.mistake.description}")
    for row in rows:
        if not (row.grader_caught and row.others_intact):
            print(f"\ngrader on '{row.mistake.description}' ({row.mistake.activity}): {row.grader_message}")
        for activity, message in row.elsewhere.items():
            print(f"\ngrader on '{row.mistake.description}', in activity {activity}, which does not call it: {message}")
        if not row.visible_caught:
            print(f"\nvisible check on '{row.mistake.description}' ({row.mistake.activity}): {row.visible_message}")
    print()
    for activity in dict.fromkeys(row.mistake.activity for row in rows):
        mine = [row for row in rows if row.mistake.activity == activity]
        print(f"activity {activity}: {len(mine)} mistakes, visible checks catch {sum(r.visible_caught for r in mine)}, "
              f"grader catches {sum(r.grader_caught for r in mine)}")
    print(f"total: {len(rows)} mistakes, visible checks catch {sum(r.visible_caught for r in rows)}, "
          f"grader catches {sum(r.grader_caught and r.others_intact for r in rows)} "
          "(its activity at 0, a message that names the quantity, every activity that does not call it intact)")
