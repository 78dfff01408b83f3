"""The grader as pip installs it: one extra per role whose union is requirements.txt, a student's
own requirements, a wheel that holds the grader and none of the course, and the installed
`autograder` command grading a course folder kept apart from its code, its packages out of the
submissions' reach."""
import importlib.metadata
import json
import re
import subprocess
import sys
import tomllib
import zipfile

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from autograder.grading.versions import grader_version
from autograder.isolation.warm import lab_imports
from tests.adversarial.common import Attack
from tests.adversarial.corpus import new_context, write_corpus
from tests.helpers import LABS, ROOT, lab_notebook, local_requirements, pip_pins, read, results_in
from tests.installed import build_wheel, clean_environment, course_copy, installed_environment

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
SELF = PROJECT["name"]
STUDENT = tomllib.loads((ROOT / "student" / "pyproject.toml").read_text())["project"]


def extra(name):
    """The pinned requirements of an extra, the extras it names expanded: {package: version}."""
    pins = {}
    for line in PROJECT["optional-dependencies"][name]:
        requirement = Requirement(line)
        if requirement.name == SELF:
            for inner in requirement.extras:
                pins.update(extra(inner))
        else:
            (specifier,) = requirement.specifier
            assert specifier.operator == "==", f"{line}: pin it exactly, as requirements.txt does"
            pins[requirement.name.lower()] = specifier.version
    return pins


def core():
    return {Requirement(line).name.lower(): next(iter(Requirement(line).specifier)).version
            for line in PROJECT["dependencies"]}


def test_the_extras_together_are_requirements_txt():
    union = core()
    for name in PROJECT["optional-dependencies"]:
        union.update(extra(name))
    assert union == pip_pins()


def test_a_grading_node_installs_neither_the_instructor_tools_nor_the_tests():
    node = {**core(), **extra("grade")}
    assert node["torch"] == "2.13.0"
    assert not {"nbgrader", "jupyterlab", "playwright", "pytest", "dask", "psycopg"} & set(node)


def test_the_docs_install_the_cpu_build_of_the_pinned_torch_which_every_pin_accepts():
    """The operators' page's recipes install PyTorch's CPU build first (from PyTorch's CPU package
    index, or a wheel brought to a machine that reaches a PyPI mirror only); pip keeps it only while
    every pin of torch accepts it, else it fetches the CUDA build over it."""
    cpu = f"{pip_pins()['torch']}+cpu"
    for pins in (pip_pins(), pip_pins("requirements-student.txt"), {**core(), **extra("grade")}):
        assert SpecifierSet(f"=={pins['torch']}").contains(cpu), pins["torch"]
    page = (ROOT / "docs" / "operators.md").read_text()
    start = page.index("\n## Installing\n")
    installing = page[start:page.index("\n## ", start + 1)]
    assert f'"torch=={cpu}"' in installing
    assert "://" not in installing  # the indexes are named by what they are, not by their addresses


def requirements_of(distribution, seen):
    """The distributions `distribution` needs, transitively (extras apart), into `seen`."""
    if distribution in seen:
        return seen
    seen.add(distribution)
    for line in importlib.metadata.requires(distribution) or ():
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            requirements_of(requirement.name.lower().replace("_", "-"), seen)
    return seen


