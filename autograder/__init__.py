"""The grader, in subpackages by job. Each one's docstring says what it owns; imports run only
downward through them (tests/test_layers.py reads every import and fails on one that climbs):

    isolation/   what a submission's code meets: the sandbox, the worker, the zygote and the
                 kernel's limits. Nothing of the grader above it is mounted into a sandbox.
    labs/        each lab's grading knowledge and the interface it is written in.
    diagnosis/   naming the catalogued mistake a failing answer behaves like.
    grading/     grading a submission, a batch, a class on Dask; a submission's identity and seed.
    records/     what a run keeps: results, the gradebook, lateness, feedback, the class's tables.
    reports/     the class report and similar work across a class.
    measuring/   what the checks still miss: the mistake catalogue, fingerprints, mutants, coverage.
    gradescope/  the Gradescope bundle and its run.
    cli/         the commands, and nbgrader's settings and guard.

Below them all: ``course`` (the lab model) and ``autodiff_check`` (the student's package).
Above: ``authoring`` (the instructor's tools).
"""
import course  # noqa: F401  (first, so that reading notebooks stays cheap: see course/__init__.py)
