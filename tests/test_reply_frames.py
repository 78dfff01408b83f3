"""A worker's replies carry arrays as their bytes, after the line (worker.Channel's frames), and the
grader's reader (sandbox.Lines, parse_reply) takes a line's frames with it within the same cap.
Everything on the reply pipe is the submission's to write, so a head that announces frames is a
claim: a malformed one is a plain line, an oversized one is stepped over unkept, and an array
that points at a frame the line does not carry makes the line no reply."""
import json

import numpy
import pytest

from autograder.isolation.sandbox import Limits, Lines, Worker, WorkerFailure, parse_reply
from autograder.isolation.worker import MAX_REPLY, decode, encode

ARRAY = numpy.arange(12.0).reshape(3, 4) / 7


def framed(message, frames):
    """A line and its frames as worker.Channel.send writes them."""
    head = f'{{"frames": {json.dumps([len(frame) for frame in frames])}, "message": {json.dumps(message)}}}\n'
    return head.encode() + b"".join(frames)


def reply_with(array):
    """A framed reply whose value is `array`: (its bytes on the pipe, the message in its line)."""
    message = {"ok": True, "value": {**encode(array), "data": 0}, "seq": "tag"}
    return framed(message, [array.tobytes()]), message


def fed(data, cut, cap=MAX_REPLY):
    """What a framed reader makes of `data` arriving in reads of `cut` bytes."""
    lines = Lines(cap, framed=True)
    for start in range(0, len(data), cut):
        lines.feed(data[start:start + cut])
    return [lines.next() for _ in range(len(lines.ready))]


@pytest.mark.parametrize("cut", [1, 7, 4099, 1 << 16])
def test_a_framed_reply_and_the_line_after_it_are_read_in_step_however_the_reads_fall(cut):
    data, _ = reply_with(ARRAY)
    read = fed(data + b'{"next": 1}\n', cut)
    assert [frames for _, frames in read] == [ARRAY.tobytes(), None]
    assert json.loads(read[1][0]) == {"next": 1}
    reply = parse_reply(*read[0])
    assert reply["seq"] == "tag" and numpy.array_equal(decode(reply["value"]), ARRAY)


def test_a_head_without_frames_is_a_line_with_none():
    data = framed({"ok": True, "value": encode(1.5), "seq": "tag"}, [])
    [(line, frames)] = fed(data, 1 << 16)
    assert frames == b"" and parse_reply(line, frames) == {"ok": True, "value": encode(1.5), "seq": "tag"}


@pytest.mark.parametrize("head", [
    b'{"frames": [-8], "message": 1}', b'{"frames": [8.0], "message": 1}', b'{"frames": [true], "message": 1}',
    b'{"frames": 8, "message": 1}', b'{"frames": [8]}', b'{"frames": [8,8], "message": 1}', b'{"frames": [8], "x": 1}',
], ids=["negative", "float", "bool", "a number", "no message", "other spacing", "another key"])
def test_a_head_not_as_channel_send_writes_it_is_a_plain_line_and_the_bytes_after_it_are_lines(head):
    read = fed(head + b"\n" + b'{"next": 1}\n', 3)
    assert [frames for _, frames in read] == [None, None]
    assert read[0][0] == head and json.loads(read[1][0]) == {"next": 1}


def test_a_stream_that_is_not_framed_reads_a_framed_head_as_a_plain_line():
    """A zygote's answers: nothing after such a line is taken for its frames."""
    lines = Lines(MAX_REPLY)
    lines.feed(b'{"frames": [8], "message": {}}\n{"next": 1}\n')
    assert lines.next() == (b'{"frames": [8], "message": {}}', None)
    assert lines.next() == (b'{"next": 1}', None)


