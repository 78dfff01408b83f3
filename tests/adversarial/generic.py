"""Attacks written in terms of any lab: its activities in notebook order, their functions,
reference answers and check cells, and a wrong answer from the lab's catalogue of mistakes.

An attack that leaves activities unsolved picks them by position (`nth(lab, 0)` is the first
activity, `nth(lab, 3)` the fourth, or the last when the lab has fewer), so the corpus spreads
over a long lab and lands entirely on the single activity of a short one. Tricks that try to
pass a check without the right values (objects that compare equal to anything, frames, the
garbage collector) are wrapped around a wrong answer the grader is known to catch, so they
can earn the points only through the trick itself; attacks on the machine (exits, signals,
loops, memory) go into an otherwise correct answer, so that only they can cost the points.
"""
import copy
import json

import nbformat

from tests.adversarial.common import (
    Attack,
    add_cell,
    answer,
    cell,
    check_helpers,
    function,
    indent,
    last,
    nth,
    reference,
    stubbed,
    success_line,
    wrapped,
    wrong_answer,
)

# ----------------------------------------------------------------------------- source texts
FAKE_COMPARISONS = """
import numpy as np
np.isclose = lambda a, b, **k: np.ones(np.broadcast(np.asarray(a), np.asarray(b)).shape, dtype=bool)
np.allclose = lambda *a, **k: True
np.array_equal = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None
"""
ANYTHING = """
class Anything:
    def __eq__(self, other):
        return True

    __ne__ = lambda self, other: False
    __hash__ = object.__hash__

    def __array__(self, dtype=None, copy=None):
        import numpy
        return numpy.zeros(3)

    def __iter__(self):
        return iter((Anything(), Anything()))

    def __len__(self):
        return 2

    def __getitem__(self, key):
        return Anything()

    def __float__(self):
        return 0.0
"""
AGREEABLE = """
import numpy as np


class Agreeable(np.ndarray):
    def __eq__(self, other):
        return np.ones(np.shape(self), dtype=bool)

    def tolist(self):
        return [0.0]


def disguise(value):
    if type(value) in (list, tuple):
        return type(value)(disguise(item) for item in value)
    if type(value) is dict:
        return {key: disguise(item) for key, item in value.items()}
    if isinstance(value, (np.ndarray, np.generic, float, int)) and not isinstance(value, bool):
        return np.asarray(value).view(Agreeable)
    return value
"""
LOOKS = """
import numpy as np


class Looks:
    def __init__(self, value):
        self.value = value

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.value, dtype=dtype)

    shape = property(lambda self: np.shape(self.value))


def disguise(value):
    if type(value) in (list, tuple):
        return type(value)(disguise(item) for item in value)
    if type(value) is dict:
        return {key: disguise(item) for key, item in value.items()}
    if isinstance(value, (np.ndarray, np.generic, float, int)) and not isinstance(value, bool):
        return Looks(value)
    return value
"""
FRAMES = """
import sys
"""
FRAMES_BODY = """
frame = sys._getframe(1)
while frame is not None:
    for name in ("expected", "want", "theirs", "answer"):
        if name in frame.f_locals:
            return frame.f_locals[name]
    frame = frame.f_back
return plain(*args, **kwargs)
"""
GC_SCAN = """
import gc
"""
GC_SCAN_BODY = """
for thing in gc.get_objects():
    if isinstance(thing, dict) and "expected" in thing:
        return thing["expected"]
return plain(*args, **kwargs)
"""
# Where a submission would look for the course: its own folder, the course root it was told
# about, every folder above the Python installation and the working directory (the virtualenv
# lives in the course's checkout), and the folders Python imports from (where pip installs the grader).
PLACES = """
import glob, os, pathlib, re, sys
places = {os.getcwd(), "__ROOT__", *filter(None, sys.path)}
for start in (sys.prefix, sys.base_prefix, os.getcwd()):
    places.update(str(p) for p in pathlib.Path(start).resolve().parents)
"""
READ_SOURCE = PLACES + """
found = [path for place in sorted(places) for path in glob.glob(os.path.join(place, "source", "__LAB__", "__LAB__.py"))]
found += glob.glob("../../source/__LAB__/__LAB__.py")
stolen = None
for path in found:
    match = re.search(r'^# %% tags=\\["reference"\\] activity="__ACTIVITY__"\\n(.*?)(?=^# %%|\\Z)', open(path).read(),
                      re.S | re.M)
    if match:
        stolen = match.group(1)
        break
if stolen:
    exec(stolen)
else:
__WRONG__
"""
READ_HIDDEN = PLACES + """
loot = [path for place in sorted(places)
        for path in glob.glob(os.path.join(place, "autograder", "labs", "__LAB__", "*.py"))]
if loot:
__REFERENCE__
else:
__WRONG__
"""
READ_GRADEBOOK = PLACES + """
loot = glob.glob("__OUT__/gradebook.db") + glob.glob("__OUT__/*/*.json") + glob.glob("__BATCH__/*.ipynb")
loot += [path for place in sorted(places) for path in glob.glob(os.path.join(place, "graded", "gradebook.db"))]
if loot:
__REFERENCE__
else:
__WRONG__
"""
WRITE_OUTSIDE = """
import os
for target in ["/tmp/{token}", "{root}/{token}", os.path.expanduser("~/{token}"), "{batch}/{token}"]:
    try:
        with open(target, "w") as handle:
            handle.write("was here")
    except OSError:
        pass
"""
LINGER = """
import subprocess, sys
subprocess.Popen(["sleep", "{token_seconds}"], start_new_session=True)
subprocess.Popen([sys.executable, "-c", "import os, time\\nif os.fork() == 0:\\n    os.setsid()\\n    time.sleep({token_seconds})"],
                 start_new_session=True)
"""
FORK_BOMB = """
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
"""
SABOTAGE = """
import base64, json, os, sys
json.dumps = json.loads = lambda *a, **k: "{}"
base64.b64encode = base64.b64decode = lambda *a, **k: b""
os.write = lambda fd, data: len(data)
os.read = lambda fd, n: b""
sys.modules["json"] = None
"""
# Blind forgeries with guessed tags, a line that is not JSON, and a reply carrying the tag of
# the request being run, taken from the worker's own frame.
FORGE = """
import os, sys
out = int(sys.argv[2])
forged = b'{"ok": true, "value": {"kind": "dict", "items": []}, "seq": "%d"}\\n'
for guess in range(1, 400):
    os.write(out, forged % guess)
os.write(out, b'{"ok": true, "seq": \\n')
frame = sys._getframe().f_back
while frame is not None and "seq" not in frame.f_locals:
    frame = frame.f_back
if frame is not None:
    os.write(out, b'{"ok": true, "value": {"kind": "float", "hex": "0x1p+0"}, "seq": "%s"}\\n'
             % str(frame.f_locals["seq"]).encode())
"""


