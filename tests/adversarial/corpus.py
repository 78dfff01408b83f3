"""Hostile and broken submissions, each with the result the grader must give it.

Most attacks leave one or two activities unsolved and try to get their points anyway; the
expected result is 0 for those activities and full marks for the honest rest. Some attacks
aim at the machine rather than the score; they must leave no trace on it.

    python -m tests.adversarial.corpus     grade the corpus and print the table
"""
import copy
import json
from dataclasses import dataclass

import nbformat

LAB = "pt03_autodiff"
POINTS = {"1a": 3, "1b": 2, "1c": 2, "2": 4, "3": 3, "A": 2, "B": 1, "C": 1}


@dataclass
class Attack:
    name: str
    description: str
    status: str = "graded"
    zero: frozenset = frozenset()  # activities that must score 0; all others full marks
    build: object = None  # (solved, blank, context) -> notebook, or bytes for a raw file
    host_check: object = None  # (context) -> None or a message about a trace left on the machine

    def expected(self):
        if self.status != "graded":
            return self.status
        return "0 for " + ", ".join(sorted(self.zero)) if self.zero else "full marks"


def cell(notebook, cell_id):
    return next(c for c in notebook.cells if c.id == cell_id)


def stubbed(solved, blank, *activities):
    notebook = copy.deepcopy(solved)
    for activity in activities:
        cell(notebook, f"{activity}-answer").source = cell(blank, f"{activity}-answer").source
    return notebook


def add_cell(notebook, source, after="C-answer"):
    position = next(i for i, c in enumerate(notebook.cells) if c.id == after) + 1
    notebook.cells.insert(position, nbformat.v4.new_code_cell(source, id=f"added-{position}"))
    return notebook


def answer(notebook, activity, source):
    cell(notebook, f"{activity}-answer").source = source
    return notebook


def reference(context, activity):
    return context["lab"].activities[activity].reference.source


# ----------------------------------------------------------------------------- source texts
FAKE_HELPERS = """
import numpy as np
def close(*args, **kwargs):
    return None
def expect_error(*args, **kwargs):
    return None
np.testing.assert_allclose = close
"""
FAKE_COMPARISONS = """
import numpy as np
np.isclose = lambda a, b, **k: np.ones(np.broadcast(np.asarray(a), np.asarray(b)).shape, dtype=bool)
np.allclose = lambda *a, **k: True
np.array_equal = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None
"""
FAKE_TORCH = """
import torch
torch.autograd.grad = lambda outputs, inputs, *a, **k: tuple(torch.zeros_like(x) for x in inputs)
torch.allclose = lambda *a, **k: True
"""
EQ_OBJECTS = """
class Anything:
    def __eq__(self, other):
        return True
    __ne__ = lambda self, other: False
    def __array__(self, dtype=None, copy=None):
        import numpy
        return numpy.zeros(3)


def add_vjp(a, b, v):
    return Anything(), Anything()
"""
SUBCLASS = """
import numpy as np


class Agreeable(np.ndarray):
    def __eq__(self, other):
        return np.ones(np.shape(self), dtype=bool)
    def tolist(self):
        return [0.0]


def sum_to_shape(v, shape):
    return np.zeros(shape).view(Agreeable)
"""
ARRAY_LIKE = """
class Looks:
    def __init__(self, v):
        self.v = v
    def __array__(self, dtype=None, copy=None):
        return self.v
    shape = property(lambda self: self.v.shape)


def tanh_vjp(y, v):
    return Looks(v)


def relu_vjp(x, v):
    return Looks(v)
"""
FRAMES = """
import sys


def relu_vjp(x, v):
    frame = sys._getframe(1)
    while frame is not None:
        for name in ("expected", "want", "theirs", "answer"):
            if name in frame.f_locals:
                return frame.f_locals[name]
        frame = frame.f_back
    return v


def tanh_vjp(y, v):
    return relu_vjp(y, v)
"""
GC_SCAN = """
import gc


def topological_order(output):
    return [output]


def backward(output, seed=None):
    for thing in gc.get_objects():
        if isinstance(thing, dict) and "expected" in thing:
            return thing["expected"]
    return {}
"""
READ_SOURCE = """
import glob, re
found = [p for pattern in ("{root}/source/*/*.py", "../../source/*/*.py", "/**/pt03_autodiff.py")
         for p in glob.glob(pattern, recursive=True)]
if found:
    text = open(found[0]).read()
    exec(re.search(r'activity="2"\\n(# Instructor.*?)# %%', text, re.S).group(1))
else:
    def topological_order(output):
        raise NotImplementedError("Complete Activity 2: topological_order")

    def backward(output, seed=None):
        raise NotImplementedError("Complete Activity 2: backward")
"""
READ_HIDDEN = """
import os
import numpy as np
if os.path.exists("{root}/autograder/labs/pt03_autodiff/__init__.py"):
{solution}
else:
    def tanh_vjp(y, v):
        return v

    def relu_vjp(x, v):
        return v
"""
READ_GRADEBOOK = """
import glob
import numpy as np
loot = glob.glob("{root}/**/gradebook.db", recursive=True) + glob.glob("{batch}/*.ipynb")
if loot:
{solution}
else:
    def sum_to_shape(v, shape):
        return v
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
json.dumps = json.loads = lambda *a, **k: "{{}}"
base64.b64encode = base64.b64decode = lambda *a, **k: b""
os.write = lambda fd, data: len(data)
os.read = lambda fd, n: b""
sys.modules["json"] = None
"""
FORGE = """
import os, sys
forged = b'{{"ok": true, "value": {{"kind": "dict", "items": []}}, "seq": %d}}\\n'
for seq in range(1, 400):
    os.write(int(sys.argv[2]), forged % seq)
"""


