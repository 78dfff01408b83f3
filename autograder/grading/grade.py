"""Grade one submission: run its code in a worker, ask each activity's questions, judge.

Each activity is judged only on what the submission's functions return for the grader's
inputs. A cell or a question that hangs or kills the worker costs the activity it belongs to;
the grader starts a new worker without that cell and goes on with the others.
"""
import ast
import os
import re
import tempfile
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy

from autograder.diagnosis import answer_sketch
from autograder.diagnosis.case_tokens import NOT_RUN, NUMBERS, PASSED, STOPPED, failed, raised
from autograder.diagnosis.matching import REPLAY_SEED, candidates, confirm, known_for, replayed_for
from autograder.grading.secret import course_secret, submission_seed
from autograder.grading.submission import (Step, SubmissionError, answer_names, answers, identify, load, program,
                                           untouched)
from autograder.isolation.affinity import one_processor, place
from autograder.isolation.errors import GraderError
from autograder.isolation.rooms import ROOMS, alone
from autograder.isolation.sandbox import (WALL_FACTOR, WITHOUT_PYTORCH, Limits, Pool, Worker, WorkerFailure, process_scratch,
                                          remove_tree)
from autograder.isolation.worker import QUOTED, decode, encode
from autograder.labs import LabNotGradable, course_labs, grading_for
from autograder.labs.policy import NEEDED_PYTORCH, hidden_for, pytorch_mentions
from autograder.labs.vocabulary import listing, plural
from course.syntax import parse

MAX_RESTARTS = 20  # each costs a few seconds; the submission time limit bounds them anyway
PROBE_LINE = 16  # a message holding a line of the probe this long, or held in it, is not quoted
PHASES = ("start", "cells", "probes", "judge")
# A re-grade on the reference engine forwards every step of the reference code across a pipe, and
# both workers' CPU counts: on a case of 500,000 entries that costs up to twenty times the
# reference's own time (11.6 s of CPU measured for pt03's jacobian, where the student's engine
# takes well under one). The overhead is the grader's, so a re-grade's cells get this much more.
REFERENCE_FACTOR = 5
# The hidden checks' PyTorch makes its compiler's cache folder on import (torch._dynamo): in a
# folder this process removes when it ends, not in /tmp for good.
if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(process_scratch(), "torchinductor")


@dataclass(frozen=True)
class Options:
    limits: Limits = field(default_factory=Limits)
    sandboxed: bool = True
    warm: bool = True  # fork workers from a zygote where the machine allows it (--no-pool: never)
    pool: object = None  # the running sandbox.Pool, set by batch.grade_all
    secret: bytes = None  # the course secret (autograder/grading/secret.py); None: course_secret()
    seed: int = None  # the hidden inputs' seed, where the caller derived it (a Dask task carries its own)
    rejudge: bool = True  # judge failed dependents again on the reference engine (the catalogue does not)
    diagnose: bool = True  # name the catalogued mistake a failing activity behaves like (autograder/diagnosis/matching.py)


class OutOfTime(Exception):
    pass


@dataclass(frozen=True)
class Outcome:
    passed: bool
    message: str
    untouched: bool = False  # the activity's answer cell still holds the stub
    stopped: bool = False  # a hidden check hung or killed the worker: the engine cannot be run again
    deferred: tuple = ()  # not run on the submission's engine, whose activities `deferred` stopped
    fingerprint: tuple = ()  # a token per hidden case (autograder/diagnosis/case_tokens.py)
    first_failed: str = ""  # the first failing hidden check's title, its drawn numbers as '#'
    sketches: tuple = ()  # what each hidden case's reply was (autograder/diagnosis/answer_sketch.py)


