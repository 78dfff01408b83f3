"""Which inputs a lab's hidden checks feed each function, recorded on the reference, per activity.

An activity's hidden checks are its own function's domain only if they cover every input the
checks of the activities built on it feed that function: otherwise a slip shows first in a
dependent's checks, and that activity's feedback sends the student to code that is right (a
`log` slip near 1e-12 passed all of tensor_engine 1a and failed D's Hessian-vector product).

This is found by recording, not by reading the cases: the lab's solved notebook runs in a
grading worker, as grading runs it, with one step more (`recorder_step`) that puts, in place of
every function the activities ask for, a wrapper that classifies each call's arguments (kind,
dtype, shape class and magnitude bands: autograder/labs/contracts.py) and then calls the function
unchanged. After each activity's cases a probe (`COLLECT`) takes what was recorded since the
last one and empties it, so every record belongs to the activity whose cases just ran.

What it sees: calls through the notebook's global names (a Tensor method that calls `log(self)`
looks `log` up there), through class attributes bound to the same function object, and calls
that a probe run `apart` (tensor_engine's APART) makes: those probes reach the submission's
globals across the link, so they get the wrapper and their calls run, and are recorded, in the
submission's worker. What it cannot see: a function captured by value before the recorder ran
(a closure or a default argument holding it, a module-level dict of functions); classes, which
are left alone (wrapping one would break isinstance); numbers an object holds other than in an
instance attribute `data`, `value` or `val` (a Dual's tangent, a property); the items of a
container past its first ENTRIES or below four levels; the state an argument is in (gradients
already held); and an object a probe run apart made on the grader's side of the link, which
reaches the function as a call stub and is classified as a function. The test names a function
its own activity's cases never reached the recorder through, since then nothing is compared.
"""
import inspect
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.submission import Step
from autograder.isolation.worker import decode
from autograder.labs import contracts

FEATURES = ("kind", "dtype", "shape", "band")
COLLECT = "def _coverage_collect():\n    return _coverage_take()\n"
ENTRIES = 64  # arrays up to this size go to bands_of as they are; containers are read this far