def indent(source):
    return "\n".join("    " + line if line.strip() else line for line in source.splitlines())


def attacks():
    return [
        Attack("redefine-check-helpers", "1a unsolved; close, expect_error and assert_allclose replaced by no-ops",
               zero=frozenset({"1a"}), build=lambda s, b, c: add_cell(stubbed(s, b, "1a"), FAKE_HELPERS, "1a-answer")),
        Attack("patch-numpy-comparisons", "1b unsolved; np.isclose, allclose, array_equal, testing patched",
               zero=frozenset({"1b"}), build=lambda s, b, c: add_cell(stubbed(s, b, "1b"), FAKE_COMPARISONS)),
        Attack("patch-torch", "1c unsolved; torch.autograd.grad and torch.allclose patched",
               zero=frozenset({"1c"}), build=lambda s, b, c: add_cell(stubbed(s, b, "1c"), FAKE_TORCH)),
        Attack("always-equal-objects", "add_vjp returns objects whose == is always True and __array__ lies",
               zero=frozenset({"1a"}), build=lambda s, b, c: answer(copy.deepcopy(s), "1a",
                                                                   reference(c, "1a") + "\n\n" + EQ_OBJECTS)),
        Attack("ndarray-subclass", "sum_to_shape returns an ndarray subclass that agrees with everything",
               zero=frozenset({"1b"}), build=lambda s, b, c: answer(copy.deepcopy(s), "1b", SUBCLASS)),
        Attack("array-like", "tanh_vjp and relu_vjp return objects with __array__ instead of arrays",
               zero=frozenset({"1c"}), build=lambda s, b, c: answer(copy.deepcopy(s), "1c", ARRAY_LIKE)),
        Attack("read-caller-frames", "VJPs return whatever 'expected' they find in the callers' frames",
               zero=frozenset({"1c"}), build=lambda s, b, c: answer(copy.deepcopy(s), "1c", FRAMES)),
        Attack("gc-scan", "backward searches every live object for an expected answer",
               zero=frozenset({"2"}), build=lambda s, b, c: answer(copy.deepcopy(s), "2", GC_SCAN)),
        Attack("fake-success-lines", "nothing solved; prints every check's success line",
               zero=frozenset(POINTS), build=lambda s, b, c: add_cell(copy.deepcopy(b), "\n".join(
                   f"print('Activity {a} passed')" for a in POINTS))),
        Attack("edited-check-cell", "1a unsolved; its check cell replaced by a success message",
               zero=frozenset({"1a"}), build=lambda s, b, c: edit_check(stubbed(s, b, "1a"))),
        Attack("deleted-check-cells", "all solved; every check cell deleted", build=lambda s, b, c: delete_checks(s)),
        Attack("moved-duplicated-checks", "all solved; check cells moved to the top and duplicated",
               build=lambda s, b, c: move_checks(s)),
        Attack("tampered-points-flags", "2 unsolved; points set to 100, answer cells flagged as graded",
               zero=frozenset({"2"}), build=lambda s, b, c: tamper_points(stubbed(s, b, "2"))),
        Attack("tampered-grade-ids", "all solved; grade ids and cell ids shuffled between cells",
               build=lambda s, b, c: tamper_ids(s)),
        Attack("stripped-metadata", "all solved; every cell and notebook metadata and id removed",
               build=lambda s, b, c: strip(s)),
        Attack("read-instructor-source", "2's answer execs the reference solution read from source/",
               zero=frozenset({"2"}),
               build=lambda s, b, c: answer(copy.deepcopy(s), "2", READ_SOURCE.format(root=c["root"]))),
        Attack("read-hidden-checks", "1c is correct only if the grader's hidden checks are readable",
               zero=frozenset({"1c"}), build=lambda s, b, c: answer(copy.deepcopy(s), "1c", READ_HIDDEN.format(
                   root=c["root"], solution=indent(reference(c, "1c"))))),
        Attack("read-gradebook-submissions", "1b is correct only if a gradebook or other submissions are found",
               zero=frozenset({"1b"}), build=lambda s, b, c: answer(copy.deepcopy(s), "1b", READ_GRADEBOOK.format(
                   root=c["root"], batch=c["batch"], solution=indent(reference(c, "1b"))))),
        Attack("write-outside", "all solved; writes files in /tmp, the course, HOME and the batch folder",
               build=lambda s, b, c: add_cell(copy.deepcopy(s), WRITE_OUTSIDE.format(**c)),
               host_check=written_outside),
        Attack("sys-exit", "1c's cell calls sys.exit() before defining anything", zero=frozenset({"1c"}),
               build=lambda s, b, c: answer(copy.deepcopy(s), "1c", "import sys\nsys.exit(0)\n" + reference(c, "1c"))),
        Attack("os-exit-in-function", "add_vjp calls os._exit(0)", zero=frozenset({"1a"}),
               build=lambda s, b, c: answer(copy.deepcopy(s), "1a", reference(c, "1a") +
                                            "\n\ndef add_vjp(a, b, v):\n    import os\n    os._exit(0)\n")),
        Attack("sigkill-in-backward", "backward sends SIGKILL to its own process", zero=frozenset({"2"}),
               build=lambda s, b, c: answer(copy.deepcopy(s), "2", reference(c, "2") +
                                            "\n\ndef backward(output, seed=None):\n    import os, signal\n"
                                            "    os.kill(os.getpid(), signal.SIGKILL)\n")),
        Attack("sigkill-cell", "all solved; a last cell kills the process", build=lambda s, b, c: add_cell(
            copy.deepcopy(s), "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")),
        Attack("infinite-loop", "tanh_vjp never returns", zero=frozenset({"1c"}),
               build=lambda s, b, c: answer(copy.deepcopy(s), "1c", reference(c, "1c") +
                                            "\n\ndef tanh_vjp(y, v):\n    while True:\n        pass\n")),
        Attack("lingering-processes", "all solved; starts detached and double-forked sleepers",
               build=lambda s, b, c: add_cell(copy.deepcopy(s), LINGER.format(**c)), host_check=lingering),
        Attack("fork-bomb", "all solved; a cell forks without end", build=lambda s, b, c: add_cell(
            copy.deepcopy(s), FORK_BOMB)),
        Attack("memory-bomb", "multiply_vjp allocates 800 GB; another cell hoards memory",
               zero=frozenset({"1a"}), build=lambda s, b, c: add_cell(answer(
                   copy.deepcopy(s), "1a", reference(c, "1a") + "\n\ndef multiply_vjp(a, b, v):\n"
                   "    hoard = np.ones(10**11)\n    return v * b, v * a\n"),
                   "hoard = [bytearray(1 << 30) for _ in range(64)]\n")),
        Attack("output-flood", "all solved; a cell prints 300 MB", build=lambda s, b, c: add_cell(
            copy.deepcopy(s), "import sys\nfor _ in range(300):\n    sys.stdout.write('x' * (1 << 20))\n")),
        Attack("import-sabotage", "1a unsolved; json, base64, os.write and os.read replaced in the kernel",
               zero=frozenset({"1a"}), build=lambda s, b, c: add_cell(stubbed(s, b, "1a"), SABOTAGE)),
        Attack("forged-replies", "1a and 1b unsolved; writes forged replies to the grader's pipe",
               zero=frozenset({"1a", "1b"}), build=lambda s, b, c: add_cell(stubbed(s, b, "1a", "1b"), FORGE,
                                                                            "1a-answer")),
        Attack("invalid-json", "a file that is not JSON", status="invalid_notebook",
               build=lambda s, b, c: b'{"cells": [{"cell_type": "code", "source": "def add_vjp('),
        Attack("empty-file", "an empty file", status="invalid_notebook", build=lambda s, b, c: b""),
        Attack("nbformat-3", "the solved notebook saved as nbformat 3", build=lambda s, b, c: json.dumps(
            nbformat.v3.convert.downgrade(nbformat.from_dict(json.loads(nbformat.writes(s))))).encode()),
        Attack("no-lab", "a notebook of no lab of the course", status="unknown_lab",
               build=lambda s, b, c: nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])),
        Attack("too-large", "70 MB of saved output", status="too_large", build=lambda s, b, c: huge(s)),
    ]


