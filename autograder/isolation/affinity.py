"""One processor for the two workers a Link joins.

A Link's two workers take turns: each waits for the other's reply before it goes on, tens of
thousands of times in a re-grade or in tensor_engine's gradient checks. On separate processors,
each turn wakes a processor that has gone idle, and on a virtual machine that costs more than
the turn's own work: a pipe's round trip between two plain processes took 35 us of wall time and
12 us of CPU a side across two processors, 6 us and 3 us on one (`python -m bench.link_turns`;
docs/speed.md, "One processor for a link"). Since the two never run at once, one processor
loses them nothing. On a machine whose processors are all busy the wakeup is cheap, and a
re-grade measured there was no slower placed so.

The placement is a matter of speed only: nothing a worker computes depends on it, and the
submission's code may move itself elsewhere without harm to anything but its own time.
"""
import itertools
import os
import threading
from contextlib import contextmanager

_lock = threading.Lock()
_held = {}  # processor -> the links of this process placed on it now
_turns = itertools.count(os.getpid())  # where ties start: graders side by side begin on different processors


def _allowed():
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []


@contextmanager
def one_processor():
    """A processor for a link while the block runs: of those this process may use, one holding
    the fewest of its links (ties taken in turn); None where it cannot choose."""
    allowed = _allowed()
    if len(allowed) < 2:
        yield None
        return
    with _lock:
        start = next(_turns) % len(allowed)
        turn = allowed[start:] + allowed[:start]
        chosen = min(turn, key=lambda cpu: _held.get(cpu, 0))
        _held[chosen] = _held.get(chosen, 0) + 1
    try:
        yield chosen
    finally:
        with _lock:
            _held[chosen] -= 1


def place(pids, cpu):
    """Keep every thread of the processes `pids` on processor `cpu`; threads and processes they
    start later inherit it. Best effort: a process that has ended, or one this process may not
    move, is left as it is."""
    for pid in pids:
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in threads:
            try:
                os.sched_setaffinity(int(tid), {cpu})
            except (OSError, ValueError):
                pass
