"""A failing answer is matched against its lab's catalogue of known wrong answers
(autograder/diagnosis/matching.py): the tokens a hidden case leaves, which choose the candidates; the
sketches of what an answer replied (autograder/diagnosis/answer_sketch.py), which confirm one; the stored
fingerprints kept current; the replay's time, which is the grader's; and, graded, that the lab's
variants (answers the fingerprints were not built from) are named rightly and often, and that its
strangers (slips the catalogue lacks) are not. That every catalogued mistake names itself is read
from the catalogue's own gradings (tests/test_mistakes.py)."""
import json
import time
from dataclasses import replace

import nbformat
import numpy as np
import pytest

from autograder.diagnosis import matching as diagnosis
from autograder.diagnosis.answer_sketch import sketch, same
from autograder.diagnosis.case_tokens import NOT_RUN, PASSED, STOPPED, failed, raised
from autograder.diagnosis.matching import (REBUILD, REPLAY, ROUNDING, SAYS, candidates, confirm, diagnose, known_for,
                                           stored)
from autograder.grading import grade as grading_module
from autograder.grading.grade import Clock, Options, error_kind, grade
from autograder.grading.submission import Step
from autograder.isolation import sandbox
from autograder.isolation.sandbox import Limits
from autograder.isolation.worker import Opaque, encode
from autograder.labs import grading_for
from autograder.labs.notebooks import solved_notebook, student_notebook
from autograder.labs.vocabulary import Mistake
from autograder.measuring.catalogue import mistaken, nudge
from autograder.measuring.fingerprints import (check, measure, rates, stranger_answers, strangers,
                                               variant_answers, variants)

# A seed of none of the fingerprints', the same in every run: the measure is of answers and
# inputs the fingerprints were not built from, and it does not change from one run to the next.
FRESH_SEED = 99
PRECISION, COVERAGE = 0.98, 0.60
# A hidden check's CPU limit in the measures, as in the catalogue (tests/test_mistakes.py): a
# solved case takes milliseconds, so only an answer that never finishes meets it, and that answer
# fails either way. At grading's 60 s, pt03_autodiff's one such variant cost 30 s more.
MEASURED = Options(Limits(cell_seconds=30))


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


def test_running_out_of_memory_is_one_token_whichever_allocation_noticed():
    kinds = [error_kind({"error": kind}) for kind in ("MemoryError", "MemoryError (_ArrayMemoryError)")]
    assert kinds == ["MemoryError", "MemoryError"]
    assert error_kind({"error": "ValueError (Mine)"}) == "ValueError (Mine)", "other subclasses stay apart"
    assert error_kind({"error": "MemoryErrors"}) == "MemoryErrors" and error_kind({}) == "?"


def mistake(description, advice, activity="1"):
    return Mistake(activity, description, "", "def f():\n    pass\n", advice=advice)


WRONG = "value · x.grad is #, expected #"
HALF = "half · x.grad is #, expected #"
SIGN = "sign · x.grad is #, expected #"


ONES, ZEROS, TWOS = sketch(np.ones(3)), sketch(np.zeros(3)), sketch(np.full(3, 2.0))


def test_a_fingerprint_that_agrees_with_one_mistake_names_it_when_its_replies_agree():
    assign, halve = mistake("assigns", "add, do not assign"), mistake("halves", "the factor 2")
    known = [(assign, [[PASSED], [WRONG], [WRONG, PASSED]]), (halve, [[HALF], [HALF], [HALF]])]
    assert candidates((PASSED, WRONG, PASSED), known) == [assign]
    found = confirm([ONES, ZEROS, ONES], [(assign, [ONES, ZEROS, ONES])])
    assert found.mistakes == ("assigns",) and found.tier == REPLAY and found.advice == "add, do not assign"
    assert found.sentence() == f"{SAYS} add, do not assign"
    assert confirm([ONES, TWOS, ONES], [(assign, [ONES, ZEROS, ONES])]) is None, \
        "the same checks failed with the same words, but the answer computes something else: no name"


