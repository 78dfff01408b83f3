"""Grade many submissions at once, each result handed over as soon as it is ready."""
import traceback
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor, as_completed, wait
from dataclasses import replace
from pathlib import Path

from autograder.grading.grade import error_result, grade
from autograder.isolation.sandbox import EVERY_WORKER, Pool
from autograder.isolation.warm import lab_imports

# After Ctrl-C, how long the run waits for its grading threads once their workers are killed. They
# end at once, unless one is stuck where no worker is; nothing may keep Ctrl-C from ending a run.
STOPPING_SECONDS = 10


def safe_grade(path, options, expected_lab=None):
    """Grading never raises: a grader bug becomes a result too, and the batch goes on."""
    try:
        return grade(path, options, expected_lab)
    except Exception as error:  # the batch must finish whatever one notebook does
        detail = "".join(traceback.format_exception_only(type(error), error)).strip()
        return error_result(Path(path).stem, path, "grader_error", f"the grader failed: {detail}", 0.0,
                            expected_lab), {}


@contextmanager
def warm(options):
    """`options` with a running zygote for as long as the block lasts, where the warm path
    applies and the caller has none running yet."""
    zygote = Pool.launch(lab_imports) if options.warm and options.sandboxed and options.pool is None else None
    try:
        yield options if zygote is None else replace(options, pool=zygote)
    finally:
        if zygote is not None:
            zygote.close()


def grade_all(submissions, options, jobs, on_result, on_start=lambda submission: None):
    """Grade roster.Submissions with `jobs` at a time; call on_start(submission) as each one
    starts, and on_result(submission, result, answers) from this thread as each one finishes.
    Workers are subprocesses, so threads suffice."""
    def one(submission):
        on_start(submission)
        return safe_grade(submission.path, options, submission.expected)

    with warm(options) as options:
        threads, interrupted, pending = ThreadPoolExecutor(max_workers=jobs), False, {}
        try:
            pending = {threads.submit(one, submission): submission for submission in submissions}
            for future in as_completed(pending):
                result, answers = future.result()
                on_result(pending[future], result, answers)
        except KeyboardInterrupt:  # Ctrl-C: start nothing new; what has no result yet is graded next run
            interrupted = True
            threads.shutdown(wait=False, cancel_futures=True)
            EVERY_WORKER.stop()  # so that the threads end now, not when what they grade is done
            wait([future for future in pending if not future.cancelled()], timeout=STOPPING_SECONDS)
            raise
        finally:
            # Results are written by this thread alone, so one that is still grading after Ctrl-C
            # holds nothing of the run's: it is left behind, and the command exits without it.
            threads.shutdown(wait=not interrupted, cancel_futures=True)