class Clock:
    """A submission's time, shared by every worker that runs it: its limit, counted in the
    seconds its workers used (CPU time where the control group counts it) with a wall-clock
    backstop, and the wall-clock seconds each phase of grading took, for the benchmark."""

    def __init__(self, seconds, reply_bytes=Limits.reply_bytes):
        self.seconds, self.spent = seconds, 0.0
        self.reply_bytes, self.received = reply_bytes, 0  # read from the submission's workers
        self.backstop = time.monotonic() + WALL_FACTOR * seconds
        self.phases = dict.fromkeys(PHASES, 0.0)
        self.refunds = 0.0  # the seconds given back (refunded): the grader's own cost, for the benchmark
        self.refunding = None  # while a refunded block runs: what it has used so far, a function

    @contextmanager
    def phase(self, name):
        started = time.monotonic()
        try:
            yield
        finally:
            self.phases[name] += time.monotonic() - started

    def left(self, worker):
        left = self.seconds - self.spent - (worker.used() if worker is not None else 0.0)
        if self.refunding is not None:  # the grader's replays share a limit as long as the submission's
            left = min(left, self.seconds - self.refunds - self.refunding())
        if left <= 0 or time.monotonic() > self.backstop:
            raise OutOfTime(f"used up its {self.seconds:g} s time limit")
        return left

    def bytes_left(self, *workers):
        """What the submission's workers (those running, and those closed before) may still write
        on the grader's pipes."""
        left = self.reply_bytes - self.received - sum(worker.received for worker in workers if worker is not None)
        if left <= 0:
            raise OutOfTime(f"wrote more than its {self.reply_bytes} bytes on the grader's pipes")
        return left

    def charge(self, worker):
        self.spent += worker.used()
        self.received += worker.received

    def charge_reading(self, worker):
        """For the grader's side of a link, whose CPU time its submission's worker counts already:
        what the grader read from it, and its parsing, which the submission's answers shape."""
        self.spent += worker.parsing
        self.received += worker.received

    def waited(self, seconds):
        """Time spent waiting for other submissions is not the submission's own."""
        self.backstop += seconds

    @contextmanager
    def refunded(self, session):
        """Whatever `session`'s workers use inside the block is the grader's, not the submission's:
        its CPU seconds, its wall-clock seconds (the backstop moves on by them) and the bytes read,
        even when the block ends in OutOfTime or WorkerFailure (a worker closed meanwhile charged
        its share on closing, and is counted through `spent`).
        The blocks of a submission together may use as many seconds as the submission: a worker's
        CPU limit (sandbox.rlimits) counts both, and a refund cannot give a process back its CPU."""
        def held():  # counted as charge() and charge_reading() count them when the session closes
            worker, reference = session.worker, session.reference_worker
            return (self.spent + (worker.used() if worker else 0.0) + (reference.parsing if reference else 0.0),
                    self.received + sum(w.received for w in (worker, reference) if w is not None))

        spent, received, started = *held(), time.monotonic()
        self.refunding = lambda: max(0.0, held()[0] - spent)
        try:
            yield
        finally:
            self.refunding = None
            now_spent, now_received = held()
            self.refunds += max(0.0, now_spent - spent)
            self.spent -= max(0.0, now_spent - spent)
            self.received -= max(0, now_received - received)
            self.backstop += time.monotonic() - started


