"""Every lab's instructor notebook follows the tag vocabulary and its two files agree."""
import copy
import os
import re
import subprocess
import sys

import jupytext
import nbformat
import pytest

from build_student import main as build_main
from course.cells import LabError, cell_lines
from course.labs import Lab, read_text_notebook
from tests.helpers import LABS, ROOT


def test_every_activity_has_stub_reference_and_check(lab):
    assert lab.activities, f"{lab.name} has no activity"
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
    for activity in lab.activities.values():
        assert activity.optional == bool(re.fullmatch(r"[A-Z]", activity.id)), activity.id


def test_points_are_shown_in_the_activity_headings(lab):
    text = "\n".join(c.source for c in lab.cells if c.cell_type == "markdown")
    for activity in lab.activities.values():
        unit = "bonus point" if activity.optional else "point"
        assert re.search(rf"{activity.id} .*\({activity.points} {unit}s?\)", text)


def test_py_and_ipynb_agree(lab):
    text = jupytext.read(lab.path)
    paired = nbformat.read(lab.path.with_suffix(".ipynb"), as_version=4)
    assert lab.twin_is_current(), f"{lab.path.with_suffix('.ipynb')} is out of date: run `make instructor LAB={lab.name}`"
    roles = ("tags", "activity", "points", "requires")
    assert [{k: c.metadata.get(k) for k in roles} for c in text.cells] == \
        [{k: c.metadata.get(k) for k in roles} for c in paired.cells]


def test_paired_ipynb_is_executed_without_errors(lab):
    paired = nbformat.read(lab.path.with_suffix(".ipynb"), as_version=4)
    code = [c for c in paired.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]


# Realistic slips, made in each lab's own first activity; the lab must be refused, naming the cell.
def drop_reference_tag(notebook, activity):
    cell = notebook.cells[activity.reference.index]
    cell.metadata = {}
    return r"cell \d+"


def drop_check_points(notebook, activity):
    del notebook.cells[activity.checks[0].index].metadata["points"]
    return r"cell \d+ .*points"


def misname_stub_message(notebook, activity):
    cell = notebook.cells[activity.stub.index]
    cell.source = cell.source.replace(f"Complete Activity {activity.id}:", "Complete Activity 99:")
    return r"cell \d+ .*must raise NotImplementedError"


def change_heading_points(notebook, activity):
    unit = "bonus point" if activity.optional else "point"
    pattern = re.compile(rf"\({activity.points} {unit}s?\)")
    heading = next(c for c in notebook.cells[:activity.stub.index][::-1]
                   if c.cell_type == "markdown" and pattern.search(c.source))
    heading.source = pattern.sub(f"({activity.points + 1} {unit}s)", heading.source)
    return rf"heading .*{activity.id}"


BROKEN = [drop_reference_tag, drop_check_points, misname_stub_message, change_heading_points]


@pytest.mark.parametrize("slip", BROKEN, ids=[slip.__name__ for slip in BROKEN])
def test_broken_vocabulary_is_refused_with_the_cell_named(tmp_path, lab, slip):
    notebook = copy.deepcopy(jupytext.read(lab.path))
    message = slip(notebook, next(iter(lab.activities.values())))
    path = tmp_path / lab.name / f"{lab.name}.py"
    path.parent.mkdir()
    jupytext.write(notebook, path, fmt="py:percent")
    with pytest.raises(LabError, match=message):
        Lab(path)


# What an instructor sees when a lab is broken: one line from each command, naming the .py and
# the line of the cell's `# %%`, its number counted from 1.
def lab_copy(tmp_path, lab, notebook, twin=None):
    """A course folder in `tmp_path` holding `lab` as `notebook` (and `twin` as its .ipynb)."""
    path = tmp_path / "source" / lab.name / f"{lab.name}.py"
    path.parent.mkdir(parents=True)
    jupytext.write(notebook, path, fmt="py:percent")
    if twin is not None:
        nbformat.write(twin, path.with_suffix(".ipynb"))
    for name in lab.data_files:
        (tmp_path / "data").mkdir(exist_ok=True)
        (tmp_path / "data" / name).write_bytes((ROOT / "data" / name).read_bytes())
    return path


