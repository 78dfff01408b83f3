"""What a submission breaks costs at most its own activity, never the grader or the host: garbage
on the reply pipe, replies too large or too deep, a process broken for the lab's own cells,
trees that defeat a recursive removal, a disk filled, and words it puts into its feedback."""
import errno
import json
import os
import subprocess
import struct
import sys
import tracemalloc

import numpy
import pytest

from autograder.grading.grade import Clock, Options, Session, judge_activity, quoted_error
from autograder.grading.submission import Step
from autograder.isolation.errors import GraderError
from autograder.isolation.sandbox import Limits, Worker, parse_reply, remove_tree
from autograder.isolation.worker import MAX_ITEMS, MAX_REPLY, QUOTED, REPLY_NESTING, decode, encode
from autograder.labs import course_labs
from autograder.labs.vocabulary import Case
from tests.adversarial.faults import REPLY_PIPE
from tests.helpers import ROOT, grade_command, lab_notebook, results_in

LAB = course_labs()["scalar_engine"]


@pytest.fixture
def worker(tmp_path):
    started = Worker(tmp_path, Limits(disk_bytes=8 << 20), True)
    yield started
    started.close()


def ask_probe(worker, body, timeout=60):
    """The reply to a probe whose body (student code, indented by the caller) runs in `worker`."""
    source = f"{REPLY_PIPE}\n\ndef probe():\n{body}\n"
    return worker.ask({"op": "probe", "source": source, "args": {}}, timeout)


def value_of(reply):
    assert "value" in reply, reply
    return decode(reply["value"])


def test_a_line_longer_than_a_reply_is_dropped_as_it_streams(worker):
    """Three times MAX_REPLY without a newline, then the real reply: the grader holds at most
    one cap's worth of it (before the cap was enforced while reading, it held the whole line)."""
    tracemalloc.start()
    try:
        reply = ask_probe(worker, f"    _write(b'7' * {3 * MAX_REPLY} + b'\\n')\n    return 7")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert value_of(reply) == 7
    assert peak < MAX_REPLY + (8 << 20), f"reading one long line held {peak >> 20} MiB"


def test_lines_too_deep_for_a_reply_are_not_replies(worker):
    """A line of 100,000 '[' (deeper than json's recursion) and a reply with the request's own tag
    but nested deeper than any honest one are skipped; the real reply is what counts."""
    deep = "[" * (REPLY_NESTING + 1) + "]" * (REPLY_NESTING + 1)
    body = f'''    _, seq = _reply_pipe()
    _write(b"[" * 100000 + b"\\n")
    _write(('{{"ok": true, "value": {deep}, "seq": "%s"}}\\n' % seq).encode())
    return 7'''
    assert value_of(ask_probe(worker, body)) == 7


def test_the_deepest_honest_reply_is_within_the_nesting_limit():
    nested = numpy.arange(3.0)
    for depth in range(10):
        nested = {"key": [nested, (depth,)]} if depth % 2 else [nested]
    line = json.dumps({"ok": True, "value": encode(nested), "seq": "0"})
    assert parse_reply(line.encode()) is not None
    assert parse_reply(("[" * (REPLY_NESTING + 1)).encode() + b"]" * (REPLY_NESTING + 1)) is None


def test_an_answer_too_large_to_send_fails_at_once(worker):
    """Without the worker's own refusal the grader would drop the reply as garbage and wait
    for one until the time limit."""
    reply = ask_probe(worker, f"    import numpy\n    return numpy.zeros({MAX_REPLY // 6})", timeout=30)
    assert reply["error"] == "ReplyTooLarge", reply


@pytest.mark.parametrize("forged", [
    {"kind": "ndarray", "dtype": "(100000,100000)<f8", "shape": [1], "data": "AAAAAAAAAAA="},
    {"kind": "ndarray", "dtype": "V1000000000", "shape": [1], "data": "AAAAAAAAAAA="},
    {"kind": "ndarray", "dtype": "|O", "shape": [1], "data": "AAAAAAAAAAA="},
    {"kind": "ndarray", "dtype": "<f8", "shape": [2, 3], "data": "AAAAAAAAAAA="},
    {"kind": "ndarray", "dtype": "<f8", "shape": [-1], "data": "AAAAAAAAAAA="},
    {"kind": "ndarray", "dtype": "<f8", "shape": [1] * 40, "data": "AAAAAAAAAAA="},
    {"kind": "ndarray", "dtype": "<f8", "shape": "1", "data": "AAAAAAAAAAA="},
], ids=["subarray-dtype", "void-dtype", "object-dtype", "shape-too-big", "negative", "too-many-axes", "not-a-list"])
def test_decode_refuses_arrays_encode_never_makes(forged):
    with pytest.raises(ValueError):
        decode(forged)


