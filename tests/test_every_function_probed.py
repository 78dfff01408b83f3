"""Every function an activity asks for is probed directly: an answer that is the reference with
only that one function left as a stub must fail the activity, in every lab. Without this an
activity can pass while a function it names still raises NotImplementedError (as vjp_tensor
once did), because no hidden check ever called it. The variants go through the mistake
catalogue's runner, one batch per lab: each stub costs its own activity and nothing in the
activities that do not call it."""
import pytest

from autograder.grading.grade import Options
from autograder.isolation.sandbox import Limits
from autograder.labs.vocabulary import Mistake
from autograder.measuring.catalogue import run_variants


def stubbed_functions(lab):
    """One wrong answer per (activity, function): the reference with that function a stub."""
    return [Mistake(activity.id, f"{activity.id}: {name} left as its stub", "",
                    f"def {name}(*args, **kwargs):\n"
                    f"    raise NotImplementedError('Complete Activity {activity.id}: {name}')\n")
            for activity in lab.activities.values() for name in activity.functions]


def test_there_is_one_stub_per_function(lab):
    made = stubbed_functions(lab)
    assert len(made) == sum(len(a.functions) for a in lab.activities.values())
    assert all(m.code.count("def ") == 1 for m in made)


@pytest.mark.slow
def test_a_stubbed_function_fails_its_activity(lab, pool):
    rows = run_variants(lab.name, stubbed_functions(lab), Options(Limits(cell_seconds=30), pool=pool), jobs=2)
    passed = {row.mistake.description: row.grader_message for row in rows
              if row.lost != lab.activities[row.mistake.activity].points}
    assert passed == {}, "activities that pass with one of their functions a stub (no probe calls it): " + str(passed)
    # Judged on the student's engine: the activities that call the stub fail with it (their
    # re-grade is tests/test_grading.py's), every other one keeps its points.
    elsewhere = {row.mistake.description: row.elsewhere for row in rows if not row.others_intact}
    assert elsewhere == {}, "stubs that cost points in an activity that does not call them: " + str(elsewhere)