def test_frames_past_the_cap_are_stepped_over_unkept_and_the_next_line_is_read():
    cap = 10_000
    small, _ = reply_with(numpy.zeros(cap // 8 - 200))  # line and frames within the cap
    large, _ = reply_with(numpy.zeros(cap // 8))
    lines = Lines(cap, framed=True)
    lines.feed(large[:len(large) // 2])
    assert lines.awaiting is None and lines.frames_left > 0, "frames that cannot be kept are not held"
    lines.feed(large[len(large) // 2:] + small + b'{"next": 1}\n')
    read = [lines.next() for _ in range(len(lines.ready))]
    assert read[0] == (None, None)
    assert parse_reply(*read[1])["seq"] == "tag" and json.loads(read[2][0]) == {"next": 1}


def test_a_head_claiming_more_frames_than_come_holds_nothing_while_it_waits():
    """What it costs: the honest reply after the forged head is taken for frames, so the grader
    waits for a reply until the request's time is up; the forger's own case fails."""
    lines = Lines(MAX_REPLY, framed=True)
    lines.feed(b'{"frames": [999999999999], "message": {}}\n' + reply_with(ARRAY)[0])
    assert not lines.ready and lines.awaiting is None


@pytest.mark.parametrize("number", [1, -1], ids=["past the last", "before the first"])
def test_an_array_pointing_at_a_frame_the_line_does_not_carry_makes_it_no_reply(number):
    message = {"ok": True, "value": {**encode(ARRAY), "data": number}, "seq": "tag"}
    assert parse_reply(*fed(framed(message, [ARRAY.tobytes()]), 1 << 16)[0]) is None


def test_an_array_whose_data_is_no_frame_number_is_no_array():
    message = {"ok": True, "value": {**encode(ARRAY), "data": True}, "seq": "tag"}
    reply = parse_reply(*fed(framed(message, [ARRAY.tobytes()]), 1 << 16)[0])
    with pytest.raises(ValueError):
        decode(reply["value"])


def test_frames_that_do_not_add_up_to_the_head_are_no_reply():
    data, _ = reply_with(ARRAY)
    line = data[:data.index(b"\n")]
    assert parse_reply(line, ARRAY.tobytes()[:-8]) is None
    assert parse_reply(line, ARRAY.tobytes()) is not None


def asked(folder, answer):
    worker = Worker(folder, Limits(), True)
    try:
        worker.ask({"op": "run", "source": f"import numpy\ndef answer():\n    return {answer}\n"}, 60)
        return worker.ask({"op": "probe", "source": "def probe():\n    return answer()\n", "args": {}}, 60), \
            worker.received
    finally:
        worker.close()


def test_an_array_reply_crosses_the_graders_pipe_as_its_bytes(tmp_path):
    reply, received = asked(tmp_path, "numpy.arange(1_000_000) / 3.0")
    assert numpy.array_equal(decode(reply["value"]), numpy.arange(1_000_000) / 3.0)
    assert received < 8_000_000 * 1.01, "as base64 text the array alone would take 10.7 MB"


def test_a_reply_whose_frames_pass_the_cap_is_refused_by_the_worker_itself(tmp_path):
    reply, received = asked(tmp_path, f"numpy.zeros({MAX_REPLY // 8 + 1})")
    assert reply["error"] == "ReplyTooLarge" and received < 1000, reply
    reply, _ = asked(tmp_path, f"numpy.zeros({MAX_REPLY // 8 - 1000})")  # as text, 4/3 of the cap
    assert decode(reply["value"]).shape == (MAX_REPLY // 8 - 1000,)


def test_a_requests_observations_and_framed_reply_together_are_held_to_the_cap(tmp_path):
    """Each within the cap, together past it: the grader keeps no more of a request than it would
    of base64 text (Worker.ask)."""
    worker = Worker(tmp_path, Limits(), True)
    try:
        worker.ask({"op": "run", "source": "import numpy"}, 60)
        source = (f"def probe():\n    _observe(numpy.zeros({MAX_REPLY // 16}))\n"  # as text, 2/3 of the cap
                  f"    return numpy.zeros({MAX_REPLY // 16})\n")  # as frames, half of it
        with pytest.raises(WorkerFailure, match="took more than"):
            worker.ask({"op": "probe", "source": source, "args": {}}, 60)
    finally:
        worker.close()