def test_decode_still_reads_what_encode_writes():
    for value in (numpy.arange(6.0).reshape(2, 3), numpy.int32(4), numpy.zeros((0, 3)), [1.5, (2, "x")]):
        back = decode(json.loads(json.dumps(encode(value))))
        assert numpy.array_equal(back, value) if isinstance(value, numpy.ndarray | numpy.generic) else back == value


def test_plain_lists_come_back_bit_for_bit_and_with_their_types():
    """Lists of numbers travel as JSON itself (the probes' most common value): every float to the
    last bit, its sign and NaN included, and bools, ints and None not taken for one another."""
    value = [0.1, -0.0, 5e-324, float("inf"), -float("inf"), float("nan"), 2.0 ** 60, [1, True, None, "s"], []]
    encoded = encode(value)
    back = decode(json.loads(json.dumps(encoded)))
    assert encoded["kind"] == "plain"
    assert [type(item) for item in back] == [type(item) for item in value]
    assert [struct.pack("<d", item) for item in back[:7]] == [struct.pack("<d", item) for item in value[:7]]
    assert [type(item) for item in back[7]] == [int, bool, type(None), str]


@pytest.mark.parametrize("forged", [[{"a": 1}], [[[[[[[1]]]]]]], ["x" * 5000], [0] * (MAX_ITEMS + 1),
                                    [1, [2.0, [None, {"a": 1}]]], [[], [[0] * (MAX_ITEMS + 1)]], [0, [0, ["x" * 5000]]]],
                         ids=["dict-inside", "too-deep", "long-string", "too-long", "dict-deep-inside",
                              "too-long-inside", "long-string-inside"])
def test_decode_refuses_plain_lists_encode_never_makes(forged):
    with pytest.raises(ValueError):
        decode({"kind": "plain", "value": forged})


def test_plain_lists_at_the_limits_are_read():
    """Six levels of lists, MAX_ITEMS items, strings of 2,000 characters: what encode still sends."""
    for value in ([[[[[[1.5]]]]]], [0] * MAX_ITEMS, [["x" * 2000, None, True]], [[i, [i - 1, 1.0]] for i in range(10_001)]):
        assert encode(value)["kind"] == "plain"
        assert decode(json.loads(json.dumps(encode(value)))) == value