def test_students_install_what_the_notebooks_import_the_check_and_no_grader():
    student = pip_pins("requirements-student.txt")
    assert {name: pip_pins()[name] for name in student} == student, "pin the same versions as requirements.txt"
    assert local_requirements("requirements-student.txt") == ["./student"], "the check before submitting"
    check = {Requirement(line).name.lower(): next(iter(Requirement(line).specifier)).version
             for line in STUDENT["dependencies"]}
    assert {name: pip_pins()[name] for name in check} == check, "pin the check's needs as requirements.txt does"
    assert {"nbformat", "nbclient", "ipykernel"} <= set(check)
    assert not {"nbgrader", SELF} & (set(student) | set(check) | {STUDENT["name"]})
    assert "jupyterlab" in student
    installed = set()
    for name in [*student, *check]:
        requirements_of(name, installed)
    providers = importlib.metadata.packages_distributions()
    for module in lab_imports():
        top = module.split(".")[0]
        if top in sys.stdlib_module_names:
            continue
        names = {name.lower().replace("_", "-") for name in providers.get(top, ())}
        assert names & installed, f"the notebooks import {module}, which requirements-student.txt does not install"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_wheel_holds_the_grader_and_none_of_the_course(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = next(archive.read(n).decode() for n in names if n.endswith("entry_points.txt"))
    assert "autograder = autograder.__main__:run" in entry_points
    for needed in ("autograder/reports/templates/class_report.html", "autograder/gradescope/setup.sh",
                   "autograder/gradescope/run_autograder", "autograder/isolation/worker.py", "course/labs.py", "build_student.py",
                   *(f"autograder/labs/{lab.name}/fingerprints.json" for lab in LABS),
                   *(f"autodiff_check/labs/{lab.name}.json" for lab in LABS), "autodiff_check/__main__.py",
                   *(f"autograder/labs/{lab.name}/cases.py" for lab in LABS)):
        assert needed in names, f"the wheel lacks {needed}"
    assert not [n for n in names if re.match(r"(source|release|data|tests|bench|submitted)/", n)]


def test_the_students_wheel_holds_the_check_and_the_released_cells_and_nothing_of_the_grader(tmp_path):
    with zipfile.ZipFile(build_wheel(tmp_path, ROOT / "student")) as archive:
        names = archive.namelist()
    for needed in ("autodiff_check/__main__.py", "autodiff_check/check.py",
                   *(f"autodiff_check/labs/{lab.name}.json" for lab in LABS)):
        assert needed in names, f"the student's wheel lacks {needed}"
    assert not [name for name in names if name.startswith(("autograder/", "course/", "build_student"))]


# Installing and grading is the same for every lab: the first lab's notebooks are graded.
FIRST = LABS[0]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("installed")
    return installed_environment(folder), course_copy(folder / "course")


def grade(bin_folder, *args, cwd):
    return subprocess.run([str(bin_folder / "autograder"), "grade", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=1800, env=clean_environment())


def scores(result):
    return {test["name"]: test["score"] for test in result["tests"]}


@pytest.mark.slow
def test_the_installed_command_grades_the_course_in_the_current_folder_or_given(installed, solved_dir, tmp_path):
    bin_folder, course = installed
    notebook = lab_notebook(solved_dir, FIRST)
    imported = subprocess.run([str(bin_folder / "python"), "-c", "import autograder; print(autograder.__file__)"],
                              cwd=tmp_path, capture_output=True, text=True, env=clean_environment(), check=True)
    assert str(bin_folder.parent) in imported.stdout, "the grader must come from the installed environment"
    here = grade(bin_folder, notebook, "--out", tmp_path / "here", cwd=course)
    given = grade(bin_folder, notebook, "--out", tmp_path / "given", "--course", course, cwd=tmp_path)
    for run in (here, given):
        assert run.returncode == 0, run.stdout + run.stderr
    (first,), (second,) = results_in(tmp_path / "here").values(), results_in(tmp_path / "given").values()
    assert first["score"] == second["score"] == sum(a.points for a in FIRST.activities.values())
    assert first["extra_data"]["lab_version"] == second["extra_data"]["lab_version"]
    # a Dask worker that installed the wheel and a client in the checkout compare these
    assert first["extra_data"]["grader_version"] == grader_version()
    nowhere = grade(bin_folder, notebook, "--out", tmp_path / "nowhere", cwd=tmp_path)
    assert nowhere.returncode != 0 and "is not a course folder" in nowhere.stderr
    assert "Traceback" not in nowhere.stderr and not (tmp_path / "nowhere").exists()


@pytest.mark.slow
def test_submissions_cannot_read_the_installed_grader_or_the_course(installed, release_dir, solved_dir, tmp_path):
    """An answer that is right only when it found the lab's cases or reference solution: in the
    sandbox it finds neither, though the grader's packages lie in the environment it runs in;
    unsandboxed (the control, as root) the same notebooks do find them."""
    bin_folder, course = installed
    chosen = {"read-hidden-checks", "read-instructor-source"}
    batch = tmp_path / "batch"
    batch.mkdir()
    made = write_corpus(FIRST, batch, read(lab_notebook(solved_dir, FIRST)), read(lab_notebook(release_dir, FIRST)),
                        {**new_context(batch, tmp_path / "out"), "root": str(course)}, chosen)
    assert set(made) == chosen
    points = {activity: spec.points for activity, spec in FIRST.activities.items()}
    for sandbox, stolen in (("bwrap", False), ("none", True)):
        out = tmp_path / f"out-{sandbox}"
        run = grade(bin_folder, batch, "--out", out, "--sandbox", sandbox, cwd=course)
        assert run.returncode == 0, run.stdout + run.stderr
        for name, result in results_in(out).items():
            attack: Attack = made[name]
            want = {activity: points[activity] if stolen or activity not in attack.zero else 0 for activity in points}
            assert scores(result) == want, (sandbox, name, json.dumps(result["tests"])[:2000])


@pytest.mark.slow
def test_a_grading_node_without_nbgrader_grades_and_writes_no_gradebook(solved_dir, tmp_path):
    """The `grade` extra has no nbgrader: the command grades all the same, says that no gradebook
    is written, and refuses --db in one line."""
    without = "import sys\nsys.modules['nbgrader'] = sys.modules['sqlalchemy'] = None\n" \
              "from autograder.__main__ import main\nsys.exit(main(sys.argv[1:]))\n"
    notebook = lab_notebook(solved_dir, FIRST)
    run = subprocess.run([sys.executable, "-c", without, "grade", str(notebook), "--out", str(tmp_path / "out")],
                         cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "nbgrader is not installed here, so no gradebook is written" in run.stderr
    (result,) = results_in(tmp_path / "out").values()
    assert result["score"] == sum(a.points for a in FIRST.activities.values())
    assert not (tmp_path / "out" / "gradebook.db").exists() and not (tmp_path / "out" / "autograded").exists()
    refused = subprocess.run([sys.executable, "-c", without, "grade", str(notebook), "--out", str(tmp_path / "db"),
                              "--db", f"sqlite:///{tmp_path / 'gradebook.db'}"], cwd=ROOT, capture_output=True,
                             text=True, timeout=1800)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().splitlines()[-1].startswith("autograder: --db needs nbgrader")
