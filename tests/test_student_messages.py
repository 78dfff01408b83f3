"""What a student reads: cells named as the student can find them, a failure caused by an earlier
cell's error pointing at that cell, a feedback page with the activities' titles and their states,
advice for a file that could not be graded, and kernels that start without warnings."""
import re
import subprocess
import sys

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

from autodiff_check.cells import cell_name
from autodiff_check.execute import execute
from autograder.grading.grade import Clock, Options, Outcome, Session, point_at_failed_cells, point_at_pytorch
from autograder.grading.submission import Step, answer_names, answers, program
from autograder.isolation.sandbox import Limits
from autograder.labs import course_labs, grading_for
from autograder.labs.notebooks import solved_notebook, student_notebook
from tests.adversarial.common import answer
from tests.helpers import LABS, ROOT, grade_command, lab_notebook, read, results_in
from tests.submissions import save


def test_a_missing_name_points_at_the_failed_cell_that_defines_it():
    broken = Step("def sum_to_shape(v, shape)\n    return v", True, "cell 9 (it begins 'def sum_to_shape(v, shape)')")
    other = Step("x = 1", True, "cell 3 (it begins 'x = 1')")
    outcomes = {"1b": Outcome(False, "failed 5 of 5 hidden checks. The first failure: broadcast (3,): raised "
                                     "NameError: name 'sum_to_shape' is not defined"),
                "1c": Outcome(False, "failed 1 of 4 hidden checks. The first failure: raised NameError: name "
                                     "'tanh_vjp' is not defined"),
                "2": Outcome(True, "passed all 3 hidden checks")}
    point_at_failed_cells([other, broken], ["cell 9 (it begins 'def sum_to_shape(v, shape)') raised SyntaxError: "
                                            "expected ':'"], outcomes)
    assert outcomes["1b"].message.endswith("It is missing because cell 9 (it begins 'def sum_to_shape(v, shape)'), "
                                           "which defines it, failed before it could (see the notes above): fix "
                                           "that cell first.")
    assert "missing because" not in outcomes["1c"].message, "no failed cell defines tanh_vjp"
    assert outcomes["2"].message == "passed all 3 hidden checks"


def given_code(lab, notebook):
    """The notebook's cells that hold the lab's given code that runs, in order."""
    sources = {c.source for c in lab.cells if c.role == "given" and c.cell_type == "code" and not c.requires}
    return [cell for cell in notebook.cells if cell.source in sources]


def test_cells_are_named_as_jupyterlab_counts_them_among_all_cells():
    """A student's notebook with a note and a cell of their own at the top, a given cell edited, a
    given cell deleted and a failing cell of their own further down: every step of the program and
    the error are named by the cell's place among all the notebook's cells (markdown included),
    from 1, as JupyterLab's status bar shows it, with its first line; the deleted given cell by
    its place in the released notebook."""
    lab = course_labs()["tensor_engine"]  # the quickest program to run
    release = student_notebook(lab)
    notebook = solved_notebook(lab, release)
    edited, deleted, before_slip = given_code(lab, notebook)[:3]
    released_at = [c.source for c in release.cells].index(deleted.source)
    original = edited.source
    edited.source = "# my version\n" + original
    notebook.cells.remove(deleted)
    cells = notebook.cells
    cells[0:0] = [nbformat.v4.new_markdown_cell("My notes"), nbformat.v4.new_code_cell("scratch = 1")]
    slip = nbformat.v4.new_code_cell("1 / 0")
    after = cells.index(before_slip) + 1
    cells[after:after] = [nbformat.v4.new_markdown_cell("Trying something"), slip]
    at = {id(cell): index + 1 for index, cell in enumerate(cells)}  # JupyterLab's "Cell n/N"
    steps = program(lab, notebook)
    labels = {(step.source, step.student): step.label for step in steps}

    assert labels["scratch = 1", True] == "cell 2 (it begins 'scratch = 1')"
    assert labels[edited.source, True] == f"cell {at[id(edited)]} (it begins '# my version')"
    assert labels[original, False] == f"given cell {at[id(edited)]} (it begins '# my version')", \
        "the released text of an edited cell is named where the student has it"
    released_name = cell_name(release.cells, released_at)
    assert released_name.startswith(f"cell {released_at + 1} (it begins ")
    assert labels[deleted.source, False] == f"given {released_name} of the released notebook (missing from yours)"
    slip_label = f"cell {at[id(slip)]} (it begins '1 / 0')"
    assert labels["1 / 0", True] == slip_label
    session = Session(lab, steps, Options(Limits(cell_seconds=30), True, warm=False), Clock(600))
    try:
        session.start()
        assert session.problems() == [f"{slip_label} raised ZeroDivisionError: division by zero"]
    finally:
        session.close()


