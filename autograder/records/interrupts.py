"""Ctrl-C (and a SIGTERM that a handler turns into an exception) held back while a record is
written, so that it lands between records, never inside one: a transaction cut in its middle, or
another connection's commit cut once it holds SQLite's lock, is a state that nothing later in the
run can repair (the gradebook then refuses every write until the process ends)."""
import signal
import threading
from contextlib import contextmanager

HELD = (signal.SIGINT, signal.SIGTERM)
_holding = []  # non-empty while a block of this module holds the signals (blocks nest)


@contextmanager
def held_interrupts():
    """Inside, a signal of HELD whose handler is Python code is noted instead of handled; on the
    way out the handlers are put back and a noted signal is handed to its own handler (so Ctrl-C
    raises KeyboardInterrupt there). A second one is handled at once: a gradebook server that
    hangs must not keep the run from stopping. Signals a process ignores or leaves to the system
    are not touched. Outside the main thread, where Python runs no signal handler, and inside
    another such block, it changes nothing. Also a decorator."""
    if _holding or threading.current_thread() is not threading.main_thread():
        yield
        return
    came, handlers = [], {}

    def note(number, frame):
        if came:
            came.clear()
            handlers[number](number, frame)
            return
        came.append((number, frame))

    for signum in HELD:
        handler = signal.getsignal(signum)
        if callable(handler):
            handlers[signum] = handler
            signal.signal(signum, note)
    _holding.append(True)
    try:
        yield
    finally:
        _holding.clear()
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        for number, frame in came:
            handlers[number](number, frame)
