"""Name the known mistake a failing answer computes.

Every hidden case of an activity leaves a token (autograder/diagnosis/case_tokens.py); the tokens of an
activity's cases are its fingerprint. `python -m autograder fingerprints` runs every catalogued
mistake through the grader on the seeds of FINGERPRINT_SEEDS and stores, per case, the tokens
each mistake gave, and the sketch (autograder/diagnosis/answer_sketch.py) of what it returned on every case
of REPLAY_SEED (autograder/labs/<lab>/fingerprints.json, read by the grader alone: never in the
release or the sandbox); `--check` fails when a lab's file is missing or out of date.

The rule. A name is earned by what the answer computes, not by how a judge words its failure:
two slips that fail the same checks with the same words look alike to tokens (a judge's message
keeps only a coarse kind, "value" or "some entries"), and naming the one the catalogue holds sends
a student with the other to code that is right. So tokens only choose the candidates: the
mistakes whose fingerprint agrees with the answer's on whole tokens, the judges' words alone, or
the kinds alone (the TIERS; a mistake agrees when, on every case, the answer's token is one the
mistake gave on that case for some seed). The grader then asks the answer the cases of
REPLAY_SEED, in the same worker right after judging it, and a candidate is confirmed only when
the answer's reply agrees with the mistake's stored one on every case, within the judges'
tolerance (answer_sketch.same). A diagnosis is made only when the confirmed mistakes share one
advice; otherwise the feedback says nothing more than which check failed, because a wrong
diagnosis is worse than none.
"""
import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from autograder.diagnosis.answer_sketch import same
from autograder.diagnosis.case_tokens import PASSED, kind, words
from autograder.labs import HERE as LABS, catalogued_mistakes, course_labs
from course.labs import ROOT

FINGERPRINTS = "fingerprints.json"
# Whether a case fails can hang on the values a seed draws (a slip seen only at a negative input):
# each case keeps every token these seeds gave.
FINGERPRINT_SEEDS = (11, 12, 13, 14, 15, 16, 17, 18)
# The seed whose cases a failing activity is asked again. A grading asks them right after the
# activity's own cases, in the same worker; the build runs the seeds in order in one worker, so the
# second seed's replies come, as in grading, after one earlier run of the activity's cases (a slip
# that keeps state from call to call then replies alike in both).
REPLAY_SEED = FINGERPRINT_SEEDS[1]
REPLAY = "replay"
# Stored in place of the replay seed's sketch of a case whose reply moved when the build asked it
# again with its inputs nudged one unit in the last place: rounding decides it, and another
# machine's vector code or BLAS rounds otherwise. No sketch is a string of this kind.
ROUNDING = "rounding decides"
SAYS = "Your answer behaves like a known mistake:"


TIERS = (("tokens", lambda token: token), ("words", words), ("kinds", kind))


@dataclass(frozen=True)
class Diagnosis:
    mistakes: tuple  # the descriptions of the catalogued mistakes that agree
    advice: str
    tier: str  # how the mistakes were confirmed: REPLAY (what the answer computes)

    def sentence(self):
        return f"{SAYS} {self.advice}"


def agrees(fingerprint, cases, key=lambda token: token):
    return len(fingerprint) == len(cases) and all(key(t) in {key(k) for k in known}
                                                   for t, known in zip(fingerprint, cases))


def agreeing(fingerprint, known):
    """(tier, [Mistake]) of the first of TIERS on which some of `known` [(Mistake, per-case token
    lists)] agree with `fingerprint`; (None, []) when none does."""
    for tier, key in TIERS:
        matching = [mistake for mistake, cases in known if agrees(fingerprint, cases, key)]
        if matching:
            return tier, matching
    return None, []


def diagnose(fingerprint, known):
    """The Diagnosis by tokens alone of an activity whose cases gave `fingerprint`, among `known`
    [(Mistake, per-case token lists)] of its activity, or None when no mistake, or no one advice,
    agrees. The grader no longer names by it (see `confirm`); `fingerprints --measure` reports it
    beside the replay's, as the rule the replay replaced."""
    if not fingerprint or all(token == PASSED for token in fingerprint):
        return None
    tier, matching = agreeing(fingerprint, known)
    advice = {mistake.advice for mistake in matching}
    if len(advice) != 1:
        return None
    return Diagnosis(tuple(m.description for m in matching), advice.pop(), tier)


