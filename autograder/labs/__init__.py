"""Each lab's grading knowledge lives in ``autograder/labs/<lab>/``: ``cases()``, ``DEPENDS``
and ``probes.py``. The grader finds it by the lab's name; adding a lab adds a folder here."""
import importlib
from functools import cache
from pathlib import Path

from course.labs import find_labs


@cache
def graded_labs():
    """The labs of source/ that have grading knowledge, by name."""
    return {lab.name: lab for lab in find_labs() if (Path(__file__).parent / lab.name / "probes.py").is_file()}


def knowledge(lab_name):
    return importlib.import_module(f"autograder.labs.{lab_name}")


def probes_source(lab_name):
    return (Path(__file__).parent / lab_name / "probes.py").read_text()
