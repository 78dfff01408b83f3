"""What reading a worker's thread counters at the start of every request cost the grader: each
lab's first catalogued mistake of every activity graded as committed (a request's threads are
first read once it has lasted ACTIVE_AFTER seconds, which nearly none does) and with every
request's start reading them, alternately in one process with a warm pool.

    python -m bench.thread_counters_cost [--rounds 3] [--lab LAB ...]     (from the repository root)

Prints, per lab, the median wall seconds and CPU seconds (this process's, and the submission's
workers') of grading the sample, and the ratios committed / at every request.
"""
from contextlib import contextmanager

from autograder.isolation.sandbox import Worker
from bench.grader_overhead import compare_sampled


@contextmanager
def committed():
    yield


@contextmanager
def at_every_request():
    ask = Worker.ask

    def reading_first(self, *args, **kwargs):
        if self.group is not None:
            self.group.active_seconds()
        return ask(self, *args, **kwargs)

    Worker.ask = reading_first
    try:
        yield
    finally:
        Worker.ask = ask


def main():
    compare_sampled(__doc__, {"committed": committed, "at every request": at_every_request})


if __name__ == "__main__":
    main()