def test_a_passing_answer_or_one_no_mistake_explains_is_not_named():
    known = [(mistake("assigns", "add"), [[PASSED], [WRONG]])]
    for fingerprint in [(PASSED, PASSED), (WRONG, WRONG), (PASSED, raised("KeyError"))]:
        assert candidates(fingerprint, known) == [] and diagnose(fingerprint, known) is None, fingerprint
    assert candidates((PASSED, WRONG), []) == [] and diagnose((PASSED, WRONG), []) is None, \
        "without fingerprints nothing is named"
    assert confirm([], [(known[0][0], [])]) is None and confirm([ONES], []) is None
    assert confirm([ONES, ZEROS], [(known[0][0], [ONES])]) is None, "a reply per case, or none"


def test_mistakes_that_agree_are_named_only_when_their_advice_is_one():
    alike = [(mistake("a", "one advice"), [ZEROS]), (mistake("b", "one advice"), [ZEROS])]
    assert confirm([ZEROS], alike).mistakes == ("a", "b")
    differing = [(mistake("a", "one advice"), [ZEROS]), (mistake("b", "another"), [ZEROS])]
    assert confirm([ZEROS], differing) is None, "the replies cannot tell them apart: say nothing"
    assert confirm([ZEROS], [differing[0], (differing[1][0], [ONES])]).mistakes == ("a",), \
        "a candidate whose replies differ does not count against one whose replies agree"


def test_a_case_whose_reply_rounding_decides_is_not_compared():
    """The build stores ROUNDING for a case whose reply moved when its inputs were nudged by one
    unit in the last place (a Newton step through a nearly singular Hessian): another machine's
    rounding may move it as far, so a reply there neither confirms nor rules out the mistake. A
    reply of None is a sketch like any other."""
    steady = mistake("steady", "one advice")
    assert confirm([ONES, TWOS], [(steady, [ONES, ROUNDING])]).mistakes == ("steady",)
    assert confirm([ONES, ZEROS], [(steady, [ONES, ROUNDING])]).mistakes == ("steady",)
    assert confirm([TWOS, ZEROS], [(steady, [ONES, ROUNDING])]) is None, "the other cases still decide"
    assert confirm([ONES, ONES], [(steady, [ROUNDING, ROUNDING])]) is None, "nothing left to compare: no name"
    assert confirm([ONES, ONES], [(steady, [ONES, ROUNDING]), (mistake("other", "another"), [ROUNDING, ONES])]) \
        is None, "two mistakes that a reply may agree with both, and two advices: say nothing"
    assert confirm([ONES, ONES], [(steady, [ONES, sketch(None)])]) is None, "a function that returned None"


def test_a_nudge_moves_every_float_one_step_away_from_zero_and_nothing_else():
    x = np.array([[1.5, -2.0, 0.0, 5e-324], [np.inf, -0.0, 1e-300, np.nan]])
    args = {"x": x, "steps": 3, "lr": 0.1, "flags": (True, np.float32(-4.0)), "ids": np.arange(3),
            "nested": [{"w": x.astype(np.float32)}], "name": "relu", "zero": 0.0, "tiny": 5e-324}
    moved = nudge(args)
    assert moved["x"].dtype == x.dtype and moved["x"].shape == x.shape
    assert moved["x"][0, 0] == np.nextafter(1.5, 2) and moved["x"][0, 1] == np.nextafter(-2.0, -3)
    assert moved["x"][1, 2] > 1e-300 and np.all(moved["x"][x == 0] == 0) and np.signbit(moved["x"][1, 1])
    assert moved["x"][0, 3] == 1e-323 and moved["tiny"] == 1e-323, "the smallest subnormal, twice as large"
    assert moved["x"][1, 0] == np.inf and np.isnan(moved["x"][1, 3])
    assert moved["zero"] == 0.0 and moved["steps"] == 3 and moved["name"] == "relu"
    assert moved["lr"] == np.nextafter(0.1, 1) and type(moved["lr"]) is float
    assert moved["flags"][0] is True and moved["flags"][1] == np.nextafter(np.float32(-4), np.float32(-5))
    assert type(moved["flags"]) is tuple and moved["ids"].tolist() == [0, 1, 2]
    assert moved["nested"][0]["w"].dtype == np.float32 and np.all(np.abs(moved["nested"][0]["w"][0, :2]) > [1.5, 2])
    assert x[0, 0] == 1.5, "the case's own inputs are left as they were"