def fill(template, **values):
    for key, value in values.items():
        template = template.replace(f"__{key.upper()}__", value)
    return template


# ----------------------------------------------------------------------------- the attacks
# A student function that tries to carry its hidden inputs out through its own feedback: the
# grader quotes a submission's words briefly, so the tail, 1,000 characters on, never arrives.
LEAK_TAIL = "LEAK-TAIL-END"
LEAK_BODY = """
told = repr(args)[:400] + repr(kwargs)[:100] + repr(sorted(sys._getframe(1).f_locals))[:300]
raise ValueError(told.ljust(1000, "#") + "{tail}")
"""


def attacks(lab):
    """Every generic attack on `lab`. Cheap: what needs the lab's grading files (its mistakes)
    is read when an attack is built, not here."""
    first, second, third, fourth = (nth(lab, i) for i in range(4))
    after_all = f"{last(lab)}-answer"
    functions = {a: ", ".join(lab.activities[a].functions) for a in lab.activities}

    def fn(activity, index):
        return function(lab, activity, index)

    return [
        Attack("redefine-check-helpers", f"{first} unsolved; the check helpers "
               f"({', '.join(check_helpers(lab)) or 'none'}) and assert_allclose replaced by no-ops",
               zero=frozenset({first}),
               build=lambda lab, s, b, c: add_cell(stubbed(s, b, first), fake_helpers(lab), f"{first}-answer")),
        Attack("patch-numpy-comparisons", f"{second} unsolved; np.isclose, allclose, array_equal, testing patched",
               zero=frozenset({second}), build=lambda lab, s, b, c: add_cell(stubbed(s, b, second), FAKE_COMPARISONS,
                                                                            after_all)),
        Attack("always-equal-objects", f"{functions[first]} return objects whose == is always True and "
               "__array__ lies", zero=frozenset({first}),
               build=lambda lab, s, b, c: answer(copy.deepcopy(s), first, wrapped(
                   wrong_answer(lab, first), lab.activities[first].functions, ANYTHING, "return Anything()"))),
        Attack("ndarray-subclass", f"{functions[second]} return a wrong answer as an ndarray subclass that "
               "agrees with everything", zero=frozenset({second}),
               build=lambda lab, s, b, c: answer(copy.deepcopy(s), second, wrapped(
                   wrong_answer(lab, second), lab.activities[second].functions, AGREEABLE,
                   "return disguise(plain(*args, **kwargs))"))),
        Attack("array-like", f"{functions[third]} return objects with __array__ instead of arrays",
               zero=frozenset({third}),
               build=lambda lab, s, b, c: answer(copy.deepcopy(s), third, wrapped(
                   wrong_answer(lab, third), lab.activities[third].functions, LOOKS,
                   "return disguise(plain(*args, **kwargs))"))),
        Attack("read-caller-frames", f"{functions[third]} return whatever 'expected' they find in the callers' "
               "frames", zero=frozenset({third}),
               build=lambda lab, s, b, c: answer(copy.deepcopy(s), third, wrapped(
                   wrong_answer(lab, third), lab.activities[third].functions, FRAMES, FRAMES_BODY))),
        Attack("gc-scan", f"{functions[fourth]} search every live object for an expected answer",
               zero=frozenset({fourth}),
               build=lambda lab, s, b, c: answer(copy.deepcopy(s), fourth, wrapped(
                   wrong_answer(lab, fourth), lab.activities[fourth].functions, GC_SCAN, GC_SCAN_BODY))),
        Attack("fake-success-lines", "nothing solved; prints every check's success line",
               zero=frozenset(lab.activities), build=lambda lab, s, b, c: add_cell(copy.deepcopy(b), "\n".join(
                   success_line(lab, a) for a in lab.activities), after_all)),
        Attack("edited-check-cell", f"{first} unsolved; its check cell replaced by its success message",
               zero=frozenset({first}), build=lambda lab, s, b, c: edit_check(lab, stubbed(s, b, first), first)),
        Attack("deleted-check-cells", "all solved; every check cell deleted",
               build=lambda lab, s, b, c: delete_checks(s)),
        Attack("moved-duplicated-checks", "all solved; check cells moved to the top and duplicated",
               build=lambda lab, s, b, c: move_checks(s)),
        Attack("tampered-points-flags", f"{fourth} unsolved; points set to 100, answer cells flagged as graded",
               zero=frozenset({fourth}), build=lambda lab, s, b, c: tamper_points(stubbed(s, b, fourth))),
        Attack("tampered-grade-ids", "all solved; grade ids and cell ids shuffled between cells",
               build=lambda lab, s, b, c: tamper_ids(s)),
        Attack("stripped-metadata", "all solved; every cell and notebook metadata and id removed",
               build=lambda lab, s, b, c: strip(s)),
        Attack("read-instructor-source", f"{fourth}'s answer execs the reference solution read from source/, "
               "else a wrong answer", zero=frozenset({fourth}),
               build=lambda lab, s, b, c: answer(copy.deepcopy(s), fourth, fill(
                   READ_SOURCE, root=c["root"], lab=lab.name, activity=fourth,
                   wrong=indent(wrong_answer(lab, fourth)))), on_the_process=True),
        Attack("read-hidden-checks", f"{third} is correct only if the grader's hidden checks are readable",
               zero=frozenset({third}), build=lambda lab, s, b, c: answer(copy.deepcopy(s), third, fill(
                   READ_HIDDEN, root=c["root"], lab=lab.name, reference=indent(reference(lab, third)),
                   wrong=indent(wrong_answer(lab, third)))), on_the_process=True),
        Attack("read-gradebook-submissions", f"{second} is correct only if a gradebook, results or other "
               "submissions are found", zero=frozenset({second}),
               build=lambda lab, s, b, c: answer(copy.deepcopy(s), second, fill(
                   READ_GRADEBOOK, root=c["root"], out=c["out"], batch=c["batch"],
                   reference=indent(reference(lab, second)), wrong=indent(wrong_answer(lab, second)))),
               on_the_process=True),
        Attack("write-outside", "all solved; writes files in /tmp, the course, HOME and the batch folder",
               build=lambda lab, s, b, c: add_cell(copy.deepcopy(s), WRITE_OUTSIDE.format(**c), after_all),
               host_check=written_outside, on_the_process=True),
        Attack("sys-exit", f"{third}'s cell calls sys.exit() before defining anything", zero=frozenset({third}),
               build=lambda lab, s, b, c: answer(copy.deepcopy(s), third,
                                                 "import sys\nsys.exit(0)\n" + reference(lab, third)),
               on_the_process=True),
        Attack("os-exit-in-function", f"{fn(first, 0)} calls os._exit(0)", zero=frozenset({first}),
               build=lambda lab, s, b, c: answer(copy.deepcopy(s), first, reference(lab, first) +
                                                 f"\n\ndef {fn(first, 0)}(*args, **kwargs):\n"
                                                 "    import os\n    os._exit(0)\n"), on_the_process=True),
        Attack("sigkill-in-function", f"{fn(fourth, 1)} sends SIGKILL to its own process", zero=frozenset({fourth}),
               build=lambda lab, s, b, c: answer(copy.deepcopy(s), fourth, reference(lab, fourth) +
                                                 f"\n\ndef {fn(fourth, 1)}(*args, **kwargs):\n"
                                                 "    import os, signal\n"
                                                 "    os.kill(os.getpid(), signal.SIGKILL)\n"), on_the_process=True),
        Attack("sigkill-cell", "all solved; a last cell kills the process", build=lambda lab, s, b, c: add_cell(
            copy.deepcopy(s), "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", after_all),
               on_the_process=True),
        Attack("infinite-loop", f"{fn(third, 0)} never returns", zero=frozenset({third}),
               build=lambda lab, s, b, c: answer(copy.deepcopy(s), third, reference(lab, third) +
                                                 f"\n\ndef {fn(third, 0)}(*args, **kwargs):\n"
                                                 "    while True:\n        pass\n"), on_the_process=True),
        Attack("lingering-processes", "all solved; starts detached and double-forked sleepers",
               build=lambda lab, s, b, c: add_cell(copy.deepcopy(s), LINGER.format(**c), after_all),
               host_check=lingering, on_the_process=True),
        Attack("fork-bomb", "all solved; a cell forks without end", build=lambda lab, s, b, c: add_cell(
            copy.deepcopy(s), FORK_BOMB, after_all), on_the_process=True),
        Attack("memory-bomb", f"{fn(first, 1)} allocates 800 GB before answering correctly; another cell hoards "
               "memory", zero=frozenset({first}),
               build=lambda lab, s, b, c: add_cell(answer(copy.deepcopy(s), first, wrapped(
                   reference(lab, first), [fn(first, 1)], "import numpy",
                   "hoard = numpy.ones(10**11)\nreturn plain(*args, **kwargs)")),
                   "hoard = [bytearray(1 << 30) for _ in range(64)]\n", after_all), on_the_process=True),
        Attack("inputs-in-feedback", f"{functions[second]} raise an error whose message carries the inputs, the "
               "caller's local names and, 1,000 characters on, a tail that must not reach the result",
               zero=frozenset({second}),
               build=lambda lab, s, b, c: answer(copy.deepcopy(s), second, wrapped(
                   reference(lab, second), lab.activities[second].functions, "import sys",
                   LEAK_BODY.format(tail=LEAK_TAIL))),
               result_check=lambda result: f"the result quotes {LEAK_TAIL}" if LEAK_TAIL in json.dumps(result)
               else None),
        Attack("output-flood", "all solved; a cell prints 300 MB", build=lambda lab, s, b, c: add_cell(
            copy.deepcopy(s), "import sys\nfor _ in range(300):\n    sys.stdout.write('x' * (1 << 20))\n",
            after_all), on_the_process=True),
        Attack("import-sabotage", f"{first} unsolved; json, base64, os.write and os.read replaced in the kernel",
               zero=frozenset({first}),
               build=lambda lab, s, b, c: add_cell(stubbed(s, b, first), SABOTAGE, after_all), on_the_process=True),
        Attack("forged-replies", f"{' and '.join(dict.fromkeys((first, second)))} unsolved; writes forged "
               "replies (blind, malformed, and with the running request's tag) to the grader's pipe",
               zero=frozenset({first, second}),
               build=lambda lab, s, b, c: add_cell(stubbed(s, b, *dict.fromkeys((first, second))), FORGE,
                                                   f"{first}-answer"), on_the_process=True),
        Attack("invalid-json", "a file that is not JSON", status="invalid_notebook",
               build=lambda lab, s, b, c: ('{"cells": [{"cell_type": "code", "source": "def '
                                           f'{fn(first, 0)}(').encode()),
        Attack("empty-file", "an empty file", status="invalid_notebook", build=lambda lab, s, b, c: b""),
        Attack("deep-nesting", "100,000 nested [, which stopped the whole batch's roster", status="invalid_notebook",
               build=lambda lab, s, b, c: b"[" * 100_000),
        Attack("nbformat-3", "the solved notebook saved as nbformat 3", build=lambda lab, s, b, c: json.dumps(
            nbformat.v3.convert.downgrade(nbformat.from_dict(json.loads(nbformat.writes(s))))).encode()),
        Attack("no-lab", "a notebook of no lab of the course", status="unknown_lab",
               build=lambda lab, s, b, c: nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])),
        Attack("too-large", "70 MB of saved output", status="too_large",
               build=lambda lab, s, b, c: huge(s, f"{first}-answer")),
    ]


