"""The reference engine's line (autograder.isolation.worker.Link): reference code in one process works on
the submission's objects in another. Reads of plain attributes come from the copy that travels
with an object, so they must never be stale, and must never skip code the submission wrote."""
import fcntl
import json
import os
import time

import numpy
import pytest

from autograder.isolation import worker

REFERENCE = '''
def read_twice(v, poke):
    first = v.data
    v.grad = v.grad + 2 * first  # a one-way write
    poke()  # the submission's code runs: every copy is stale after it
    return first, v.data, v.grad

def read_many(v, times):
    return sum(v.data for _ in range(times))

def rule_of(v):
    def rule():
        v.grad = v.grad + v.data
    return rule

def write(v, value):
    v.grad = value
    v.label = "set"
    return v.grad
'''


@pytest.fixture
def line():
    """The submission's side of a Link whose other end, a forked child, serves REFERENCE."""
    to_reference, from_reference = os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:  # the reference side
        os.close(to_reference[1])
        os.close(from_reference[0])
        try:
            worker.serve_reference(worker.Link(to_reference[0], from_reference[1], serving=True), "", REFERENCE,
                                   ["read_twice", "read_many", "rule_of", "write"])
        finally:
            os._exit(0)
    os.close(to_reference[0])
    os.close(from_reference[1])
    link = worker.Link(from_reference[0], to_reference[1], serving=False)
    link.namespace = {}
    served = []  # the requests the reference side waited on (not its one-way writes)
    answer = link.answer
    link.answer = lambda message: (message.get("oneway") or served.append(message["op"]), answer(message))
    try:
        yield link, served, pid
    finally:
        link.channel.close()
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:  # reaped by the test
            pass


def reference(link, name):
    return link.request({"op": "function", "name": name})


class Plain:
    def __init__(self, data):
        self.data, self.grad = data, 0.5


def test_a_read_that_fails_part_way_closes_the_line_and_the_other_side_stops_waiting(line, monkeypatch):
    """A MemoryError while a large message arrives leaves the rest of the stream out of step:
    the line closes, so the reference side's wait for the reply it asked for ends at once."""
    link, _, pid = line

    def failing(fd, size):
        monkeypatch.setattr(worker, "_read", os.read)
        raise MemoryError
    monkeypatch.setattr(worker, "_read", failing)
    with pytest.raises(ConnectionError, match="MemoryError"):
        reference(link, "read_twice")(Plain(3.0), lambda: None)
    assert link.channel.closed
    for _ in range(200):  # the reference side's request ends, and with its line gone, it stops serving
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return
        time.sleep(0.05)
    pytest.fail("the reference side still waits on a line that lost its place")


def reading(monkeypatch, stream, cut=1 << 16, framed=True):
    """A Channel whose reads take `stream` `cut` bytes at a time, then find it closed."""
    reads = iter([stream[i:i + cut] for i in range(0, len(stream), cut)])
    monkeypatch.setattr(worker, "_read", lambda fd, size: next(reads, b""))
    return worker.Channel(0, 1, framed=framed)


@pytest.mark.parametrize("cut", [1, 7, 64, 1 << 16])
def test_every_message_is_read_whole_however_the_pipe_cuts_it(monkeypatch, cut):
    """A line's end may come in any read: first, last or alone in it, with several messages in
    one read and one message over many (a large array). What follows a message is kept for the
    next one, and a stream that ends part way through a message gives None."""
    messages = [{"a": 1}, {"b": "x" * 300_000}, {"c": [1, 2]}, {}, {"d": "\u00e9" * 5}]
    stream = b"".join(json.dumps(m).encode() + b"\n" for m in messages) + b'{"cut": '
    channel = reading(monkeypatch, stream, cut, framed=False)
    assert [channel.receive() for _ in messages] == messages
    assert channel.receive() is None


