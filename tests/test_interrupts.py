"""A Ctrl-C held while a record is written (autograder.records.interrupts): it lands once the
block is done, a second one at once, and nothing else about the process's signals changes."""
import os
import signal

import pytest

from autograder.records.interrupts import held_interrupts
from tests.helpers import ctrl_c_raises


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