def test_every_tier_chooses_candidates_and_only_the_replay_decides():
    sign, halve = mistake("sign", "the sign"), mistake("halves", "the factor")
    known = [(sign, [[SIGN], [PASSED]]), (halve, [["half · the loss is #, expected #"], [PASSED]])]
    assert candidates((SIGN, PASSED), known) == [sign]
    assert candidates((WRONG, PASSED), known) == [sign], "the seed's values gave no exact negation: the words agree"
    assert candidates(("half · the gradient is #, expected #", PASSED), known) == [halve], "the kind agrees"
    # Tokens alone, the rule the replay replaced, named the first tier's mistake; it is still measured.
    assert diagnose((WRONG, PASSED), known).tier == "words"


def test_a_sketch_is_plain_json_and_survives_a_round_trip():
    rng = np.random.default_rng(5)
    reply = {"W": rng.normal(size=(30, 20)), "loss": 0.25, "names": ["x", "y"], "flag": True, "none": None,
             "node": Opaque("an object of type Node"), "small": np.arange(3), "step": np.int64(4),
             "odd": np.array([np.nan, np.inf, -np.inf, 1.0]), "long": [float(i) for i in range(100)]}
    drawn = sketch(reply, [np.ones(2), "seen"])
    again = json.loads(json.dumps(drawn, allow_nan=False))
    assert again == drawn and same(again, sketch(reply, [np.ones(2), "seen"]))
    assert len(json.dumps(sketch(rng.normal(size=(500, 1000))))) < 400, "a large array sketches small"
    assert not same(drawn, sketch(reply)), "observations count"
    assert same(grading_module.sketched(None, {"error": "KeyError"}), ["raises", "KeyError"])


@pytest.mark.parametrize("shape", [(5,), (40, 30), (200_000,)], ids=["whole", "projected", "large"])
def test_same_agrees_within_the_tolerance_and_parts_a_one_entry_slip(shape):
    rng = np.random.default_rng(6)
    a = rng.normal(size=shape)
    assert same(sketch(a), sketch(a * (1 + 1e-12))), "rounding is no slip"
    slipped = a.copy()
    slipped.flat[3] += 1e-2
    assert not same(sketch(a), sketch(slipped)), "one entry off"
    assert not same(sketch(a), sketch(a.reshape(-1, 1))), "another shape"
    assert not same(sketch(a), sketch(-a)) and not same(sketch(a), sketch(2 * a))
    nan = a.copy()
    nan.flat[0] = np.nan
    assert not same(sketch(a), sketch(nan)) and same(sketch(nan), sketch(nan.copy()))


def test_same_tells_kinds_and_containers_apart():
    assert not same(sketch(np.ones(3)), sketch(np.ones(3, dtype=int))), "the dtype's kind"
    assert not same(sketch([1.0, 2.0]), sketch((1.0, 2.0))) and not same(sketch([1.0]), sketch([1.0, 2.0]))
    assert not same(sketch(1.0), sketch(np.float64(1.0 + 1e-6))) and same(sketch(1.0), sketch(1.0 + 1e-13))
    assert not same(sketch("digraph {}"), sketch("digraph { }")) and not same(sketch(None), sketch(0.0))
    assert not same(sketch({"a": 1.0}), sketch({"b": 1.0})) and not same(sketch(True), sketch(1.0))


