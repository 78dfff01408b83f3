"""What the cycle collector costs the grader: each lab's first catalogued mistake of every activity
graded with the objects alive after the labs were checked frozen (gc.freeze, as grading_for
leaves them) and with them walked again by every collection, alternately in one process with a
warm pool. Each grading draws its own seed's cases, as a class's submissions do: the cache of
drawn seeds is emptied before each.

    python -m bench.collector_cost [--rounds 3] [--lab LAB ...]     (from the repository root)

Prints, per lab, the median wall seconds and CPU seconds (this process's, and the submission's
workers') of grading the sample, and the ratios frozen / walked.
"""
import gc
import tempfile
from contextlib import contextmanager

from autograder.isolation.sandbox import Pool
from autograder.isolation.warm import lab_imports
from autograder.labs import _seeded, grading_for
from bench.alternating import arguments
from bench.grader_overhead import compare, sample
from course.labs import find_labs


@contextmanager
def frozen():
    gc.freeze()
    yield


@contextmanager
def walked():
    gc.unfreeze()
    yield


def main():
    args = arguments(__doc__)
    labs = [lab for lab in find_labs() if not args.lab or lab.name in args.lab]
    for lab in labs:
        grading_for(lab.name)  # checked, and what is alive then frozen, as a grading run does
    pool = Pool.launch(lab_imports)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for lab in labs:
                compare(lab, sample(lab, scratch), {"frozen": frozen, "walked": walked}, args.rounds, pool,
                        before_each=_seeded.cache_clear)
    finally:
        gc.freeze()
        pool.close()


if __name__ == "__main__":
    main()