class Session:
    """A worker that has run the submission's program, restarted as often as needed. A session
    with `hidden` modules runs in a worker that cannot import them, and runs each cell statement
    by statement, so that the code around a failed `import torch` still runs."""

    def __init__(self, lab, steps, options, clock, extra_steps=(), hidden=(), kind=None, reference=None,
                 left_out=None, apart=frozenset()):
        """`left_out`: {step index: why} of the steps an earlier run left out, which this one
        leaves out from the start (a re-grade never runs again a cell that hung or crashed).
        `apart`: the probes that run in the worker of the grader's side of a link (the reference
        worker, which then serves even where `reference` is None)."""
        self.lab, self.steps, self.options, self.clock = lab, list(steps) + list(extra_steps), options, clock
        self.hidden, self.reference, self.reference_worker, self.apart = hidden, reference, None, apart
        self.kind = kind if kind is not None else "without PyTorch" if hidden else "with PyTorch"
        self.room = None  # held from the first start until release(): see autograder/isolation/rooms.py
        self.skipped = dict(left_out or {})  # step index -> why the step is left out of later runs
        self.errors = {}  # step index -> the error it raised on its first run
        self.worker, self.restarts, self.folder, self.held_at_start = None, 0, None, 0
        self.placed = ExitStack()  # the processor a link's two workers share, while they live
        self.alone = set()  # indices of given steps known to run without any of the submission's code

    def timeout(self, own_code=False, apart=False):
        """The limit of the next request. In a re-grade the reference engine's forwarding is paid for
        (REFERENCE_FACTOR), but a cell of the student's own (`own_code`) gets what the first run gave it.
        A probe run `apart` pays for every step it takes across the link, as a re-grade does."""
        forwarded = (self.reference is not None and not own_code) or apart
        cell = self.options.limits.cell_seconds * (REFERENCE_FACTOR if forwarded else 1)
        return min(cell, self.clock.left(self.worker))

    def start(self):
        """A fresh worker with the program run, leaving out steps that hung or killed one."""
        while True:
            self.close()
            if self.restarts > MAX_RESTARTS:
                raise WorkerFailure("died", "the notebook's code kept crashing the grader's Python process")
            self.restarts += 1
            if self.room is None:
                self.room = ExitStack()
                self.clock.waited(self.room.enter_context(ROOMS.room(self.kind)))
            self.folder = Path(tempfile.mkdtemp(prefix="grading-"))
            if self.reference is None and not self.apart:
                self.worker = self.new_worker(self.folder)
            else:
                self.start_with_reference()
            if self.run_steps():
                self.held_at_start = self.held() or 0
                return

    def new_worker(self, folder, **joined):
        self.lab.copy_data(folder)
        with self.clock.phase("start"):
            return Worker(folder, self.options.limits, self.options.sandboxed, self.options.pool, self.hidden,
                          **joined)

    def start_with_reference(self):
        """The submission's worker and, joined to it by a worker.Link and counted in its control
        group, a worker that holds the reference functions and runs no submission code."""
        ours, theirs = os.pipe(), os.pipe()  # (read, write): submission -> reference, and back
        options = self.options
        try:
            self.worker = self.new_worker(self.folder, link=(theirs[0], ours[1]))
            self.reference_folder = Path(tempfile.mkdtemp(prefix="grading-reference-"))
            pool = options.pool.running(WITHOUT_PYTORCH) if isinstance(options.pool, Pool) else options.pool
            with self.clock.phase("start"):
                self.reference_worker = Worker(self.reference_folder, options.limits, options.sandboxed,
                                               pool, WITHOUT_PYTORCH, link=(ours[0], theirs[1]),
                                               group=self.worker.group)
        finally:
            for fd in (*ours, *theirs):
                os.close(fd)
        if self.worker.group is not None:  # both workers are in it: they take turns on one processor
            cpu = self.placed.enter_context(one_processor())
            if cpu is not None:
                place(self.worker.group.pids(), cpu)
        served = self.reference or {"imports": "", "source": "", "offered": []}
        self.reference_worker.ask({"op": "serve_reference", **served}, self.timeout())

    def run(self, worker, step, timeout):
        return worker.ask({"op": "run_each" if self.hidden else "run", "source": step.source}, timeout,
                          budget=self.clock.bytes_left(worker))

    def run_steps(self):
        """Run the program in the fresh worker; False when a step stopped it (start again). A
        given step that stops it is the lab's own code: it is left out only where the
        submission's code broke it, that is where it runs in a fresh worker without that code."""
        with self.clock.phase("cells"):
            for index, step in enumerate(self.steps):
                if index in self.skipped:
                    continue
                try:
                    reply = self.run(self.worker, step, self.timeout(own_code=step.student))
                except WorkerFailure as failure:
                    if step.student:
                        self.skipped[index] = failure
                    elif self.runs_alone(index):
                        self.skipped[index] = (f"your code that ran before it broke the Python process, so that it "
                                               f"failed there ({failure}), while it runs without your code")
                    else:
                        raise GraderError(f"the lab's {step.label} failed ({failure}) even in a fresh process "
                                          "without any of the submission's code; a person needs to look at this "
                                          "submission") from None
                    return False
                if "error" in reply:
                    self.errors.setdefault(index, reply)
        return True

    def runs_alone(self, index):
        """True when the given steps up to `index` finish in a fresh worker that runs none of the
        submission's code. Its time is the grader's, not charged to the submission."""
        if index in self.alone:
            return True
        folder, worker = Path(tempfile.mkdtemp(prefix="grading-")), None
        try:
            worker = self.new_worker(folder)
            given = [position for position in range(index + 1) if not self.steps[position].student]
            for position in given:
                self.run(worker, self.steps[position], self.options.limits.cell_seconds)
        except WorkerFailure:
            return False
        finally:
            if worker is not None:
                worker.close()
            remove_tree(folder)
        self.alone.update(given)
        return True

    def ask(self, request, observations=None, apart=False):
        """The reply to `request`, a probe's making `observations` (see Worker.ask): from the
        submission's worker, or, `apart`, from the grader's side of the link, whose lines the
        submission cannot write."""
        if self.worker is None:
            self.start()
        try:
            with self.clock.phase("probes"):
                if apart:
                    reply = self.reference_worker.ask(request, self.timeout(apart=True), observations,
                                                      self.clock.bytes_left(self.worker, self.reference_worker))
                    if reply.get("line_lost"):  # said by the grader's side: both workers start again
                        self.close()
                else:
                    reply = self.worker.ask(request, self.timeout(), observations, self.clock.bytes_left(self.worker))
        except WorkerFailure:
            self.close()
            raise
        if self.worker is not None and "error" in reply and error_kind(reply) == "MemoryError" and self.crowded():
            self.close()
        return reply

    def crowded(self):
        """Whether the workers' control group holds more than half its memory cap above what it held
        once the program had run. A case that ran out of memory may leave it so: objects that
        crossed the link are kept for the rest of the link's life, and freed memory is not always
        given back. Then the next case's first large allocation would have the kernel end a worker,
        and that case would fail for this one's sake; so after such a case both workers start again,
        as after a lost line. A worker that merely failed to allocate (an array of 800 GB) keeps
        running, and so does one whose program itself holds the memory: starting again would not
        free it, only cost the submission its restarts."""
        held = self.held()
        return held is not None and held - self.held_at_start > self.worker.group.memory_bytes / 2

    def held(self):
        """Bytes of memory the workers' control group holds now; None where it is not counted."""
        group = self.worker.group
        return None if group is None else group.memory_in_use()

    def problems(self):
        """What went wrong in the student's own cells, for the feedback."""
        notes = []
        for index, step in enumerate(self.steps):
            if index in self.skipped:
                notes.append(f"{step.label} was left out: {self.skipped[index]}")
            elif index in self.errors and step.student:
                error = self.errors[index]
                said = quoted_error(error)
                notes.append(f"{step.label} needed PyTorch ({said}): free in your own cells, but not available to "
                             "the activities graded with NumPy only" if error.get("unavailable")
                             else f"{step.label} raised {said}")
        return notes

    def close(self):
        if self.worker is not None:
            self.clock.charge(self.worker)
            self.worker.close()
            self.worker = None
        if self.reference_worker is not None:
            self.clock.charge_reading(self.reference_worker)
            self.reference_worker.close()
            self.reference_worker = None
            remove_tree(self.reference_folder)
            self.placed.close()
        if self.folder is not None:
            remove_tree(self.folder)
            self.folder = None

    def release(self):
        """Close, and leave the room to sessions of other kinds."""
        self.close()
        if self.room is not None:
            self.room.close()
            self.room = None