@pytest.mark.parametrize("warm", [pytest.param(True, marks=pytest.mark.slow), False], ids=["warm", "cold"])
def test_writes_beyond_the_disk_cap_fail_with_enospc(tmp_path, request, warm):
    """/submission and /tmp hold at most disk_bytes each, as bubblewrap and the zygote mount
    them; the lab's data is there, read-only, beside files the submission makes."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "table.csv").write_text("a,b\n1,2\n")
    worker = Worker(tmp_path, Limits(disk_bytes=8 << 20), True, request.getfixturevalue("pool") if warm else None)
    body = '''    import os
    seen = {"data": open("data/table.csv").read()}
    for place in ("/submission", "/tmp"):
        try:
            for number in range(12):
                with open(f"{place}/filler-{number}", "wb") as handle:
                    handle.write(b"x" * (1 << 20))
            seen[place] = "all written"
        except OSError as error:
            seen[place] = error.errno
    try:
        open("data/table.csv", "w")
    except OSError as error:
        seen["overwrite data"] = error.errno
    open("data/mine.txt", "w").write("mine")
    return seen'''
    try:
        seen = value_of(ask_probe(worker, body))
    finally:
        worker.close()
    assert seen == {"data": "a,b\n1,2\n", "/submission": errno.ENOSPC, "/tmp": errno.ENOSPC,
                    "overwrite data": errno.EROFS}
    assert sorted(os.listdir(tmp_path / "data")) == ["table.csv"], "the sandbox wrote into the host's folder"


@pytest.mark.parametrize("warm", [pytest.param(True, marks=pytest.mark.slow), False], ids=["warm", "cold"])
def test_a_worker_meets_signals_as_a_fresh_interpreter_does_warm_or_cold(tmp_path, request, warm):
    """A zygote's child starts with every signal at its default; a write to a pipe nobody reads
    would then kill a warm worker where a cold one raises BrokenPipeError, and one submission's
    broken line would cost the next case its worker."""
    worker = Worker(tmp_path, Limits(), True, request.getfixturevalue("pool") if warm else None)
    body = """    import os, signal
    read, write = os.pipe()
    os.close(read)
    try:
        os.write(write, b"x")
        wrote = "written"
    except BrokenPipeError:
        wrote = "BrokenPipeError"
    return [wrote, signal.getsignal(signal.SIGINT) is signal.default_int_handler]"""
    try:
        assert value_of(ask_probe(worker, body)) == ["BrokenPipeError", True]
    finally:
        worker.close()


def deep_tree(top, depth):
    """`depth` nested folders below `top`, made by walking down (paths beyond PATH_MAX)."""
    fd = os.open(top, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("f", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    finally:
        os.close(fd)


def test_remove_tree_removes_what_rmtree_cannot(tmp_path):
    top = tmp_path / "left"
    top.mkdir()
    deep_tree(top, 2500)
    (top / "locked").mkdir()
    (top / "locked" / "inside").write_text("x")
    (top / "locked").chmod(0)
    os.symlink("/etc", top / "link")
    remove_tree(top)
    assert not top.exists()
    assert os.path.exists("/etc/passwd"), "a symlink's target was removed"


def broken_session(steps):
    """A session of scalar_engine that runs `steps` as its program, in cold sandboxed workers."""
    return Session(LAB, steps, Options(Limits(cell_seconds=30), True, warm=False), Clock(600))


PRINT_EXITS = "import builtins, os\nbuiltins.print = lambda *args, **kwargs: os._exit(3)\n"


def test_a_given_cell_the_student_broke_is_left_out_and_charged_to_them():
    """The student's cell makes print end the process; the lab's cell that prints then dies, but
    runs in a fresh process without the student's code: it is left out, with a note, and what
    does not need it still runs."""
    session = broken_session([Step(PRINT_EXITS, True, "your cell 1"),
                              Step("shown = 1\nprint(shown)", False, "given cell 2"),
                              Step("after = 2", False, "given cell 3")])
    try:
        reply = session.ask({"op": "probe", "source": "def probe():\n    return [after, 'shown' in globals()]\n",
                             "args": {}})
        assert decode(reply["value"]) == [2, False]
        [note] = session.problems()
        assert note.startswith("given cell 2 was left out: your code that ran before it broke") and "status 3" in note
    finally:
        session.close()


def test_a_given_cell_that_fails_without_student_code_is_a_grader_error():
    session = broken_session([Step("x = 1", True, "your cell 1"),
                              Step("import os\nos._exit(4)", False, "given cell 2")])
    try:
        with pytest.raises(GraderError, match="given cell 2 failed .* without any of the submission's code"):
            session.start()
    finally:
        session.close()


LEAKY = '''
def answer(x):
    import sys
    frame = sys._getframe()
    while "request" not in frame.f_locals:
        frame = frame.f_back
    if x == "probe":
        raise ValueError(frame.f_locals["request"]["source"])
    raise ValueError("hidden input " + repr(x) * 500)
'''


def feedback_for(argument):
    probes = "def call(x):\n    return answer(x)  # the probe, which the feedback must not show\n"
    session = broken_session([Step(LEAKY, True, "your cell 1"),
                              Step("raise ValueError('z' * 900)", True, "your cell 2")])
    case = Case("1a", "a hidden check", "call", {"x": argument}, lambda answer: None)
    try:
        outcome = judge_activity(session, probes, [case])
        return outcome.message, session.problems()
    finally:
        session.close()


def test_feedback_quotes_a_submission_briefly_and_never_the_probe():
    message, problems = feedback_for("secret")
    said = message.split("raised ValueError: ", 1)[1]
    assert said.startswith("hidden input 'secret'") and len(said) == QUOTED + 1 and said.endswith("…")
    assert problems == [f"your cell 2 raised ValueError: {'z' * QUOTED}…"]
    message, _ = feedback_for("probe")
    assert message.endswith("a hidden check: raised ValueError") and "return answer" not in message


def test_a_check_that_never_finished_is_named_beside_the_first_failure():
    """A near miss on an early check, then a check that runs out of time: the time-out says how
    the answer works (too slow a method), so the feedback names it, even as the last check."""
    code = "def answer(x):\n    while x == 2:\n        pass\n    return x + 1e-9\n"
    session = Session(LAB, [Step(code, True, "your cell 1")],
                      Options(Limits(cell_seconds=2), True, warm=False), Clock(600))
    near = Case("1a", "check one", "call", {"x": 1}, lambda answer: None if answer == 1 else f"got {answer}")
    slow = Case("1a", "check two, which only a fast method finishes", "call", {"x": 2}, lambda answer: None)
    probes = "def call(x):\n    return answer(x)\n"
    try:
        outcome = judge_activity(session, probes, [near, slow])
    finally:
        session.close()
    assert outcome.message.startswith("failed 2 of 2 hidden checks. The first failure: got 1.000000001"), outcome
    assert " Check 2 did not complete: check two, which only a fast method finishes: " in outcome.message, outcome


HOLDS = """
import os
born = os.urandom(8).hex()  # a new one in every worker that runs this cell
held = [bytearray(HOLD)]