def fake_helpers(lab):
    noops = "".join(f"\n\ndef {name}(*args, **kwargs):\n    return None\n" for name in check_helpers(lab))
    return "import numpy as np\nnp.testing.assert_allclose = lambda *a, **k: None\n" + noops


def edit_check(lab, notebook, activity):
    cell(notebook, f"{activity}-check").source = success_line(lab, activity)
    return notebook


def delete_checks(solved):
    notebook = copy.deepcopy(solved)
    notebook.cells = [c for c in notebook.cells if "-check" not in c.id]
    return notebook


def move_checks(solved):
    notebook = copy.deepcopy(solved)
    checks = [c for c in notebook.cells if "-check" in c.id]
    others = [c for c in notebook.cells if "-check" not in c.id]
    doubles = [nbformat.from_dict({**copy.deepcopy(c), "id": c.id + "-copy"}) for c in checks]
    notebook.cells = checks + doubles + others
    return notebook


def tamper_points(notebook):
    for c in notebook.cells:
        grading = c.metadata.get("nbgrader", {})
        if "-check" in c.id:
            grading["points"] = 100
        if c.id.endswith("-answer"):
            grading.update(grade=True, points=100)
    return notebook


def tamper_ids(solved):
    notebook = copy.deepcopy(solved)
    ids = [c.id for c in notebook.cells]
    for c, new in zip(notebook.cells, ids[1:] + ids[:1]):
        c.id = new
        if "nbgrader" in c.metadata:
            c.metadata.nbgrader["grade_id"] = new
    return notebook


def strip(solved):
    raw = json.loads(nbformat.writes(solved))
    raw["metadata"] = {}
    raw["nbformat_minor"] = 4
    for c in raw["cells"]:
        c["metadata"] = {}
        c.pop("id", None)
    return json.dumps(raw).encode()


def huge(solved, cell_id):
    notebook = copy.deepcopy(solved)
    cell(notebook, cell_id).outputs = [nbformat.v4.new_output("stream", name="stdout", text="y" * (70 << 20))]
    return nbformat.writes(notebook).encode()


def written_outside(context):
    import os
    from pathlib import Path

    targets = [Path("/tmp") / context["token"], Path(context["root"]) / context["token"],
               Path(os.path.expanduser("~")) / context["token"], Path(context["batch"]) / context["token"]]
    found = [str(t) for t in targets if t.exists()]
    return f"files written outside the submission's folder: {found}" if found else None


def lingering(context):
    import subprocess

    alive = subprocess.run(["pgrep", "-f", f"sleep[ (]+{context['token_seconds']}"], check=False,
                           capture_output=True, text=True).stdout.split()
    return f"{len(alive)} processes left running" if alive else None