def test_an_answer_that_uses_pytorch_is_named_where_the_student_has_it():
    """pt03_autodiff grades every activity with NumPy only; an answer cell that imports torch, in a
    notebook with a note of the student's above it, is named by its place among all cells."""
    lab = course_labs()["pt03_autodiff"]
    notebook = solved_notebook(lab, student_notebook(lab))
    notebook.cells.insert(0, nbformat.v4.new_markdown_cell("My notes"))
    first = next(iter(lab.activities))
    place = [c.get("id") for c in notebook.cells].index(f"{first}-answer")
    notebook.cells[place].source = "import torch\n" + notebook.cells[place].source
    outcomes = {first: Outcome(False, "failed 1 of 3 hidden checks.")}
    point_at_pytorch(grading_for(lab.name), answers(lab, notebook), answer_names(lab, notebook), outcomes)
    assert outcomes[first].message == (f"failed 1 of 3 hidden checks. Your answer cell, cell {place + 1} (it begins "
                                       "'import torch'), uses PyTorch on its line 1 (`import torch`); this activity "
                                       "is graded with NumPy only.")


def test_kernels_start_without_the_plain_tcp_warning(tmp_path):
    code = ("import nbformat\nfrom autodiff_check.execute import execute\n"
            "notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('print(6 * 7)')])\n"
            f"execute(notebook, {str(tmp_path)!r})\nprint(notebook.cells[0].outputs[0]['text'], end='')\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout == "42\n", run.stderr
    assert "without encryption" not in run.stderr and "WARNING" not in run.stderr, run.stderr
    assert not list(tmp_path.iterdir()), "the kernel's sockets must not land in the notebook's folder"


# The first lab, graded once: a syntax error in the first answer cell, a blank notebook and a file
# that is not a notebook.
LAB = LABS[0]


@pytest.fixture(scope="module")
def graded(tmp_path_factory, release_dir):
    folder = tmp_path_factory.mktemp("messages")
    batch, out = folder / "batch", folder / "out"
    batch.mkdir()
    blank = read(lab_notebook(release_dir, LAB))
    first = next(iter(LAB.activities.values()))
    function = first.functions[0]
    save(answer(read(lab_notebook(release_dir, LAB)), first.id, f"def {function}(a, b, v)\n    return v\n"), batch,
         "syntax-error")
    save(blank, batch, "blank")
    (batch / "notes.ipynb").write_text("my notes, not a notebook")
    run = subprocess.run(grade_command(batch, "--out", out, "--jobs", "2"), cwd=ROOT, capture_output=True, text=True,
                         timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    position = 1 + [c.id for c in blank.cells].index(f"{first.id}-answer")  # JupyterLab counts every cell
    return out, results_in(out), first, function, position


@pytest.mark.slow
def test_a_syntax_error_is_named_by_its_cell_and_the_activity_points_at_it(graded):
    _, results, first, function, position = graded
    result = results["syntax-error"]
    label = f"cell {position} (it begins 'def {function}(a, b, v)')"
    assert f"{label} raised SyntaxError" in result["output"]
    (test,) = [t for t in result["tests"] if t["name"] == first.id]
    assert f"It is missing because {label}, which defines it, failed before it could" in test["output"]


@pytest.mark.slow
def test_the_feedback_page_shows_titles_states_and_the_score_once(graded):
    out, results, first, _, _ = graded
    page = (out / "blank" / f"{LAB.name}.html").read_text()
    for activity in LAB.activities.values():
        assert f'<tr class="not-attempted"><td>{activity.id} · ' in page
    assert page.count("not attempted</td>") == len(LAB.activities)
    assert results["blank"]["extra_data"]["summary"] in page and "Score:" not in page
    assert '<tr class="failed">' in (out / "syntax-error" / f"{LAB.name}.html").read_text()


@pytest.mark.slow
def test_a_file_that_is_not_a_notebook_gets_advice_and_no_empty_table(graded):
    out, results, _, _, _ = graded
    (page,) = (out / "notes").glob("*.html")
    text = page.read_text()
    assert "Your submission could not be graded" in text and "<table" not in text
    assert f"{LAB.name}.ipynb" in text and "not a Jupyter notebook" in text


@pytest.mark.slow
def test_a_visible_check_names_the_shapes_an_answer_cannot_take(release_dir, solved_dir):
    """pt03_autodiff's matmul_vjp written for matrices only: NumPy's own error names no shape, the
    check says which shapes the function was given."""
    lab = next(lab for lab in LABS if lab.name == "pt03_autodiff")
    notebook = read(lab_notebook(solved_dir, lab))
    answer_cell = next(c for c in notebook.cells if c.get("id") == "1a-answer")
    answer_cell.source = re.sub(r"def matmul_vjp\(a, b, v\):.*?(?=\ndef |\Z)",
                                "def matmul_vjp(a, b, v):\n    return v @ b.T, a.T @ v\n", answer_cell.source, flags=re.S)
    check = next(i for i, c in enumerate(notebook.cells) if c.get("id") == "1a-check")
    notebook.cells = notebook.cells[:check + 1]
    with pytest.raises(CellExecutionError) as failure:
        execute(notebook, lab_notebook(solved_dir, lab).parent)
    assert "matmul_vjp given shapes (4,), (4,), () raised ValueError" in str(failure.value)
