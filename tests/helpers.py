"""What the tests share: the repository root, every lab of source/, notebook helpers, the
instructor notebooks executed once, and running the grader and nbgrader."""
import csv
import functools
import importlib
import json
import re
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import nbformat

from authoring.instructor import run
from autograder.records.results_store import stored_results
from course.labs import find_labs

ROOT = Path(__file__).resolve().parent.parent
# CPU seconds per cell or check in the batches of hostile and broken submissions: every lab's
# solved notebook gets full marks cold at 2, and each hanging submission costs this much per hang.
CELL_TIMEOUT = "5"
LABS = find_labs(ROOT / "source")


def pip_pins(name="requirements.txt"):
    """{package (lower case): version} of a pinned requirements file of the repository; a folder
    of this repository it installs (./student) is no pin (local_requirements)."""
    pins = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("./"):
            package, version = re.fullmatch(r"([A-Za-z0-9_.-]+)==([\w.]+)", line).groups()
            pins[package.lower()] = version
    return pins


def local_requirements(name):
    """The folders of this repository a requirements file installs, as written (./student)."""
    return [line.strip() for line in (ROOT / name).read_text().splitlines() if line.strip().startswith("./")]


def read(path):
    return nbformat.read(path, as_version=4)


def lab_notebook(folder, lab):
    """The notebook of `lab` in a built folder (release/, a solved build, ...)."""
    return folder / lab.name / f"{lab.name}.ipynb"


def required_points(lab):
    return sum(a.points for a in lab.activities.values() if not a.optional)


def all_points(lab):
    return sum(a.points for a in lab.activities.values())


@functools.cache
def instructor_run(lab):
    """`lab`'s instructor notebook executed once per test session, as `make instructor` writes
    it, and the figures its figures test asks for: (notebook, figures).

    A whole execution costs minutes for some labs, so the figures are read from the same kernel:
    tests/test_<lab>_figures.py, where it exists, holds in PROBE the code that prints them as
    JSON after the last cell (figures is None for a lab without one)."""
    try:
        probe = getattr(importlib.import_module(f"tests.test_{lab.name}_figures"), "PROBE", None)
    except ModuleNotFoundError:
        probe = None
    notebook, printed = run(lab, probe)
    return notebook, None if probe is None else json.loads(printed)


def grade_command(*args):
    """`python -m autograder grade ARGS...`, to run from the repository root."""
    return [sys.executable, "-m", "autograder", "grade", *map(str, args)]


def records_in(out):
    """{(student, lab): result} of the records in the results folder `out`."""
    return stored_results(out)


def results_in(out):
    """{student: result} of a results folder in which each student has one record."""
    found = {}
    for (student, lab), result in stored_results(out).items():
        assert student not in found, f"{student} has records of several labs; use records_in"
        found[student] = result
    return found


def comparable(result):
    """A result without what differs from run to run: where the file was, when it was written
    there (without a due date, the time handed in is the file's), and how long grading took."""
    result = json.loads(json.dumps(result))
    result.pop("execution_time")
    for key in ("path", "phases", "cpu_seconds", "replay_cpu_seconds"):
        result["extra_data"].pop(key, None)
    late = result["extra_data"].get("late", {})
    if "due" not in late:
        late.pop("submitted", None)
        late.pop("source", None)
    return result


def nbgrader(*args, cwd):
    command = [str(ROOT / ".venv/bin/nbgrader") if (ROOT / ".venv/bin/nbgrader").exists() else "nbgrader", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)


def nbgrader_export(out, db_url, folder):
    """The gradebook at `db_url` (results in `out`) as `nbgrader export` writes it: its rows, sorted."""
    target = Path(folder) / f"export-{len(list(Path(folder).glob('export-*.csv')))}.csv"
    run = nbgrader("export", f"--CourseDirectory.root={out}", f"--CourseDirectory.db_url={db_url}", f"--to={target}",
                   cwd=folder)
    assert run.returncode == 0, run.stderr
    with target.open(newline="") as handle:
        return sorted(csv.DictReader(handle), key=lambda row: (row["assignment"], row["student_id"]))


@contextmanager
def ctrl_c_raises():
    """Ctrl-C's handler, inside, as in a terminal's foreground job (KeyboardInterrupt): a suite
    started in the background (`make test &`, a CI runner) hands its processes SIGINT ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