class Sessions:
    """A Session per set of hidden modules, started only when an activity needs it: the
    activities graded without PyTorch share one worker, those that use it another. The two never
    run at once: asking for one closes the other (grade() asks for each kind's activities
    together), so that no worker of a submission can talk to one with PyTorch. `kind` puts
    every session in a room of its own (see autograder/isolation/rooms.py)."""

    def __init__(self, lab, steps, options, clock, grading, extra_steps=(), kind=None, reference=None,
                 left_out=None):
        self.arguments, self.grading, self.kind = (lab, steps, options, clock, extra_steps), grading, kind
        self.reference = reference
        self.current, self.notes = None, []
        self.left_out = dict(left_out or {})  # every step a session of these left out, for a re-grade

    def of(self, activity):
        hidden = hidden_for(self.grading, activity)
        if self.current is None or self.current.hidden != hidden:
            self._retire()
            apart = frozenset(case.probe for other, cases in self.grading.cases.items()
                              if hidden_for(self.grading, other) == hidden for case in cases
                              if case.probe in self.grading.apart)
            self.current = Session(*self.arguments, hidden=hidden, kind=self.kind, reference=self.reference,
                                   left_out=self.left_out, apart=apart)
        return self.current

    def _retire(self):
        if self.current is not None:
            self.notes += self.current.problems()
            self.left_out.update(self.current.skipped)
            self.current.release()
            self.current = None

    def problems(self):
        return list(dict.fromkeys(self.notes + (self.current.problems() if self.current is not None else [])))

    def close(self):
        self._retire()


def judged(case, reply):
    """The judge's verdict on a probe's reply. What a probe observed left the sandbox as it was
    made; a count other than the probe makes means something else wrote on the reply pipe or
    kept the probe from writing, so the case fails."""
    observed = reply.get("observations", [])
    if len(observed) != case.observations:
        return (f"{case.title}: the grader received {plural(len(observed), 'observation')} where its probe makes "
                f"{case.observations}; something in the submission tampered with the grader's probe")
    if not case.observations:
        return case.judge(decode(reply["value"]))
    return case.judge(decode(reply["value"]), [decode(item) for item in observed])


def request_for(probes, case):
    return {"op": "probe", "source": probes, "probe": case.probe,
            "args": {key: encode(value) for key, value in case.args.items()}}


def error_kind(reply):
    """An error reply's kind, for a token or a sketch. Running out of memory is one outcome, whichever
    allocation noticed it first: NumPy's (_ArrayMemoryError), Python's, or the link's own code on the
    submission's side (worker.RAN_OUT)."""
    kind = quoted(reply.get("error", "?"), 80)
    return "MemoryError" if kind.split(" (")[0] == "MemoryError" else kind


