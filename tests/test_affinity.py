"""A link's two workers share one processor (autograder/isolation/affinity.py): they take turns,
and a turn that wakes an idle processor costs more than its own work."""
import os
from pathlib import Path

import pytest

from autograder.grading.grade import Clock, Options, Session
from autograder.isolation import affinity
from autograder.isolation.sandbox import Limits
from autograder.labs import grading_for

MANY = len(os.sched_getaffinity(0)) >= 2
needs_two = pytest.mark.skipif(not MANY, reason="placement is only chosen with two processors or more")


def processors_of(pid):
    """Process `pid`'s processors, as the kernel lists them ("1", "0-3")."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":", 1)[1].strip()
    return None


def held():
    return sum(affinity._held.values())


@needs_two
def test_a_links_two_workers_and_all_their_threads_run_on_one_processor_until_they_close():
    lab = grading_for("tensor_engine").lab
    session = Session(lab, [], Options(Limits(cell_seconds=30), True, warm=False), Clock(600),
                      apart=frozenset({"checked"}))
    session.start()
    try:
        group = session.worker.group
        assert group is not None, "the grader's workers need control groups here"
        pids = group.pids()
        threads = {tid for pid in pids for tid in os.listdir(f"/proc/{pid}/task")}
        assert session.worker.process.pid in pids and len(pids) >= 2 and threads
        placed = {processors_of(tid) for tid in threads}
        assert len(placed) == 1 and placed.pop().isdigit(), placed
        assert held() == 1
    finally:
        session.close()
    assert held() == 0


@needs_two
def test_a_new_link_goes_to_a_processor_holding_the_fewest_of_this_process_s_links():
    allowed = sorted(os.sched_getaffinity(0))
    with affinity.one_processor() as first:
        for _ in range(2 * len(allowed)):  # whatever turn the ties are at
            with affinity.one_processor() as second:
                assert second in allowed and second != first
    assert held() == 0
