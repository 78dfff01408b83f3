"""Every lab's Gradescope bundle: what it holds, that setup.sh installs the bundle's own package
with its `grade` extra and PyTorch's CPU build, that the bundle builds that package offline, and
that its run_autograder, run in a folder laid out as Gradescope's /autograder with the package
installed as setup.sh installs it, grades a solved, a blank and a wrong submission as `python -m
autograder grade` does; where bubblewrap cannot run, as in a container without namespaces, it
grades as root with the submission's code run as the user nobody, which finds neither the
reference solutions nor the hidden checks that the same code finds when run as root, and whose
workers cannot read each other's memory."""
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from functools import cache
from pathlib import Path

import nbformat
import pytest

from autograder.gradescope.bundle import bundle_bytes
from autograder.gradescope.run import not_graded, submitted_notebook
from autograder.isolation.sandbox import NOBODY, remove_tree
from autograder.records.report import title_text
from tests.adversarial.common import answer, indent, nth, reference, wrong_answer
from tests.adversarial.generic import READ_HIDDEN, READ_SOURCE, fill
from tests.helpers import LABS, ROOT, all_points, grade_command, lab_notebook, read, results_in
from tests.installed import clean_environment, install
from tests.submissions import save, variants

pytestmark = pytest.mark.slow  # each bundle is checked by the grader's lab check, which computes PyTorch's answers
SCRIPTS = ("setup.sh", "run_autograder")


@pytest.fixture(scope="module")
def bundle(lab, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"gradescope-{lab.name}") / "autograder.zip"
    run = subprocess.run([sys.executable, "-m", "autograder", "gradescope", lab.name, "--out", str(out)], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    return out


@pytest.fixture(scope="module")
def wheel(bundle, tmp_path_factory):
    """The package setup.sh installs, built from the unpacked bundle alone, offline."""
    folder = tmp_path_factory.mktemp("bundle-wheel")
    unpack(bundle, folder / "source")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(folder), str(folder / "source")],
                   check=True, capture_output=True, timeout=600)
    (built,) = folder.glob("autodiff_course-*.whl")
    return built


def names(bundle):
    with zipfile.ZipFile(bundle) as archive:
        return {entry.filename: entry.external_attr >> 16 for entry in archive.infolist()}


def member(bundle, name):
    with zipfile.ZipFile(bundle) as archive:
        return archive.read(name)


def unpack(bundle, folder):
    """Unpack as Gradescope does, modes kept."""
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(folder)
        for entry in archive.infolist():
            (folder / entry.filename).chmod(entry.external_attr >> 16 & 0o777)


def test_the_scripts_are_at_the_root_and_executable(bundle):
    modes = names(bundle)
    for script in SCRIPTS:
        assert modes[script] & 0o111 == 0o111, f"{script} must be executable, as Gradescope runs it"


def test_the_bundle_carries_the_grader_and_this_lab_alone(bundle, lab):
    held = set(names(bundle))
    needed = {"pyproject.toml", "build_student.py", "autograder/grading/grade.py", "autograder/isolation/worker.py",
              "autograder/gradescope/run.py", "autograder/reports/templates/class_report.html", "course/labs.py",
              "autograder/labs/policy.py", "autograder/isolation/unavailable/__init__.py", "student/autodiff_check/policy.py",
              "student/autodiff_check/released.py", f"student/autodiff_check/labs/{lab.name}.json",
              f"source/{lab.name}/{lab.name}.py", f"release/{lab.name}/{lab.name}.ipynb",
              *(f"autograder/labs/{lab.name}/{part}.py" for part in ("cases", "probes", "mistakes")),
              f"autograder/labs/{lab.name}/fingerprints.json",
              *(f"data/{name}" for name in lab.data_files)}
    assert needed <= held, sorted(needed - held)
    others = [other.name for other in LABS if other is not lab]
    assert not [name for name in held if any(f"/{other}/" in f"/{name}" for other in others)]
    assert not [name for name in held if "__pycache__" in name or name.startswith(("tests/", "submitted/"))]
    assert "requirements.txt" not in held, "setup.sh installs the grade extra, not the whole pinned environment"