def sketched(case, reply):
    """The sketch of a probe's reply (answer_sketch.py); a reply the grader cannot read sketches as
    what it is not."""
    if "error" in reply:
        return answer_sketch.raised(error_kind(reply))
    try:
        value = decode(reply["value"])
        observed = [decode(item) for item in reply.get("observations", [])] if case.observations else None
        if case.sketch_of:
            value, observed = case.sketch_of(value, observed), None
        with numpy.errstate(all="ignore"):  # a projection of values near the float limit is inf, and that is its sketch
            return answer_sketch.sketch(value, observed)
    except Exception:
        return ["unreadable"]


def judge_activity(session, probes, cases, quiet=False, sketch=False):
    """The Outcome of one activity's hidden cases. Every case is run, so the feedback can say
    how many failed; a case that stops the worker ends the activity. `quiet` keeps the
    submission's own words out of the messages, and stops at the first failure: a re-grade
    needs only whether the activity passes, and which check failed first. `sketch` keeps each
    reply's sketch in the Outcome, for building fingerprints; a grading's diagnosis sketches only
    the replay (replay_activity), and sketching every reply cost a fifth of the grader's CPU."""
    failures, stopped, needed = [], None, False  # failures: (the check's number, what went wrong)
    tokens, sketches = [], []
    for number, case in enumerate(cases, start=1):
        if quiet and failures:
            break
        request = request_for(probes, case)
        try:
            reply = session.ask(request, case.observations, case.probe in session.apart)
        except WorkerFailure as failure:
            failures.append((number, f"{case.title}: {failure}"))
            tokens.append(STOPPED)
            sketches.append(answer_sketch.STOPPED)
            stopped = number
            break
        if sketch:
            sketches.append(sketched(case, reply))
        if "error" in reply:
            failures.append((number, f"{case.title}: raised {quoted_error(reply, request['source'], quiet)}"))
            tokens.append(raised(error_kind(reply)))
            needed = needed or (bool(session.hidden) and reply.get("unavailable", False))
            continue
        try:
            with session.clock.phase("judge"):
                problem = judged(case, reply)
        except Exception:  # a reply the judge cannot read is a wrong answer, never a crash
            problem = f"{case.title}: returned something the grader could not read"
        tokens.append(failed(case.title, problem) if problem else PASSED)
        if problem:
            failures.append((number, problem))
    total = len(cases)
    fingerprint = tuple(tokens) + (NOT_RUN,) * (total - len(tokens))
    sketches = tuple(sketches) + (answer_sketch.NOT_RUN,) * (total - len(sketches)) if sketch else ()
    if not failures:
        return Outcome(True, f"passed all {plural(total, 'hidden check')}", fingerprint=fingerprint,
                       sketches=sketches)
    (first, said), halted = failures[0], stopped is not None
    # The class report counts students' first failures together: the seed's numbers would part them.
    first_failed = NUMBERS.sub("#", cases[first - 1].title)
    if quiet:
        return Outcome(False, f"failed hidden check {first} of {total}: {said}", stopped=halted,
                       first_failed=first_failed)
    summary = f"failed {len(failures)} of {plural(total, 'hidden check')}"
    if halted and stopped < total:
        earlier = len(failures) - 1
        summary = (f"hidden check {stopped} of {total} did not complete, so the remaining {total - stopped} "
                   f"were not run" + (f"; {earlier} of the {plural(stopped - 1, 'check')} before it failed"
                                      if earlier else ""))
    needed = f"{NEEDED_PYTORCH} " if needed else ""
    # A check that never finished says more about the method than an earlier near miss (a
    # difference quotient off in the ninth digit, then too slow to finish): name both.
    unfinished = f" Check {stopped} did not complete: {failures[-1][1]}" if halted and stopped != first else ""
    return Outcome(False, f"{summary}. {needed}The first failure: {said}{unfinished}", stopped=halted,
                   fingerprint=fingerprint, first_failed=first_failed, sketches=sketches)


def replay_activity(session, probes, cases):
    """The sketches of the answer's replies to `cases`, unjudged: what the answer computes, for
    answer_sketch.same. A case that stops the worker ends the replay, as it ends a judging."""
    sketches = []
    for case in cases:
        try:
            reply = session.ask(request_for(probes, case), case.observations, case.probe in session.apart)
        except WorkerFailure:
            sketches.append(answer_sketch.STOPPED)
            break
        sketches.append(sketched(case, reply))
    return tuple(sketches) + (answer_sketch.NOT_RUN,) * (len(cases) - len(sketches))