def test_a_lab_read_again_comes_from_its_parsed_copy_only_while_its_text_is_unchanged(tmp_path, lab):
    path = lab_copy(tmp_path, lab, jupytext.read(lab.path))
    first = read_text_notebook(path)
    [kept] = (tmp_path / "build" / "parsed").glob(f"{lab.name}-*.ipynb")
    content = lambda notebook: (notebook.metadata, [(c.cell_type, c.source, c.metadata) for c in notebook.cells])  # noqa: E731
    assert content(first) == content(jupytext.read(path))  # jupytext draws new cell ids on each read
    marked = nbformat.from_dict(copy.deepcopy(first))
    marked.metadata["seen"] = "from the parsed copy"
    kept.write_text(nbformat.writes(marked))
    assert read_text_notebook(path).metadata["seen"] == "from the parsed copy"
    path.write_text(path.read_text() + "\n# %%\nchanged = True\n")
    again = read_text_notebook(path)
    assert "seen" not in again.metadata and again.cells[-1].source == "changed = True"
    [renewed] = (tmp_path / "build" / "parsed").glob(f"{lab.name}-*.ipynb")
    assert renewed != kept, "the copy of the old text is left behind"
    renewed.write_text(renewed.read_text()[:1000])  # a copy cut short is read from the text again
    assert content(read_text_notebook(path)) == content(again)


def test_a_course_folder_that_cannot_be_written_is_read_from_its_text(tmp_path, lab):
    path = lab_copy(tmp_path, lab, jupytext.read(lab.path))
    (tmp_path / "build").write_text("a file where the folder would go")
    assert Lab(path).activities.keys() == lab.activities.keys()


def instructor_command(course):
    return subprocess.run([sys.executable, "-m", "authoring.instructor"], cwd=course, capture_output=True, text=True,
                          timeout=900, env={**os.environ, "AUTOGRADER_COURSE": str(course)})


def test_make_instructor_names_the_line_of_a_broken_cell(tmp_path, lab):
    notebook = copy.deepcopy(jupytext.read(lab.path))
    activity = next(iter(lab.activities.values()))
    drop_reference_tag(notebook, activity)
    path = lab_copy(tmp_path, lab, notebook)
    line = cell_lines(path.read_text())[activity.stub.index]
    run = instructor_command(tmp_path)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    (message,) = run.stderr.splitlines()
    assert message.startswith("authoring.instructor: ")
    assert f"source/{lab.name}/{lab.name}.py:{line}, cell {activity.stub.index + 1} (stub code" in message


@pytest.mark.slow
@pytest.mark.parametrize("lab", [LABS[0]], ids=[LABS[0].name], indirect=True)
def test_make_instructor_names_the_line_of_a_cell_that_raises(tmp_path, lab):
    notebook = copy.deepcopy(jupytext.read(lab.path))
    activity = next(iter(lab.activities.values()))
    notebook.cells[activity.reference.index].source += "\nraise ValueError('a slip in the reference')\n"
    path = lab_copy(tmp_path, lab, notebook)
    line = cell_lines(path.read_text())[activity.reference.index]
    run = instructor_command(tmp_path)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.splitlines()[-1] == (
        f"authoring.instructor: source/{lab.name}/{lab.name}.py:{line}, cell {activity.reference.index + 1} "
        f"({lab.cells[activity.reference.index].label.split(' (', 1)[1]} raised ValueError: a slip in the reference")


def test_a_release_built_beside_a_stale_executed_copy_is_built_with_a_warning(tmp_path, capsys, lab):
    twin = nbformat.read(lab.path.with_suffix(".ipynb"), as_version=4)
    twin.cells[0].source += "\nAn edit made in the .py since the last `make instructor`."
    lab_copy(tmp_path, lab, jupytext.read(lab.path), twin)
    assert build_main(["--source", str(tmp_path / "source"), "--release", str(tmp_path / "release")]) == 0
    assert f"run `make instructor LAB={lab.name}`" in capsys.readouterr().err
    assert (tmp_path / "release" / lab.name / f"{lab.name}.ipynb").is_file()