def test_a_read_asks_for_no_more_than_a_pipe_holds(monkeypatch):
    """A larger buffer is mapped and unmapped again at each read of a fresh worker (page faults
    at every one of the line's tens of thousands of messages: docs/speed.md)."""
    read, written = os.pipe()
    try:
        capacity = fcntl.fcntl(written, fcntl.F_GETPIPE_SZ)
    finally:
        os.close(read)
        os.close(written)
    asked, pieces = [], [b'{"a": 1}\n', b""]
    monkeypatch.setattr(worker, "_read", lambda fd, size: asked.append(size) or pieces.pop(0))
    channel = worker.Channel(0, 1)
    assert channel.receive() == {"a": 1} and channel.receive() is None
    assert asked and all(size <= capacity for size in asked), (asked, capacity)


def test_what_the_other_side_left_is_read_no_further_than_its_pipe_holds(monkeypatch):
    """Once its writer is gone a pipe holds at most its capacity. A submission's side that shut only
    its reading end and writes on could keep the pipe readable for as long as it liked; here the
    pipe always is (a byte in it is never taken), and every read brings a full chunk."""
    read, written = os.pipe()
    os.write(written, b"x")
    capacity = fcntl.fcntl(read, fcntl.F_GETPIPE_SZ)
    taken = []

    def endless(fd, size):
        if sum(taken) > 16 * capacity:
            raise AssertionError(f"left_behind read {sum(taken)} bytes of a pipe that holds {capacity}")
        taken.append(size)
        return b"x" * size

    monkeypatch.setattr(worker, "_read", endless)
    try:
        assert worker.Channel(read, written).left_behind() == []
    finally:
        os.close(read)
        os.close(written)
    assert sum(taken) <= capacity, (sum(taken), capacity)


def framed_stream(monkeypatch, *messages):
    """What a framed Channel writes for `messages`, each packed by a Link."""
    written = []
    monkeypatch.setattr(worker, "_write", lambda fd, data: written.append(bytes(data)) or len(data))
    sender = worker.Link(0, 1, serving=True)
    for message in messages:
        sender.channel.send({"value": sender.pack(message)}, "link", limit=None)
    monkeypatch.undo()
    return b"".join(written)




ARRAYS = [numpy.linspace(-1.0, 1.0, 100_000).reshape(200, 500).T, numpy.arange(12, dtype=numpy.int64).reshape(3, 4),
          numpy.array([True, False]), numpy.zeros((0, 3), dtype=numpy.float32), numpy.float32(0.1), numpy.array(2.5)]


@pytest.mark.parametrize("cut", [3, 4099, 1 << 16])
def test_arrays_cross_a_link_as_their_bytes_and_come_back_as_they_were(monkeypatch, cut):
    """An array's numbers go after the message's line, not as text in it, in any read's cuts;
    the message after them is read in step."""
    stream = framed_stream(monkeypatch, {"arrays": ARRAYS, "nested": [[ARRAYS[1]]]}, [1.5, "after"])
    line = stream[:stream.index(b"\n")]
    assert len(line) < 2000, "an array's numbers were sent as text in the line"
    channel = reading(monkeypatch, stream, cut)
    receiver = worker.Link(0, 1, serving=False)
    got = receiver.unpack(channel.receive()["value"])
    for sent, back in zip(ARRAYS + [ARRAYS[1]], [*got["arrays"], got["nested"][0][0]]):
        assert type(back) is type(sent) and back.dtype == sent.dtype and back.shape == sent.shape
        assert numpy.array_equal(back, sent)
    assert receiver.unpack(channel.receive()["value"]) == [1.5, "after"]
    assert channel.receive() is None


def lying(sizes, data, tail=b""):
    message = {"value": {"kind": "ndarray", "dtype": "<f8", "shape": [0], "data": data}}
    return f'{{"frames": {json.dumps(sizes)}, "message": {json.dumps(message)}}}\n'.encode() + tail


@pytest.mark.parametrize("stream", [
    lying([8], 1, bytes(8)), lying([8], -1, bytes(8)), lying([-8], 0), lying([8.0], 0, bytes(8)),
    lying([True], 0, bytes(8)), lying({"0": 8}, 0, bytes(8)), lying(8, 0, bytes(8)), b'{"frames": [], "x": 1}\n',
], ids=["past the last frame", "before the first", "negative size", "a float size", "a bool size",
        "sizes an object", "sizes a number", "no message"])