def replayed(grading, session, activity, outcome, outcomes):
    """The answer's sketches of REPLAY_SEED's cases of a failed `activity`, asked of `session` right
    after its judging, or None when there is nothing to confirm: no catalogued mistake's tokens
    agree, an activity it calls failed already, or its engine stopped (asking again would cost
    another limit for nothing). The replay's time and bytes are the grader's (Clock.refunded);
    running out of them, the worker dying, or a restarted worker failing in the lab's own code
    only means no diagnosis: the score and status are the judging's alone."""
    if outcome.passed or outcome.stopped or not candidates(outcome.fingerprint, known_for(grading, activity)):
        return None
    if not all(outcomes[need].passed for need in grading.depends.get(activity, ()) if need in outcomes):
        return None
    try:
        with session.clock.refunded(session):
            return replay_activity(session, grading.probes, grading_for(grading.lab.name, REPLAY_SEED).cases[activity])
    except (OutOfTime, WorkerFailure, GraderError):
        return None


def quoted(text, limit=QUOTED):
    """What a submission chose to say, cut to `limit` characters for the feedback."""
    text = str(text)
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


def quoted_error(reply, source="", quiet=False):
    """'Kind: message' of an error reply, both cut short (the submission chose them). The message
    is left out when `quiet`, or when it repeats a line of `source` (the probe the grader sent,
    which the submission can read and would put into its own feedback)."""
    kind, message = quoted(reply.get("error", "?"), 80), str(reply.get("message", "")).strip()
    lines = [line.strip() for line in str(source).splitlines() if len(line.strip()) >= PROBE_LINE]
    if quiet or not message or any(line in message for line in lines) or (
            len(message) >= PROBE_LINE and message in str(source)):
        return kind
    return f"{kind}: {quoted(message)}"


def grade(path, options=Options(), expected_lab=None):
    """(result, answers): the result of grading the notebook at `path` (Gradescope schema plus
    `status`) and the student's code by answer-cell id. `expected_lab` is the lab the notebook
    was handed in as (nbgrader's assignment folder): a notebook of another lab is not graded. The
    result names the student by the file's stem; a grading run names the record by its roster key."""
    started = time.monotonic()
    name = Path(path).stem
    try:
        notebook = load(path)
        lab = identify(notebook, list(course_labs().values()))
        if expected_lab is not None and lab.name != expected_lab:
            return wrong_lab(name, path, lab, expected_lab, started), {}
        grading = grading_for(lab.name, hidden_seed(path, options))
    except (LabNotGradable, GraderError) as error:
        return error_result(name, path, error.kind, str(error), started, lab.name), {}
    except SubmissionError as error:
        return error_result(name, path, error.kind, str(error), started, expected_lab), {}
    clock = Clock(options.limits.submission_seconds, options.limits.reply_bytes)
    steps = program(lab, notebook)
    unchanged = untouched(lab, notebook)
    where = answer_names(lab, notebook)
    sessions = Sessions(lab, steps, options, clock, grading)
    outcomes, status, replays = {}, "graded", {}
    try:
        for activity in by_worker(grading):
            halted = [need for need in grading.depends.get(activity, ()) if need in outcomes and outcomes[need].stopped]
            if halted and activity not in unchanged:
                # Its engine hangs or crashes in `halted`: running it again would cost another
                # limit for nothing. It is judged on the correct engine instead (see rejudge_...).
                outcomes[activity] = Outcome(False, f"not run on your engine, because your {named(halted)} did "
                                                    "not finish there; it could not be judged on a correct engine "
                                                    "either", deferred=tuple(halted))
                continue
            try:
                outcome = judge_activity(sessions.of(activity), grading.probes, grading.cases[activity])
            except OutOfTime as out:
                status = "timeout"
                outcome = Outcome(False, f"not graded: the submission {out}")
            else:
                if options.diagnose and activity not in unchanged:
                    replays[activity] = replayed(grading, sessions.of(activity), activity, outcome, outcomes)
            if activity in unchanged and not outcome.passed:
                functions = lab.activities[activity].functions
                outcome = Outcome(False, f"not attempted: your answer cell, {where[f'{activity}-answer']}, is still "
                                         "the stub, which raises NotImplementedError('Complete Activity "
                                         f"{activity}: {functions[0]}'); "
                                         f"write {listing(functions)} there", untouched=True)
            outcomes[activity] = outcome
        problems = sessions.problems()
    except WorkerFailure as failure:
        problems = [str(failure)]
        for activity in lab.activities:
            outcomes.setdefault(activity, Outcome(False, f"not graded: {failure}", stopped=True))
    except GraderError as error:
        return error_result(name, path, error.kind, str(error), started, lab.name), {}
    finally:
        sessions.close()
    point_at_failed_cells(steps, problems, outcomes)
    diagnoses = name_mistakes(grading, outcomes, replays) if options.diagnose else {}
    stopped = [activity for activity, outcome in outcomes.items() if outcome.stopped]
    if status == "graded" and options.rejudge:
        rejudge_with_reference_engine(grading, steps, outcomes, options, clock, sessions.left_out)
    found = answers(lab, notebook)
    point_at_pytorch(grading, found, where, outcomes)
    result = activity_result(name, path, lab, outcomes, problems, status, started)
    result["extra_data"]["phases"] = {key: round(value, 3) for key, value in clock.phases.items()}
    result["extra_data"]["cpu_seconds"] = round(clock.spent, 2)
    result["extra_data"]["replay_cpu_seconds"] = round(clock.refunds, 2)  # not counted in cpu_seconds
    result["extra_data"]["diagnoses"] = {activity: {"mistakes": list(d.mistakes), "advice": d.advice,
                                                    "matched_on": d.tier} for activity, d in diagnoses.items()}
    # For the class report (autograder/reports/class_report.py): what the messages say, kept as data.
    result["extra_data"]["not_attempted"] = [activity for activity, outcome in outcomes.items() if outcome.untouched]
    result["extra_data"]["stopped"] = stopped
    result["extra_data"]["first_failed"] = {activity: outcome.first_failed for activity, outcome in outcomes.items()
                                            if not outcome.passed and outcome.first_failed}
    return result, found