def edit_check(notebook):
    cell(notebook, "1a-check").source = "print('Activity 1a passed: add_vjp, multiply_vjp and matmul_vjp')"
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


def huge(solved):
    notebook = copy.deepcopy(solved)
    cell(notebook, "1a-answer").outputs = [nbformat.v4.new_output("stream", name="stdout", text="y" * (70 << 20))]
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

    alive = subprocess.run(["pgrep", "-f", f"sleep[ (]+{context['token_seconds']}"], capture_output=True,
                           text=True).stdout.split()
    return f"{len(alive)} processes left running" if alive else None


def write_corpus(folder, solved, blank, context):
    """Write every attack's submission into `folder`; return {name: Attack}."""
    made = {}
    for attack in attacks():
        built = attack.build(solved, blank, context)
        path = folder / f"{attack.name}.ipynb"
        if isinstance(built, bytes):
            path.write_bytes(built)
        else:
            nbformat.write(built, path)
        made[attack.name] = attack
    return made


def verdict(attack, result):
    """'ok', or what differs from the expected result."""
    if result["status"] != attack.status:
        return f"status {result['status']}, expected {attack.status}"
    if attack.status != "graded":
        return "ok"
    scores = {t["name"]: t["score"] for t in result["tests"]}
    wrong = [a for a, points in POINTS.items() if scores.get(a) != (0 if a in attack.zero else points)]
    return "ok" if not wrong else f"wrong scores for {', '.join(wrong)}: {scores}"


