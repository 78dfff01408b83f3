"""Dependencies covered: every input an activity's hidden checks feed to a function of another
activity (one it depends on, directly or through others) lies in that function's own hidden
domain, so that a slip fails its own activity first and the feedback points at the right code.

The inputs are recorded, not reasoned about (autograder/measuring/contract_coverage.py): the reference runs
in a grading worker with every activity function wrapped, and each call's arguments are
classified by kind, dtype, shape class and magnitude band (autograder/labs/contracts.py). For a
function of activity X, every class a dependent of X fed an argument must have been fed to the
same argument by X's own cases; each feature is compared on its own.

Set DEPENDENCY_GAPS to a file's path to have each lab's and seed's gaps appended there."""
import os
import time
from dataclasses import replace

import numpy as np
import pytest

from autograder.grading.grade import Clock, Options
from autograder.isolation.sandbox import Limits
from autograder.labs import grading_for
from autograder.labs.contracts import bands_of
from autograder.labs.notebooks import solved_notebook, student_notebook
from autograder.measuring.contract_coverage import describe, gaps, record_lab, recorder_source, undeclared, unrecorded

SEEDS = (0, 7)
OPTIONS = Options(Limits(cell_seconds=30))


# ------------------------------------------------------------------ the comparison, on made-up records
def test_a_tiny_input_from_a_dependent_is_missing_when_the_own_cases_never_fed_one():
    functions_of = {"1a": ("tiny",), "2": ("user",), "3": ("other",), "X": ("apart",)}
    depends = {"2": ("1a",), "3": ("2",)}  # 3 depends on 1a through 2; X on nothing
    records = {
        "1a": {("tiny", "a", "kind", "ndarray"): {"node"}, ("tiny", "a", "band", "+ordinary"): {"node"}},
        "2": {("tiny", "a", "kind", "ndarray"): {"walk"}, ("tiny", "a", "band", "+tiny"): {"walk"}},
        "3": {("tiny", "a", "band", "+tiny"): {"epoch"}, ("tiny", "a", "dtype", "float32"): {"epoch"}},
        "X": {("tiny", "a", "band", "-huge"): {"stray"}},
    }
    found = gaps(records, functions_of, depends)
    assert {(g.function, g.owner, g.argument, g.feature, g.value) for g in found} == {
        ("tiny", "1a", "a", "band", "+tiny"), ("tiny", "1a", "a", "dtype", "float32")}
    tiny = next(g for g in found if g.value == "+tiny")
    assert tiny.fed_by == (("2", ("walk",)), ("3", ("epoch",)))
    assert "lab tiny(a): bands ['+tiny'] fed by 2's cases (walk), 3's cases (epoch) are in no case of 1a" in \
        describe("lab", found)
    # X does not depend on 1a: what it feeds is not compared, only noted.
    assert undeclared(records, functions_of, depends) == {("tiny", "1a"): {"X"}}
    records["1a"][("tiny", "a", "band", "+tiny")] = {"node"}
    records["1a"][("tiny", "a", "dtype", "float32")] = {"node"}
    assert gaps(records, functions_of, depends) == []


def test_the_recorder_classifies_each_argument_and_leaves_the_call_alone():
    class Tensor:
        def __init__(self, data):
            self.data = np.asarray(data, dtype=np.float64)

    namespace = {"np": np, "Tensor": Tensor, "__name__": "__main__"}
    exec("def tiny(a, b=2.0):\n    return a\n", namespace)
    exec(recorder_source(["tiny", "Tensor", "absent"]), namespace)
    # Every band, many entries each: the recorder reduces an array this large before bands_of.
    mixed = np.concatenate([np.geomspace(1e-320, 1e307, 5000), -np.geomspace(1e-12, 10.0, 5000), [0.0, np.nan, np.inf]])
    given = Tensor(mixed)
    assert namespace["tiny"](given) is given and namespace["tiny"].__name__ == "tiny"
    rows = {tuple(row) for row in namespace["_coverage_take"]()}
    assert {band for f, a, feature, band in rows if (a, feature) == ("a", "band")} == set(bands_of(mixed))
    namespace["tiny"]([np.array([1e-12]), np.float32(3.0)], b=np.ones((1, 3), dtype=np.float32))
    rows |= {tuple(row) for row in namespace["_coverage_take"]()}
    assert {("tiny", "a", "kind", "Tensor"), ("tiny", "a", "shape", "1-d"), ("tiny", "a", "dtype", "float64"),
            ("tiny", "a", "kind", "list of float32|ndarray"), ("tiny", "a", "band", "+tiny"),
            ("tiny", "b", "kind", "ndarray"), ("tiny", "b", "dtype", "float32"),
            ("tiny", "b", "shape", "2-d with a size-1 axis")} <= rows
    assert {row[0] for row in rows if row[2] == "unrecorded"} == {"Tensor", "absent"}  # a class stays itself
    assert namespace["_coverage_take"]() == []
    exec("def switch():\n    return 'off'\n", namespace)
    exec(recorder_source(["switch"]), namespace)
    assert namespace["switch"]() == "off" and namespace["_coverage_take"]() == [["switch", "", "call", ""]]


# ------------------------------------------------------------------ the labs
@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_every_input_a_dependent_feeds_a_function_is_in_its_own_activitys_cases(lab, seed, pool):
    grading = grading_for(lab.name, seed)
    notebook = solved_notebook(lab, student_notebook(lab))
    clock = Clock(OPTIONS.limits.submission_seconds)
    started = time.monotonic()
    records, failed, restarts = record_lab(grading, notebook, replace(OPTIONS, pool=pool), clock,
                                           lambda activity: grading.cases[activity])
    print(f"{lab.name} seed {seed}: {time.monotonic() - started:.1f} s wall, {clock.spent:.1f} s of the workers' CPU")
    # What would make the record wrong or partial: the recorder changing an answer, a worker
    # started again (its record begins anew), a function it could not wrap.
    assert {activity: titles for activity, titles in failed.items() if titles} == {}, \
        "the reference fails hidden checks with the recorder in place"
    assert restarts == 0, "a worker was started again during the cases: records were lost"
    assert unrecorded(records) == []
    functions_of = {activity.id: activity.functions for activity in lab.activities.values()}
    lines = describe(lab.name, gaps(records, functions_of, grading.depends))
    # Every function is called by its own activity's cases (test_every_function_probed.py): one
    # the recorder never saw there is one it cannot see, and every dependent's input would look new.
    unseen = [f"{lab.name} {function} of {activity}: the recorder saw no call of it in {activity}'s own cases"
              for activity, names in functions_of.items() for function in names
              if not any(row[0] == function for row in records[activity])]
    if os.environ.get("DEPENDENCY_GAPS"):
        with open(os.environ["DEPENDENCY_GAPS"], "a") as out:
            notes = [f"{lab.name} {function} of {owner} is called by the cases of {', '.join(sorted(by))}, whose "
                     "DEPENDS does not name it (not compared)"
                     for (function, owner), by in sorted(undeclared(records, functions_of, grading.depends).items())]
            out.write(f"## {lab.name}, seed {seed}: {len(lines)} gaps\n"
                      + "".join(f"{line}\n" for line in unseen + lines + notes) + "\n")
    assert unseen + lines == [], (f"inputs that dependents' hidden checks feed, which no hidden check of the "
                                  f"function's own activity does (seed {seed}):\n" + "\n".join(unseen + lines))
