"""Name the known mistake a failing answer behaves like.

Every hidden case of an activity leaves a token (autograder/case_tokens.py); the tokens of an
activity's cases are its fingerprint. `python -m autograder fingerprints` runs every catalogued
mistake through the grader on the seeds of FINGERPRINT_SEEDS and stores, per case, the tokens
each mistake gave (autograder/labs/<lab>/fingerprints.json, read by the grader alone: never in
the release or the sandbox); `--check` fails when a lab's file is missing or out of date.

The rule. A failing activity is compared with its activity's mistakes in three tiers: on
whole tokens; then, if no mistake agrees there, on the judges' words alone (a kind such as
`some entries` or `zero` can hang on the seed's values); then on the kinds alone. A mistake
agrees when, on every case, the answer's token is one the mistake gave on that case for some
seed. At the first tier where any mistake agrees, a diagnosis is made only when every mistake
that agrees carries the same advice: one slip, or several that share their advice. A pass/fail
pattern agreeing case for case over every hidden case of an activity (a few dozen, across input
classes), each failure of the same kind, is strong evidence; mistakes with different advice
agreeing mean the cases cannot tell them apart, and the feedback then says nothing more than
which check failed, because a wrong diagnosis is worse than none.
"""
import hashlib
import json
from dataclasses import dataclass
from functools import cache

from autograder.case_tokens import PASSED, kind, words
from autograder.labs import HERE as LABS, catalogued_mistakes, course_labs
from course.labs import ROOT

FINGERPRINTS = "fingerprints.json"
# Whether a case fails can hang on the values a seed draws (a slip seen only at a negative input):
# each case keeps every token these seeds gave.
FINGERPRINT_SEEDS = (11, 12, 13, 14, 15, 16, 17, 18)
SAYS = "Your answer behaves like a known mistake:"


TIERS = (("tokens", lambda token: token), ("words", words), ("kinds", kind))


@dataclass(frozen=True)
class Diagnosis:
    mistakes: tuple  # the descriptions of the catalogued mistakes that agree
    advice: str
    tier: str  # the first of TIERS on which a mistake agrees

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
    """The Diagnosis of an activity whose cases gave `fingerprint`, among `known` [(Mistake,
    per-case token lists)] of its activity, or None when no mistake, or no one advice, agrees."""
    if not fingerprint or all(token == PASSED for token in fingerprint):
        return None
    tier, matching = agreeing(fingerprint, known)
    advice = {mistake.advice for mistake in matching}
    if len(advice) != 1:
        return None
    return Diagnosis(tuple(m.description for m in matching), advice.pop(), tier)


def inputs_digest(lab, mistakes):
    """What the fingerprints depend on: the lab's notebook, data, cases and probes, each of its
    `mistakes`' activity, description and code (not its advice), the grader's judging words and
    the seeds."""
    grader = LABS.parent
    files = [lab.path, LABS / lab.name / "cases.py", LABS / lab.name / "probes.py", grader / "vocabulary.py",
             grader / "case_tokens.py", *(ROOT / "data" / name for name in lab.data_files)]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.read_bytes())
    for mistake in mistakes:
        digest.update(json.dumps([mistake.activity, mistake.description, mistake.code]).encode())
    digest.update(json.dumps(FINGERPRINT_SEEDS).encode())
    return digest.hexdigest()


REBUILD = "python -m autograder fingerprints --lab {lab}"


def fingerprints_path(lab_name):
    return LABS / lab_name / FINGERPRINTS


@cache
def stored(lab_name):
    """The stored fingerprints of `lab_name`'s catalogue, {description: per-case token sets}, or
    None when the file is missing, unreadable or out of date (the grader then names nothing)."""
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
    return {entry["description"]: entry["cases"] for entry in data.get("mistakes", ())}


def known_for(grading, activity):
    """[(Mistake, per-case tokens)] of `activity`, from the stored fingerprints; [] without them."""
    prints = stored(grading.lab.name)
    if prints is None:
        return []
    return [(m, prints[m.description]) for m in grading.mistakes
            if m.activity == activity and m.description in prints]
