"""The versions a result records: of the grader and of a lab, hashes of their source files, so
that any edit counts, bumped or not. A Dask worker compares them with its client's, so a file is
named as it is in the package, the same in a checkout and in an installed wheel."""
import hashlib
from functools import cache
from pathlib import Path

import autodiff_check
from autograder.labs import HERE as LABS, course_labs
from course.folder import PACKAGES
from course.labs import ROOT


def _digest(files):
    """Of `files`' names relative to their folder ((folder, path) pairs) and bytes: equal wherever
    the course and the grader lie."""
    digest = hashlib.sha256()
    for name, data in sorted((path.relative_to(folder).as_posix(), path) for folder, path in files):
        digest.update(name.encode() + b"\0" + data.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def grader_files():
    """(folder, path) of every file of the grader but each lab's own knowledge (lab_version's): its
    modules in every subpackage and its templates, the lab model it reads notebooks with, and the
    student's package it builds on."""
    grader = [path for pattern in ("**/*.py", "**/*.html") for path in (PACKAGES / "autograder").glob(pattern)
              if not path.is_relative_to(LABS) or len(path.relative_to(LABS).parts) == 1]
    student = Path(autodiff_check.__file__).resolve().parent
    return [*((PACKAGES, path) for path in [*grader, *(PACKAGES / "course").glob("*.py")]),
            *((student.parent, path) for path in student.glob("*.py"))]


@cache
def grader_version():
    """Changes with any file of the grader, of the lab model or of the student's package."""
    return _digest(grader_files())


@cache
def lab_version(lab_name):
    """Changes with the lab's instructor notebook, grading knowledge (its fingerprints too) or data;
    None for no lab."""
    lab = course_labs().get(lab_name)
    if lab is None:
        return None
    data = [ROOT / "data" / name for name in lab.data_files if (ROOT / "data" / name).is_file()]
    knowledge = [path for pattern in ("*.py", "*.json") for path in (LABS / lab_name).rglob(pattern)]
    return _digest([*((ROOT, path) for path in (lab.path, *data)), *((PACKAGES, path) for path in knowledge)])
