"""A Ctrl-C held while a record is written (autograder.records.interrupts): it lands once the
block is done, a second one at once, and nothing else about the process's signals changes; and a
Ctrl-C ends a grading run whatever its grading threads are doing."""
import os
import signal
import subprocess
import sys

import pytest

from autograder.records.interrupts import held_interrupts
from tests.helpers import ROOT, ctrl_c_raises


@pytest.fixture(autouse=True)
def as_in_a_terminal():
    with ctrl_c_raises():
        yield


def press():
    os.kill(os.getpid(), signal.SIGINT)


def test_a_ctrl_c_inside_lands_once_the_block_is_done():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with held_interrupts():
            press()
            done.append("written")
    assert done == ["written"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_second_ctrl_c_lands_at_once():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with held_interrupts():
            press()
            done.append("first")
            press()
            done.append("second")
    assert done == ["first"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_nested_blocks_hold_it_until_the_outer_one_is_done():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with held_interrupts():
            with held_interrupts():
                press()
                done.append("inner")
            done.append("outer")
    assert done == ["inner", "outer"]


def test_as_a_decorator_it_holds_each_call():
    @held_interrupts()
    def write(done):
        press()
        done.append("written")

    for _ in range(2):
        done = []
        with pytest.raises(KeyboardInterrupt):
            write(done)
        assert done == ["written"]


def test_a_block_without_a_signal_changes_nothing():
    terminate = signal.getsignal(signal.SIGTERM)
    with held_interrupts():
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) == terminate


def test_an_ignored_ctrl_c_stays_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with held_interrupts():
            assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
            press()
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_an_error_inside_comes_out_and_the_held_ctrl_c_after_it():
    with pytest.raises(KeyboardInterrupt) as raised:
        with held_interrupts():
            press()
            raise OSError("disk full")
    assert isinstance(raised.value.__context__, OSError)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler



GRADING = """
import sys, threading
from autograder.grading import batch
from autograder.isolation import sandbox
stopped, ends, batch.STOPPING_SECONDS = threading.Event(), sys.argv[1] == "ends", float(sys.argv[2])
stop = sandbox.EVERY_WORKER.stop
sandbox.EVERY_WORKER.stop = lambda: (stop(), ends and stopped.set())
def waiting(path, options, expected_lab=None):
    print("grading", flush=True)
    stopped.wait()  # no worker runs here: only the stand-in for killing the workers ends it
    raise sandbox.WorkerFailure("killed", "its worker was killed")
batch.safe_grade = waiting
from autograder.__main__ import run
del sys.argv[1:3]
sys.argv[0] = "autograder"
run()
"""


@pytest.mark.parametrize("thread, grace", [("never ends", 0.5), ("ends", 600)])
def test_ctrl_c_ends_a_grading_run_however_its_grading_threads_end(thread, grace, tmp_path, release_dir):
    """Ctrl-C stops a `grade` run of three notebooks, one at a time: once the thread grading the
    first ends (as when its worker is killed) the run exits at once, not after the grace it would
    give a thread that does not end, and the two that never started hold nothing up; and where
    the thread never ends, the run exits once the grace is over instead of waiting for it. Either
    way it says it was interrupted and exits 130."""
    run = subprocess.Popen([sys.executable, "-c", GRADING, thread.split()[0], str(grace), "grade", str(release_dir),
                            "--jobs", "1", "--out", str(tmp_path / "out"), "--sandbox", "none", "--no-gradebook"],
                           cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert run.stdout.readline() == "grading\n"
        os.killpg(run.pid, signal.SIGINT)
        said, complained = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    assert run.returncode == 130, said + complained
    assert "interrupted; every result written so far is kept" in complained, complained
    assert "without a result yet" in said, said
