"""A worker that grades without PyTorch cannot reach it by any route, warm or cold, while a
worker of the same kind with PyTorch can (so that the first half can fail)."""
import os

import pytest

from autograder.isolation.sandbox import UNAVAILABLE, WITHOUT_PYTORCH, Limits, Pool, Worker, hidden_paths
from autograder.isolation.warm import lab_imports
from autograder.isolation.worker import decode

pytestmark = pytest.mark.slow

TORCH_DIR = next(path for path in hidden_paths(WITHOUT_PYTORCH) if path.endswith("/torch"))

# Runs in a worker: every way to PyTorch we could think of, and what each one gave.
ROUTES = f'''
def probe():
    import os, subprocess, sys
    routes = {{
        "import": "import torch",
        "from strings": "__import__('to' + 'rch')",
        "importlib": "import importlib; importlib.import_module('torch')",
        "functorch": "import functorch",
        "its file": "import importlib.util as u; s = u.spec_from_file_location('t', {TORCH_DIR!r} + '/__init__.py'); "
                    "s.loader.exec_module(u.module_from_spec(s))",
        "a fresh interpreter": "subprocess.run([sys.executable, '-c', 'import torch'], check=True, "
                               "stderr=subprocess.DEVNULL)",
        "sys.modules": "sys.modules['torch']",
    }}
    seen = {{}}
    for name, code in routes.items():
        try:
            exec(code, {{"subprocess": subprocess, "sys": sys}})
            seen[name] = "reached"
        except BaseException as error:
            seen[name] = type(error).__name__
    seen["files"] = sorted(os.listdir({TORCH_DIR!r}))
    return seen
'''


@pytest.fixture(scope="module")
def pool():
    started = Pool.launch(lab_imports)
    assert started is not None, "the warm pool needs root, control groups and bubblewrap (see tools/install-debian.sh)"
    yield started
    started.close()


def routes_seen(tmp_path, pool, hidden, sandboxed=True):
    worker = Worker(tmp_path, Limits(), sandboxed, pool, hidden)
    try:
        reply = worker.ask({"op": "probe", "source": f"{ROUTES}\nprobe = probe\n", "args": {}}, 120)
    finally:
        worker.close()
    assert "value" in reply, reply
    return decode(reply["value"])


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_no_route_reaches_pytorch_in_a_worker_without_it(tmp_path, pool, warm):
    seen = routes_seen(tmp_path, pool if warm else None, WITHOUT_PYTORCH)
    assert seen.pop("files") == sorted(os.listdir(UNAVAILABLE)), "PyTorch's folder must be replaced"
    assert "reached" not in seen.values(), seen


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_a_worker_with_pytorch_reaches_it(tmp_path, pool, warm):
    seen = routes_seen(tmp_path, pool if warm else None, ())
    assert "autograd" in seen.pop("files"), "PyTorch's files are there where it is allowed"
    assert seen["import"] == seen["from strings"] == seen["importlib"] == seen["a fresh interpreter"] == "reached"


def test_unsandboxed_the_worker_still_refuses_the_import_by_name(tmp_path):
    """Without bubblewrap only the worker's own finder stands in the way; it names the policy."""
    worker = Worker(tmp_path, Limits(), False, None, WITHOUT_PYTORCH)
    try:
        reply = worker.ask({"op": "run", "source": "import torch"}, 60)
    finally:
        worker.close()
    assert reply["error"] == "ModuleNotFoundError" and reply["unavailable"]
    assert "not available when this code is graded" in reply["message"]


def test_cells_run_statement_by_statement_around_a_missing_pytorch(tmp_path, pool):
    """An `import torch` at the top of a cell costs only what needs it: the rest of the cell
    runs, and what was bound from PyTorch is reported as needing it."""
    worker = Worker(tmp_path, Limits(), True, pool, WITHOUT_PYTORCH)
    try:
        ran = worker.ask({"op": "run_each", "source": "import torch\nT = torch.tensor\nkept = 41 + 1\n"}, 60)
        kept = worker.ask({"op": "probe", "source": "def probe():\n    return kept\n", "args": {}}, 60)
        later = worker.ask({"op": "probe", "source": "def probe():\n    return T([1.0])\n", "args": {}}, 60)
        typo = worker.ask({"op": "probe", "source": "def probe():\n    return kep\n", "args": {}}, 60)
        stopped = worker.ask({"op": "run_each", "source": "import torch\nraise SystemExit(0)\nafter = 1\n"}, 60)
        after = worker.ask({"op": "probe", "source": "def probe():\n    return after\n", "args": {}}, 60)
    finally:
        worker.close()
    assert stopped["error"] == "SystemExit" and after["error"] == "NameError", \
        "any other error stops the cell, as in the notebook"
    assert ran["error"] == "ModuleNotFoundError" and ran["unavailable"]
    assert decode(kept["value"]) == 42
    assert later["error"] == "NameError" and later["unavailable"], "T was bound from PyTorch"
    assert typo["error"] == "NameError" and "unavailable" not in typo, "a plain typo is not PyTorch's absence"


# Runs in a worker: what each import gave, and what is left of the module's folder.
LEFT_OUT = '''
def probe():
    import importlib, importlib.util
    seen = {}
    for name in ("jupyterlab", "tkinter", "lib2to3", "test.support", "pandas", "sklearn.model_selection", "graphviz"):
        try:
            importlib.import_module(name)
            seen[name] = "imported"
        except BaseException as error:
            seen[name] = type(error).__name__
    return seen
'''


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_what_no_graded_code_imports_is_absent_whole_and_what_it_does_is_there(tmp_path, pool, warm):
    """The notebook's front-end and the standard library's tests and GUI are not in the copy that
    a worker without PyTorch reads (autograder/isolation/private_root.py): none is half there."""
    worker = Worker(tmp_path, Limits(), True, pool if warm else None, WITHOUT_PYTORCH)
    try:
        reply = worker.ask({"op": "probe", "source": LEFT_OUT, "args": {}}, 120)
    finally:
        worker.close()
    seen = decode(reply["value"])
    assert {name: seen.pop(name) for name in ("pandas", "sklearn.model_selection", "graphviz")} == \
        dict.fromkeys(("pandas", "sklearn.model_selection", "graphviz"), "imported")
    assert set(seen.values()) == {"ModuleNotFoundError"}, seen


def test_a_worker_with_pytorch_imports_what_the_copy_leaves_out(tmp_path):
    """The control: the machine's own files hold them all."""
    worker = Worker(tmp_path, Limits(), True, None, ())
    try:
        reply = worker.ask({"op": "probe", "source": LEFT_OUT, "args": {}}, 120)
    finally:
        worker.close()
    assert set(decode(reply["value"]).values()) == {"imported"}
