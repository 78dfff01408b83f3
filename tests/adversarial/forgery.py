"""Attacks that forge the worker's own channel to the grader (tensor_engine; issue 22, class 2).

The worker's request (with its random tag `seq`), its reply channel and the shell are locals of
its frames, which the submission's code can reach with sys._getframe. A wrong answer steals
them at its first call in a request, runs the grader's probe again on the reference answer in
a private copy of the namespace, and writes the observations and the reply that gives, with the
stolen tag, before the probe's own. Each expects 0 for the activity it forges and full marks for
the rest: the method activities' probes run outside the submission's process, so nothing it
writes on its channel is taken for their observations or replies.

* forged-no-grad: B's no_grad switches nothing off.
* forged-adam, forged-forward-mode, forged-double-backprop: A, C and D with a catalogued mistake.
* forged-gradient-check: activity 4's gradient_check compares only the first parameter.
* forged-lines: E's conv2d, otherwise correct, writes four observation lines of 20 MiB with the
  stolen tag: the grader must neither keep them nor spend more than the submission's own time
  and a bounded memory reading them.
"""
import json

from autograder.measuring.catalogue import patched
from tests.adversarial.common import Attack, answer, reference, wrapped, wrong_answer
from tests.adversarial.methods import mistake_code

LAB = "tensor_engine"

THIEF = '''
import sys as _sys

_forged = set()


def _stolen(*names):
    """The nearest of the worker's frames that holds all the locals `names`."""
    frame = _sys._getframe(1)
    while frame is not None and not all(name in frame.f_locals for name in names):
        frame = frame.f_back
    return frame


def _send(worker, line):
    data = (worker.f_globals["_dumps"](line) + "\\n").encode()
    while data:
        data = data[worker.f_globals["_write"](worker.f_locals["channel"].fd_out, data):]


def _forge(correct, already):
    """Once per request: the probe's observations (less the `already` sent) and reply, as the
    `correct` answer gives them, written with the request's tag."""
    worker = _stolen("request", "channel")  # the request under way, its tag and reply pipe
    request = worker.f_locals["request"] if worker is not None else {}
    if request.get("op") != "probe" or request["seq"] in _forged:
        return
    _forged.add(request["seq"])
    module, namespace = worker.f_globals, _stolen("shell").f_locals["shell"].user_ns
    saved, observed = dict(namespace), []
    try:
        exec(correct, namespace)
        private = dict(namespace, _observe=observed.append)
        exec(request["source"], private)
        value = private[request.get("probe", "probe")](**{k: module["decode"](v) for k, v in request["args"].items()})
    finally:
        for name in [name for name in namespace if name not in saved]:
            del namespace[name]
        namespace.update(saved)
    for seen in observed[already:]:
        _send(worker, {"observation": module["encode"](seen), "seq": request["seq"]})
    _send(worker, {"ok": True, "value": module["encode"](value), "seq": request["seq"]})
'''

NO_OP_NO_GRAD = '''
class no_grad:
    def __enter__(self):
        return self

    def __exit__(self, *raised):
        return False
'''

# 20 MiB of `[[],[],...]`: the most Python objects per byte a JSON line can make.
FLOOD = '''
import sys as _sys

_flooded = set()


def _flood():
    frame = _sys._getframe(1)
    while frame is not None and not ("request" in frame.f_locals and "channel" in frame.f_locals):
        frame = frame.f_back
    if frame is None or frame.f_locals["request"]["seq"] in _flooded:
        return
    seq = frame.f_locals["request"]["seq"]
    _flooded.add(seq)
    empties = "[" + ",".join(["[]"] * (20 * 2 ** 20 // 3)) + "]"
    line = ('{"observation": {"kind": "plain", "value": ' + empties + '}, "seq": "' + seq + '"}\\n').encode()
    for _ in range(4):
        data = line
        while data:
            data = data[frame.f_globals["_write"](frame.f_locals["channel"].fd_out, data):]
'''


def forging(lab, activity, base, already=0, functions=None):
    """A build step: `base` as the activity's answer, each of its `functions` (default: all)
    forging the probe's observations and reply (the reference's) at its first call in a request."""
    functions = functions or lab.activities[activity].functions
    body = f"_forge({json.dumps(reference(lab, activity))}, {already})\nreturn plain(*args, **kwargs)"
    return lambda lab_, solved, blank, context: answer(solved, activity, wrapped(base, functions, THIEF, body))


def flooding(lab):
    return lambda lab_, solved, blank, context: answer(solved, "E", wrapped(
        reference(lab, "E"), ["conv2d"], FLOOD, "_flood()\nreturn plain(*args, **kwargs)"))


def attacks(lab):
    assert lab.name == LAB, f"the {LAB} forgeries were asked for {lab.name}"
    return [
        # quiet's first observation (outside any block) leaves before no_grad is first called.
        Attack("forged-no-grad", "a no_grad that does nothing forges quiet's observations and reply",
               zero=frozenset({"B"}), build=forging(lab, "B", NO_OP_NO_GRAD, already=1)),
        Attack("forged-adam", "a wrong adam_step forges the probe's reply", zero=frozenset({"A"}),
               build=forging(lab, "A", wrong_answer(lab, "A"))),
        Attack("forged-forward-mode", "a wrong forward mode forges the probes' replies", zero=frozenset({"C"}),
               build=forging(lab, "C", wrong_answer(lab, "C"))),
        Attack("forged-double-backprop", "a wrong double backprop forges the probes' replies", zero=frozenset({"D"}),
               build=forging(lab, "D", wrong_answer(lab, "D"))),
        Attack("forged-gradient-check", "a gradient_check that compares only the first parameter forges its probes' "
               "replies", zero=frozenset({"4"}), build=forging(lab, "4", patched(reference(lab, "4"), mistake_code(
                   lab, "gradient_check compares only the first parameter")), functions=["gradient_check"])),
        Attack("forged-lines", "conv2d writes four observation lines of 20 MiB with the stolen tag",
               zero=frozenset({"E"}), build=flooding(lab)),
    ]