def test_a_message_that_lies_about_its_frames_closes_the_line(monkeypatch, stream):
    """What the other side sends is a claim: an array's data must be one of the frames its message
    carries, whose sizes are byte counts. Anything else loses the line, as garbage does."""
    link = worker.Link(0, 1, serving=True)
    link.channel = reading(monkeypatch, stream)
    monkeypatch.setattr(worker, "_close", lambda fd: None)
    assert link.receive() is None
    assert link.channel.closed and "could not be read" in link.broken


def test_an_array_that_refers_to_a_frame_in_a_message_without_frames_is_unreadable(monkeypatch):
    message = {"value": {"kind": "ndarray", "dtype": "<f8", "shape": [0], "data": 0}}
    channel = reading(monkeypatch, json.dumps(message).encode() + b"\n")
    with pytest.raises(ValueError, match="neither text nor a frame"):
        worker.Link(0, 1, serving=True).unpack(channel.receive()["value"])


@pytest.mark.parametrize("frame", [bytes(16), bytes(7)], ids=["two numbers for three", "not whole numbers"])
def test_an_array_whose_frame_does_not_fit_its_shape_is_unreadable(monkeypatch, frame):
    message = {"value": {"kind": "ndarray", "dtype": "<f8", "shape": [3], "data": 0}}
    stream = f'{{"frames": [{len(frame)}], "message": {json.dumps(message)}}}\n'.encode() + frame
    with pytest.raises(ValueError):
        worker.Link(0, 1, serving=True).unpack(reading(monkeypatch, stream).receive()["value"])


def test_only_a_links_channel_reads_frames(monkeypatch):
    """The grader's pipe carries JSON lines only: a line there that looks like a framed message is
    read as the line it is, and what follows it is the next line."""
    channel = reading(monkeypatch, b'{"frames": [8], "message": 1}\n{"next": 2}\n', framed=False)
    assert channel.receive() == {"frames": [8], "message": 1} and channel.receive() == {"next": 2}


def test_a_stream_that_ends_inside_a_messages_frames_is_closed(monkeypatch):
    stream = framed_stream(monkeypatch, ARRAYS[1])
    assert reading(monkeypatch, stream[:-1]).receive() is None


def test_a_reply_to_no_request_waiting_closes_the_reference_side_of_the_line():
    """Calls nest, so the one reply the reference side can be given is to its last request:
    any other means the line lost its place, and waiting on would wait for ever."""
    to_reference, from_reference = os.pipe(), os.pipe()
    os.write(to_reference[1], b'{"reply": 7, "value": {"kind": "int", "value": 1}, "seq": "link"}\n')
    link = worker.Link(to_reference[0], from_reference[1], serving=True)
    with pytest.raises(ConnectionError, match="a reply came to a request not waiting for one"):
        link.request({"op": "getattr", "target": 1, "name": "data"})
    assert link.channel.closed
    for fd in (to_reference[1], from_reference[0]):
        os.close(fd)


def test_a_read_after_the_submissions_code_ran_sees_what_it_did(line):
    link, *_ = line
    v = Plain(3.0)

    def poke():
        v.data = 10.0
    assert reference(link, "read_twice")(v, poke) == (3.0, 10.0, 6.5)
    assert v.grad == 6.5


def test_reads_of_plain_attributes_do_not_cross_the_line(line):
    link, served, _ = line
    assert reference(link, "read_many")(Plain(0.25), 200) == 50.0
    assert served == []


def test_a_closure_reads_the_objects_it_holds_as_they_are_when_it_is_called(line):
    link, served, _ = line
    v = Plain(2.0)
    rule = reference(link, "rule_of")(v)
    v.data, v.grad = 5.0, 1.0  # changed after the closure was made
    rule()
    rule()
    assert (v.data, v.grad) == (5.0, 11.0)
    assert served == []


def test_writes_reach_the_submissions_object(line):
    link, *_ = line
    v = Plain(1.0)
    assert reference(link, "write")(v, 4.0) == 4.0
    assert (v.grad, v.label) == (4.0, "set")


