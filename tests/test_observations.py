"""A probe's observations leave the sandbox the moment they are made (worker.py's `_observe`):
what the submission's code does afterwards to the probe's records, or to the modules the
worker writes with, cannot change them, and a case whose reply carries another number of
observations than its probe makes fails as tampered (grade.judged)."""
import time
from types import SimpleNamespace

import pytest

from autograder.grading.grade import Clock, OutOfTime, judged
from autograder.isolation.sandbox import Limits, Worker, WorkerFailure, parse_reply
from autograder.isolation.worker import decode, encode
from autograder.labs.vocabulary import Case

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


# Submission code: writes `count` lines of `size` bytes of empty lists as observations of the
# probe under way, with its tag stolen from the worker's frames (issue 22, class 3).
FLOOD = """
import sys


def flood(count, size):
    frame = sys._getframe(1)
    while "request" not in frame.f_locals or "channel" not in frame.f_locals:
        frame = frame.f_back
    empties = "[" + ",".join(["[]"] * (size // 3)) + "]"
    line = ('{"observation": {"kind": "plain", "value": ' + empties + '}, "seq": "' + frame.f_locals["request"]["seq"]
            + '"}\\n').encode()
    for _ in range(count):
        data = line
        while data:
            data = data[frame.f_globals["_write"](frame.f_locals["channel"].fd_out, data):]
"""
FLOODED = "def probe(count, size):\n    flood(count, size)\n    return 1\n"


def flooded(folder, count, size, observations=None, budget=None):
    """The reply to FLOODED's probe and the worker's parsing seconds, or the WorkerFailure raised."""
    worker = Worker(folder, Limits(), True)
    try:
        worker.ask({"op": "run", "source": FLOOD}, 60)
        try:
            return worker.ask({"op": "probe", "source": FLOODED, "args": {"count": encode(count), "size": encode(size)}},
                              60, observations, budget), worker.parsing
        except WorkerFailure as failure:
            return failure, worker.parsing
    finally:
        worker.close()


def test_a_line_of_more_values_than_any_reply_is_never_parsed():
    line = b'{"observation": {"kind": "plain", "value": [' + b",".join([b"[]"] * ((20 << 20) // 3)) + b']}, "seq": "x"}'
    started = time.thread_time()
    assert parse_reply(line) is None
    assert time.thread_time() - started < 1.0, "counting the values costs a pass over the bytes, not a parse"


def test_observations_past_the_probes_count_are_a_failure_not_kept(tmp_path):
    failure, _ = flooded(tmp_path, 2, 1000, observations=1)
    assert isinstance(failure, WorkerFailure) and "more observations than the 1" in str(failure)
    reply, _ = flooded(tmp_path, 2, 1000, observations=2)
    assert len(reply["observations"]) == 2


def test_forged_lines_cost_the_submission_and_are_not_kept(tmp_path):
    """Four lines of 20 MiB of empty lists with the stolen tag: refused unparsed, the request
    ends as a failure, the reading counts as the submission's time."""
    failure, parsing = flooded(tmp_path, 4, 20 << 20, observations=0)
    assert isinstance(failure, WorkerFailure) and failure.kind == "protocol"
    assert parsing > 0


def test_what_a_request_reads_is_bounded_by_its_budget(tmp_path):
    failure, _ = flooded(tmp_path, 3, 100_000, budget=250_000)
    assert isinstance(failure, WorkerFailure) and "more than the 250000 bytes" in str(failure)


def test_a_submissions_workers_share_one_allowance_of_bytes():
    """What the grader read from a submission's earlier workers counts against its later ones."""
    clock = Clock(600, reply_bytes=1000)
    earlier, later = SimpleNamespace(received=700, used=lambda: 0.0), SimpleNamespace(received=200)
    clock.charge(earlier)
    assert clock.bytes_left(later) == 100
    later.received = 300
    with pytest.raises(OutOfTime, match="more than its 1000 bytes"):
        clock.bytes_left(later)


def test_what_the_grader_read_from_the_reference_side_is_the_submissions_too():
    """Its answers shape what the grader's side of a link sends: the bytes and the parsing count,
    its CPU time does not (its submission's worker counts the control group they share)."""
    clock = Clock(600, reply_bytes=1000)
    clock.charge_reading(SimpleNamespace(received=400, parsing=0.25, used=lambda: 99.0))
    assert (clock.spent, clock.bytes_left(SimpleNamespace(received=100), SimpleNamespace(received=200))) == (0.25, 300)
