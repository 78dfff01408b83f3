"""Fixtures over every lab found in source/: a test that takes `lab` runs once per lab, with
the lab's name in its id (so `pytest -k <lab>` runs everything about one lab). The scaling tests
share one class and its grading in one uninterrupted run."""
import os
import subprocess
import sys

import pytest

from autograder.isolation.sandbox import Pool
from autograder.isolation.warm import lab_imports
from build_student import build
from tests.classroom import build_class, grade_class
from tests.helpers import LABS, ROOT

# Every process the tests start (a grading run, build_student.py, JupyterLab's kernels) imports this
# checkout's student package too: pyproject's pythonpath covers this process only, and an editable
# install may point at another checkout.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "student"), os.environ.get("PYTHONPATH")]))


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


@pytest.fixture(scope="session")
def pool():
    """One warm pool for the workers this test process starts itself: the pool's own tests, and
    the gradings run here (the catalogues, the diagnosis measures, the verdicts on many seeds),
    which each started zygotes of their own, about fifty in a run of the suite at 2 to 4 s of
    CPU each for the imports. A zygote never runs a submission's code (every worker is a fresh
    fork of it), so the tests share nothing through it. A run that must start cold asks for
    that (Options(warm=False)) and does not use it."""
    started = Pool.launch(lab_imports)
    assert started is not None, "the warm pool needs root, control groups and bubblewrap (see tools/install-debian.sh)"
    for hidden in Pool.KINDS:
        assert started.zygote(hidden) is not None, f"the zygote without {hidden or 'nothing'} cannot fork a worker"
    yield started
    started.close()


@pytest.fixture
def cpu_hogs():
    """Two CPU-bound processes beside the grader, as on a machine that is busy with other work.
    Each stops by itself after an hour at the latest (the longest re-run beside them took 12 minutes
    in a full run of the suite on 2 cores, and two such tests may run at once)."""
    hog = "import time\nend = time.monotonic() + 3600\nwhile time.monotonic() < end:\n    pass\n"
    hogs = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(2)]
    yield hogs
    for process in hogs:
        process.kill()
        process.wait()


@pytest.fixture(scope="session")
def a_class(tmp_path_factory, release_dir, solved_dir):
    """The submitted/ folder of the class of tests/classroom.py (its course file beside it): six
    students across the labs, in nbgrader's layout, with late work, a wrong lab's notebook, a
    missing lab, a stray file and a hanging answer."""
    return build_class(tmp_path_factory.mktemp("class"), solved_dir, release_dir)


@pytest.fixture(scope="session")
def uninterrupted(a_class, tmp_path_factory):
    """The results folder of the class graded in one run with --jobs 2: what every other way of
    grading it must give. The run's output is kept beside it, in run.txt."""
    out = tmp_path_factory.mktemp("uninterrupted")
    run = subprocess.run(grade_class(a_class, "--out", out, "--jobs", "2"), cwd=ROOT, capture_output=True, text=True,
                         timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    (out.parent / f"{out.name}-run.txt").write_text(run.stdout + run.stderr)
    return out


def pytest_terminal_summary(terminalreporter):
    """The mistake catalogues' catch rates (test_mistakes.py records them on its reports)."""
    reports = [report for kind in ("passed", "failed") for report in terminalreporter.stats.get(kind, [])]
    rates = [value for report in reports if report.when == "call"
             for name, value in report.user_properties if name == "catch rate"]
    for lab_name, visible, grader, total in sorted(rates):
        terminalreporter.write_line(f"mistake catalogue of {lab_name}: the grader catches {grader} of {total}, "
                                    f"the visible checks {visible} of {total}")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`make test` runs the suite in two processes (pytest-xdist). Tests that share an expensive
    fixture go to one of them (see `shared_fixtures`)."""
    from xdist.scheduler import LoadScopeScheduling

    class BySharedFixtures(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return shared_fixtures(nodeid)

    return BySharedFixtures(config, log)


# The modules holding the longest groups, longest first (`make test` prints the slowest tests). A
# process takes the next group when it finishes one, so a long group begun last would run alone
# while the other processes sit idle: on 2 cores the whole run took up to 78 minutes.
LONGEST_FIRST = ("test_class_record", "test_adversarial", "test_mistakes", "test_grading", "test_class_report",
                 "test_jupyterlab", "test_new_lab", "test_instructor_notebook", "test_every_function_probed",
                 "test_hidden_inputs", "test_release_execution")


def pytest_collection_modifyitems(items):
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.module.__name__.rpartition(".")[2], len(rank)))


def shared_fixtures(nodeid):
    """The group of the test `nodeid`: a module's tests of one lab (its module-scoped fixtures
    grade that lab), every test of the graded class (the session's `uninterrupted`), and every
    test that reads one lab's instructor notebook executed (helpers.instructor_run, cached in its
    process: a second process would execute it again, for up to a minute and a half)."""
    module, _, name = nodeid.partition("::")
    text = (ROOT / module).read_text()
    if "uninterrupted" in text:
        return "the graded class"
    params = name[name.find("[") + 1:-1].split("-") if name.endswith("]") else []
    labs = [lab.name for lab in LABS if lab.name in params or f"test_{lab.name}_" in module]
    if labs and "instructor_run(" in text:
        return f"the instructor run of {labs[0]}"
    return f"{module} of {labs[0]}" if labs else module