MISSING_NAME = re.compile(r"NameError: name '(\w+)' is not defined")


def point_at_failed_cells(steps, problems, outcomes):
    """An activity that failed on a name one of the student's own failed cells was to define says
    that the cell's error came first: that is the one to fix."""
    failed = [step for step in steps if step.student and any(note.startswith(step.label) for note in problems)]
    for activity, outcome in outcomes.items():
        missing = None if outcome.passed else MISSING_NAME.search(outcome.message)
        if missing is None:
            continue
        name = re.escape(missing.group(1))
        culprit = next((step for step in failed if re.search(rf"^\s*(?:(?:async\s+)?def|class)\s+{name}\b|^{name}\s*[:=]",
                                                            step.source, re.MULTILINE)), None)
        if culprit is not None:
            outcomes[activity] = replace(outcome, message=f"{outcome.message.rstrip('.')}. It is missing because "
                                                          f"{culprit.label}, which defines it, failed before it "
                                                          "could (see the notes above): fix that cell first.")


def name_mistakes(grading, outcomes, replays):
    """{activity: Diagnosis} for the failed activities that compute what a catalogued mistake
    computes, whose messages gain the diagnosis. `replays`: {activity: the answer's sketches of
    REPLAY_SEED's cases, or None}. An activity is diagnosed only when the activities it calls
    passed: otherwise its cases ran on the student's other slips too."""
    diagnoses = {}
    for activity, outcome in outcomes.items():
        if outcome.passed or outcome.untouched or outcome.deferred or not replays.get(activity):
            continue
        if not all(outcomes.get(need, outcome).passed for need in grading.depends.get(activity, ())):
            continue
        chosen = {m.description for m in candidates(outcome.fingerprint, known_for(grading, activity))}
        diagnosis = confirm(replays[activity], [(m, sketches) for m, sketches in replayed_for(grading, activity)
                                                if m.description in chosen])
        if diagnosis is not None:
            outcomes[activity] = replace(outcome, message=f"{outcome.message.rstrip('.')}. {diagnosis.sentence()}")
            diagnoses[activity] = diagnosis
    return diagnoses


def by_worker(grading):
    """The lab's activities, those graded without PyTorch first: each kind's worker starts once."""
    return sorted(grading.lab.activities, key=lambda activity: hidden_for(grading, activity) == ())


