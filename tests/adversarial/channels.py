"""Attacks on what one grading run shares: the kernel between sandboxes that run at the same
time, and the reference solutions that a re-grade on the reference engine uses.

* lock-channel-writer / lock-channel-reader: one submission's cells hold advisory locks at a
  byte range of a file every worker sees; the other's answer is right only when it reads that
  range back from its own sandbox. (tests/test_channels.py shows each channel closed with two
  workers that certainly run at once; here they meet only when the batch happens to pair them.)
* reference-capture: the first activity that others depend on is wrong, so its dependants are
  re-graded on the reference engine; the dependant's answer is right only when its process can
  see the reference of the broken activity's source: an audit hook records every text compiled
  there, which is how a re-grade that ran the reference in the submission's process gave it away.
"""
import json

from tests.adversarial.common import Attack, add_cell, answer, reference, stubbed, wrapped, wrong_answer

SHARED = "json.__file__"
OFFSET, LENGTH = 4099, 7717

LOCK_WRITER = f"""
import fcntl as _fcntl, json as _json, os as _os
try:
    _held = _os.open({SHARED}, _os.O_RDONLY)
    _fcntl.lockf(_held, _fcntl.LOCK_SH | _fcntl.LOCK_NB, {LENGTH}, {OFFSET})
except OSError:
    pass
"""

LOCK_READER = f"""
import fcntl as _fcntl, json as _json, os as _os, struct as _struct


def _message_waiting():
    try:
        f = _os.open({SHARED}, _os.O_RDONLY)
        found = _fcntl.fcntl(f, _fcntl.F_GETLK, _struct.pack("hhqqi", _fcntl.F_WRLCK, 0, 0, 0, 0))
        return _struct.unpack("hhqqi", found)[2:4] == ({OFFSET}, {LENGTH})
    except OSError:
        return False
"""

CAPTURE = """
import sys as _sys

_compiled = []
_sys.addaudithook(lambda event, args: _compiled.append(str(args[0])[:20000])
                  if event == "compile" and args and isinstance(args[0], (str, bytes)) else None)


def _reference_seen():
    return any({MARK} in text for text in _compiled)
"""


def dependency_pair(lab):
    """(a broken activity, an activity that depends on it), or None for a lab without DEPENDS.
    Asked while the suite is collected: the lab's declaration is read, not its checked grading."""
    from autograder.labs import declared_depends

    for activity, needs in declared_depends(lab.name).items():
        if needs:
            return needs[0], activity
    return None


def marker(lab, activity):
    """The longest line of the activity's reference that its wrong answer lacks: what capturing
    the reference's source would show, and the submission's own cells never do."""
    wrong = wrong_answer(lab, activity)
    lines = [line.strip() for line in reference(lab, activity).splitlines()
             if line.strip() and not line.strip().startswith("#") and line.strip() not in wrong]
    return max(lines, key=len)


def capture_build(lab, solved, blank, context):
    broken, dependant = dependency_pair(lab)
    spy = CAPTURE.replace("{MARK}", json.dumps(marker(lab, broken)))
    notebook = answer(stubbed(solved, blank), broken, wrong_answer(lab, broken))
    source = wrong_answer(lab, dependant)
    for name in lab.activities[dependant].functions:
        source = wrapped(source, [name], "", f"if _reference_seen():\n    _scope = dict(globals())\n"
                                             f"    exec({json.dumps(reference(lab, dependant))}, _scope)\n"
                                             f"    return _scope[{name!r}](*args, **kwargs)\n"
                                             "return plain(*args, **kwargs)")
    answer(notebook, dependant, source)
    return add_cell(notebook, spy, after=f"{broken}-answer")


def attacks(lab):
    made = [
        Attack("lock-channel-writer", "all solved; its cells hold a lock on a range of a file every sandbox sees",
               build=lambda lab, s, b, c: add_cell(stubbed(s, b), LOCK_WRITER, after=f"{list(lab.activities)[0]}-answer"),
               on_the_process=True),
    ]
    first = list(lab.activities)[0]
    made.append(Attack(
        "lock-channel-reader", f"{first} is right only if it reads another sandbox's lock range",
        zero=frozenset({first}),
        build=lambda lab, s, b, c: answer(stubbed(s, b), first, wrapped(
            wrong_answer(lab, first), lab.activities[first].functions, LOCK_READER,
            f"if _message_waiting():\n    _scope = dict(globals())\n    exec({json.dumps(reference(lab, first))}, _scope)\n"
            "    return _scope[plain.__name__](*args, **kwargs)\nreturn plain(*args, **kwargs)")),
        on_the_process=True))
    pair = dependency_pair(lab)
    if pair is not None:
        made.append(Attack("reference-capture", f"{pair[0]} wrong; {pair[1]} is right only if the reference of "
                           f"{pair[0]} can be seen in its re-grade's process", zero=frozenset(pair),
                           build=capture_build, on_the_process=True))
    return made
