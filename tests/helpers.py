"""What the tests share: the repository root, every lab of source/, and notebook helpers."""
import functools
import importlib
import json
from pathlib import Path

import nbformat

from course.instructor import run
from course.labs import find_labs

ROOT = Path(__file__).resolve().parent.parent
LABS = find_labs(ROOT / "source")


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
        probe = importlib.import_module(f"tests.test_{lab.name}_figures").PROBE
    except ModuleNotFoundError:
        probe = None
    notebook, printed = run(lab, probe)
    return notebook, None if probe is None else json.loads(printed)