class WithProperty(Plain):
    reads = 0

    @property
    def data(self):
        type(self).reads += 1
        return self._data

    @data.setter
    def data(self, value):
        self._data = value


class WithSetattr(Plain):
    def __setattr__(self, name, value):
        object.__setattr__(self, name, value * 2 if name == "grad" else value)


def test_code_the_submission_wrote_runs_for_every_access(line):
    link, served, _ = line
    v = WithProperty(0.25)
    WithProperty.reads = 0
    assert reference(link, "read_many")(v, 5) == 1.25
    assert WithProperty.reads == 5 and served.count("getattr") == 5
    w = WithSetattr(1.0)
    assert reference(link, "write")(w, 4.0) == 8.0
    assert w.grad == 8.0


# The submission's side of a line whose other end runs a probe apart (worker.apart): the probe
# asks, the submission's objects answer.
SUBMISSION = '''
from contextlib import contextmanager

flag = True


@contextmanager
def switched():
    global flag
    before, flag = flag, False
    try:
        yield
    finally:
        flag = before


class Box:
    __array_ufunc__ = None  # NumPy's arrays leave their operators with a Box to it

    def __init__(self, value):
        self.value = value

    def __rmul__(self, other):
        return other * self.value

    def __rmatmul__(self, other):
        return ("rmatmul", other)


def count_into(state, key):
    state[key] = state.get(key, 0) + 1
    return dict(state)


def singular():
    import numpy

    return numpy.linalg.inv(numpy.zeros((2, 2)))


def leave():
    import os

    os._exit(0)
'''


def reply_after_the_other_side_left(last_words):
    """The reply of a probe run apart whose first request finds the submission's side gone: a
    forked child that wrote `last_words` on its line and exited."""
    to_submission, from_submission = os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(from_submission[1], last_words)
        finally:
            os._exit(0)  # whatever happens, the child never runs the rest of the test session
    for end in (to_submission[0], from_submission[1]):
        os.close(end)
    os.waitpid(pid, 0)
    link = worker.Link(from_submission[0], to_submission[1], serving=True)
    sent, request = Sent(), {"seq": "s", "probe": "probe", "args": {}}
    try:
        scope = worker.apart(link, os.open(os.devnull, os.O_WRONLY), "0")
        worker.run_probe(scope, {**request, "source": "def probe():\n    return Box(2.0).value\n"}, sent, link,
                         line=link)
    finally:
        link.channel.close()
    return sent.reply


def test_a_probe_whose_line_is_gone_before_it_writes_says_the_line_is_lost():
    """The submission's worker may be killed between two requests (its memory cap): the next
    write finds no reader, and the probe says its line is lost, as when a read finds it closed,
    rather than failing every later lookup of a name in the submission's namespace."""
    reply = reply_after_the_other_side_left(b"")
    assert reply["error"] == "ConnectionError" and reply["line_lost"] is True, reply


@pytest.mark.parametrize("last_words", [worker.RAN_OUT, b'{"partly": "a large rep' + worker.RAN_OUT],
                         ids=["ran out", "ran out part way through a reply"])
def test_a_probe_whose_request_finds_the_line_closed_after_it_ran_out_says_memoryerror(last_words):
    """A submission's side that runs out of memory writes RAN_OUT and closes its line, and this side
    may be writing its next request just then: the reply says MemoryError, as when it was reading
    (the same mistake's replay once said ConnectionError, and was not named)."""
    reply = reply_after_the_other_side_left(last_words)
    assert reply["error"] == "MemoryError" and reply["line_lost"] is True, reply


def no_memory(*args, **kwargs):
    raise MemoryError


