"""Build, check and measure the stored fingerprints of each lab's catalogue (autograder/diagnosis/matching.py).

    python -m autograder fingerprints [--lab LAB] [--check] [--jobs N] [--measure SEED]

Building runs every catalogued mistake's activity on the seeds of FINGERPRINT_SEEDS and writes
autograder/labs/<lab>/fingerprints.json: each case's tokens over the seeds, and each case's
reply sketched on REPLAY_SEED, or ROUNDING where the same case with its inputs nudged by one unit
in the last place gives a reply that differs (rounding decides it, so another machine may too); it
prints the mistakes that cannot be told apart (their replies agree on every case) but carry
different advice, which the grader then never names. `--check`
builds nothing and fails when a lab's file is missing or out of date.
`measure` diagnoses wrong answers the fingerprints were not built from on a fresh seed, for
coverage and precision: the lab's variants.py (catalogued slips written another way: the right
name is theirs) and its strangers.py (slips the catalogue lacks that fail the same checks: the
right diagnosis is none), each by the replay the grader uses and by tokens alone, the rule the
replay replaced.
"""
import importlib
import json
from dataclasses import dataclass

from autograder.diagnosis.answer_sketch import same
from autograder.diagnosis.matching import (FINGERPRINT_SEEDS, REBUILD, REPLAY_SEED, ROUNDING, candidates, confirm,
                                           diagnose, fingerprints_path, inputs_digest, known_for, replayed_for, stored)
from autograder.labs import grading_for
from autograder.labs.vocabulary import Mistake
from autograder.measuring.catalogue import fingerprints_by_seed
from autograder.records.results_store import atomic_write
from course.syntax import parse


def build(lab_name, options, jobs):
    """Write `lab_name`'s fingerprints file; returns [(activity, [descriptions])] of the groups of
    mistakes that agree with each other but whose advice differs."""
    grading = grading_for(lab_name)
    runs = fingerprints_by_seed(lab_name, grading.mistakes, FINGERPRINT_SEEDS, options, jobs)
    replay = FINGERPRINT_SEEDS.index(REPLAY_SEED)
    # The replay's seed again, after the same seeds in the same worker, its inputs nudged: a
    # reply that moves then is decided by rounding, which another machine does otherwise.
    nudged = fingerprints_by_seed(lab_name, grading.mistakes, FINGERPRINT_SEEDS[:replay + 1], options, jobs,
                                  nudged={REPLAY_SEED})
    entries = [{"activity": m.activity, "description": m.description,
                "cases": [sorted(set(tokens)) for tokens in zip(*(outcome.fingerprint for outcome in outcomes))],
                "sketches": [mine if same(mine, moved) else ROUNDING
                             for mine, moved in zip(outcomes[replay].sketches, again[replay].sketches)]}
               for m, outcomes, again in zip(grading.mistakes, runs, nudged)]
    data = {"lab": lab_name, "inputs": inputs_digest(grading.lab, grading.mistakes), "seeds": list(FINGERPRINT_SEEDS),
            "replay_seed": REPLAY_SEED, "mistakes": entries}
    atomic_write(fingerprints_path(lab_name), compact(data).encode())
    stored.cache_clear()
    return alike(grading.mistakes, [e["sketches"] for e in entries])


def compact(data):
    """The file's JSON, each distinct sketch written once ("replies", which a mistake's "sketches"
    index: a case most mistakes pass has the reference's reply), a line per mistake's tokens, its
    sketches' indices and each reply, so that a rebuild's diff shows what changed."""
    replies, index = [], {}
    entries = []
    for entry in data["mistakes"]:
        numbers = []
        for reply in entry["sketches"]:
            text = json.dumps(reply, separators=(",", ":"))
            numbers.append(index.setdefault(text, len(index)))
            if numbers[-1] == len(replies):
                replies.append(text)
        entries.append({**entry, "sketches": numbers})
    mistakes = ",\n".join(
        " {" + ",\n  ".join(f"{json.dumps(key)}: {json.dumps(value, separators=(',', ':'))}"
                            for key, value in entry.items()) + "}"
        for entry in entries)
    head = ", ".join(f"{json.dumps(key)}: {json.dumps(value)}" for key, value in data.items()
                     if key not in ("mistakes", "replies"))
    return ("{" + head + ', "mistakes": [\n' + mistakes + '\n],\n"replies": [\n' + ",\n".join(replies)
            + "\n]}\n")


def alike(mistakes, sketches):
    """Groups of mistakes of one activity whose replies agree on every case of REPLAY_SEED (a
    case left to rounding agrees with any), with more than one advice among them: the grader may
    name none of them."""
    groups = []
    for mistake, mine in zip(mistakes, sketches):
        matching = [m for m, theirs in zip(mistakes, sketches) if m.activity == mistake.activity
                    and len(theirs) == len(mine) and all(map(alike_or_unknown, mine, theirs))]
        names = sorted(m.description for m in matching)
        if len({m.advice for m in matching}) > 1 and (mistake.activity, names) not in groups:
            groups.append((mistake.activity, names))
    return groups