def test_the_replays_of_a_submission_together_get_as_many_seconds_as_it():
    """A worker's CPU limit counts the replays' seconds too (sandbox.rlimits): a refund gives the
    submission back its time, never its process's, so the replays have a limit of their own."""
    clock, session = Clock(10.0), _Session()
    session.worker.seconds = 3.0
    with clock.refunded(session):
        session.worker.seconds += 6.0
    assert clock.left(session.worker) == pytest.approx(7.0), "the submission keeps its own 7 s"
    with pytest.raises(grading_module.OutOfTime), clock.refunded(session):
        session.worker.seconds += 3.0
        assert clock.left(session.worker) == pytest.approx(1.0), "the replays have 10 s, and used 9"
        session.worker.seconds += 1.0
        clock.left(session.worker)
    assert clock.left(session.worker) == pytest.approx(7.0) and clock.refunds == pytest.approx(10.0)
    assert 2 * clock.seconds <= sandbox.rlimits(Limits(submission_seconds=clock.seconds))["RLIMIT_CPU"][0], \
        "a worker's CPU limit holds the submission's seconds and its replays'"


def test_a_reply_naming_nodes_by_their_ids_sketches_alike_in_every_run():
    """to_dot's nodes are named n<id>, which changes from run to run: the sketch keeps the graph
    with each node named by its place in the spec, so a slip sketches alike in the catalogue's run
    and the student's, and a reversed edge or a missing frame still sketches otherwise."""
    case = next(c for c in grading_for("tensor_engine").cases["F"] if len(c.args["spec"]) == 3)

    def dot(names, edges, frame=("digraph tape {", "}")):
        rows = [f'{n} [label="x"];' for n in names] + [f"{a} -> {b};" for a, b in edges]
        return "\n".join([frame[0], *rows, frame[1]])

    def sketched(names, edges, **frame):
        reply = {"value": encode(dot(names, edges, **frame)), "observations": [encode(list(names))]}
        return grading_module.sketched(case, reply)

    first, second = ["n11", "n12", "n13"], ["n71", "n5", "n9"]
    assert same(sketched(first, [("n11", "n12")]), sketched(second, [("n71", "n5")]))
    assert not same(sketched(first, [("n11", "n12")]), sketched(second, [("n5", "n71")]))
    assert not same(sketched(first, []), sketched(first, [], frame=("graph {", "}")))


class _Worker:
    def __init__(self):
        self.seconds, self.received, self.parsing = 0.0, 0, 0.0

    def used(self):
        return self.seconds


class _Session:
    def __init__(self):
        self.worker, self.reference_worker = _Worker(), None


def test_the_replays_time_and_bytes_are_refunded_even_when_it_fails():
    clock, session = Clock(10.0), _Session()
    session.worker.seconds = 3.0  # the submission's own, before the replay
    backstop = clock.backstop
    with clock.refunded(session):
        session.worker.seconds += 4.0
        session.worker.received += 1000
        time.sleep(0.05)
    assert clock.spent == -4.0 and clock.received == -1000 and clock.backstop >= backstop + 0.05, \
        "the worker still holds the 4 s and 1000 bytes it will charge on closing"
    with pytest.raises(grading_module.OutOfTime), clock.refunded(session):
        session.worker.seconds += 2.0
        clock.charge(session.worker)  # the worker closed inside the replay: it charged all it used
        session.worker = None
        raise grading_module.OutOfTime("used up its time")
    assert clock.spent == pytest.approx(3.0) and clock.received == 0, "only the submission's own 3 s stay"


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
def test_variants_are_named_rightly_and_often(lab, pool):
    measured = measure(lab.name, variant_answers(lab.name), FRESH_SEED, replace(MEASURED, pool=pool),
                       jobs=2)
    failing, diagnosed, right = rates(measured)
    wrongly = {m.answer: (m.of, m.named) for m in measured if m.failed and m.named and not m.right}
    assert failing == len(measured), [m.answer for m in measured if not m.failed]
    assert right >= PRECISION * diagnosed, f"{lab.name}: named wrongly: {wrongly}"
    assert diagnosed >= COVERAGE * failing, f"{lab.name}: {diagnosed} of {failing} variants named"


def test_every_lab_has_strangers_of_its_own(lab):
    """Slips the catalogue lacks, several beside the activities whose mistakes look alike."""
    answers = stranger_answers(lab.name)
    assert len(answers) >= 8 and all(of == "" for _, of in answers)
    descriptions = {m.description for m in grading_for(lab.name).mistakes}
    assert not descriptions & {m.description for m, _ in answers}


