"""Reading submissions: broken files get a clear status, labs are recognised by content."""
import json

import nbformat
import pytest

from autograder.grading.roster import find_paths
from autograder.grading.submission import SubmissionError, identify, load, locked_sources, program, untouched
from autograder.labs import course_labs
from tests.helpers import LABS, lab_notebook, read
from tests.submissions import answer_cell, claiming, save, with_answer


def every_lab():
    return list(course_labs().values())


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


def test_nbformat_3_is_upgraded(tmp_path, solved_dir, lab):
    notebook = read(lab_notebook(solved_dir, lab))
    old = nbformat.v3.convert.downgrade(nbformat.from_dict(json.loads(nbformat.writes(notebook))))
    path = tmp_path / "old.ipynb"
    path.write_text(json.dumps(old))
    upgraded = load(path)
    assert upgraded.nbformat == 4
    assert identify(upgraded, every_lab()).name == lab.name


def test_lab_is_recognised_without_metadata(solved_dir, release_dir, lab):
    for folder in (solved_dir, release_dir):
        notebook = read(lab_notebook(folder, lab))
        notebook.metadata = {}
        for cell in notebook.cells:
            cell.metadata = {}
        assert identify(notebook, every_lab()).name == lab.name


def test_notebook_of_no_lab_is_refused():
    stranger = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('hello')")])
    stranger.metadata["course"] = {"lab": "pt99_other"}
    with pytest.raises(SubmissionError) as failure:
        identify(stranger, every_lab())
    assert failure.value.kind == "unknown_lab"
    assert all(lab.name in str(failure.value) for lab in every_lab())


def first_definition(lab):
    """The first given code cell that defines something: students may edit it."""
    return next(c for c in lab.cells if c.role == "given" and c.cell_type == "code" and not c.requires
                and ("def " in c.source or "class " in c.source))


def test_program_runs_given_code_from_the_lab_not_the_submission(lab, solved_dir):
    notebook = read(lab_notebook(solved_dir, lab))
    original = first_definition(lab).source
    edited_cell = next(cell for cell in notebook.cells if cell.source == original)
    edited_cell.source = original + "\n# edited by the student\n"
    steps = program(lab, notebook)
    assert original in [step.source for step in steps if not step.student]
    edited = [i for i, step in enumerate(steps) if step.student and "# edited" in step.source]
    assert len(edited) == 1, "an edited given cell runs as the student's own code"
    assert steps[edited[0] - 1].source == original, "... right after the original"


def test_program_leaves_out_checks_and_demos(lab, solved_dir):
    steps = {step.source for step in program(lab, read(lab_notebook(solved_dir, lab)))}
    for cell in lab.cells:
        if cell.role == "check" or cell.requires:
            assert cell.source not in steps, cell.label
    for activity in lab.activities.values():
        assert activity.reference.source in steps


def test_answers_follow_the_student_order(lab, solved_dir):
    notebook = read(lab_notebook(solved_dir, lab))
    last = list(lab.activities)[-1]
    changed = with_answer(notebook, last, answer_cell(notebook, last).source + "\nMARKER = 1\n")
    steps = program(lab, changed)
    marker = next(i for i, step in enumerate(steps) if "MARKER" in step.source)
    before = [c.source for c in lab.cells if c.role == "given" and c.cell_type == "code" and not c.requires
              and c.index < lab.activities[last].stub.index]
    assert all(steps.index(next(s for s in steps if s.source == source)) < marker for source in before)


def test_untouched_stubs_are_flagged_by_content_not_by_message(lab, solved_dir, release_dir):
    blank = read(lab_notebook(release_dir, lab))
    assert untouched(lab, blank) == set(lab.activities)
    assert untouched(lab, read(lab_notebook(solved_dir, lab))) == set()
    first = next(iter(lab.activities))
    reworded = with_answer(blank, first, answer_cell(blank, first).source + "\n# started\n")
    assert first not in untouched(lab, reworded)


