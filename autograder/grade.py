"""Grade one submission: run its code in a worker, ask each activity's questions, judge.

Each activity is judged only on what the submission's functions return for the grader's
inputs. A cell or a question that hangs or kills the worker costs the activity it belongs to;
the grader starts a new worker without that cell and goes on with the others.
"""
import shutil
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from autograder.labs import LabNotGradable, course_labs, grading_for
from autograder.errors import GraderError
from autograder.policy import NEEDED_PYTORCH, hidden_for, pytorch_mentions
from autograder.sandbox import WALL_FACTOR, Limits, Worker, WorkerFailure
from autograder.secret import course_secret, submission_seed
from autograder.submission import Step, SubmissionError, answers, identify, load, program, student_name, untouched
from autograder.vocabulary import listing, plural
from autograder.worker import decode, encode

MAX_RESTARTS = 20  # each costs a few seconds; the submission time limit bounds them anyway
GIVEN_RETRIES = 1  # a given cell that fails is tried once more in a fresh process
PHASES = ("start", "cells", "probes", "judge")


@dataclass(frozen=True)
class Options:
    limits: Limits = field(default_factory=Limits)
    sandboxed: bool = True
    warm: bool = True  # fork workers from a zygote where the machine allows it (--no-pool: never)
    pool: object = None  # the running sandbox.Pool, set by batch.grade_all
    secret: bytes = None  # the course secret (autograder/secret.py); None: course_secret()
    seed: int = None  # the hidden inputs' seed, where the caller derived it (a Dask task carries its own)


class OutOfTime(Exception):
    pass


@dataclass(frozen=True)
class Outcome:
    passed: bool
    message: str
    untouched: bool = False  # the activity's answer cell still holds the stub


class Clock:
    """A submission's time, shared by every worker that runs it: its limit, counted in the
    seconds its workers used (CPU time where the control group counts it) with a wall-clock
    backstop, and the wall-clock seconds each phase of grading took, for the benchmark."""

    def __init__(self, seconds):
        self.seconds, self.spent = seconds, 0.0
        self.backstop = time.monotonic() + WALL_FACTOR * seconds
        self.phases = dict.fromkeys(PHASES, 0.0)

    @contextmanager
    def phase(self, name):
        started = time.monotonic()
        try:
            yield
        finally:
            self.phases[name] += time.monotonic() - started

    def left(self, worker):
        left = self.seconds - self.spent - (worker.used() if worker is not None else 0.0)
        if left <= 0 or time.monotonic() > self.backstop:
            raise OutOfTime()
        return left

    def charge(self, worker):
        self.spent += worker.used()


class Session:
    """A worker that has run the submission's program, restarted as often as needed. A session
    with `hidden` modules runs in a worker that cannot import them, and runs each cell statement
    by statement, so that the code around a failed `import torch` still runs."""

    def __init__(self, lab, steps, options, clock, extra_steps=(), hidden=()):
        self.lab, self.steps, self.options, self.clock = lab, list(steps) + list(extra_steps), options, clock
        self.hidden = hidden
        self.skipped = {}  # step index -> why the step is left out of later runs
        self.errors = {}  # step index -> the error it raised on its first run
        self.worker, self.restarts, self.folder, self.given_failures = None, 0, None, 0

    def timeout(self):
        return min(self.options.limits.cell_seconds, self.clock.left(self.worker))

    def start(self):
        """A fresh worker with the program run, leaving out steps that hung or killed one."""
        while True:
            self.close()
            if self.restarts > MAX_RESTARTS:
                raise WorkerFailure("died", "the notebook's code kept crashing the grader's Python process")
            self.restarts += 1
            self.folder = Path(tempfile.mkdtemp(prefix="grading-"))
            self.lab.copy_data(self.folder)
            with self.clock.phase("start"):
                self.worker = Worker(self.folder, self.options.limits, self.options.sandboxed, self.options.pool,
                                     self.hidden)
            if self.run_steps():
                return

    def run_steps(self):
        """Run the program in the fresh worker; False when a step stopped it (start again)."""
        with self.clock.phase("cells"):
            for index, step in enumerate(self.steps):
                if index in self.skipped:
                    continue
                try:
                    reply = self.worker.ask({"op": "run_each" if self.hidden else "run", "source": step.source},
                                            self.timeout())
                except WorkerFailure as failure:
                    if step.student:
                        self.skipped[index] = failure
                    else:  # the lab's own code: never left out as if the student had written it
                        self.given_failures += 1
                        if self.given_failures > GIVEN_RETRIES:
                            raise GraderError(f"the lab's {step.label} failed in {self.given_failures} fresh "
                                              f"processes ({failure}); a person needs to look at this "
                                              "submission") from None
                    return False
                if "error" in reply:
                    self.errors.setdefault(index, reply)
        return True

    def ask(self, request):
        if self.worker is None:
            self.start()
        try:
            with self.clock.phase("probes"):
                return self.worker.ask(request, self.timeout())
        except WorkerFailure:
            self.close()
            raise

    def problems(self):
        """What went wrong in the student's own cells, for the feedback."""
        notes = []
        for index, step in enumerate(self.steps):
            if index in self.skipped:
                notes.append(f"{step.label} was left out: {self.skipped[index]}")
            elif index in self.errors and step.student:
                error = self.errors[index]
                said = f"{error['error']}: {error.get('message', '')}".rstrip(": ")
                notes.append(f"{step.label} needed PyTorch ({said}): free in your own cells, but not available to "
                             "the activities graded with NumPy only" if error.get("unavailable")
                             else f"{step.label} raised {said}")
        return notes

    def close(self):
        if self.worker is not None:
            self.clock.charge(self.worker)
            self.worker.close()
            self.worker = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


