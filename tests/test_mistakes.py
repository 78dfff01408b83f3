"""The checks, checked, for every lab: each catalogued wrong answer must be caught by the
grader, with a message naming the wrong quantity, costing exactly its activity's points and
nothing in the activities that do not call it (those that do are re-graded on the reference
engine: tests/test_grading.py).
The visible checks' catch rate is reported at the end of the run."""
import pytest

from autograder.grading.grade import Options
from autograder.grading.submission import Step, program
from autograder.isolation.sandbox import Limits
from autograder.labs import grading_for
from autograder.labs.notebooks import solved_notebook, student_notebook
from autograder.labs.vocabulary import Mistake
from autograder.measuring.catalogue import (mistaken, patched, run_catalogue, visible_controls, visible_steps,
                                            without_idle_demos)


def test_mistakes_are_distinct(lab):
    descriptions = [m.description for m in grading_for(lab.name).mistakes]
    assert len(set(descriptions)) == len(descriptions)


def test_patching_replaces_only_the_named_function(lab):
    activity = next(a for a in lab.activities.values())
    reference, function = activity.reference.source, activity.functions[0]
    patched_source = patched(reference, f"def {function}(*args):\n    return 'replaced'\n")
    assert patched_source.count(f"def {function}(") == 1 and "return 'replaced'" in patched_source
    assert all(f"def {other}(" in patched_source for other in activity.functions)


def test_the_visible_run_names_cells_as_grading_names_them(lab):
    """The catalogue runs a visible check on the instructor's cells; it names them as grading
    names the cells of the solved release with the wrong answer in it: by their place among all
    its cells, from 1."""
    activity = list(lab.activities.values())[-1]
    wrong = Mistake(activity.id, "a slip", "", f"def {activity.functions[0]}(*args):\n    return 0\n")
    answer, notebook = mistaken(lab, solved_notebook(lab, student_notebook(lab)), wrong)
    steps = visible_steps(lab, activity.id, answer)
    graded = {step.source: step.label for step in program(lab, notebook)}
    given = [step for step in steps if not step.student and step.source in graded]  # demos and checks: not graded
    assert given and all(step.label == graded[step.source] for step in given)
    place = [c.get("id") for c in notebook.cells].index(f"{activity.id}-answer")
    (mine,) = [step for step in steps if step.source == answer]
    assert mine.label == graded[answer] and mine.label.startswith(f"cell {place + 1} (it begins ")
    check = [c.get("id") for c in notebook.cells].index(f"{activity.id}-check")
    assert steps[-1].label.startswith(f"check cell {check + 1} (it begins ")


def test_a_demo_runs_before_a_check_only_when_it_binds_what_a_later_step_reads():
    steps = [Step(source, False, f"cell {n}") for n, source in enumerate([
        "model = make()",                                     # 0 a demo that a later demo reads
        "history = train(model)\nplot(history)",             # 1 a demo whose names nothing reads
        "def check():\n    history = 1\n    return history",  # 2 `history` is its own local
        "tuned = model.fit()",                                # 3 a demo: `tuned` is read by the check
        "model.w[0] = 5",                                     # 4 a demo that changes `model` in place
        "%time spin()",                                       # 5 a demo that cannot be parsed
        "assert check() == 1 and tuned and model",            # 6 the check
    ])]
    kept = [step.label for step in without_idle_demos(steps, demos={0, 1, 3, 4, 5})]
    assert kept == ["cell 0", "cell 2", "cell 3", "cell 4", "cell 5", "cell 6"]


@pytest.fixture(scope="module")
def rows(lab, pool):
    return run_catalogue(lab.name, Options(Limits(cell_seconds=30), pool=pool), jobs=2)


@pytest.mark.slow
def test_grader_catches_every_mistake_and_only_in_its_activity(rows, lab, record_property):
    # Reported at the end of the run (conftest.py), from whichever process ran this test.
    record_property("catch rate", [lab.name, sum(r.visible_caught for r in rows),
                                   sum(r.grader_caught and r.others_intact for r in rows), len(rows)])
    for row in rows:
        what = f"{row.mistake.activity}: {row.mistake.description}"
        assert row.lost == lab.activities[row.mistake.activity].points, f"{what} lost {row.lost}: {row.grader_message}"
        assert row.others_intact, f"{what} cost points in an activity that does not call it: {row.elsewhere}"
        assert row.grader_caught, f"{what}: the message does not mention {row.mistake.hint!r}: {row.grader_message}"


@pytest.mark.slow
def test_every_catalogued_mistake_names_itself(rows, lab):
    """Each mistake is graded on a seed its fingerprint was built from (run_catalogue), so the
    grader's own judging and replay should name it in its activity's feedback. A mistake whose
    engine stops (it hangs or kills the worker) is asked nothing more, so it is not named: a
    replay would cost another limit."""
    wrong = {row.mistake.description: row.named for row in rows
             if not (row.lost and (row.mistake.description in row.named or row.stopped and not row.named))}
    assert wrong == {}, f"catalogued mistakes of {lab.name} that do not name themselves: {wrong}"


@pytest.mark.slow
def test_visible_checks_catch_every_mistake(rows):
    missed = {row.mistake.description: row.visible_message for row in rows if not row.visible_caught}
    assert missed == {}, "a wrong answer that passes the notebook's own checks: " + str(missed)


@pytest.mark.slow
def test_visible_checks_pass_on_the_reference_as_the_catalogue_runs_them(lab, pool):
    """The control for the visible catch rate: each check, run on the code the catalogue gives it
    (the given code of other optional activities left out), passes on the reference answer."""
    assert visible_controls(lab.name, Options(Limits(cell_seconds=30), pool=pool), jobs=2) == {}


@pytest.mark.slow
def test_cold_workers_on_a_busy_machine_judge_the_catalogue_the_same(rows, lab, cpu_hogs):
    """The warm pool is an optimisation only, and limits count CPU time: started cold beside two
    CPU-bound processes, the grader decides the same. The re-run takes the first mistake of each
    activity, so that every activity's hidden checks run cold and slowed down."""
    sample = {}
    for row in rows:
        sample.setdefault(row.mistake.activity, row)
    cold = run_catalogue(lab.name, Options(Limits(cell_seconds=30), warm=False), jobs=2, visible=False,
                         only={row.mistake.description for row in sample.values()})
    assert all(process.poll() is None for process in cpu_hogs), "a CPU hog stopped before the re-run ended"
    assert [(r.mistake.description, r.grader_caught, r.lost, r.others_intact) for r in cold] == \
        [(r.mistake.description, r.grader_caught, r.lost, r.others_intact) for r in sample.values()]
