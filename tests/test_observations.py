"""A probe's observations leave the sandbox the moment they are made (worker.py's `_observe`):
what the submission's code does afterwards to the probe's records, or to the modules the
worker writes with, cannot change them, and a case whose reply carries another number of
observations than its probe makes fails as tampered (grade.judged)."""
from autograder.grade import judged
from autograder.sandbox import Limits, Worker
from autograder.vocabulary import Case
from autograder.worker import decode

# Submission code: a function the probe calls after observing, which rewrites the probe's record
# through its frame and patches json.dumps and os.write, which the worker's replies go through.
REWRITER = """
import json, os, sys


def rewrite():
    sys._getframe(1).f_locals["record"]["parents"] = 0
    json.dumps = lambda *args, **kwargs: '{"forged": true}'
"""
PROBE = """
def probe():
    observe = _observe
    record = {"parents": 2}
    observe(record)  # the object itself: encoded later, it would show the rewrite
    rewrite()
    observe(record)
    return record
"""


def asked(folder, source):
    worker = Worker(folder, Limits(), True)
    try:
        worker.ask({"op": "run", "source": source}, 60)
        return worker.ask({"op": "probe", "source": PROBE + "\nprobe = probe\n", "args": {}}, 60)
    finally:
        worker.close()


def test_an_observation_keeps_what_the_probe_saw_then(tmp_path):
    reply = asked(tmp_path, REWRITER)
    first, second = (decode(item) for item in reply["observations"])
    assert first == {"parents": 2}, "the record as observed before the submission's code ran again"
    # The second observation arrives although json.dumps was patched before it was sent.
    assert second == {"parents": 0}, "the rewrite is seen only in what the probe observed after it"


def test_a_reply_with_another_number_of_observations_fails_as_tampered(tmp_path):
    reply = asked(tmp_path, REWRITER)
    judge = lambda answer, seen: None if seen[0] == {"parents": 2} else "wrong"  # noqa: E731
    assert judged(Case("X", "the probe", "probe", {}, judge, observations=2), reply) is None
    for expected in (1, 3):
        assert "tampered" in judged(Case("X", "the probe", "probe", {}, judge, observations=expected), reply)