def test_setup_installs_the_grade_extra_with_pytorchs_cpu_build(bundle):
    setup = member(bundle, "setup.sh").decode()
    checked = subprocess.run(["bash", "-n"], input=setup, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr
    installs = [line.split() for line in setup.splitlines() if " install " in line and not line.startswith("#")]
    uv, grader = [words for words in installs if "pip" in words]  # uv itself, then the grader
    assert uv[-1] == "uv==0.13.9"
    assert grader[-1] == '".[grade]"' and grader[grader.index("--torch-backend") + 1] == "cpu", grader
    assert "requirements.txt" not in setup


def test_the_same_sources_give_the_same_bundle(bundle, lab):
    assert bundle_bytes(lab) == bundle.read_bytes()


def test_the_bundle_builds_the_grader_offline(wheel, lab, tmp_path):
    with zipfile.ZipFile(wheel) as archive:
        held = archive.namelist()
        points = next(archive.read(name).decode() for name in held if name.endswith(".dist-info/entry_points.txt"))
    assert "autograder = autograder.__main__:run" in points
    assert {name.split("/")[2] for name in held if name.startswith("autograder/labs/") and name.count("/") > 2} \
        == {lab.name}
    assert {"autograder/isolation/worker.py", "autograder/reports/templates/class_report.html", "course/labs.py",
            "build_student.py", "autodiff_check/policy.py", f"autodiff_check/labs/{lab.name}.json"} <= set(held)
    command = environment(tmp_path / "venv", wheel) / "autograder"
    shown = subprocess.run([str(command), "grade", "--help"], capture_output=True, text=True, env=clean_environment(),
                           timeout=300)
    assert shown.returncode == 0 and "usage: autograder grade" in shown.stdout, shown.stdout + shown.stderr


@cache
def nobody_python():
    """A Python of this one's version that the user nobody can start, like the one setup.sh installs
    with apt on Gradescope (this test's own may lie below /root, which nobody cannot enter); None
    where there is none."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/local/bin:/usr/bin")
    for candidate in filter(None, (os.path.realpath(sys.executable), system)):
        try:
            subprocess.run([candidate, "-c", ""], user=NOBODY, group=NOBODY, extra_groups=[], check=True, timeout=60)
        except (OSError, subprocess.CalledProcessError):  # it cannot even be executed, or cannot start
            continue
        return candidate
    return None


def environment(venv, wheel):
    """What setup.sh builds, less the downloads: a venv with the bundle's package installed; its
    dependencies come from this test's environment through a .pth file. Returns its bin/."""
    subprocess.run([nobody_python() or os.path.realpath(sys.executable), "-m", "venv", "--without-pip", str(venv)],
                   check=True, timeout=300)
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    Path(purelib, "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    install(wheel, Path(venv))
    return venv / "bin"


def gradescope_folder(bundle, wheel, folder, uploads=()):
    """`folder` laid out as Gradescope lays out /autograder: the bundle unpacked in source/ (modes
    kept), run_autograder copied beside it, the venv setup.sh builds (`environment`), `uploads`
    ((name, file) pairs) in submission/, an empty results/."""
    unpack(bundle, folder / "source")
    shutil.copy2(folder / "source" / "run_autograder", folder / "run_autograder")
    environment(folder / "venv", wheel)
    (folder / "submission").mkdir()
    (folder / "results").mkdir()
    for name, path in uploads:
        shutil.copy2(path, folder / "submission" / name)
    return folder


def start_autograder(folder, **environment_variables):
    """Gradescope's step for one submission, started (its log in the folder); see `finish`."""
    with open(folder / "run_autograder.log", "w") as log:
        return subprocess.Popen([str(folder / "run_autograder")], cwd=folder, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT,
                                env=clean_environment(AUTOGRADER_BASE=str(folder), **environment_variables))


def finish(process, folder):
    """Wait for the run started in `folder`; its results.json."""
    try:
        assert process.wait(timeout=1800) == 0, (folder / "run_autograder.log").read_text()
    finally:
        process.kill()  # only if the wait failed: the run has ended otherwise
    return json.loads((folder / "results" / "results.json").read_text())


def by_activity(results):
    return {test["extra_data"]["activity"]: test for test in results["tests"]}


# Running the bundle is the same code for every lab, and each run costs a PyTorch start-up:
# the runs are made for the first lab; every lab's bundle is checked for what it holds above.
FIRST_LAB_ONLY = pytest.mark.parametrize("lab", [LABS[0]], ids=[LABS[0].name], indirect=True, scope="session")


@FIRST_LAB_ONLY
def test_without_a_notebook_it_says_what_to_upload(bundle, wheel, lab, tmp_path):
    folder = gradescope_folder(bundle, wheel, tmp_path / "autograder")
    (folder / "submission" / "answers.txt").write_text("my answers")
    results = finish(start_autograder(folder), folder)
    assert results["score"] == 0 and results["tests"] == []
    assert f"upload your notebook, {lab.name}.ipynb" in results["output"] and "answers.txt" in results["output"]


@FIRST_LAB_ONLY
def test_a_notebook_uploaded_twice_is_graded_once_and_the_copy_named(bundle, wheel, lab, release_dir, solved_dir,
                                                                      tmp_path):
    """Attack: the notebook in a folder of the upload and again in a folder below it was refused as
    'Nothing to grade'. The upper one (here the blank) is graded, and the feedback names the other.
    The folder is named as nbgrader's layout's root, which the upload's folders never make it."""
    folder = gradescope_folder(bundle, wheel, tmp_path / "autograder")
    (folder / "submission" / "submitted" / "copy").mkdir(parents=True)
    shutil.copy2(lab_notebook(release_dir, lab), folder / "submission" / "submitted" / f"{lab.name}.ipynb")
    shutil.copy2(lab_notebook(solved_dir, lab), folder / "submission" / "submitted" / "copy" / f"{lab.name}.ipynb")
    results = finish(start_autograder(folder), folder)
    assert results["extra_data"]["status"] == "graded" and results["score"] == 0, results
    assert results["output"].startswith(f"{lab.name}.ipynb was uploaded more than once: submitted/{lab.name}.ipynb, "
                                        f"the one nearest the top of the upload, was graded, and not "
                                        f"submitted/copy/{lab.name}.ipynb.\n")


@FIRST_LAB_ONLY
def test_run_autograder_grades_as_the_grade_command(bundle, wheel, lab, release_dir, solved_dir, tmp_path):
    """Each submission in a Gradescope folder of its own, uploaded as <lab>.ipynb as a student
    would; the same three notebooks graded by `python -m autograder grade` in one batch. The two
    differ in what Gradescope shows alone: each test is named with its activity's title."""
    made = dict(variants(lab, read(lab_notebook(solved_dir, lab)), read(lab_notebook(release_dir, lab))))
    wrong = next(name for name in made if name.startswith("wrong-")).removeprefix("wrong-")  # its activity
    chosen = {"solved": made["solved"], "blank": made["blank"], "wrong": made[f"wrong-{wrong}"]}
    batch, out = tmp_path / "batch", tmp_path / "graded"
    batch.mkdir()
    folders = {name: gradescope_folder(bundle, wheel, tmp_path / name,
                                       [(f"{lab.name}.ipynb", save(notebook, batch, name))])
               for name, notebook in chosen.items()}
    # Gradescope grades each submission in a container of its own: the three runs and the batch
    # run side by side, as most of each run is starting Python and importing PyTorch.
    started = {name: start_autograder(folder) for name, folder in folders.items()}
    try:
        run = subprocess.run(grade_command(batch, "--out", out, "--jobs", "2"), cwd=ROOT, capture_output=True,
                             text=True, timeout=1800)
    finally:
        on_gradescope = {name: finish(process, folders[name]) for name, process in started.items()}
    assert run.returncode == 0, run.stdout + run.stderr
    graded = results_in(out)
    for name, results in on_gradescope.items():
        ours = graded[name]
        assert results["stdout_visibility"] == "hidden"
        for key in ("score", "output", "visibility"):
            assert results[key] == ours[key], (name, key)
        restored = [{**{key: value for key, value in test.items() if key != "extra_data"},
                     "name": test["extra_data"]["activity"]} for test in results["tests"]]
        assert restored == ours["tests"], name
        assert results["extra_data"]["status"] == ours["status"] == "graded"
        assert results["extra_data"]["max_score"] == ours["max_score"]
        for key in ("required", "bonus", "summary", "lab_version", "grader_version", "diagnoses"):
            assert results["extra_data"][key] == ours["extra_data"][key], (name, key)
        assert results["extra_data"]["protection"] == "bubblewrap sandbox"
        assert "protection: bubblewrap sandbox" in (folders[name] / "run_autograder.log").read_text()
    assert {test["extra_data"]["activity"]: test["name"] for test in on_gradescope["solved"]["tests"]} == \
        {activity.id: f"{activity.id} · {title_text(activity.title)}" for activity in lab.activities.values()}
    assert on_gradescope["solved"]["score"] == all_points(lab) and on_gradescope["blank"]["score"] == 0
    assert {activity for activity, test in by_activity(on_gradescope["wrong"]).items()
            if test["status"] == "failed"} == {wrong}


@pytest.fixture
def open_folder():
    """A folder every user may pass through, as /autograder is: the user nobody reaches the venv's
    Python by way of it (pytest's own temporary folders are closed to other users)."""
    folder = Path(tempfile.mkdtemp(prefix="gradescope-"))
    folder.chmod(0o755)
    yield folder
    remove_tree(folder)


# Two unprivileged workers and a plain process of the user nobody: what the first worker learns of
# itself and of the memory of the two others, printed as JSON.
PEEKS = """
import json, subprocess, sys, tempfile
from pathlib import Path
from autograder.isolation.sandbox import NOBODY, Limits, Protection, Worker
from autograder.isolation.worker import decode, encode
PEEK = '''
import os
def probe(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            handle.read()
        return "read"
    except OSError as error:
        return type(error).__name__
def who():
    return [os.getuid(), os.getgid(), os.getgroups()]
'''
plain = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], user=NOBODY, group=NOBODY,
                         extra_groups=[])
first, second = (Worker(Path(tempfile.mkdtemp()), Limits(), Protection.USER) for _ in range(2))
ask = lambda name, **args: decode(first.ask({"op": "probe", "source": PEEK, "probe": name,
                                             "args": {key: encode(value) for key, value in args.items()}}, 60)["value"])
print(json.dumps({"who": ask("who"), "worker": ask("probe", pid=second.process.pid),
                  "plain": ask("probe", pid=plain.pid)}))
plain.kill()
"""


@FIRST_LAB_ONLY
def test_unprivileged_workers_cannot_read_each_others_memory(wheel, lab, open_folder):
    """A worker run as nobody has no group but nobody's and is undumpable: another worker, the
    reference worker of a re-grade say, cannot read its memory, while it can read that of a plain
    process of the same user (the control)."""
    if os.geteuid() != 0 or nobody_python() is None:
        pytest.fail("needs root, and a Python of this version that the user nobody can start (Debian's python3.11, "
                    "or the same version under /usr/local/bin)")
    python = environment(open_folder / "venv", wheel) / "python"
    run = subprocess.run([str(python), "-I", "-c", PEEKS], capture_output=True, text=True, env=clean_environment(),
                         timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout) == {"who": [NOBODY, NOBODY, []], "worker": "PermissionError", "plain": "read"}


@FIRST_LAB_ONLY
def test_without_bubblewrap_the_submission_runs_as_nobody_and_reads_nothing(bundle, wheel, lab, solved_dir,
                                                                            open_folder, tmp_path):
    """Where bubblewrap cannot make a sandbox (a `bwrap` that fails as one does in a container
    without namespaces), Gradescope's run, as root, grades the submission's code as the user
    nobody: answers that are right only if they read the reference solution from the bundle or the
    hidden checks from the installed grader earn nothing, and every other activity its points.
    The control: the same notebook graded as root without a sandbox reads both."""
    if os.geteuid() != 0 or nobody_python() is None:
        pytest.fail("needs root, and a Python of this version that the user nobody can start (Debian's python3.11, "
                    "or the same version under /usr/local/bin)")
    third, fourth = nth(lab, 2), nth(lab, 3)
    folder = open_folder / "autograder"
    root = str(folder / "source")  # the course root on Gradescope: the unpacked bundle
    notebook = read(lab_notebook(solved_dir, lab))
    answer(notebook, fourth, fill(READ_SOURCE, root=root, lab=lab.name, activity=fourth,
                                  wrong=indent(wrong_answer(lab, fourth))))
    answer(notebook, third, fill(READ_HIDDEN, root=root, lab=lab.name, reference=indent(reference(lab, third)),
                                 wrong=indent(wrong_answer(lab, third))))
    upload = tmp_path / f"{lab.name}.ipynb"
    nbformat.write(notebook, upload)
    gradescope_folder(bundle, wheel, folder, [(upload.name, upload)])
    no_namespaces = tmp_path / "bin"
    no_namespaces.mkdir()
    (no_namespaces / "bwrap").write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\n"
                                         "exit 1\n")
    (no_namespaces / "bwrap").chmod(0o755)
    started = start_autograder(folder, PATH=f"{no_namespaces}{os.pathsep}{os.environ['PATH']}")
    control = subprocess.run([str(folder / "venv" / "bin" / "python"), "-I", "-m", "autograder", "grade", str(upload),
                              "--out", str(tmp_path / "control"), "--jobs", "1", "--no-gradebook", "--sandbox", "none"],
                             cwd=folder / "source", capture_output=True, text=True, env=clean_environment(),
                             timeout=1800)
    results = finish(started, folder)
    assert control.returncode == 0, control.stdout + control.stderr
    points = {activity: spec.points for activity, spec in lab.activities.items()}
    assert {name: test["score"] for name, test in by_activity(results).items()} == \
        {activity: 0 if activity in (third, fourth) else value for activity, value in points.items()}, results["tests"]
    (stolen,) = results_in(tmp_path / "control").values()
    assert {test["name"]: test["score"] for test in stolen["tests"]} == points, "the control must find both"
    assert results["extra_data"]["protection"] == "unprivileged user without a sandbox"
    assert "protection: unprivileged user without a sandbox" in (folder / "run_autograder.log").read_text()


def upload(folder, *paths):
    """A Gradescope submission folder holding a notebook at each of `paths`."""
    for path in paths:
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text("{}")
    return folder


@pytest.mark.parametrize("paths, graded, others", [
    (["sub/{lab}.ipynb", "{lab}.ipynb"], "{lab}.ipynb", ["sub/{lab}.ipynb"]),
    (["b/{lab}.ipynb", "a/{lab}.ipynb", "a/b/{lab}.ipynb"], "a/{lab}.ipynb", ["b/{lab}.ipynb", "a/b/{lab}.ipynb"]),
    (["{lab}.ipynb", "notes.ipynb", ".ipynb_checkpoints/{lab}-checkpoint.ipynb"], "{lab}.ipynb", []),
])
def test_the_notebook_uploaded_twice_is_graded_from_the_one_nearest_the_top(tmp_path, paths, graded, others):
    """Attack: an upload holding the notebook twice (at the top and in a folder) was refused as
    'Nothing to grade (uploaded: pt03_autodiff.ipynb, pt03_autodiff.ipynb)'. One is graded, by the
    stated rule, and the feedback names the others."""
    lab = LABS[0].name
    folder = upload(tmp_path, *(path.format(lab=lab) for path in paths))
    chosen, copies = submitted_notebook(folder, lab)
    assert (chosen, copies) == (folder / graded.format(lab=lab), [folder / other.format(lab=lab) for other in others])
    if copies:
        assert not_graded(chosen, copies, folder) == (
            f"{lab}.ipynb was uploaded more than once: {graded.format(lab=lab)}, the one nearest the top of the "
            f"upload, was graded, and not {', '.join(other.format(lab=lab) for other in others)}.")


@pytest.mark.parametrize("paths, graded", [(["mine.ipynb"], "mine.ipynb"), (["a.ipynb", "b.ipynb"], None), ([], None)])
def test_without_the_lab_s_name_only_a_single_notebook_is_graded(tmp_path, paths, graded):
    chosen, others = submitted_notebook(upload(tmp_path, *paths), LABS[0].name)
    assert (chosen, others) == ((tmp_path / graded) if graded else None, [])
