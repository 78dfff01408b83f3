"""Every function an activity asks for is probed directly: an answer that is the reference with
only that one function left as a stub must fail the activity, in every lab. Without this an
activity can pass while a function it names still raises NotImplementedError (as vjp_tensor
once did), because no hidden check ever called it. The variants go through the mistake
catalogue's runner, one batch per lab, re-grades included: each stub costs its own activity and
nothing else."""
import pytest

from autograder.catalogue import run_variants
from autograder.grade import Options
from autograder.sandbox import Limits
from autograder.vocabulary import Mistake


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
def test_a_stubbed_function_fails_its_activity(lab):
    rows = run_variants(lab.name, stubbed_functions(lab), Options(Limits(cell_seconds=30)), jobs=2)
    passed = {row.mistake.description: row.grader_message for row in rows
              if row.lost != lab.activities[row.mistake.activity].points}
    assert passed == {}, "activities that pass with one of their functions a stub (no probe calls it): " + str(passed)
    # The catalogue leaves the re-grade out: here each stub shows that it costs nothing elsewhere,
    # the activities that call it being judged again on the reference engine.
    elsewhere = [row.mistake.description for row in rows if not row.others_intact]
    assert elsewhere == [], "stubs that cost points outside their activity: " + str(elsewhere)