@pytest.fixture
def probing(request):
    """A probe's namespace, on the grader's side of a Link whose other end, a forked child, is the
    submission's side holding SUBMISSION's names. A test's parameter, where given, names a function
    of worker.py that fails there, as an allocation would near the memory cap."""
    to_submission, from_submission = os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(to_submission[1])
        os.close(from_submission[0])
        try:
            if hasattr(request, "param"):
                setattr(worker, request.param, no_memory)
            link = worker.Link(to_submission[0], from_submission[1], serving=False)
            link.namespace = {}
            exec(SUBMISSION, link.namespace)
            link.serve()
        finally:
            os._exit(0)
    os.close(to_submission[0])
    os.close(from_submission[1])
    link = worker.Link(from_submission[0], to_submission[1], serving=True)
    try:
        yield worker.apart(link, os.open(os.devnull, os.O_WRONLY), "0")
    finally:
        link.channel.close()  # unless a test lost the line, which closed it
        os.waitpid(pid, 0)


class Raised(Exception):
    pass


def test_a_with_block_on_a_proxy_runs_the_submissions_enter_and_exit(probing):
    flag = lambda: probing["flag"]  # noqa: E731 -- a plain global is read afresh each time
    with probing["switched"]():
        assert flag() is False
    assert flag() is True


@pytest.mark.parametrize("error", [Raised("mine"), KeyboardInterrupt(), GeneratorExit()],
                         ids=["exception", "keyboard-interrupt", "generator-exit"])
def test_an_exception_leaves_a_block_on_a_proxy_as_itself(probing, error):
    with pytest.raises(type(error)) as left:
        with probing["switched"]():
            raise error
    assert left.value is error
    assert probing["flag"] is True


def test_reflected_operators_are_worked_out_by_the_submissions_object(probing):
    box = probing["Box"](3.0)
    assert 2.0 * box == 6.0
    kind, operand = numpy.eye(2) @ box
    assert kind == "rmatmul" and numpy.array_equal(operand, numpy.eye(2))


def test_an_object_made_there_keeps_what_the_submissions_code_writes(probing):
    state = probing["_made"]("dict")
    probing["count_into"](state, "a")
    assert probing["count_into"](state, "a") == {"a": 2}


def test_a_probe_puts_back_a_global_of_the_submissions(probing):
    probing["_set_global"]("flag", "restored")
    assert probing["flag"] == "restored"
    assert probing["_student"]("id")(probing["Box"]) > 0


def test_a_probes_error_from_the_submissions_side_keeps_how_that_side_described_it(probing):
    with pytest.raises(ValueError) as raised:
        probing["singular"]()
    assert probing.link.describe(raised.value) == {"error": "ValueError (LinAlgError)", "message": "Singular matrix"}
    assert probing.link.describe(ValueError("made here")) == {"error": "ValueError", "message": "made here"}


class Sent:
    """The grader's pipe, as run_probe writes a reply to it."""
    sends_frames = True

    def send(self, reply, seq):
        self.reply = reply


@pytest.mark.parametrize("probing", ["_loads", "_dumps"], ids=["reading the request", "writing the reply"],
                         indirect=True)
def test_a_submission_side_out_of_memory_says_so_before_the_line_closes(probing):
    """Near its memory cap, the submission's side may fail in the link's own code rather than in the
    answer: the probe's reply then says MemoryError, as when the answer's own allocation fails
    first, and not ConnectionError (the same mistake gave either from run to run)."""
    sent, request = Sent(), {"seq": "s", "probe": "probe", "args": {}}
    worker.run_probe(probing, {**request, "source": "def probe():\n    return Box(2.0).value\n"}, sent,
                     probing.link, line=probing.link)
    assert sent.reply["error"] == "MemoryError" and sent.reply["line_lost"] is True, sent.reply


def test_a_probe_run_apart_says_when_its_line_is_lost(probing):
    """The grader then starts both workers again before its next request (grade.Session.ask): the
    line a case lost never fails a later case."""
    sent, request = Sent(), {"seq": "s", "probe": "probe", "args": {}}
    worker.run_probe(probing, {**request, "source": "def probe():\n    return Box(2.0).value\n"}, sent,
                     probing.link, line=probing.link)
    assert sent.reply == {"ok": True, "value": worker.encode(2.0)}
    worker.run_probe(probing, {**request, "source": "def probe():\n    return leave()\n"}, sent, probing.link,
                     line=probing.link)
    assert sent.reply["error"] == "ConnectionError" and sent.reply["line_lost"] is True
