"""A request's time limit counts the CPU time of the submission's processes, and its wall-clock
backstop (sandbox.WALL_FACTOR times the limit) only the time in which none of them ran or waited to
run: code that waits meets the backstop, and code that computes meets its CPU limit with the same
message on a starved machine as on an idle one."""
import os
import subprocess
import sys

import pytest

from autograder.isolation.sandbox import WALL_FACTOR, Limits, Worker, WorkerFailure

pytestmark = pytest.mark.slow

LIMIT = 1.0


def stopped_by(tmp_path, body):
    """What ended a request whose probe runs `body`, in a cold sandboxed worker."""
    worker = Worker(tmp_path, Limits(), True)
    try:
        with pytest.raises(WorkerFailure) as failure:
            worker.ask({"op": "probe", "source": f"def probe():\n    {body}\n", "args": {}}, LIMIT)
    finally:
        worker.close()
    return str(failure.value)


def test_code_that_waits_meets_the_wall_clock_backstop(tmp_path):
    said = stopped_by(tmp_path, "import time; time.sleep(600)")
    assert f"{WALL_FACTOR * LIMIT:.3g} s of waiting" in said, said


def test_code_that_computes_on_a_starved_core_meets_its_cpu_limit(tmp_path):
    """Seven CPU-bound processes share one core with the worker, each in a session of its own as
    a busy machine's other jobs are (the kernel shares a core between sessions), so the worker
    gets an eighth of it: a second of CPU takes eight of wall-clock time, past the backstop's
    five. The backstop counted them all, and stopped such code as if it had waited (5 s of
    waiting, 0.63 s of CPU used)."""
    home = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(home)})  # the worker and the hogs inherit it
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(7)]
    try:
        said = stopped_by(tmp_path, "while True: pass")
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        os.sched_setaffinity(0, home)
    assert f"the time limit of {LIMIT:.3g} s of CPU time" in said, said
