"""Build, check and measure the stored fingerprints of each lab's catalogue (autograder/diagnosis.py).

    python -m autograder fingerprints [--lab LAB] [--check] [--jobs N]

Building runs every catalogued mistake's activity on the seeds of FINGERPRINT_SEEDS and writes
autograder/labs/<lab>/fingerprints.json; it prints the mistakes that cannot be told apart (their
fingerprints agree with each other's) but carry different advice, which the grader then never
names. `--check` builds nothing and fails when a lab's file is missing or out of date.
`measure` diagnoses wrong answers the fingerprints were not built from (a lab's variants.py)
on a fresh seed, for coverage and precision.
"""
import importlib
import json
from dataclasses import dataclass

from autograder.case_tokens import PASSED
from autograder.catalogue import fingerprints_by_seed
from autograder.diagnosis import (FINGERPRINT_SEEDS, REBUILD, agreeing, diagnose, fingerprints_path, inputs_digest,
                                  known_for, stored)
from autograder.labs import grading_for
from autograder.results_store import atomic_write
from autograder.vocabulary import Mistake


def build(lab_name, options, jobs):
    """Write `lab_name`'s fingerprints file; returns [(activity, [descriptions])] of the groups of
    mistakes that agree with each other but whose advice differs."""
    grading = grading_for(lab_name)
    runs = fingerprints_by_seed(lab_name, grading.mistakes, FINGERPRINT_SEEDS, options, jobs)
    entries = [{"activity": m.activity, "description": m.description,
                "cases": [sorted(set(tokens)) for tokens in zip(*prints)]}
               for m, prints in zip(grading.mistakes, runs)]
    data = {"lab": lab_name, "inputs": inputs_digest(grading.lab, grading.mistakes), "seeds": list(FINGERPRINT_SEEDS), "mistakes": entries}
    atomic_write(fingerprints_path(lab_name), (json.dumps(data, indent=1) + "\n").encode())
    stored.cache_clear()
    return alike(grading.mistakes, runs, [e["cases"] for e in entries])


def alike(mistakes, runs, cases):
    """Groups of mistakes of one activity that agree with a run of one of them, with more than one
    advice among them: the grader names none of them there."""
    known = list(zip(mistakes, cases))
    groups = []
    for mistake, prints in zip(mistakes, runs):
        mine = [(m, c) for m, c in known if m.activity == mistake.activity]
        for fingerprint in prints:
            matching = agreeing(fingerprint, mine)[1]
            names = sorted(m.description for m in matching)
            if len({m.advice for m in matching}) > 1 and (mistake.activity, names) not in groups:
                groups.append((mistake.activity, names))
    return groups


def check(lab_names):
    """The labs whose stored fingerprints are missing or out of date, with the command for each."""
    return [f"{lab}: {fingerprints_path(lab).relative_to(fingerprints_path(lab).parents[3])} is missing or out of "
            f"date; run `{REBUILD.format(lab=lab)}`" for lab in lab_names if stored(lab) is None]


@dataclass(frozen=True)
class Measured:
    answer: str  # the wrong answer's description
    of: str  # the catalogued mistake it is (itself, for the catalogue)
    failed: bool  # its activity failed
    named: tuple  # the catalogued mistakes the diagnosis names; () when there is none

    @property
    def right(self):
        return self.of in self.named


def variants(lab_name):
    """The lab's variants.py VARIANTS, or () when it has none."""
    try:
        module = importlib.import_module(f"autograder.labs.{lab_name}.variants")
    except ModuleNotFoundError:
        return ()
    return tuple(module.VARIANTS)


def measure(lab_name, answers, seed, options, jobs):
    """[Measured] for `answers`, [(Mistake, the description of the catalogued mistake it is)], each
    graded on `seed` and diagnosed against the stored fingerprints."""
    grading = grading_for(lab_name)
    if stored(lab_name) is None:
        raise RuntimeError(f"{lab_name}'s fingerprints are missing or out of date; rebuild them with "
                           + REBUILD.format(lab=lab_name))
    runs = fingerprints_by_seed(lab_name, [m for m, _ in answers], (seed,), options, jobs)
    known = {activity: known_for(grading, activity) for activity in grading.lab.activities}
    measured = []
    for (answer, of), (fingerprint,) in zip(answers, runs):
        diagnosis = diagnose(fingerprint, known[answer.activity])
        failed = any(token != PASSED for token in fingerprint)
        measured.append(Measured(answer.description, of, failed, diagnosis.mistakes if diagnosis else ()))
    return measured


def variant_answers(lab_name):
    """[(Mistake, the catalogued mistake's description)] for the lab's variants."""
    by = {m.description: m for m in grading_for(lab_name).mistakes}
    return [(Mistake(by[v.of].activity, v.description, "", v.code), v.of) for v in variants(lab_name)]


def catalogue_answers(lab_name):
    return [(m, m.description) for m in grading_for(lab_name).mistakes]


def rates(measured):
    """(failing, diagnosed, right): how many answers failed, got a diagnosis, got the right one."""
    failing = [m for m in measured if m.failed]
    diagnosed = [m for m in failing if m.named]
    return len(failing), len(diagnosed), sum(m.right for m in diagnosed)
