"""A failing answer is matched against its lab's catalogue of known wrong answers
(autograder/diagnosis.py): the tokens a hidden case leaves, the matching rule, the stored
fingerprints kept current, and, graded, that every catalogued mistake names itself and that the
lab's variants (answers the fingerprints were not built from) are named rightly and often."""
import pytest

from autograder.case_tokens import NOT_RUN, PASSED, STOPPED, failed, raised
from autograder import diagnosis
from autograder.diagnosis import FINGERPRINT_SEEDS, REBUILD, SAYS, diagnose, known_for, stored
from autograder.fingerprints import catalogue_answers, check, measure, rates, variant_answers, variants
from autograder.grade import Options
from autograder.labs import grading_for
from autograder.sandbox import Limits
from autograder.vocabulary import Mistake

# A seed of none of the fingerprints', the same in every run: the measure is of answers and
# inputs the fingerprints were not built from, and it does not change from one run to the next.
FRESH_SEED = 99
PRECISION, COVERAGE = 0.95, 0.60


@pytest.mark.parametrize("message, kind", [
    ("x.grad: shape (3, 4), expected (4, 3)", "transposed"),
    ("x.grad: shape (3,), expected (3, 1)", "shape"),
    ("a.grad after out._backward() is -2.5, expected 2.5", "sign"),
    ("the loss is 0, expected 0.693147", "zero"),
    ("w.grad: got 6, expected 3", "double"),
    ("w.grad: got 1.5, expected 3", "half"),
    ("w.grad: got nan, expected 3", "nonfinite"),
    ("x.grad: 2 of 12 entries are wrong; at index (0, 1) got 1e-3, expected 2e-3", "some entries"),
    ("x.grad: 12 of 12 entries are wrong; at index (0, 1) got 4, expected 2", "double"),
    ("x after the call: 1 of 5 entries is wrong; got 0 at (3,), expected -0.5", "some entries"),
    ("w.grad: got 2.7, expected 3", "value"),
    ("topological_order listed a node more than once", "other"),
])
def test_a_wrong_answer_leaves_the_kind_its_message_shows(message, kind):
    assert failed("some case", f"some case: {message}").split(" · ")[0] == kind


def test_a_token_keeps_the_judges_words_without_the_seeds_numbers():
    one = failed("case 3", "case 3: x.grad: 1 of 12 entries is wrong; at index (0, 1) got 0.25, expected 1.5")
    other = failed("case 3", "case 3: x.grad: 4 of 12 entries are wrong; at index (2, 0) got -7, expected 1e-3")
    assert one == other == "some entries · x.grad: # of # entries is wrong; at index (#, #) got #, expected #"
    assert "W1" in failed("t", "t: W1.grad: got 1, expected 2"), "a name's digits are not a drawn number"
    assert raised("ZeroDivisionError") != raised("KeyError") and len({PASSED, STOPPED, NOT_RUN}) == 3


def mistake(description, advice, activity="1"):
    return Mistake(activity, description, "", "def f():\n    pass\n", advice=advice)


WRONG = "value · x.grad is #, expected #"
HALF = "half · x.grad is #, expected #"
SIGN = "sign · x.grad is #, expected #"


def test_a_fingerprint_that_agrees_with_one_mistake_names_it():
    assign, halve = mistake("assigns", "add, do not assign"), mistake("halves", "the factor 2")
    known = [(assign, [[PASSED], [WRONG], [WRONG, PASSED]]), (halve, [[HALF], [HALF], [HALF]])]
    found = diagnose((PASSED, WRONG, PASSED), known)
    assert found.mistakes == ("assigns",) and found.advice == "add, do not assign" and found.tier == "tokens"
    assert found.sentence() == f"{SAYS} add, do not assign"