def _install(names, contracts_source, entries):
    """Runs in the worker (its source is sent): wrap `names` in the notebook's namespace."""
    import functools
    import inspect as inspection

    import numpy as np

    namespace = globals()
    vocabulary = {"__name__": "_coverage_contracts"}
    exec(compile(contracts_source, "<autograder/labs/contracts.py>", "exec"), vocabulary)
    bands_of, shape_class = vocabulary["bands_of"], vocabulary["shape_class"]
    seen, signatures = set(), {}

    def fewer(array):
        # bands_of loops in Python over unique entries, seconds on 500,000; a band is decided by
        # sign and magnitude, and no binary octave holds two band limits, so the extremes of each
        # (sign, exponent) group carry every band the array has.
        flat = np.asarray(array, dtype=np.float64).ravel()
        if flat.size <= entries:
            return flat
        regular = np.isfinite(flat) & (flat != 0)
        kept, special = flat[regular], np.unique(flat[~regular])
        key = np.sign(kept) * 4096 + np.frexp(np.abs(kept))[1]
        order = np.lexsort((np.abs(kept), key))
        key = key[order]
        edges = np.r_[True, key[1:] != key[:-1]] | np.r_[key[1:] != key[:-1], True]
        return np.concatenate([special, kept[order][edges]])

    def numeric(value):
        # Instance attributes only: reading them runs no code, and a proxy of the grader's side
        # of a link has no __dict__ to be asked through.
        if isinstance(value, (np.ndarray, np.generic, bool, int, float)):
            return value
        try:
            attributes = object.__getattribute__(value, "__dict__")
        except AttributeError:
            return None
        for name in ("data", "value", "val"):
            if name in attributes:
                found = attributes[name]
                if isinstance(found, (np.ndarray, np.generic, bool, int, float)):
                    return found
        return None

    def classify(value, depth=0):
        kind = type(value).__name__
        if isinstance(value, (list, tuple, dict)) and depth < 4:
            items = list(value.values() if isinstance(value, dict) else value)
            inner = [classify(item, depth + 1) for item in items[:entries]]
            kinds = sorted({part[0] for part in inner})
            return (f"{kind} of {'|'.join(kinds) or 'nothing'}", *[set().union(*(part[i] for part in inner))
                                                                   for i in (1, 2, 3)])
        array = numeric(value)
        if array is None:
            return kind, set(), set(), set()
        dtype = {np.asarray(array).dtype.name} if isinstance(array, (np.ndarray, np.generic)) else set()
        return kind, dtype, {shape_class(array)}, set(bands_of(fewer(array)))

    def record(function, args, kwargs):
        seen.add((function.__name__, "", "call", ""))  # a call without arguments (no_grad()) is seen too
        if function not in signatures:
            signatures[function] = inspection.signature(function)
        try:
            bound = signatures[function].bind(*args, **kwargs).arguments
        except (TypeError, ValueError):  # the call fails anyway; keep what it was given
            bound = {**{str(i): value for i, value in enumerate(args)}, **kwargs}
        for argument, value in bound.items():
            kind, dtypes, shapes, bands = classify(value)
            seen.add((function.__name__, argument, "kind", kind))
            seen.update((function.__name__, argument, feature, item)
                        for feature, items in (("dtype", dtypes), ("shape", shapes), ("band", bands))
                        for item in items)

    def wrapped(function):
        @functools.wraps(function)
        def recorded(*args, **kwargs):
            try:
                record(function, args, kwargs)
            except Exception as error:  # the recorder's fault must not become the function's
                seen.add((function.__name__, "?", "unrecorded", f"{type(error).__name__}: {error}"[:200]))
            return function(*args, **kwargs)
        return recorded

    originals = {}
    for name in names:
        found = namespace.get(name)
        if inspection.isfunction(found):
            originals[id(found)] = namespace[name] = wrapped(found)
        else:
            seen.add((name, "?", "unrecorded", f"not a function in the notebook's namespace: {type(found).__name__}"))
    for owner in list(namespace.values()):
        if isinstance(owner, type) and owner.__module__ == "__main__":
            for attribute, value in list(vars(owner).items()):
                if id(value) in originals:
                    setattr(owner, attribute, originals[id(value)])

    def take():
        rows = [list(row) for row in sorted(seen)]
        seen.clear()
        return rows

    namespace["_coverage_take"] = take


def recorder_source(names):
    """The code that wraps `names` where it runs (the worker's namespace, after the program)."""
    contracts_source = Path(contracts.__file__).read_text()
    return (inspect.getsource(_install) + f"\n_install({list(names)!r}, {contracts_source!r}, {ENTRIES})\n"
            "del _install\n")


def recorder_step(lab):
    """The step appended to the program: every function of every activity wrapped."""
    names = [name for activity in lab.activities.values() for name in activity.functions]
    return Step(recorder_source(names), False, "the coverage recorder")


def collected(session):
    """{(function, argument, feature, value)} recorded in `session`'s worker since the last call."""
    reply = session.ask({"op": "probe", "source": COLLECT, "probe": "_coverage_collect", "args": {}})
    if "error" in reply:
        raise RuntimeError(f"the coverage recorder could not be read: {reply}")
    return {tuple(row) for row in decode(reply["value"])}


