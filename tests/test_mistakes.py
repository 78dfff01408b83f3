"""The checks, checked: every catalogued wrong answer must be caught by the grader, with a
message naming the wrong quantity, costing exactly its activity's points."""
import importlib

import pytest

from autograder.grade import Options
from autograder.catalogue import patched, run_catalogue
from autograder.sandbox import Limits

CATALOGUE = importlib.import_module("autograder.labs.pt03_autodiff.mistakes").MISTAKES
ACTIVITIES = ["1a", "1b", "1c", "2", "3", "A", "B", "C"]
# Mistakes the visible checks may let through, each with the reason that is acceptable.
ACCEPTED_VISIBLE_MISSES = {}


def test_catalogue_covers_every_activity():
    assert len(CATALOGUE) >= 40
    for activity in ACTIVITIES:
        assert sum(m.activity == activity for m in CATALOGUE) >= 3, activity
    assert len({m.description for m in CATALOGUE}) == len(CATALOGUE)


def test_patching_replaces_only_the_named_function(lab):
    reference = lab.activities["1a"].reference.source
    patched_source = patched(reference, "def add_vjp(a, b, v):\n    return v, 0 * v\n")
    assert patched_source.count("def add_vjp") == 1 and "return v, 0 * v" in patched_source
    assert "def matmul_vjp" in patched_source and "def multiply_vjp" in patched_source


@pytest.fixture(scope="module")
def rows():
    return run_catalogue("pt03_autodiff", Options(Limits(cell_seconds=30)), jobs=2)


@pytest.mark.slow
def test_grader_catches_every_mistake_and_only_in_its_activity(rows, lab):
    for row in rows:
        what = f"{row.mistake.activity}: {row.mistake.description}"
        assert row.lost == lab.activities[row.mistake.activity].points, f"{what} lost {row.lost}: {row.grader_message}"
        assert row.others_intact, f"{what} cost points elsewhere"
        assert row.grader_caught, f"{what}: the message does not mention {row.mistake.hint!r}: {row.grader_message}"


@pytest.mark.slow
def test_visible_checks_miss_only_accepted_mistakes(rows):
    missed = {row.mistake.description for row in rows if not row.visible_caught}
    assert missed == set(ACCEPTED_VISIBLE_MISSES), missed