class Sessions:
    """One Session per set of hidden modules, started only when an activity needs it: the
    activities graded without PyTorch share one worker, those that use it another."""

    def __init__(self, lab, steps, options, clock, grading, extra_steps=()):
        self.arguments, self.grading, self.open = (lab, steps, options, clock, extra_steps), grading, {}

    def of(self, activity):
        hidden = hidden_for(self.grading, activity)
        if hidden not in self.open:
            self.open[hidden] = Session(*self.arguments, hidden=hidden)
        return self.open[hidden]

    def problems(self):
        return list(dict.fromkeys(note for session in self.open.values() for note in session.problems()))

    def close(self):
        for session in self.open.values():
            session.close()


def judge_activity(session, probes, cases, quiet=False):
    """The Outcome of one activity's hidden cases. Every case is run, so the feedback can say
    how many failed; a case that stops the worker ends the activity. `quiet` keeps the
    submission's own words out of the messages."""
    failures, stopped, needed = [], None, False
    for number, case in enumerate(cases, start=1):
        request = {"op": "probe", "source": f"{probes}\nprobe = {case.probe}\n",
                   "args": {key: encode(value) for key, value in case.args.items()}}
        try:
            reply = session.ask(request)
        except WorkerFailure as failure:
            failures.append(f"{case.title}: {failure}")
            stopped = number
            break
        if "error" in reply:
            detail = "" if quiet else reply.get("message", "")
            failures.append(f"{case.title}: raised {reply['error']}" + (f": {detail}" if detail else ""))
            needed = needed or (bool(session.hidden) and reply.get("unavailable", False))
            continue
        try:
            with session.clock.phase("judge"):
                problem = case.judge(decode(reply["value"]))
        except Exception:  # a reply the judge cannot read is a wrong answer, never a crash
            problem = f"{case.title}: returned something the grader could not read"
        if problem:
            failures.append(problem)
    total = len(cases)
    if not failures:
        return Outcome(True, f"passed all {plural(total, 'hidden check')}")
    summary = f"failed {len(failures)} of {plural(total, 'hidden check')}"
    if stopped is not None and stopped < total:
        earlier = len(failures) - 1
        summary = (f"hidden check {stopped} of {total} did not complete, so the remaining {total - stopped} "
                   f"were not run" + (f"; {earlier} of the {plural(stopped - 1, 'check')} before it failed"
                                      if earlier else ""))
    needed = f"{NEEDED_PYTORCH} " if needed else ""
    return Outcome(False, f"{summary}. {needed}The first failure: {failures[0]}")


def grade(path, options=Options()):
    """(result, answers): the result of grading the notebook at `path` (Gradescope schema plus
    `status`) and the student's code by answer-cell id."""
    started = time.monotonic()
    name = student_name(path)
    try:
        notebook = load(path)
        lab = identify(notebook, list(course_labs().values()))
        grading = grading_for(lab.name, hidden_seed(path, options))
    except (LabNotGradable, GraderError) as error:
        return error_result(name, path, error.kind, str(error), started, lab.name), {}
    except SubmissionError as error:
        return error_result(name, path, error.kind, str(error), started), {}
    clock = Clock(options.limits.submission_seconds)
    steps = program(lab, notebook)
    unchanged = untouched(lab, notebook)
    sessions = Sessions(lab, steps, options, clock, grading)
    outcomes, status = {}, "graded"
    try:
        for activity in lab.activities:
            try:
                outcome = judge_activity(sessions.of(activity), grading.probes, grading.cases[activity])
            except OutOfTime:
                status = "timeout"
                outcome = Outcome(False, f"not graded: the submission used up its "
                                         f"{options.limits.submission_seconds:g} s time limit")
            if activity in unchanged and not outcome.passed:
                functions = lab.activities[activity].functions
                outcome = Outcome(False, "not attempted: your answer cell is still the stub, which raises "
                                         f"NotImplementedError('Complete Activity {activity}: {functions[0]}'); "
                                         f"write {listing(functions)} there", untouched=True)
            outcomes[activity] = outcome
        problems = sessions.problems()
    except WorkerFailure as failure:
        problems = [str(failure)]
        for activity in lab.activities:
            outcomes.setdefault(activity, Outcome(False, f"not graded: {failure}"))
    except GraderError as error:
        return error_result(name, path, error.kind, str(error), started, lab.name), {}
    finally:
        sessions.close()
    if status == "graded":
        rejudge_with_reference_engine(grading, steps, outcomes, options, clock)
    found = answers(lab, notebook)
    point_at_pytorch(grading, found, outcomes)
    result = activity_result(name, path, lab, outcomes, problems, status, started)
    result["extra_data"]["phases"] = {key: round(value, 3) for key, value in clock.phases.items()}
    return result, found


