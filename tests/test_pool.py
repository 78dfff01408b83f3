"""The warm worker pool: workers forked from one zygote are sandboxed as the cold ones are, and
share nothing with each other or with the zygote."""
import json
import os
import subprocess
import sys

import pytest

from autograder.isolation.sandbox import WITHOUT_PYTORCH, Limits, Pool, Worker, font_lists
from autograder.isolation.warm import lab_imports
from autograder.isolation.worker import decode

pytestmark = pytest.mark.slow

# Runs in a worker: what it can see of the machine and of its siblings.
LOOK_AROUND = '''
def links(folder):
    found = []
    for name in os.listdir(folder):
        try:
            found.append(os.readlink(os.path.join(folder, name)))
        except OSError:  # the descriptor listdir itself used, closed since
            pass
    return sorted(found)


import os


def probe():
    import os, random, socket, sys
    import numpy, torch
    seen = {"uid": os.getuid(), "gid": os.getgid(), "hostname": socket.gethostname(), "cwd": os.getcwd(),
            "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
            "root": sorted(os.listdir("/")),
            "course_visible": any(os.path.exists(os.path.join(COURSE, part)) for part in ("README.md", "autograder")),
            "open_fds": links("/proc/self/fd"),
            "draws": [random.random(), float(numpy.random.random()), float(torch.rand(1))],
            "trace_seen": hasattr(numpy, "_left_here") or os.path.exists("/tmp/left-here")
                          or os.path.exists("/submission/left-here") or "LEFT_HERE" in os.environ}
    try:
        socket.create_connection(("127.0.0.1", 22), timeout=2)
        seen["network"] = "connected"
    except OSError as error:
        seen["network"] = type(error).__name__
    numpy._left_here = True
    os.environ["LEFT_HERE"] = "1"
    open("/tmp/left-here", "w").write("x")
    open("/submission/left-here", "w").write("x")
    return seen
'''


def look_around(pool, tmp_path, name):
    folder = tmp_path / name
    folder.mkdir()
    worker = Worker(folder, Limits(), True, pool)
    try:
        source = LOOK_AROUND.replace("COURSE", repr(str(os.path.dirname(os.path.dirname(__file__)))))
        reply = worker.ask({"op": "probe", "source": f"{source}\nprobe = probe\n", "args": {}}, 60)
    finally:
        worker.close()
    assert "value" in reply, reply
    return decode(reply["value"])


@pytest.fixture(scope="module")
def two_workers(pool, tmp_path_factory):
    folder = tmp_path_factory.mktemp("pool")
    return look_around(pool, folder, "first"), look_around(pool, folder, "second")


def test_workers_run_as_nobody_in_their_own_namespaces(two_workers):
    for seen in two_workers:
        assert (seen["uid"], seen["gid"]) == (65534, 65534)
        assert seen["hostname"] == "grader" and seen["cwd"] == "/submission"
        assert seen["pids"] == [1, 2], "a worker sees only its own init and itself"
        assert seen["network"] != "connected"
        assert not seen["course_visible"], "the course files must not be reachable"


def test_workers_share_nothing(two_workers):
    first, second = two_workers
    assert not first["trace_seen"] and not second["trace_seen"], "a worker saw what another one left"
    assert all(a != b for a, b in zip(first["draws"], second["draws"])), \
        "random generators were not reseeded per worker (Python, NumPy, PyTorch)"


def test_nothing_of_the_grader_is_left_open(two_workers):
    """Standard streams go nowhere; besides the request and reply pipes, only what IPython
    opened in the worker itself (its history database)."""
    for seen in two_workers:
        inherited = [link for link in seen["open_fds"] if not link.startswith("/tmp/ipython/")]
        assert inherited[:3] == ["/dev/null"] * 3
        assert len(inherited) == 5 and all(link.startswith("pipe:") for link in inherited[3:]), seen["open_fds"]


def test_the_zygotes_stay_single_threaded_after_forks(pool, tmp_path):
    look_around(pool, tmp_path, "third")
    for zygote in pool.zygotes.values():
        assert len(os.listdir(f"/proc/{zygote.process.pid}/task")) == 1


# Runs in a worker: the modules its first gradients import, with the upstream gradient given
# and without it.
FIRST_BACKWARD = """
def probe():
    import sys, torch
    before = set(sys.modules)
    leaf = torch.ones(3, dtype=torch.float64, requires_grad=True)
    (leaf * leaf).backward(torch.ones(3, dtype=torch.float64))
    (leaf * leaf).sum().backward()
    torch.autograd.grad((leaf * leaf,), (leaf,), (torch.ones(3, dtype=torch.float64),))
    return sorted(set(sys.modules) - before)
"""


def test_a_warm_worker_s_first_backward_imports_nothing(pool, tmp_path):
    """The zygote holds what PyTorch imports only when a first gradient is taken from a given
    upstream gradient (SymPy, by way of torch.fx): a worker that imported it itself paid 0.3 s of
    CPU time, in every grading of scalar_engine (its MyReLU checks)."""
    worker = Worker(tmp_path, Limits(), True, pool)
    try:
        reply = worker.ask({"op": "probe", "source": FIRST_BACKWARD, "args": {}}, 60)
    finally:
        worker.close()
    assert decode(reply["value"]) == [], reply


