"""What the tests share: the repository root, every lab of source/, and notebook helpers."""
from pathlib import Path

import nbformat

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