def rejudge_with_reference_engine(grading, steps, outcomes, options, clock, left_out):
    """An activity built on earlier ones is judged again on a correct engine when one of those
    failed, so that a mistake costs only the points of the activity where it was made. The
    reference code runs after the submission's and replaces the failed activities' functions;
    nothing the submission says in that run reaches the feedback.

    An activity `deferred` because its engine hung or crashed in an activity it calls was never
    run on the submission's engine: the correct engine alone judges it, and a failure there is its
    own (its own functions are never replaced), so it is told which check failed.

    The student's own code gets no more time here than in the first run: its cells keep their
    limit, and those the first run left out (`left_out`: they hung or crashed a worker) stay out.
    The re-grade runs alone (autograder/isolation/rooms.py), so a looping cell would hold up the batch."""
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
        step, reference = reference_engine(lab, broken)
        sessions = Sessions(lab, steps, options, clock, grading, extra_steps=[step], kind=alone("reference engine"),
                            reference=reference, left_out=left_out)
        said = named(broken)
        try:
            for activity in sorted(activities, key=by_worker(grading).index):
                outcome = judge_activity(sessions.of(activity), grading.probes, grading.cases[activity], quiet=True)
                halted = outcomes[activity].deferred
                if outcome.passed and not halted:
                    outcomes[activity] = Outcome(True, "passed on a correct engine, so you keep its points: with "
                                                       f"your engine it failed only because your {said} failed, "
                                                       "which costs points there and not here")
                elif outcome.passed:
                    outcomes[activity] = Outcome(True, f"passed on a correct engine in place of {said} (your "
                                                       f"{named(halted)} did not finish, so this activity was not "
                                                       "run on your engine)")
                elif halted:
                    outcomes[activity] = Outcome(False, f"{outcome.message} (judged on a correct engine in place of "
                                                        f"{said}: your {named(halted)} did not finish, so this "
                                                        "activity was not run on your engine)")
        except (OutOfTime, WorkerFailure, GraderError):
            pass  # the activity keeps the result it got on the submission's own engine
        finally:
            sessions.close()


def named(activities):
    """'activity 1c', 'activities 1a and 1c'."""
    return f"{'activity' if len(activities) == 1 else 'activities'} {listing(activities)}"


def reference_engine(lab, broken):
    """What a re-grade on the reference engine adds: a given step that puts, in place of the
    `broken` activities' functions, stubs that call the reference worker; and what that worker is
    sent: the imports of the lab's given code and the reference cells' source."""
    offered = [name for need in broken for name in lab.activities[need].functions]
    targets = ", ".join(offered) + ("," if len(offered) == 1 else "")
    step = Step(f"{targets} = _reference_functions({', '.join(map(repr, offered))})\n", False, "reference engine")
    return step, {"imports": given_imports(lab), "offered": offered,
                  "source": "\n\n".join(lab.activities[need].reference.source for need in broken)}


def given_imports(lab):
    """The import statements at the top level of the lab's given code cells."""
    statements = []
    for cell in lab.cells:
        if cell.role == "given" and cell.cell_type == "code":
            try:
                tree = parse(cell.source)
            except SyntaxError:
                continue
            statements += [ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    return "\n".join(dict.fromkeys(statements))


def point_at_pytorch(grading, found, where, outcomes):
    """The static first message: a failed activity graded without PyTorch whose answer cell
    (`found`: {answer cell id: its code}, `where`: {answer cell id: its name}) names PyTorch (or a
    given helper that calls it) is told where. The grade never depends on it."""
    for activity, outcome in outcomes.items():
        if outcome.passed or outcome.untouched or hidden_for(grading, activity) == ():
            continue
        mention = pytorch_mentions(grading.lab, found.get(f"{activity}-answer", ""))
        if mention is not None:
            outcomes[activity] = Outcome(False, f"{outcome.message.rstrip('.')}. Your answer cell, "
                                                f"{where[f'{activity}-answer']}, uses PyTorch on its line "
                                                f"{mention[0]} (`{mention[1][:80]}`); this activity is graded "
                                                "with NumPy only.")


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
            "extra_data": {"student": name, "lab": lab.name, "path": str(path), "summary": summary, **earned}}


def score_line(earned):
    """'14/14 + 4 bonus': required and bonus points apart, never '18 of 14'."""
    line = f"{earned['required']}/{earned['max_required']}"
    return line + (f" + {earned['bonus']} bonus" if earned["max_bonus"] else "")


def wrong_lab(name, path, lab, expected_lab, started):
    """The result of a notebook of `lab` handed in as `expected_lab`: graded as neither."""
    result = error_result(name, path, "wrong_lab", f"this notebook is lab {lab.name} ({lab.title}), but it was handed "
                                                   f"in as lab {expected_lab}, so it was not graded: hand in "
                                                   f"{expected_lab}'s notebook as {expected_lab}, and this one as "
                                                   f"{lab.name}", started, expected_lab)
    result["extra_data"]["found_lab"] = lab.name
    return result


def error_result(name, path, kind, message, started, lab_name=None):
    return {"score": 0, "max_score": 0, "status": kind, "output": message, "visibility": "visible", "tests": [],
            "execution_time": round(time.monotonic() - started, 2),
            "extra_data": {"student": name, "lab": lab_name, "path": str(path)}}


def hidden_seed(path, options):
    """The seed of the submission's hidden inputs: the one the caller gave, else the course
    secret's HMAC of the notebook's bytes."""
    if options.seed is not None:
        return options.seed
    return submission_seed(options.secret or course_secret(), Path(path).read_bytes())