def alike_or_unknown(a, b):
    """Two stored sketches that a reply could agree with both: alike, or either left to rounding."""
    return ROUNDING in (a, b) or same(a, b)


def check(lab_names):
    """The labs whose stored fingerprints are missing or out of date, with the command for each."""
    return [f"{lab}: {fingerprints_path(lab).relative_to(fingerprints_path(lab).parents[3])} is missing or out of "
            f"date; run `{REBUILD.format(lab=lab)}`" for lab in lab_names if stored(lab) is None]


@dataclass(frozen=True)
class Measured:
    answer: str  # the wrong answer's description
    of: str  # the catalogued mistake it is (itself, for the catalogue); "" for a stranger to it
    failed: bool  # its activity failed
    named: tuple  # the catalogued mistakes the grader's diagnosis (the replay) names; () when none
    by_tokens: tuple = ()  # those that tokens alone, the rule the replay replaced, would name
    stopped: bool = False  # a hidden check hung or killed the worker: the grader asks it nothing more

    @property
    def right(self):
        return self.of in self.named

    def rightly(self, named):
        return bool(named) and self.of in named


def variants(lab_name):
    """The lab's variants.py VARIANTS, or () when it has none."""
    try:
        module = importlib.import_module(f"autograder.labs.{lab_name}.variants")
    except ModuleNotFoundError:
        return ()
    return tuple(module.VARIANTS)


def measure(lab_name, answers, seed, options, jobs):
    """[Measured] for `answers`, [(Mistake, the description of the catalogued mistake it is, or ""
    for none)], each graded on `seed`, then asked REPLAY_SEED's cases in the same worker as a
    grading asks them, and diagnosed against the stored fingerprints."""
    grading = grading_for(lab_name)
    if stored(lab_name) is None:
        raise RuntimeError(f"{lab_name}'s fingerprints are missing or out of date; rebuild them with "
                           + REBUILD.format(lab=lab_name))
    runs = fingerprints_by_seed(lab_name, [m for m, _ in answers], (seed, REPLAY_SEED), options, jobs, halt=True)
    known = {activity: known_for(grading, activity) for activity in grading.lab.activities}
    replayed = {activity: replayed_for(grading, activity) for activity in grading.lab.activities}
    measured = []
    for (answer, of), (judged, replay) in zip(answers, runs):
        by_tokens = diagnose(judged.fingerprint, known[answer.activity])
        chosen = {m.description for m in candidates(judged.fingerprint, known[answer.activity])}
        # As grading does: no replay for an answer whose engine stopped, or that no mistake's tokens agree with.
        diagnosis = None if judged.stopped or not chosen else confirm(
            replay.sketches, [(m, sketches) for m, sketches in replayed[answer.activity] if m.description in chosen])
        measured.append(Measured(answer.description, of, not judged.passed, diagnosis.mistakes if diagnosis else (),
                                 by_tokens.mistakes if by_tokens else (), judged.stopped))
    return measured


def variant_answers(lab_name):
    """[(Mistake, the catalogued mistake's description)] for the lab's variants."""
    by = {m.description: m for m in grading_for(lab_name).mistakes}
    return [(Mistake(by[v.of].activity, v.description, "", v.code), v.of) for v in variants(lab_name)]


def strangers(lab_name):
    """The lab's strangers.py STRANGERS, or () when it has none."""
    try:
        module = importlib.import_module(f"autograder.labs.{lab_name}.strangers")
    except ModuleNotFoundError:
        return ()
    return tuple(module.STRANGERS)


def stranger_answers(lab_name):
    """[(Mistake, "")] for the lab's strangers, each of the activity whose reference defines the
    functions it replaces: no catalogued mistake is theirs."""
    lab = grading_for(lab_name).lab
    defines = {}
    for activity in lab.activities.values():
        for node in parse(activity.reference.source).body:
            if hasattr(node, "name"):
                defines.setdefault(node.name, activity.id)
    answers = []
    for stranger in strangers(lab_name):
        names = [node.name for node in parse(stranger.code).body if hasattr(node, "name")]
        answers.append((Mistake(defines[names[0]], stranger.description, "", stranger.code), ""))
    return answers


def catalogue_answers(lab_name):
    return [(m, m.description) for m in grading_for(lab_name).mistakes]


def rates(measured, by_tokens=False):
    """(failing, diagnosed, right): how many answers failed, got a diagnosis, got the right one; by
    the replay, or `by_tokens` alone."""
    failing = [m for m in measured if m.failed]
    named = [m.by_tokens if by_tokens else m.named for m in failing]
    return len(failing), sum(map(bool, named)), sum(m.rightly(n) for m, n in zip(failing, named))