def false_passes(attack, result):
    """Activities the attack got points for although it did not solve them honestly."""
    scores = {t["name"]: t["score"] for t in result.get("tests", [])}
    return [a for a in attack.zero if scores.get(a, 0) > 0]


def main():
    """Grade the corpus with a solved control, print the table."""
    import subprocess
    import sys
    import tempfile
    import uuid
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root))
    from build_student import build
    from course.labs import Lab

    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        build(scratch / "release")
        build(scratch / "solved", solved=True)
        read = lambda name: nbformat.read(scratch / name / LAB / f"{LAB}.ipynb", as_version=4)  # noqa: E731
        batch = scratch / "batch"
        batch.mkdir()
        token = f"adv-{uuid.uuid4().hex[:8]}"
        context = {"root": str(root), "batch": str(batch), "token": token,
                   "token_seconds": f"{900 + uuid.uuid4().int % 99}.{uuid.uuid4().int % 1000:03d}",
                   "lab": Lab(root / "source" / LAB / f"{LAB}.py")}
        made = write_corpus(batch, read("solved"), read("release"), context)
        nbformat.write(read("solved"), batch / "control.ipynb")
        out = scratch / "out"
        subprocess.run([sys.executable, "-m", "autograder", "grade", str(batch), "--out", str(out),
                        "--cell-timeout", "10"], cwd=root, check=True)
        print(f"{'attack':<28}{'expected':<22}{'got':<40}verdict")
        for name, attack in made.items():
            result = json.loads((out / f"{name}.json").read_text())
            got = result["status"] if result["status"] != "graded" else f"{result['score']} points, 0 for " + (
                ", ".join(t["name"] for t in result["tests"] if t["score"] == 0) or "none")
            trace = attack.host_check(context) if attack.host_check else None
            print(f"{name:<28}{attack.expected():<22}{got:<40}{verdict(attack, result)}"
                  + (f"; {trace}" if trace else ""))
        control = json.loads((out / "control.json").read_text())
        print(f"control (solved): {control['score']} points")


if __name__ == "__main__":
    main()