def test_a_lab_graded_without_pytorch_never_starts_its_zygote(solved_dir):
    """Only a worker that may use PyTorch needs the zygote that imported it: grading a lab that
    has no such activity leaves it unstarted (and its import uncosted)."""
    from autograder.grading.grade import Options, grade
    from autograder.labs import grading_for
    from tests.helpers import LABS, all_points, lab_notebook

    lab = next(lab for lab in LABS if not grading_for(lab.name).uses_pytorch)
    started = Pool.launch(lab_imports)
    try:
        result, _ = grade(lab_notebook(solved_dir, lab), Options(pool=started))
        assert result["score"] == all_points(lab), result
        assert set(started.zygotes) == {WITHOUT_PYTORCH}
    finally:
        started.close()


def test_a_run_of_one_notebook_starts_a_zygote_only_for_a_second_worker(solved_dir):
    """A pool that is not eager (a run of one notebook) starts its first worker of a kind cold,
    paying no zygote's imports, and the zygote when a second worker of that kind is asked for."""
    from autograder.grading.grade import Options, grade
    from autograder.labs import grading_for
    from tests.helpers import LABS, all_points, lab_notebook

    lab = next(lab for lab in LABS if not grading_for(lab.name).uses_pytorch)
    started = Pool.launch(lab_imports, eager=False)
    try:
        result, _ = grade(lab_notebook(solved_dir, lab), Options(pool=started))
        assert result["score"] == all_points(lab), result
        assert started.zygotes == {}, "a solved notebook needs one worker: no zygote should have started"
        assert started.zygote(WITHOUT_PYTORCH) is not None, "the next worker of the kind comes from a zygote"
        assert set(started.zygotes) == {WITHOUT_PYTORCH}
    finally:
        started.close()


FONT_NAMES = '''
def probe():
    from matplotlib import font_manager
    return sorted({entry.name for entry in font_manager.fontManager.ttflist})
'''


@pytest.mark.parametrize("start", ["cold", "forked"])
def test_matplotlib_in_a_worker_takes_the_grader_s_list_of_fonts(tmp_path, monkeypatch, start):
    """A fresh sandbox reads the font list of the grader's matplotlib cache rather than looking for
    every font again: a list marked here is the one the worker's matplotlib holds."""
    cache = tmp_path / "matplotlib"
    made = subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], capture_output=True, text=True,
                          env={**os.environ, "MPLCONFIGDIR": str(cache)}, timeout=300)
    assert made.returncode == 0, made.stderr
    (listed,) = cache.glob("fontlist-v*.json")
    fonts = json.loads(listed.read_text())
    fonts["ttflist"][0]["name"] = "Marked by the grader"
    listed.write_text(json.dumps(fonts))
    monkeypatch.setenv("MPLCONFIGDIR", str(cache))
    font_lists.cache_clear()
    pool = Pool.launch(lab_imports) if start == "forked" else None
    folder = tmp_path / "worker"
    folder.mkdir()
    worker = Worker(folder, Limits(), True, pool.zygote(WITHOUT_PYTORCH) if pool is not None else None)
    try:
        reply = worker.ask({"op": "probe", "source": FONT_NAMES, "args": {}}, 120)
    finally:
        worker.close()
        if pool is not None:
            pool.close()
        font_lists.cache_clear()
    assert "Marked by the grader" in decode(reply["value"]), reply


# A process that starts a worker before matplotlib has listed the machine's fonts (a fresh
# machine), and finds a list afterwards: its copy of the grader's files holds none.
FONTS_LISTED_LATER = '''
import shutil, sys, tempfile
from pathlib import Path
from autograder.isolation.sandbox import WITHOUT_PYTORCH, Limits, Worker, font_lists
listed, folder = Path(sys.argv[1]), Path(sys.argv[2])
for found in ("before", "after"):
    worker = Worker(Path(tempfile.mkdtemp(dir=folder)), Limits(), True, None, WITHOUT_PYTORCH)
    worker.close()
    print(found, len(font_lists()))
    shutil.copyfile(listed, folder / "matplotlib" / listed.name)
    font_lists.cache_clear()
'''


def test_a_font_list_that_appears_after_the_first_worker_does_not_stop_the_next(tmp_path):
    """Every cold start from a process whose copy was made before the list was written failed with
    'the Python process running the submission exited with status 1' (bubblewrap could not mount it)."""
    made = tmp_path / "made"
    subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], check=True, capture_output=True,
                   env={**os.environ, "MPLCONFIGDIR": str(made)}, timeout=300)
    (listed,) = made.glob("fontlist-v*.json")
    (tmp_path / "matplotlib").mkdir()
    ran = subprocess.run([sys.executable, "-c", FONTS_LISTED_LATER, str(listed), str(tmp_path)], capture_output=True,
                         text=True, env={**os.environ, "MPLCONFIGDIR": str(tmp_path / "matplotlib")}, timeout=300)
    assert ran.returncode == 0 and ran.stdout.split() == ["before", "0", "after", "1"], ran.stdout + ran.stderr[-2000:]