def candidates(fingerprint, known):
    """The Mistakes of `known` [(Mistake, per-case token lists)] whose fingerprint agrees with
    `fingerprint` on any of TIERS: those worth asking the answer the replay's cases for. Words and
    kinds each relax whole tokens, neither the other, so a mistake may agree on either alone."""
    if not fingerprint or all(token == PASSED for token in fingerprint):
        return []
    return [mistake for mistake, cases in known if any(agrees(fingerprint, cases, key) for _, key in TIERS)]


def confirm(sketches, replayed):
    """The Diagnosis of an answer whose replies to REPLAY_SEED's cases have `sketches`, among
    `replayed` [(Mistake, its stored sketches)]: the mistakes whose replies agree on every case,
    named when they share one advice; None otherwise. A stored sketch of ROUNDING is a case
    whose reply rounding decides: it is not compared, and a mistake with no other case is never
    named."""
    if not sketches:
        return None
    matching = [mistake for mistake, stored_sketches in replayed
                if len(stored_sketches) == len(sketches) and any(s != ROUNDING for s in stored_sketches)
                and all(stored_sketch == ROUNDING or same(mine, stored_sketch)
                        for mine, stored_sketch in zip(sketches, stored_sketches))]
    advice = {mistake.advice for mistake in matching}
    if len(advice) != 1:
        return None
    return Diagnosis(tuple(m.description for m in matching), advice.pop(), REPLAY)


def inputs_digest(lab, mistakes):
    """What the fingerprints depend on: the lab's notebook, data, cases, contracts and probes, each of its
    `mistakes`' activity, description and code (not its advice), the grader's judging words and
    the seeds."""
    here = Path(__file__).parent
    folder = LABS / lab.name
    files = [lab.path, folder / "cases.py", folder / "probes.py", *sorted(folder.glob("contracts.py")),
             LABS / "vocabulary.py", LABS / "contracts.py", here / "case_tokens.py", here / "answer_sketch.py",
             *(ROOT / "data" / name for name in lab.data_files)]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.read_bytes())
    for mistake in mistakes:
        digest.update(json.dumps([mistake.activity, mistake.description, mistake.code]).encode())
    digest.update(json.dumps([FINGERPRINT_SEEDS, REPLAY_SEED]).encode())
    return digest.hexdigest()


REBUILD = "python -m autograder fingerprints --lab {lab}"


def fingerprints_path(lab_name):
    return LABS / lab_name / FINGERPRINTS


@cache
def stored(lab_name):
    """The stored fingerprints of `lab_name`'s catalogue, {description: {"cases": per-case token
    sets, "sketches": per-case sketches of REPLAY_SEED}}, or None when the file is missing,
    unreadable or out of date (the grader then names nothing)."""
    try:
        data = json.loads(fingerprints_path(lab_name).read_text())
    except (OSError, ValueError):
        return None
    try:  # the catalogue alone: checking the lab would compute a seed's cases that no one may ask for
        mistakes = catalogued_mistakes(lab_name)
    except Exception:  # a lab's own bug, which its check reports when a submission asks for it
        return None
    if not isinstance(data, dict) or data.get("inputs") != inputs_digest(course_labs()[lab_name], mistakes):
        return None
    replies = data.get("replies", [])  # each distinct sketch once: most cases' replies are alike
    try:
        return {entry["description"]: {**entry, "sketches": [replies[i] for i in entry.get("sketches", ())]}
                for entry in data.get("mistakes", ())}
    except (IndexError, TypeError):
        return None


def known_for(grading, activity):
    """[(Mistake, per-case tokens)] of `activity`, from the stored fingerprints; [] without them."""
    return [(m, entry["cases"]) for m, entry in _entries(grading, activity)]


def replayed_for(grading, activity):
    """[(Mistake, per-case sketches of REPLAY_SEED)] of `activity`; [] without stored fingerprints."""
    return [(m, entry.get("sketches") or []) for m, entry in _entries(grading, activity)]


def _entries(grading, activity):
    prints = stored(grading.lab.name)
    if prints is None:
        return []
    return [(m, prints[m.description]) for m in grading.mistakes
            if m.activity == activity and m.description in prints]
