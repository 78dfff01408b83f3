"""What a run shows while it runs (autograder/cli/progress.py): on a terminal a status line with
done/total, the time elapsed, an estimate and what is being graded now; in a log one plain line
per finished submission and, every minute, what is still running (on a cluster, apart from what
is queued); and at the end a summary that counts each status and names what was not graded, what
is missing and what was skipped."""
import io
import re
import time

import pytest

import autograder.cli.progress as progress
from autograder.cli.progress import Progress, clock, summary, verdict
from autograder.records.lateness import apply_late


class Terminal(io.StringIO):
    def isatty(self):
        return True


def graded(summary_line="14/14 + 4 bonus", late=None):
    """A graded result of the points `summary_line` says, with its lateness `late` applied."""
    required, bonus = (int(part.split()[0].split("/")[0]) for part in summary_line.split(" + "))
    result = {"status": "graded", "output": f"Score: {summary_line}.",
              "extra_data": {"summary": summary_line, "required": required, "bonus": bonus}}
    return apply_late(result, late or {})


LATE = {"penalty": 0.1, "seconds_late": 3600, "counts_as_late": True,
        "reason": "handed in 1 h late: 1 started day at 10%",
        "said": "Handed in 1 h late: \u221210%: 1 started day at 10%"}
WITHIN_GRACE = {"penalty": 0.0, "seconds_late": 300, "counts_as_late": False,
                "said": "Handed in 5 min after the due date, within the 10-minute grace period: on time"}


def failed(status, reason):
    return {"status": status, "output": reason, "extra_data": {}}


def test_a_log_gets_one_plain_line_per_finished_submission():
    stream = io.StringIO()
    shown = Progress(2, stream)
    shown.start("s01/pt03_autodiff")
    shown.finish("s01/pt03_autodiff", graded())
    shown.finish("s02/pt03_autodiff", failed("wrong_lab", "this notebook is lab scalar_engine\nmore"))
    shown.close()
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[1/2 0:00] s01/pt03_autodiff: graded, 14/14 + 4 bonus (")
    assert lines[1] == "[2/2 0:00] s02/pt03_autodiff: wrong_lab: this notebook is lab scalar_engine"
    assert "\r" not in stream.getvalue() and "\033" not in stream.getvalue()


def test_a_log_names_what_is_still_running_every_so_often(monkeypatch):
    monkeypatch.setattr(progress, "LOG_TICK", 0.05)
    stream = io.StringIO()
    shown = Progress(3, stream)
    shown.start("s03/tensor_engine")
    time.sleep(0.3)
    shown.close()
    assert "still running: s03/tensor_engine 0:00" in stream.getvalue()


def test_a_terminal_gets_a_status_line_with_the_estimate_and_what_runs_now(monkeypatch):
    monkeypatch.setattr(progress, "TICK", 0.05)
    stream = Terminal()
    shown = Progress(4, stream)
    shown.start("s01/pt03_autodiff")
    shown.finish("s01/pt03_autodiff", graded())
    shown.start("s02/scalar_engine")
    time.sleep(0.3)
    line = shown.line()
    shown.close()
    # The figures depend on how fast this machine is now; their places do not.
    assert re.match(r"1/4 done, \d+:\d\d elapsed, about \d+:\d\d left; grading s02/scalar_engine \d+:\d\d", line), line
    assert "\r1/4 done" in stream.getvalue() and "\033[K" in stream.getvalue()


def test_a_cluster_run_tells_queued_from_running_and_times_a_task_from_its_start(monkeypatch):
    monkeypatch.setattr(progress, "LOG_TICK", 0.05)
    stream = io.StringIO()
    shown = Progress(3, stream)
    for label in ("s01/a", "s02/a", "s03/a"):
        shown.queue(label)
    assert re.search(r"\d+:\d\d elapsed; 3 queued, not started yet$", shown.line()), shown.line()
    shown.start("s01/a")
    assert re.search(r"; grading s01/a \d+:\d\d; 2 queued, not started yet$", shown.line()), shown.line()
    waited = time.monotonic()
    while "still running" not in stream.getvalue():  # the log's next tick, however busy the machine
        assert time.monotonic() - waited < 120, stream.getvalue()
        time.sleep(0.05)
    shown.finish("s01/a", graded(), seconds=2.5)  # as its worker timed it, queueing apart
    shown.start("s01/a")  # the word that it started, come after its result: it runs no more
    assert shown.line().endswith("; 2 queued, not started yet"), shown.line()
    shown.close()
    text = stream.getvalue()
    assert re.search(r"\] still running: s01/a \d+:\d\d; 2 queued, not started yet\n", text), text
    assert re.search(r"\[1/3 \d+:\d\d\] s01/a: graded, 14/14 \+ 4 bonus \(2\.5 s\)\n", text), text


def test_names_cannot_move_the_cursor():
    stream = Terminal()
    shown = Progress(1, stream)
    shown.finish("evil\x1b[2J\r/lab", graded())
    shown.close()
    assert "evil?[2J?/lab" in stream.getvalue()


@pytest.mark.parametrize("seconds, shown", [(0, "0:00"), (65, "1:05"), (3725, "1:02:05")])
def test_clock(seconds, shown):
    assert clock(seconds) == shown


def test_the_summary_counts_statuses_and_names_the_rest():
    run = {"s01/a": graded(late=WITHIN_GRACE), "s02/a": graded("7/14 + 0 bonus", late=LATE),
           "s03/a": failed("invalid_notebook", "the file is empty"), "s04/a": failed("timeout", "")}
    lines = summary(run, 5, [("s05", "a")], [("submitted/s03/a/x.py", "not a notebook (.ipynb)")], "out")
    assert lines[0] == "graded 2 of 5 submissions; results in out"
    assert lines[1] == "1 submission without a result yet: run the same command again"
    assert lines[2] == "statuses: graded 2, invalid_notebook 1, timeout 1"
    text = "\n".join(lines)
    assert "not graded (2):\n  s03/a: invalid_notebook: the file is empty\n  s04/a: timeout: no reason given" in text
    assert "handed in late (1):\n  s02/a: Handed in 1 h late: \u221210%: 1 started day at 10%\n" in text, \
        "within the grace period is on time"
    assert "missing (1)" in text and "  s05/a" in text
    assert "skipped (1):\n  submitted/s03/a/x.py: not a notebook (.ipynb)" in text
    assert verdict(run["s02/a"]) == "graded, 7/14 + 0 bonus, \u221210% (handed in 1 h late: 1 started day at 10%): 6.3"
    assert verdict(run["s01/a"]) == "graded, 14/14 + 4 bonus"


def test_the_summary_names_each_disputed_hand_in_time_with_what_disagrees():
    disputed = graded()
    disputed["extra_data"]["late"] = {"to_check": ["timestamp.txt says 2026-11-01 10:00 UTC, but the notebook was "
                                                   "last written 504 h later", "a second\x1b[2J thing"]}
    lines = summary({"s01/a": graded(), "s02/a": disputed}, 2, [], [], "out")
    start = lines.index("hand-in times for a person to check (1):")
    # Both on the record's line, and nothing in them that moves the cursor.
    assert lines[start + 1] == ("  s02/a: timestamp.txt says 2026-11-01 10:00 UTC, but the notebook was last written "
                                "504 h later; a second?[2J thing")
    assert not any(line.startswith("  s01/a") for line in lines)