def rejudge_with_reference_engine(grading, steps, outcomes, options, clock):
    """An activity built on earlier ones is judged again on a correct engine when one of those
    failed, so that a mistake costs only the points of the activity where it was made. The
    reference code runs after the submission's and replaces the failed activities' functions;
    nothing the submission says in that run reaches the feedback."""
    lab, retry = grading.lab, {}
    for activity, needs in grading.depends.items():
        broken = [need for need in needs if not outcomes[need].passed]
        if broken and not outcomes[activity].passed and not outcomes[activity].untouched:
            retry[activity] = broken
    if not retry:
        return
    # An activity is retried with only its own failed dependencies replaced: never its own code,
    # even when it is itself a failed dependency of another retried activity.
    groups = {}
    for activity, broken in retry.items():
        groups.setdefault(tuple(broken), []).append(activity)
    for broken, activities in groups.items():
        sessions = Sessions(lab, steps, options, clock, grading, extra_steps=[
            Step(lab.activities[need].reference.source, False, "reference") for need in broken])
        try:
            for activity in activities:
                if judge_activity(sessions.of(activity), grading.probes, grading.cases[activity], quiet=True).passed:
                    outcomes[activity] = Outcome(True, "passed on a correct engine; with yours it failed because of "
                                                       f"{'activity' if len(broken) == 1 else 'activities'} "
                                                       f"{', '.join(broken)}, which lost their own points")
        except (OutOfTime, WorkerFailure, GraderError):
            pass  # the activity keeps the result it got on the submission's own engine
        finally:
            sessions.close()


def point_at_pytorch(grading, found, outcomes):
    """The static first message: a failed activity graded without PyTorch whose answer cell
    names PyTorch (or a given helper that calls it) is told where. The grade never depends on it."""
    for activity, outcome in outcomes.items():
        if outcome.passed or outcome.untouched or hidden_for(grading, activity) == ():
            continue
        mention = pytorch_mentions(grading.lab, found.get(f"{activity}-answer", ""))
        if mention is not None:
            outcomes[activity] = Outcome(False, f"{outcome.message.rstrip('.')}. Your answer cell uses PyTorch "
                                                f"on its line {mention[0]} (`{mention[1][:80]}`); this activity "
                                                "is graded with NumPy only.")


def activity_result(name, path, lab, outcomes, problems, status, started):
    """The Gradescope result. `score` is required plus bonus points (Gradescope's way of giving
    extra credit: a score above max_score); `extra_data` keeps the two apart for people."""
    tests, earned = [], {"required": 0, "bonus": 0, "max_required": 0, "max_bonus": 0}
    for activity_id, activity in lab.activities.items():
        outcome = outcomes[activity_id]
        points = activity.points if outcome.passed else 0
        kind = "bonus" if activity.optional else "required"
        earned[kind] += points
        earned[f"max_{kind}"] += activity.points
        tests.append({"name": activity_id, "score": points, "max_score": activity.points,
                      "status": "passed" if outcome.passed else "failed", "output": outcome.message,
                      "visibility": "visible", "tags": ["optional"] if activity.optional else []})
    summary = score_line(earned)
    output = "\n".join([f"Score: {summary}.", *(["Problems in your notebook's own cells:", *problems]
                                                 if problems else [])])
    return {"score": earned["required"] + earned["bonus"], "max_score": earned["max_required"], "status": status,
            "output": output, "visibility": "visible", "tests": tests,
            "execution_time": round(time.monotonic() - started, 2),
            "extra_data": {"submission": name, "lab": lab.name, "path": str(path), "summary": summary, **earned}}


def score_line(earned):
    """'14/14 + 4 bonus': required and bonus points apart, never '18 of 14'."""
    line = f"{earned['required']}/{earned['max_required']}"
    return line + (f" + {earned['bonus']} bonus" if earned["max_bonus"] else "")


def error_result(name, path, kind, message, started, lab_name=None):
    return {"score": 0, "max_score": 0, "status": kind, "output": message, "visibility": "visible", "tests": [],
            "execution_time": round(time.monotonic() - started, 2),
            "extra_data": {"submission": name, "lab": lab_name, "path": str(path)}}


def hidden_seed(path, options):
    """The seed of the submission's hidden inputs: the one the caller gave, else the course
    secret's HMAC of the notebook's bytes."""
    if options.seed is not None:
        return options.seed
    return submission_seed(options.secret or course_secret(), Path(path).read_bytes())
