"""Which workers may run at the same time in one grading process.

However well each sandbox is built, processes on one kernel can always signal to each other a
little (through the load they put on the processor, on memory, on the page cache). That is
harmless between workers that know nothing worth passing on, and it is what decides the rule:
a worker that has an oracle, PyTorch (the activities in a lab's USES_PYTORCH) or a reference
solution's call interface (a re-grade on the reference engine), must not run beside a worker
that is graded without it. So every session of the grader enters a *room* for its kind first:
any number of sessions of one kind share the room, a session of another kind waits until it is
empty, and a kind made with `alone()` never shares it at all. Waiting is first come, first
served: once a session of another kind waits, later arrivals queue behind it, so no kind is
starved by a stream of the other.

The rooms are per process. The local pool's threads and a Dask worker's threads share them; two
grading processes on one machine (two `grade` commands at once, or a Dask node started with
several worker processes) do not, which is why a node runs one Dask worker with many threads.
"""
import itertools
import threading
import time
from collections import deque
from contextlib import contextmanager

_alone = itertools.count()


def alone(why):
    """A kind that shares the room with no other session, not even one made the same way."""
    return (why, next(_alone))


class Rooms:
    def __init__(self):
        self._changed = threading.Condition()
        self._kind, self._inside, self._queue = None, 0, deque()

    def _admissible(self, ticket, kind):
        if self._inside and self._kind != kind:
            return False
        for waiting, other in self._queue:  # everyone before us must be able to come in with us
            if waiting is ticket:
                return True
            if other != kind:
                return False
        return False

    @contextmanager
    def room(self, kind):
        """Hold a place in the room for `kind` while the block runs; yields the seconds waited."""
        ticket, started = object(), time.monotonic()
        with self._changed:
            self._queue.append((ticket, kind))
            while not self._admissible(ticket, kind):
                self._changed.wait()
            self._queue.remove((ticket, kind))
            self._kind, self._inside = kind, self._inside + 1
            self._changed.notify_all()  # those queued behind us with the same kind may follow
        try:
            yield time.monotonic() - started
        finally:
            with self._changed:
                self._inside -= 1
                if not self._inside:
                    self._kind = None
                self._changed.notify_all()


ROOMS = Rooms()
