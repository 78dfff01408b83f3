"""The grader installed as pip installs it on a grading node: built into a wheel from this
checkout and installed into a virtual environment of its own, so that its code is found only in
that environment's site-packages and never through the checkout. Its dependencies come from the
test environment through a .pth file: nothing is downloaded."""
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.helpers import ROOT

COURSE_PARTS = ("source", "data", "release", "course.toml")  # what a course folder holds (the secret apart)


def build_wheel(folder, project=ROOT):
    """The wheel of this checkout (or of its student/), built without fetching a build backend
    (setuptools is pinned)."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(folder), str(project)],
                   cwd=folder, check=True, capture_output=True, timeout=600)
    (wheel,) = Path(folder).glob("*.whl")
    return wheel


def installed_environment(folder):
    """A virtual environment in `folder` with the grader's wheel installed (`pip install`, no
    editable link to the checkout); returns its bin/ folder, which holds `python` and the
    `autograder` command."""
    folder = Path(folder)
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    purelib = Path(subprocess.run([str(venv / "bin" / "python"), "-c",
                                   "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                  check=True, capture_output=True, text=True, timeout=60).stdout.strip())
    # The dependencies: a path line of a .pth file adds that folder, whose own .pth files (an
    # editable install of the checkout among them) are not read.
    (purelib / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    install(build_wheel(folder), venv)
    return venv / "bin"


def install(wheel, venv):
    """`pip install` the `wheel` into `venv`, whose dependencies come through a .pth file. From the
    venv's folder and without the test run's PYTHONPATH: the venv's Python puts its working folder
    on sys.path, and seeing the checkout it finds the checkout's own autodiff_course.egg-info (left
    by a build there), takes the project for installed already, and installs nothing."""
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet",
                    "--disable-pip-version-check", "--no-deps", "--no-index", str(wheel)],
                   cwd=venv.parent, env=clean_environment(), check=True, capture_output=True, timeout=600)
    name, version = Path(wheel).name.split("-")[:2]
    if not list(venv.glob(f"lib/python*/site-packages/{name}-{version}.dist-info")):
        raise RuntimeError(f"pip left {Path(wheel).name} uninstalled in {venv}")


def course_copy(folder):
    """A course folder as an instructor keeps one apart from the grader's code: a copy of this
    repository's course parts, with none of its Python packages."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for part in COURSE_PARTS:
        source = ROOT / part
        if source.is_dir():
            subprocess.run(["cp", "-a", str(source), str(folder / part)], check=True)
        elif source.is_file():
            (folder / part).write_bytes(source.read_bytes())
    return folder


def clean_environment(**extra):
    """The environment of a process on a grading node: no PYTHONPATH, no virtual environment
    activated, nothing of the test run's own settings but PATH and HOME."""
    keep = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "AUTOGRADER_CHROMIUM") if key in os.environ}
    return {**keep, **extra}
