"""Fixtures over every lab found in source/: a test that takes `lab` runs once per lab, with
the lab's name in its id (so `pytest -k <lab>` runs everything about one lab)."""
import subprocess
import sys

import pytest

from build_student import build
from tests.helpers import LABS

CATCH_RATES = []  # (lab, visible caught, grader caught, mistakes), reported after the run


@pytest.fixture(scope="session", params=LABS, ids=[lab.name for lab in LABS])
def lab(request):
    return request.param


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


@pytest.fixture
def cpu_hogs():
    """Two CPU-bound processes beside the grader, as on a machine that is busy with other work.
    Each stops by itself after 30 minutes at the latest."""
    hog = "import time\nend = time.monotonic() + 1800\nwhile time.monotonic() < end:\n    pass\n"
    hogs = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(2)]
    yield hogs
    for process in hogs:
        process.kill()
        process.wait()


def pytest_terminal_summary(terminalreporter):
    for lab_name, visible, grader, total in CATCH_RATES:
        terminalreporter.write_line(f"mistake catalogue of {lab_name}: the grader catches {grader} of {total}, "
                                    f"the visible checks {visible} of {total}")
