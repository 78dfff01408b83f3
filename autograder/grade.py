"""Grade one submission: run its code in a worker, ask each activity's questions, judge.

Each activity is judged only on what the submission's functions return for the grader's
inputs. A cell or a question that hangs or kills the worker costs the activity it belongs to;
the grader starts a new worker without that cell and goes on with the others.
"""
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder.labs import graded_labs, knowledge, probes_source
from autograder.sandbox import Limits, Worker, WorkerFailure
from autograder.submission import Step, SubmissionError, answers, identify, load, program, student_name
from autograder.worker import decode, encode
from course.labs import ROOT

MAX_RESTARTS = 20  # each costs a few seconds; the submission time limit bounds them anyway


@dataclass(frozen=True)
class Options:
    limits: Limits = field(default_factory=Limits)
    sandboxed: bool = True


class OutOfTime(Exception):
    pass


class Session:
    """A worker that has run the submission's program, restarted as often as needed."""

    def __init__(self, lab, steps, options, deadline, extra_steps=()):
        self.lab, self.steps, self.options, self.deadline = lab, list(steps) + list(extra_steps), options, deadline
        self.skipped = {}  # step index -> why the step is left out of later runs
        self.errors = {}  # step index -> the error it raised on its first run
        self.worker, self.restarts, self.folder = None, 0, None

    def timeout(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise OutOfTime()
        return min(self.options.limits.cell_seconds, left)

    def start(self):
        """A fresh worker with the program run, leaving out steps that hung or killed one."""
        while True:
            self.close()
            if self.restarts > MAX_RESTARTS:
                raise WorkerFailure("died", "the notebook's code kept crashing the grader's Python process")
            self.restarts += 1
            self.folder = Path(tempfile.mkdtemp(prefix="grading-"))
            for name in self.lab.data_files:
                (self.folder / "data").mkdir(exist_ok=True)
                shutil.copyfile(ROOT / "data" / name, self.folder / "data" / name)
            self.worker = Worker(self.folder, self.options.limits, self.options.sandboxed)
            for index, step in enumerate(self.steps):
                if index in self.skipped:
                    continue
                try:
                    reply = self.worker.ask({"op": "run", "source": step.source}, self.timeout())
                except WorkerFailure as failure:
                    self.skipped[index] = failure
                    break
                if "error" in reply:
                    self.errors.setdefault(index, reply)
            else:
                return

    def ask(self, request):
        if self.worker is None:
            self.start()
        try:
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
                notes.append(f"{step.label} raised {error['error']}: {error.get('message', '')}".rstrip(": "))
        return notes

    def close(self):
        if self.worker is not None:
            self.worker.close()
            self.worker = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


def judge_activity(session, lab_name, cases, quiet=False):
    """(passed, message) for one activity. `quiet` keeps the submission's own words out."""
    source = probes_source(lab_name)
    for case in cases:
        request = {"op": "probe", "source": f"{source}\nprobe = {case.probe}\n",
                   "args": {key: encode(value) for key, value in case.args.items()}}
        try:
            reply = session.ask(request)
        except WorkerFailure as failure:
            return False, f"{case.title}: {failure}"
        if "error" in reply:
            if quiet:
                return False, f"{case.title}: raised {reply['error']}"
            return False, f"{case.title}: raised {reply['error']}: {reply.get('message', '')}".rstrip(": ")
        try:
            problem = case.judge(decode(reply["value"]))
        except Exception:  # a reply the judge cannot read is a wrong answer, never a crash
            problem = f"{case.title}: returned something the grader could not read"
        if problem:
            return False, problem
    return True, f"passed all {len(cases)} checks"


def grade(path, options=Options()):
    """(result, answers): the result of grading the notebook at `path` (Gradescope schema plus
    `status`) and the student's code by answer-cell id."""
    started = time.monotonic()
    name = student_name(path)
    try:
        notebook = load(path)
        lab = identify(notebook, list(graded_labs().values()))
    except SubmissionError as error:
        return error_result(name, path, error.kind, str(error), started), {}
    grading = knowledge(lab.name)
    deadline = started + options.limits.submission_seconds
    steps = program(lab, notebook)
    session = Session(lab, steps, options, deadline)
    outcomes, status = {}, "graded"
    try:
        for activity in lab.activities:
            try:
                outcomes[activity] = judge_activity(session, lab.name, grading.cases()[activity])
            except OutOfTime:
                status = "timeout"
                outcomes[activity] = (False, f"not graded: the submission used up its "
                                             f"{options.limits.submission_seconds:g} s time limit")
        problems = session.problems()
    except WorkerFailure as failure:
        problems = [str(failure)]
        for activity in lab.activities:
            outcomes.setdefault(activity, (False, f"not graded: {failure}"))
    finally:
        session.close()
    if status == "graded":
        rejudge_with_reference_engine(lab, grading, steps, outcomes, options, deadline)
    return activity_result(name, path, lab, outcomes, problems, status, started), answers(lab, notebook)


def rejudge_with_reference_engine(lab, grading, steps, outcomes, options, deadline):
    """An activity built on earlier ones is judged again on a correct engine when one of those
    failed, so that a mistake costs only the points of the activity where it was made. The
    reference code runs after the submission's and replaces the failed activities' functions;
    nothing the submission says in that run reaches the feedback."""
    retry = {}
    for activity, needs in grading.DEPENDS.items():
        broken = [need for need in needs if not outcomes[need][0]]
        untouched = f"Complete Activity {activity}:" in outcomes[activity][1]
        if broken and not outcomes[activity][0] and not untouched:
            retry[activity] = broken
    if not retry:
        return
    replaced = sorted({need for broken in retry.values() for need in broken}, key=list(lab.activities).index)
    session = Session(lab, steps, options, deadline, extra_steps=[
        Step(lab.activities[need].reference.source, False, "reference") for need in replaced])
    try:
        for activity, broken in retry.items():
            passed, _ = judge_activity(session, lab.name, grading.cases()[activity], quiet=True)
            if passed:
                outcomes[activity] = (True, f"passed on a correct engine; with yours it failed because of "
                                            f"activit{'y' if len(broken) == 1 else 'ies'} {', '.join(broken)}, "
                                            "which lost their own points")
    except (OutOfTime, WorkerFailure):
        pass  # the activity keeps the result it got on the submission's own engine
    finally:
        session.close()


def activity_result(name, path, lab, outcomes, problems, status, started):
    tests, score, max_score = [], 0, 0
    for activity_id, activity in lab.activities.items():
        passed, message = outcomes[activity_id]
        earned = activity.points if passed else 0
        score += earned
        max_score += 0 if activity.optional else activity.points
        tests.append({"name": activity_id, "score": earned, "max_score": activity.points,
                      "status": "passed" if passed else "failed", "output": message,
                      "visibility": "visible", "tags": ["optional"] if activity.optional else []})
    output = "\n".join(["Problems in your notebook's own cells:", *problems]) if problems else ""
    return {"score": score, "max_score": max_score, "status": status, "output": output, "visibility": "visible",
            "tests": tests, "execution_time": round(time.monotonic() - started, 2),
            "extra_data": {"submission": name, "lab": lab.name, "path": str(path)}}


def error_result(name, path, kind, message, started):
    return {"score": 0, "max_score": 0, "status": kind, "output": message, "visibility": "visible", "tests": [],
            "execution_time": round(time.monotonic() - started, 2),
            "extra_data": {"submission": name, "lab": None, "path": str(path)}}
