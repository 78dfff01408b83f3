"""Where the course is: the folder holding source/ (the instructor notebooks), data/, release/,
course.toml and the course secret. The grader's own code may live elsewhere (installed with pip),
so the two are found apart. This module imports nothing heavy: the zygote's list of imports needs
the course folder before anything else starts."""
import os
from pathlib import Path

ENVIRONMENT = "AUTOGRADER_COURSE"  # set by --course DIR, and inherited by every process a run starts
PACKAGES = Path(__file__).resolve().parent.parent  # the folder holding the autograder and course packages


def is_course(folder):
    """A course folder has source/<lab>/<lab>.py for at least one lab."""
    source = Path(folder) / "source"
    return source.is_dir() and any(path.stem == path.parent.name for path in source.glob("*/*.py"))


def course_root():
    """$AUTOGRADER_COURSE when set; else the current directory when it is a course folder; else the
    checkout the grader runs from (an editable install, or `python -m` in the repository); else
    the current directory, whose missing source/ the commands then name."""
    given = os.environ.get(ENVIRONMENT)
    if given:
        return Path(given).resolve()
    here = Path.cwd()
    if is_course(here):
        return here
    return PACKAGES if is_course(PACKAGES) else here


def use_course(folder=None):
    """Make `folder` (default: the one course_root finds) the course of this process and of every
    process it starts, or exit naming what is missing; call it before anything imports course.labs."""
    folder = Path(folder).resolve() if folder is not None else course_root()
    if not is_course(folder):
        raise SystemExit(f"autograder: {folder} is not a course folder: it has no source/<lab>/<lab>.py. "
                         "Run the command in the course folder, or give it with --course DIR (or, for a process "
                         f"such as a Dask worker, in ${ENVIRONMENT}).")
    os.environ[ENVIRONMENT] = str(folder)
    return folder
