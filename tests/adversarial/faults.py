"""Attacks whose fault must cost at most the activity they sit in, never the whole submission
(a grader_error) or the host: garbage on the grader's reply pipe, a process broken for the lab's
own cells, and a submission folder filled or made too deep to remove.

The pipe attacks wrap a wrong answer the grader is known to catch, so that their activity scores
0 whatever the garbage does, and every other activity must keep its points; the others go into
an otherwise solved notebook."""
import copy
import glob
import os
import tempfile

from tests.adversarial.common import Attack, add_cell, answer, last, nth, reference, wrapped, wrong_answer

# How a submission that has read worker.py finds the reply pipe and the running request's tag:
# in the worker's own frames.
REPLY_PIPE = """
import os as _os
import sys as _sys


def _reply_pipe():
    frame = _sys._getframe()
    while "channel" not in frame.f_locals:
        frame = frame.f_back
    return frame.f_locals["channel"].fd_out, frame.f_locals["seq"]


def _write(data):
    out, _ = _reply_pipe()
    while data:
        data = data[_os.write(out, data):]
"""
DEEP_LINES = """
_, seq = _reply_pipe()
_write(b"[" * 100000 + b"\\n")
_write(b'{"ok": true, "value": ' + b"[" * 200 + b"]" * 200 + b', "seq": "%s"}\\n' % seq.encode())
return plain(*args, **kwargs)
"""
# Once per process: the line alone is the attack, and 48 MiB per call would only cost time.
HUGE_LINE = """
global _sent_huge_line
if not globals().get("_sent_huge_line"):
    _sent_huge_line = True
    _write(b"[" * (48 << 20) + b"\\n")
return plain(*args, **kwargs)
"""
PRINT_EXITS = """
import builtins as _builtins
import os as _os

_builtins.print = lambda *args, **kwargs: _os._exit(3)
"""
DEEP_TREE = """
import os
for top in ("{token}", "/tmp/{token}"):
    os.mkdir(top)
    fd = os.open(top, os.O_RDONLY)
    for _ in range(2500):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
os.mkfifo("{token}-fifo")
os.symlink("/", "{token}-root")
"""
FILL_DISK = """
chunk = b"x" * (32 << 20)
for place in (".", "/tmp"):
    number = 0
    try:
        while number < 16:  # 1 GiB: beyond the cap, bounded where there is none
            with open(f"{{place}}/{token}-{{number}}", "wb") as handle:
                handle.write(chunk)
                handle.write(chunk)
            number += 1
    except OSError:
        pass
"""


def broken_for_given_cells(lab):
    """The activity whose answer cell comes last before the lab's last given cell that prints
    (and runs in the grading program), else the last activity: an answer that makes print end the
    process breaks only the demos after it, which no activity after it needs."""
    current, found = None, None
    for cell in lab.cells:
        if cell.role == "stub":
            current = cell.activity
        elif cell.role == "given" and cell.cell_type == "code" and not cell.requires and "print(" in cell.source:
            found = current or found
    return found or last(lab)


def attacks(lab):
    first, second, printing = nth(lab, 0), nth(lab, 1), broken_for_given_cells(lab)
    after_all = f"{last(lab)}-answer"
    names = {activity: lab.activities[activity].functions for activity in lab.activities}
    return [
        Attack("deep-reply-lines", f"{first}'s functions answer wrongly after writing a line of 100,000 '[' and a "
               "reply with the request's tag nested 200 deep to the grader's pipe", zero=frozenset({first}),
               build=lambda lab, s, b, c: answer(copy.deepcopy(s), first, wrapped(
                   wrong_answer(lab, first), names[first], REPLY_PIPE, DEEP_LINES)), on_the_process=True),
        Attack("huge-reply-line", f"{second}'s functions answer wrongly after writing a 48 MiB line to the "
               "grader's pipe", zero=frozenset({second}),
               build=lambda lab, s, b, c: answer(copy.deepcopy(s), second, wrapped(
                   wrong_answer(lab, second), names[second], REPLY_PIPE, HUGE_LINE)), on_the_process=True),
        Attack("print-exits", f"{printing}'s answer cell makes print end the process, which kills the lab's "
               "given cells that print after it, and its functions print", zero=frozenset({printing}),
               build=lambda lab, s, b, c: answer(copy.deepcopy(s), printing, wrapped(
                   reference(lab, printing), names[printing], PRINT_EXITS,
                   "print('answering')\nreturn plain(*args, **kwargs)")), on_the_process=True),
        Attack("deep-tree", "all solved; a cell leaves 2,500-deep folder trees in its folder and /tmp, a FIFO "
               "and a symlink to /", build=lambda lab, s, b, c: add_cell(
                   copy.deepcopy(s), DEEP_TREE.format(**c), after_all), host_check=left_behind, on_the_process=True),
        Attack("fill-disk", "all solved; a cell writes 64 MiB files into its folder and /tmp until the disk "
               "is full", build=lambda lab, s, b, c: add_cell(copy.deepcopy(s), FILL_DISK.format(**c), after_all),
               host_check=left_behind, on_the_process=True),
    ]


def left_behind(context):
    """Files named by the attack's token in the grader's temporary folder or a grading folder."""
    place = tempfile.gettempdir()
    found = glob.glob(os.path.join(place, f"{context['token']}*")) + glob.glob(
        os.path.join(place, "grading-*", f"{context['token']}*"))
    return f"left on the machine: {found[:3]}" if found else None
