"""Reading submissions: broken files get a clear status, labs are recognised by content."""
import json

import nbformat
import pytest

from autograder.labs import graded_labs
from autograder.submission import SubmissionError, identify, load, program, student_name
from conftest import LAB, read
from submissions import answer_cell, save, with_answer


def load_error(path):
    with pytest.raises(SubmissionError) as failure:
        load(path)
    return failure.value


@pytest.mark.parametrize("content, kind, words", [
    (b"", "invalid_notebook", "empty"),
    (b"   \n", "invalid_notebook", "empty"),
    (b"{\"cells\": [", "invalid_notebook", "not JSON"),
    (b"\xff\xfe\x00garbage", "invalid_notebook", "not JSON"),
    (b"[1, 2, 3]", "invalid_notebook", "no nbformat"),
    (b"{\"nbformat\": 4, \"cells\": 7}", "invalid_notebook", "malformed"),
])
def test_broken_files_get_a_status_and_a_reason(tmp_path, content, kind, words):
    path = tmp_path / "x.ipynb"
    path.write_bytes(content)
    error = load_error(path)
    assert error.kind == kind and words in str(error)


def test_missing_file(tmp_path):
    assert load_error(tmp_path / "nope.ipynb").kind == "unreadable"


def test_nbformat_3_is_upgraded(tmp_path, solved_dir):
    notebook = read(solved_dir / LAB / f"{LAB}.ipynb")
    old = nbformat.v3.convert.downgrade(nbformat.from_dict(json.loads(nbformat.writes(notebook))))
    path = tmp_path / "old.ipynb"
    path.write_text(json.dumps(old))
    upgraded = load(path)
    assert upgraded.nbformat == 4
    assert identify(upgraded, list(graded_labs().values())).name == LAB


def test_lab_is_recognised_without_metadata(tmp_path, solved_dir):
    notebook = read(solved_dir / LAB / f"{LAB}.ipynb")
    notebook.metadata = {}
    for cell in notebook.cells:
        cell.metadata = {}
    assert identify(notebook, list(graded_labs().values())).name == LAB


def test_notebook_of_no_lab_is_refused():
    stranger = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('hello')")])
    stranger.metadata["course"] = {"lab": "pt99_other"}
    with pytest.raises(SubmissionError) as failure:
        identify(stranger, list(graded_labs().values()))
    assert failure.value.kind == "unknown_lab" and LAB in str(failure.value)


def test_program_runs_given_code_from_the_lab_not_the_submission(lab, solved_dir):
    notebook = read(solved_dir / LAB / f"{LAB}.ipynb")
    tensor_cell = next(cell for cell in notebook.cells if "class Tensor:" in cell.source)
    original = tensor_cell.source
    tensor_cell.source = original.replace("class Tensor:", "class Tensor:  # edited")
    steps = program(lab, notebook)
    assert original in [step.source for step in steps if not step.student]
    edited = [i for i, step in enumerate(steps) if step.student and "# edited" in step.source]
    assert len(edited) == 1, "an edited given cell runs as the student's own code"
    assert steps[edited[0] - 1].source == original, "... right after the original"


def test_program_leaves_out_checks_and_demos(lab, solved_dir):
    steps = program(lab, read(solved_dir / LAB / f"{LAB}.ipynb"))
    text = "\n".join(step.source for step in steps)
    assert "check_sum_to_shape()" not in text and "train_side_by_side()" not in text
    assert "def classifier_step(" in text


def test_answers_follow_the_student_order(lab, solved_dir):
    notebook = read(solved_dir / LAB / f"{LAB}.ipynb")
    changed = with_answer(notebook, "1b", answer_cell(notebook, "1b").source + "\nMARKER = 1\n")
    steps = program(lab, changed)
    marker = next(i for i, step in enumerate(steps) if "MARKER" in step.source)
    tensor = next(i for i, step in enumerate(steps) if "class Tensor:" in step.source)
    assert marker > tensor


@pytest.mark.parametrize("parts, name", [
    (("course", "submitted", "alice", LAB, f"{LAB}.ipynb"), "alice"),
    (("somewhere", "bob_pt03.ipynb"), "bob_pt03"),
])
def test_student_names(parts, name, tmp_path):
    assert student_name(tmp_path.joinpath(*parts)) == name


def test_loading_never_writes_the_file(tmp_path, solved_dir):
    path = save(read(solved_dir / LAB / f"{LAB}.ipynb"), tmp_path, "s")
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    load(path)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