@pytest.mark.slow
def test_strangers_fail_and_are_not_named(lab, pool):
    """Tokens alone named some of them (the same checks failed with the same words); the replay
    sees that they compute something else."""
    measured = measure(lab.name, stranger_answers(lab.name), FRESH_SEED, replace(MEASURED, pool=pool),
                       jobs=2)
    assert all(m.failed for m in measured), [m.answer for m in measured if not m.failed]
    named = {m.answer: m.named for m in measured if m.named}
    assert named == {}, f"{lab.name}: strangers named as catalogued mistakes: {named}"


def _burning(seconds, replay):
    """`replay` (grade.replay_activity) made slow: the submission's worker first spins for `seconds`
    of its own time, as a slow engine would on the replay's cases."""
    def slow(session, probes, cases):
        spin = f"import time as _t\n_end = _t.process_time() + {seconds}\nwhile _t.process_time() < _end:\n    pass\n"
        session.run(session.worker, Step(spin, False, "spin"), seconds * 10 + 30)
        return replay(session, probes, cases)

    return slow


@pytest.mark.slow
def test_a_slow_replay_costs_the_submission_nothing(tmp_path, monkeypatch):
    """Its worker time is refunded: a replay slower than the time the submission has left keeps the
    score and status, and only loses the diagnosis; a shorter one keeps the diagnosis too."""
    lab = grading_for("pt03_autodiff").lab
    known = next(m for m in grading_for(lab.name).mistakes if m.description == "multiply_vjp swaps the two factors")
    path = tmp_path / "slow-replay.ipynb"
    nbformat.write(mistaken(lab, solved_notebook(lab, student_notebook(lab)), known)[1], path)
    plain, _ = grade(path, Options(seed=FRESH_SEED))
    assert plain["extra_data"]["diagnoses"][known.activity]["mistakes"] == [known.description]
    spent = plain["extra_data"]["cpu_seconds"]
    margin = max(10.0, spent)  # a loaded machine's noise: a run beside CPU hogs has taken 1.3 times the CPU seconds
    limits = Limits(submission_seconds=spent + margin)
    # A limit this tight brings the wall-clock backstop (WALL_FACTOR times it) within reach of a
    # machine busy enough that a second of CPU takes eight of waiting: that cost an activity in a
    # run beside CPU hogs. What is measured here is CPU seconds; the backstop is set out of reach.
    monkeypatch.setattr(grading_module, "WALL_FACTOR", 1000)
    monkeypatch.setattr(sandbox, "WALL_FACTOR", 1000)
    replay = grading_module.replay_activity
    # The second spins for longer than the whole limit: charged, it would time out every activity after it.
    for burn, named in ((1.0, True), (spent + margin + 1.0, False)):
        monkeypatch.setattr(grading_module, "replay_activity", _burning(burn, replay))
        slow, _ = grade(path, Options(limits=limits, seed=FRESH_SEED))
        said = (burn, spent, slow["extra_data"]["cpu_seconds"], [t["output"] for t in slow["tests"] if not t["score"]])
        assert (slow["status"], slow["score"]) == (plain["status"], plain["score"]) == ("graded", slow["score"]), said
        assert [t["score"] for t in slow["tests"]] == [t["score"] for t in plain["tests"]]
        assert slow["extra_data"]["cpu_seconds"] < spent + margin, "the replay's seconds are not the submission's"
        assert (known.activity in slow["extra_data"]["diagnoses"]) == named, burn


@pytest.mark.slow
def test_a_stranger_failing_the_same_checks_as_a_catalogued_mistake_is_not_named(pool):
    """add_vjp returning -v for b fails add_vjp's checks with the words "add_vjp gives b no adjoint"
    fails them with: tokens alone named that mistake. What it computes is not zeros."""
    stranger = next(pair for pair in stranger_answers("pt03_autodiff")
                    if pair[0].description == "add_vjp negates the second input's adjoint")
    (measured,) = measure("pt03_autodiff", [stranger], FRESH_SEED, replace(MEASURED, pool=pool),
                          jobs=1)
    assert measured.failed and measured.by_tokens == ("add_vjp gives the second input no adjoint",)
    assert measured.named == ()
