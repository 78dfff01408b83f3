import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from build_student import build  # noqa: E402
from course.execute import execute  # noqa: E402
from course.labs import Lab  # noqa: E402

LAB = "pt03_autodiff"


@pytest.fixture(scope="session")
def lab():
    return Lab(ROOT / "source" / LAB / f"{LAB}.py")


@pytest.fixture(scope="session")
def release_dir(tmp_path_factory):
    """A fresh build of the student notebooks, apart from the committed release/."""
    out = tmp_path_factory.mktemp("release")
    build(out)
    return out


@pytest.fixture(scope="session")
def solved_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("solved")
    build(out, solved=True)
    return out


def read(path):
    return nbformat.read(path, as_version=4)


@pytest.fixture(scope="session")
def executed_instructor(lab):
    """The instructor notebook run top to bottom in a fresh kernel from its own folder."""
    notebook = jupytext.read(lab.path)
    return execute(notebook, lab.folder)