def test_a_passing_answer_or_one_no_mistake_explains_is_not_named():
    known = [(mistake("assigns", "add"), [[PASSED], [WRONG]])]
    assert diagnose((PASSED, PASSED), known) is None
    assert diagnose((WRONG, WRONG), known) is None, "a case the mistake passes fails: not this mistake"
    assert diagnose((PASSED, raised("KeyError")), known) is None
    assert diagnose((PASSED, WRONG), []) is None, "without fingerprints nothing is named"


def test_mistakes_that_agree_are_named_only_when_their_advice_is_one():
    same = [(mistake("a", "one advice"), [[WRONG]]), (mistake("b", "one advice"), [[WRONG]])]
    assert diagnose((WRONG,), same).mistakes == ("a", "b")
    differing = [(mistake("a", "one advice"), [[WRONG]]), (mistake("b", "another"), [[WRONG]])]
    assert diagnose((WRONG,), differing) is None, "the cases cannot tell them apart: say nothing"


def test_the_tiers_relax_the_kind_then_the_words_and_the_first_that_agrees_decides():
    sign, halve = mistake("sign", "the sign"), mistake("halves", "the factor")
    known = [(sign, [[SIGN], [PASSED]]), (halve, [["half · the loss is #, expected #"], [PASSED]])]
    assert diagnose((SIGN, PASSED), known).tier == "tokens"
    by_words = diagnose((WRONG, PASSED), known)  # the seed's values gave no exact negation
    assert by_words.mistakes == ("sign",) and by_words.tier == "words"
    by_kind = diagnose(("half · the gradient is #, expected #", PASSED), known)
    assert by_kind.mistakes == ("halves",) and by_kind.tier == "kinds"


def test_the_stored_fingerprints_are_current(lab):
    assert check([lab.name]) == [], f"rebuild them: {REBUILD.format(lab=lab.name)}"


@pytest.mark.parametrize("text", [None, "{not json", '{"inputs": "an older digest", "mistakes": []}'])
def test_a_missing_unreadable_or_stale_file_names_nothing_and_says_how_to_rebuild(text, tmp_path, monkeypatch):
    lab_name, path = "scalar_engine", tmp_path / "fingerprints.json"
    if text is not None:
        path.write_text(text)
    monkeypatch.setattr(diagnosis, "fingerprints_path", lambda name: path)
    stored.cache_clear()
    try:
        assert stored(lab_name) is None
        assert known_for(grading_for(lab_name), "1a") == []
        assert REBUILD.format(lab=lab_name) in check([lab_name])[0]
    finally:
        stored.cache_clear()


def test_every_catalogued_mistake_has_its_advice_and_variants(lab):
    grading = grading_for(lab.name)
    assert all(m.advice.strip() for m in grading.mistakes)
    descriptions = {m.description for m in grading.mistakes}
    assert variants(lab.name), f"{lab.name} has no variants.py"
    assert {v.of for v in variants(lab.name)} <= descriptions


@pytest.mark.slow
def test_every_catalogued_mistake_names_itself(lab):
    """On a seed the fingerprints were built from, through the grader's own judging."""
    measured = measure(lab.name, catalogue_answers(lab.name), FINGERPRINT_SEEDS[0],
                       Options(Limits(cell_seconds=60)), jobs=2)
    wrong = {m.answer: m.named for m in measured if not (m.failed and m.right)}
    assert wrong == {}, f"catalogued mistakes of {lab.name} that do not name themselves: {wrong}"


@pytest.mark.slow
def test_variants_are_named_rightly_and_often(lab):
    measured = measure(lab.name, variant_answers(lab.name), FRESH_SEED, Options(Limits(cell_seconds=60)), jobs=2)
    failing, diagnosed, right = rates(measured)
    wrongly = {m.answer: (m.of, m.named) for m in measured if m.failed and m.named and not m.right}
    assert failing == len(measured), [m.answer for m in measured if not m.failed]
    assert right >= PRECISION * diagnosed, f"{lab.name}: named wrongly: {wrongly}"
    assert diagnosed >= COVERAGE * failing, f"{lab.name}: {diagnosed} of {failing} variants named"
