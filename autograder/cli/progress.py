"""What a grading run tells the person waiting for it: where the batch is while it runs, and at the
end, what it came to.

On a terminal, one line redrawn every second: done/total, elapsed time, an estimate of the rest,
and what is being graded now and for how long. In a log (no terminal: CI, `nohup`), one plain
line per finished submission, and every minute a line naming what is still running, so that a
silent log always means a stopped grader. On a Dask cluster, a submission sent but not yet
started by a worker is counted as queued, apart from those running, and its time is counted from
its start on the worker.
"""
import shutil
import sys
import threading
import time

from autograder.labs.vocabulary import plural
from autograder.records.lateness import counts_as_late, score_said

TICK = 1.0  # seconds between redraws on a terminal
LOG_TICK = 60.0  # seconds between "still running" lines in a log


def listed(title, rows):
    """A section of the summary: `title` with its count, then a line per (submission, what to say)."""
    if not rows:
        return []
    return [f"{title} ({len(rows)}):", *(f"  {printable(submission)}: {printable(said)}" for submission, said in rows)]


def printable(text):
    """`text` for the terminal: a character that is not printable could move the cursor or
    rewrite what is shown."""
    return "".join(character if character.isprintable() else "?" for character in str(text))


def clock(seconds):
    """'1:05:09', '4:07'."""
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


def verdict(result):
    """A result in a few words: its points after any late penalty, or its status and the reason."""
    if result["status"] == "graded":
        return f"graded, {score_said(result)}"
    reason = (result.get("output") or "").strip().splitlines()
    return f"{result['status']}: {reason[0][:160] if reason else 'no reason given'}"


class Progress:
    def __init__(self, total, stream=None):
        self.stream = stream or sys.stderr
        self.total, self.done, self.started = total, 0, time.monotonic()
        self.running = {}  # label -> when it started
        self.queued, self.finished = set(), set()  # sent to a cluster and not started yet; done
        self.terminal = self.stream.isatty()
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True)
        if total:
            self._ticker.start()

    def queue(self, label):
        """`label` waits for a worker of the cluster."""
        with self._lock:
            self.queued.add(printable(label))

    def start(self, label):
        with self._lock:
            label = printable(label)
            if label not in self.finished:  # a cluster's word that a task started may come after its result
                self.queued.discard(label)
                self.running[label] = time.monotonic()

    def finish(self, label, result, seconds=None):
        """`label` is done; `seconds`, when given, is how long it ran (on a cluster's worker)."""
        with self._lock:
            label = printable(label)
            began = self.running.pop(label, None)
            self.queued.discard(label)
            self.finished.add(label)
            self.done += 1
            if seconds is None and began is not None:
                seconds = time.monotonic() - began
            took = f" ({seconds:.1f} s)" if seconds is not None else ""
            if self.terminal:
                self._clear()
            self.stream.write(f"[{self.done}/{self.total} {clock(self.elapsed())}] {label}: "
                              f"{printable(verdict(result))}{took}\n")
            if self.terminal:
                self._draw()
            self.stream.flush()

    def elapsed(self):
        return time.monotonic() - self.started

    def line(self):
        """The status line: done/total, elapsed, the estimate, what runs now (longest first) and
        how many wait for a worker."""
        elapsed = self.elapsed()
        left = f", about {clock(elapsed / self.done * (self.total - self.done))} left" if self.done else ""
        running = self.now_running()
        return "; ".join([f"{self.done}/{self.total} done, {clock(elapsed)} elapsed{left}",
                          *([f"grading {running}"] if running else []), *self.waiting()])

    def now_running(self):
        """'s01/lab 0:12, s02/lab 0:03': what runs now, longest first, and for how long."""
        now = time.monotonic()
        running = sorted(self.running.items(), key=lambda item: item[1])
        return ", ".join(f"{label} {clock(now - since)}" for label, since in running)

    def waiting(self):
        return [f"{len(self.queued)} queued, not started yet"] if self.queued else []

    def _draw(self):
        width = shutil.get_terminal_size((100, 20)).columns - 1
        self.stream.write("\r" + self.line()[:width])

    def _clear(self):
        self.stream.write("\r\033[K")

    def _tick(self):
        interval = TICK if self.terminal else LOG_TICK
        while not self._stop.wait(interval):
            with self._lock:
                if self.terminal:
                    self._clear()
                    self._draw()
                elif self.running or self.queued:
                    running = self.now_running()
                    self.stream.write(f"[{self.done}/{self.total} {clock(self.elapsed())}] " + "; ".join(
                        [*([f"still running: {running}"] if running else []), *self.waiting()]) + "\n")
                self.stream.flush()

    def close(self):
        self._stop.set()
        with self._lock:
            if self.terminal and self.total:
                self._clear()
                self.stream.flush()


def summary(run, total, missing, skipped, out):
    """The closing lines of a run: `run` ({submission: result}) holds the results of the `total`
    submissions this run was given (fewer when it was interrupted), `missing` [(student, lab)]
    is the whole class's, `skipped` [(path, why)] the run's."""
    lines = []
    graded = sum(result["status"] == "graded" for result in run.values())
    lines.append(f"graded {graded} of {total} submissions; results in {out}")
    if len(run) < total:
        lines.append(f"{plural(total - len(run), 'submission')} without a result yet: run the same command again")
    counts = {}
    for result in run.values():
        counts[result["status"]] = counts.get(result["status"], 0) + 1
    lines.append("statuses: " + ", ".join(f"{status} {count}" for status, count in sorted(counts.items())))
    lines += listed("not graded", [(submission, verdict(result)) for submission, result in run.items()
                                   if result["status"] != "graded"])
    late = {submission: result["extra_data"].get("late", {}) for submission, result in run.items()}
    lines += listed("handed in late", [(submission, late[submission].get("said", ""))
                                       for submission, result in run.items() if counts_as_late(result)])
    lines += listed("hand-in times for a person to check", [(submission, "; ".join(said["to_check"]))
                                                            for submission, said in late.items()
                                                            if said.get("to_check")])
    if missing:
        lines.append(f"missing ({len(missing)}), in the class's records: no submission for a lab others handed in:")
        lines += [f"  {printable(student)}/{lab}" for student, lab in missing]
    if skipped:
        lines.append(f"skipped ({len(skipped)}):")
        lines += [f"  {printable(path)}: {why}" for path, why in skipped]
    return lines