def answer(keep, error):
    if keep is None:
        return born
    held.append(bytearray(keep))  # zeroed, so its pages are the process's own
    raise {"MemoryError": MemoryError, "ValueError": ValueError}[error]
"""


def test_a_case_that_ran_out_of_memory_holding_most_of_it_gives_the_next_case_fresh_workers():
    """What a case left held would have the kernel end the worker at the next case's first large
    allocation, and that case would fail for this one's sake (Session.crowded). A failed
    allocation that holds nothing keeps its worker, and so does another error."""
    cap = 3 << 30
    session = holding(0, cap)
    try:
        first = decode(asked(session, None)["value"])
        assert asked(session, 0)["error"] == "MemoryError", "it holds nothing: it goes on"
        assert decode(asked(session, None)["value"]) == first
        assert asked(session, cap * 3 // 5, "ValueError")["error"] == "ValueError"
        assert decode(asked(session, None)["value"]) == first, "no case ran out of memory"
        assert asked(session, 0)["error"] == "MemoryError"
        assert decode(asked(session, None)["value"]) != first, "the next case ran in the worker holding 60% of its cap"
    finally:
        session.close()


def test_a_program_that_holds_most_of_the_memory_itself_keeps_its_worker_when_a_case_runs_out():
    """Starting again would run the program again, which takes the memory again: it would only
    cost the submission its restarts, and past MAX_RESTARTS its other activities."""
    cap = 3 << 30
    session = holding(cap * 3 // 5, cap)
    try:
        first = decode(asked(session, None)["value"])
        assert asked(session, 0)["error"] == "MemoryError" and decode(asked(session, None)["value"]) == first
    finally:
        session.close()


def holding(hold, cap):
    """A session of scalar_engine whose program holds `hold` bytes, under a memory cap of `cap`."""
    return Session(LAB, [Step(HOLDS.replace("HOLD", str(hold)), True, "your cell 1")],
                   Options(Limits(cell_seconds=30, memory_bytes=cap), True, warm=False), Clock(600))


def asked(session, keep, error="MemoryError"):
    """HOLDS's answer(keep, error) as a hidden case asks it."""
    return session.ask({"op": "probe", "source": "def call(keep, error):\n    return answer(keep, error)\n",
                        "probe": "call", "args": {"keep": encode(keep), "error": encode(error)}})


def test_quoted_error_keeps_short_messages_whole():
    assert quoted_error({"error": "ZeroDivisionError", "message": "division by zero"}) == \
        "ZeroDivisionError: division by zero"


@pytest.mark.slow
def test_a_grading_run_leaves_nothing_in_tmp(tmp_path, solved_dir):
    """A real run (warm pool, sandbox) of one solved notebook, with the temporary folder the grader
    and its zygotes see: empty before, empty after."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    environment = {**os.environ, "TMPDIR": str(scratch)}
    run = subprocess.run(grade_command(lab_notebook(solved_dir, LAB), "--out", tmp_path / "out"), cwd=ROOT,
                         env=environment, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    assert results_in(tmp_path / "out")[LAB.name]["status"] == "graded"
    assert sorted(os.listdir(scratch)) == []


def test_a_regrade_gives_the_students_cells_no_more_time_than_the_first_run():
    """A re-grade on the reference engine runs alone (autograder/isolation/rooms.py): a cell that hung in the
    first run stays out of it, and the student's other cells keep the first run's limit; only what
    the reference engine's forwarding costs (the lab's cells, the probes) gets REFERENCE_FACTOR."""
    from autograder.grading.grade import REFERENCE_FACTOR, Sessions, reference_engine
    from autograder.labs import grading_for

    grading = grading_for(LAB.name, 0)
    options = Options(limits=Limits(cell_seconds=7.0))
    steps = [Step("x = 1\n", True, "cell 1 (it begins 'x = 1')"),
             Step("while True:\n    pass\n", True, "cell 2 (it begins 'while True:')")]
    activity, broken = next((activity, needs) for activity, needs in grading.depends.items())
    first = Sessions(LAB, steps, options, Clock(600), grading)
    first.of(activity).skipped[1] = "it did not finish within the time limit"
    first.close()
    step, reference = reference_engine(LAB, list(broken))
    again = Sessions(LAB, steps, options, Clock(600), grading, extra_steps=[step], reference=reference,
                     left_out=first.left_out).of(activity)
    assert again.skipped == {1: "it did not finish within the time limit"}
    assert again.timeout(own_code=True) == 7.0
    assert again.timeout() == 7.0 * REFERENCE_FACTOR
