"""A result records the grader's version and its lab's (autograder/grading/versions.py): a hash of
every file each is made of, named as the installed package names it, so that an edit anywhere
makes the results it touches stale, and a Dask worker's version equals its client's (the
installed package's version: tests/test_packaging.py)."""
from autograder.grading import versions
from autograder.labs import HERE as LABS
from course.folder import PACKAGES
from tests.helpers import LABS as COURSE_LABS


def named():
    return {path.relative_to(folder).as_posix() for folder, path in versions.grader_files()}


def test_the_grader_version_covers_every_subpackage_the_lab_model_and_the_students_package():
    names = named()
    modules = {path.relative_to(PACKAGES).as_posix() for path in (PACKAGES / "autograder").rglob("*.py")
               if not path.is_relative_to(LABS) or len(path.relative_to(LABS).parts) == 1}
    assert modules <= names, sorted(modules - names)
    assert {"autograder/reports/templates/class_report.html", "course/labs.py", "autodiff_check/check.py"} <= names
    # each lab's own knowledge is its lab's version, so editing one lab leaves the others' results current
    assert not any(name.startswith(f"autograder/labs/{lab.name}/") for name in names for lab in COURSE_LABS)