def record_lab(grading, notebook, options, clock, cases_of):
    """({activity: {record: {the probes of its cases that made it}}}, {activity: [failed case
    titles]}, restarts): `notebook`'s program run with the recorder in grading's workers, each
    activity's `cases_of(activity)` judged in turn, the record read after every case."""
    from autograder.grading.grade import Sessions, judge_activity
    from autograder.grading.submission import program

    lab = grading.lab
    sessions = Sessions(lab, program(lab, notebook), options, clock, grading, extra_steps=[recorder_step(lab)])
    records, failed, restarts = {}, {}, 0
    try:
        for activity in lab.activities:
            session = sessions.of(activity)
            records[activity], failed[activity] = {}, []
            for case in cases_of(activity):
                if not judge_activity(session, grading.probes, [case]).passed:
                    failed[activity].append(case.title)
                for row in collected(session):
                    records[activity].setdefault(row, set()).add(case.probe)
            # A worker restarted mid-activity began a fresh record: what came before is lost.
            restarts = max(restarts, session.restarts - 1)
    finally:
        sessions.close()
    return records, failed, restarts


def dependents(depends):
    """{activity: the activities that depend on it directly or through others}."""
    found = {}
    for activity in depends:
        pending, reached = list(depends[activity]), set()
        while pending:
            need = pending.pop()
            if need not in reached:
                reached.add(need)
                pending.extend(depends.get(need, ()))
        for need in reached:
            found.setdefault(need, set()).add(activity)
    return found


@dataclass(frozen=True)
class Gap:
    function: str
    owner: str  # the activity that asks for the function
    argument: str
    feature: str  # one of FEATURES
    value: str
    fed_by: tuple  # ((dependent activity, (probes of its cases that fed it, ...)), ...)


def gaps(records, functions_of, depends):
    """[Gap]: each (argument, feature, value) a dependent's cases fed a function that its own
    activity's cases never did. `records`: {activity: {(function, argument, feature, value):
    {probe, ...}}} (a set of records stands for one without probes); `functions_of`: {activity:
    functions it asks for}; `depends`: a lab's DEPENDS."""
    owner = {function: activity for activity, names in functions_of.items() for function in names}
    users = dependents(depends)
    found = {}
    for activity, rows in records.items():
        for row in rows:
            function, argument, feature, value = row
            mine = owner.get(function)
            if feature not in FEATURES or mine is None or activity not in users.get(mine, ()):
                continue
            if row not in records.get(mine, ()):
                probes = rows[row] if isinstance(rows, dict) else ()
                found.setdefault((function, mine, argument, feature, value), {}).setdefault(
                    activity, set()).update(probes)
    return [Gap(*key, tuple((activity, tuple(sorted(probes))) for activity, probes in sorted(fed.items())))
            for key, fed in sorted(found.items())]


def undeclared(records, functions_of, depends):
    """{(function, owner): {activity}}: activities whose cases called a function of an activity
    that their DEPENDS does not name, directly or through others (not compared: a note)."""
    owner = {function: activity for activity, names in functions_of.items() for function in names}
    users = dependents(depends)
    found = {}
    for activity, rows in records.items():
        for function, *_ in rows:
            mine = owner.get(function)
            if mine is not None and mine != activity and activity not in users.get(mine, ()):
                found.setdefault((function, mine), set()).add(activity)
    return found


def unrecorded(records):
    """[(activity, function, why)] of what the recorder could not classify or wrap."""
    return sorted({(activity, function, why) for activity, rows in records.items()
                   for function, _, feature, why in rows if feature == "unrecorded"})


def describe(lab_name, found):
    """One line per (function, argument, feature) of the gaps, for a failure message: e.g.
    "tensor_engine log(a): bands ['+tiny'] fed by D's cases (hvp) are in no case of 1a"."""
    grouped = {}
    for gap in found:
        values, feeders = grouped.setdefault((gap.function, gap.argument, gap.feature, gap.owner), (set(), {}))
        values.add(gap.value)
        for activity, probes in gap.fed_by:
            feeders.setdefault(activity, set()).update(probes)
    lines = []
    for (function, argument, feature, owner), (values, feeders) in grouped.items():
        said = ", ".join(f"{activity}'s cases" + (f" ({', '.join(sorted(probes))})" if probes else "")
                         for activity, probes in sorted(feeders.items()))
        lines.append(f"{lab_name} {function}({argument}): {feature}s {sorted(values)} fed by {said} "
                     f"are in no case of {owner}")
    return lines