@pytest.mark.parametrize("parts, name", [
    (("course", "submitted", "alice", "some_lab", "some_lab.ipynb"), "alice"),
    (("somewhere", "bob_pt03.ipynb"), "bob_pt03"),
])
def test_student_names(parts, name, tmp_path):
    path = tmp_path.joinpath(*parts)
    path.parent.mkdir(parents=True)
    path.write_text("{}")
    assert [found.student for found in find_paths([path], [])] == [name]


def test_loading_never_writes_the_file(tmp_path, solved_dir, lab):
    path = save(read(lab_notebook(solved_dir, lab)), tmp_path, "s")
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    load(path)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def deeply_nested(depth):
    """A notebook, valid JSON, whose metadata nests `depth` lists deep."""
    return ('{"nbformat": 4, "nbformat_minor": 5, "cells": [], "metadata": {"x": ' + "[" * depth + "]" * depth
            + "}}").encode()


@pytest.mark.parametrize("content", [
    pytest.param(b"[" * 100_000, id="100k-open-lists"),
    pytest.param(b'{"a": ' * 100_000, id="100k-open-objects"),
    pytest.param(b'{"nbformat": 4, "cells": ' + b"[" * 100_000, id="100k-lists-in-a-notebook"),
    pytest.param(deeply_nested(100_000), id="100k-closed-lists"),
    pytest.param(deeply_nested(900), id="just-within-json's-own-limit"),
    pytest.param('{"nbformat": 4, "cells": []}'.encode("utf-16"), id="utf-16"),
    pytest.param(b'{"nbformat": 4, "cells": [], "metadata": {"x": "\xff"}}', id="latin-1-byte"),
    pytest.param(b'{"nbformat": 4, "cells": [], "metadata": {"x": "\\ud800"}}', id="lone-surrogate-escape"),
    pytest.param(b'{"nbformat": 99999999999999999999999, "cells": []}', id="huge-version"),
    pytest.param(b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code"}]}',
                 id="a-cell-without-source"),
    pytest.param(b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"source": "x = 1"}]}',
                 id="a-cell-without-type"),
])
def test_no_file_content_raises_anything_but_its_status(tmp_path, content):
    """Attack: a file that makes the reader itself fail (RecursionError, UnicodeError...) would
    stop a roster before anything is graded; every such file is the one invalid_notebook."""
    path = tmp_path / "x.ipynb"
    path.write_bytes(content)
    assert load_error(path).kind == "invalid_notebook"


def test_a_notebook_as_deep_as_a_real_one_still_loads(tmp_path):
    path = tmp_path / "x.ipynb"
    path.write_bytes(deeply_nested(50))
    assert load(path).metadata["x"]


@pytest.mark.parametrize("lab, other", [(lab, other) for lab in LABS for other in LABS if other is not lab],
                         ids=lambda lab: lab.name)
def test_a_lab_is_its_structure_whatever_its_metadata_and_names_claim(lab, other):
    """Attack: a tensor_engine notebook whose metadata claims pt03_autodiff, with one of pt03's
    functions defined in it, was graded as pt03_autodiff (0/14)."""
    assert identify(claiming(lab, other), every_lab()).name == lab.name


def test_a_claim_and_a_defined_name_alone_are_no_lab():
    lab = LABS[0]
    notebook = nbformat.v4.new_notebook(metadata={"course": {"lab": lab.name}}, cells=[nbformat.v4.new_code_cell(
        "".join(f"def {f}(*args):\n    return None\n" for a in lab.activities.values() for f in a.functions))])
    with pytest.raises(SubmissionError) as failure:
        identify(notebook, every_lab())
    assert failure.value.kind == "unknown_lab" and "locked cells" in str(failure.value)


def test_as_much_of_two_labs_is_neither():
    first, second = LABS[:2]
    cells = [nbformat.v4.new_markdown_cell(next(iter(sorted(locked_sources(lab))))) for lab in (first, second)]
    with pytest.raises(SubmissionError) as failure:
        identify(nbformat.v4.new_notebook(cells=cells), every_lab())
    assert failure.value.kind == "unknown_lab" and "as many" in str(failure.value)
