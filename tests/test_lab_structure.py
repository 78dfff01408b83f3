"""The instructor notebook follows the tag vocabulary and its two files agree."""
import re

import jupytext
import nbformat
import pytest

from conftest import ROOT
from course.cells import LabError
from course.labs import Lab

ACTIVITIES = ["1a", "1b", "1c", "2", "3", "A", "B", "C"]


def test_every_activity_has_stub_reference_and_check(lab):
    assert list(lab.activities) == ACTIVITIES
    for activity in lab.activities.values():
        assert activity.stub.role == "stub" and activity.reference.role == "reference"
        assert activity.checks and all(check.activity == activity.id for check in activity.checks)


def test_each_reference_directly_follows_its_stub(lab):
    for activity in lab.activities.values():
        assert activity.reference.index == activity.stub.index + 1


def test_stubs_raise_not_implemented_naming_activity_and_function(lab):
    for activity in lab.activities.values():
        namespace = {}
        exec(activity.stub.source, namespace)
        for function in activity.functions:
            arguments = [None] * namespace[function].__code__.co_argcount
            with pytest.raises(NotImplementedError, match=f"^Complete Activity {activity.id}: {function}$"):
                namespace[function](*arguments)


def test_optional_activities_are_the_lettered_ones(lab):
    assert [a.id for a in lab.activities.values() if a.optional] == ["A", "B", "C"]


def test_points_are_shown_in_the_activity_headings(lab):
    text = "\n".join(c.source for c in lab.cells if c.cell_type == "markdown")
    for activity in lab.activities.values():
        unit = "bonus point" if activity.optional else "point"
        assert re.search(rf"{activity.id} .*\({activity.points} {unit}s?\)", text)


def test_py_and_ipynb_agree(lab):
    text = jupytext.read(lab.path)
    paired = nbformat.read(lab.path.with_suffix(".ipynb"), as_version=4)
    assert [(c.cell_type, c.source) for c in text.cells] == [(c.cell_type, c.source) for c in paired.cells], \
        "the .ipynb is out of date: run `make instructor`"
    roles = ("tags", "activity", "points", "requires")
    assert [{k: c.metadata.get(k) for k in roles} for c in text.cells] == \
        [{k: c.metadata.get(k) for k in roles} for c in paired.cells]


def test_paired_ipynb_is_executed_without_errors(lab):
    paired = nbformat.read(lab.path.with_suffix(".ipynb"), as_version=4)
    code = [c for c in paired.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]


BROKEN = {
    "a stub without its reference": ('# %% tags=["reference"] activity="1b"', "# %%"),
    "a check without points": ('# %% tags=["check"] activity="1c" points=2', '# %% tags=["check"] activity="1c"'),
    "a stub with the wrong message": ('"Complete Activity 2: backward"', '"Complete Activity 3: backward"'),
    "a heading with the wrong points": ("(4 points)", "(5 points)"),
}


@pytest.mark.parametrize("mistake", BROKEN)
def test_broken_vocabulary_is_refused_with_the_cell_named(tmp_path, mistake):
    old, new = BROKEN[mistake]
    text = (ROOT / "source/pt03_autodiff/pt03_autodiff.py").read_text()
    assert old in text
    path = tmp_path / "pt03_autodiff" / "pt03_autodiff.py"
    path.parent.mkdir()
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(LabError, match=r"cell \d+|heading"):
        Lab(path)
