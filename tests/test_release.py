"""The student release of every lab: reproducible, leak-proof, valid for nbgrader."""
import ast
import copy
import filecmp
import io
import re
import shutil
import subprocess
import sys
import tokenize

import jupytext
import nbformat
import pytest
from nbgrader.nbgraderformat import MetadataValidator

from build_student import CELLS, build, main as build_main
from course import leaks
from course.leaks import fold, telling_lines
from tests.helpers import LABS, ROOT, lab_notebook, nbgrader, read


def release_notebook(folder, lab):
    return read(lab_notebook(folder, lab))


def test_two_builds_are_byte_identical(tmp_path, release_dir, lab):
    build(tmp_path)
    assert filecmp.cmp(lab_notebook(tmp_path, lab), lab_notebook(release_dir, lab), shallow=False)


def test_committed_release_is_current():
    result = subprocess.run([sys.executable, "build_student.py", "--check"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_check_names_a_stale_file(tmp_path, capsys, lab):
    stale = tmp_path / "release"
    build(stale)
    notebook = lab_notebook(stale, lab)
    first = next(iter(lab.activities))
    notebook.write_text(notebook.read_text().replace(f"Activity {first}", "Activity 99", 1))
    assert build_main(["--check", "--release", str(stale)]) == 1
    assert str(notebook) in capsys.readouterr().err


def test_a_build_of_other_folders_leaves_the_student_package_alone(tmp_path, lab):
    """The student check's released cells are the checkout's: building one lab's copy elsewhere
    (as an instructor trying a change does) must not replace them with that lab's alone."""
    held = {path.name: path.read_bytes() for path in CELLS.iterdir()}
    shutil.copytree(lab.path.parent, tmp_path / "source" / lab.name)
    assert build_main(["--source", str(tmp_path / "source"), "--release", str(tmp_path / "release")]) == 0
    assert (tmp_path / "release" / lab.name / f"{lab.name}.ipynb").is_file()
    assert {path.name: path.read_bytes() for path in CELLS.iterdir()} == held


def test_check_names_a_missing_file(tmp_path, capsys, lab):
    assert build_main(["--check", "--release", str(tmp_path / "nothing")]) == 1
    assert f"{lab.name}.ipynb" in capsys.readouterr().err


def test_release_ships_the_data_beside_the_notebook(release_dir, lab):
    for name in lab.data_files:
        assert (release_dir / lab.name / "data" / name).read_bytes() == (ROOT / "data" / name).read_bytes()


def test_nbgrader_validate_in_the_lab_folder_allows_the_courses_cell_time(release_dir, lab):
    """nbgrader's own default (30 s a cell) fails a training cell on a busy machine with a fatal
    error that says nothing about the student's work; the release's config lifts it. The app is
    made as the `nbgrader validate` command makes it (the running application), which the
    config's refusal of every other command must let through."""
    read_there = subprocess.run(
        [sys.executable, "-c", "from nbgrader.apps import ValidateApp\nfrom nbgrader.preprocessors import Execute\n"
         "app = ValidateApp.instance()\napp.initialize([])\nprint(Execute(parent=app).timeout)"],
        cwd=release_dir / lab.name, capture_output=True, text=True, timeout=120)
    assert read_there.stdout.split()[-1:] == ["600"], read_there.stdout + read_there.stderr


def test_no_nbgrader_command_but_validate_writes_into_a_lab_folder(release_dir):
    """Run in a lab's folder, nbgrader would take it for a course folder: a gradebook there would
    reach the students with the next release."""
    folder = release_dir / LABS[0].name
    before = sorted(folder.rglob("*"))
    run = nbgrader("db", "student", "list", cwd=folder)
    assert run.returncode != 0 and "only `nbgrader validate` runs here" in run.stderr, run.stdout + run.stderr
    assert sorted(folder.rglob("*")) == before


def test_no_line_of_any_reference_cell_reaches_the_release(lab, release_dir):
    text = "\n".join(fold(line) for cell in release_notebook(release_dir, lab).cells
                     for line in cell.source.splitlines())
    checked = 0
    for cell in lab.cells:
        if cell.role != "reference":
            continue
        for line in map(fold, cell.source.splitlines()):
            # signatures, bare returns and short fragments of wrapped prose are shared by necessity
            if line.startswith("def ") or len(line) < 12 or line.startswith("return ") and " " not in line[7:]:
                continue
            checked += 1
            assert line not in text, f"{line!r} from {cell.label} is in the release"
    assert checked >= 2 * len(lab.activities)  # the lab's solutions and answers were looked at


def test_release_has_no_outputs_and_only_nbgrader_metadata(release_dir, lab):
    notebook = release_notebook(release_dir, lab)
    for cell in notebook.cells:
        assert set(cell.metadata) <= {"nbgrader", "deletable", "editable"}, cell.id
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.id
    assert set(notebook.metadata) == {"kernelspec", "language_info", "course"}


def test_nbgrader_metadata_is_valid_and_carries_the_activities(lab, release_dir):
    notebook = release_notebook(release_dir, lab)
    MetadataValidator().validate_nb(notebook)
    grading = {cell.id: cell.metadata.nbgrader for cell in notebook.cells}
    for activity in lab.activities.values():
        answer = grading[f"{activity.id}-answer"]
        assert answer["solution"] and not answer["grade"] and not answer["locked"]
        check = grading[f"{activity.id}-check"]
        assert check["grade"] and check["grade_id"].startswith(activity.id)
        assert check["points"] == (0 if activity.optional else activity.points)  # bonus: extra credit
    given = [g for key, g in grading.items() if not key.endswith(("-answer", "-check"))]
    assert given and all(g["locked"] and not g["grade"] and not g["solution"] for g in given)
    assert all(cell.metadata.get("editable") is False for cell in notebook.cells
               if not cell.id.endswith("-answer"))


def test_cell_ids_are_unique_and_stable(release_dir, lab):
    ids = [cell.id for cell in release_notebook(release_dir, lab).cells]
    assert len(ids) == len(set(ids))
    assert ids == [c.id for c in read(lab_notebook(ROOT / "release", lab)).cells]


def test_solved_notebook_differs_from_the_release_only_in_answer_cells(lab, release_dir, solved_dir):
    release, solved = release_notebook(release_dir, lab), release_notebook(solved_dir, lab)
    assert [c.id for c in release.cells] == [c.id for c in solved.cells]
    for before, after in zip(release.cells, solved.cells):
        if before.id.endswith("-answer"):
            assert after.source == lab.activities[before.id[:-len("-answer")]].reference.source
        else:
            assert after == before


# Realistic slips, made with each lab's own first activity; the build must refuse them, say
# where, and write nothing.
def first_given_code(notebook, lab):
    return next(notebook.cells[c.index] for c in lab.cells if c.role == "given" and c.cell_type == "code")


def reference_lost_its_tag(notebook, lab, activity):
    notebook.cells[activity.reference.index].metadata = {}
    return rf"stub of activity {activity.id} must be directly followed"


def solution_line_pasted_as_a_comment(notebook, lab, activity):
    line = max(telling_lines(activity.reference), key=len)
    first_given_code(notebook, lab).source += f"\n# {line}"
    return rf"release cell \d+ \(code-\w+\) contains {re.escape(repr(line))}"


def solution_function_copied_into_given_code(notebook, lab, activity):
    function = activity.functions[0]
    lines = activity.reference.source.splitlines()
    node = next(n for n in ast.parse(activity.reference.source).body
                if isinstance(n, ast.FunctionDef) and n.name == function)
    definition = "\n".join(lines[node.lineno - 1:node.end_lineno])
    given = first_given_code(notebook, lab)
    given.source = definition.rstrip() + "\n\n\n" + given.source
    return rf"release cell \d+ \(code-\w+\) defines {function}"


# A solution pasted into given code in another layout: the leak check compares syntax trees.
def squared_formula(lab):
    """The first reference statement with a number and a square (`y * y`, `g ** 2`): each lab's
    derivative of tanh or Adam's second moment."""
    def squares(node):
        return isinstance(node, ast.BinOp) and (
            isinstance(node.op, ast.Mult) and ast.dump(node.left) == ast.dump(node.right)
            or isinstance(node.op, ast.Pow) and isinstance(node.right, ast.Constant) and node.right.value == 2)
    for cell in lab.cells:
        if cell.role == "reference" and cell.cell_type == "code":
            for node in ast.walk(ast.parse(cell.source)):
                if isinstance(node, (ast.Return, ast.Assign, ast.AugAssign)) and any(map(squares, ast.walk(node))) \
                        and any(isinstance(n, ast.Constant) and type(n.value) in (int, float) for n in ast.walk(node)):
                    return node
    raise AssertionError(f"{lab.name} has no reference formula with a number and a square")


def paste_into_given_code(notebook, lab, code):
    given = first_given_code(notebook, lab)
    given.source = "def pasted(*args):\n" + "".join(f"    {line}\n" for line in code.splitlines()) + "\n\n" + given.source
    return r"release cell \d+ \(code-\w+\) holds .* written another way"


class Rewrite(ast.NodeTransformer):
    """Rewrites a statement without changing what it computes: `literals` swaps 1 and 1.0,
    `powers` swaps `y * y` and `y ** 2`, `renames` renames names."""

    def __init__(self, literals=False, powers=False, renames=()):
        self.literals, self.powers, self.renames = literals, powers, dict(renames)

    def visit_Constant(self, node):
        if self.literals and type(node.value) in (int, float):
            return ast.Constant(float(node.value) if isinstance(node.value, int) else int(node.value)
                                if node.value.is_integer() else node.value)
        return node

    def visit_Name(self, node):
        return ast.Name(self.renames.get(node.id, node.id), node.ctx)

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if not self.powers:
            return node
        if isinstance(node.op, ast.Mult) and ast.dump(node.left) == ast.dump(node.right):
            return ast.BinOp(node.left, ast.Pow(), ast.Constant(2))
        if isinstance(node.op, ast.Pow) and isinstance(node.right, ast.Constant) and node.right.value == 2:
            return ast.BinOp(node.left, ast.Mult(), copy.deepcopy(node.left))
        return node


def rewritten(node, **how):
    return ast.unparse(ast.fix_missing_locations(Rewrite(**how).visit(copy.deepcopy(node))))


def formula_respaced(notebook, lab, activity):
    tokens = tokenize.generate_tokens(io.StringIO(ast.unparse(squared_formula(lab))).readline)
    return paste_into_given_code(notebook, lab, "  ".join(t.string for t in tokens if t.string.strip()))


def formula_with_other_literals(notebook, lab, activity):
    return paste_into_given_code(notebook, lab, rewritten(squared_formula(lab), literals=True))


def formula_with_more_parentheses(notebook, lab, activity):
    node = squared_formula(lab)
    text = ast.unparse(node)
    value = ast.unparse(node.value)
    return paste_into_given_code(notebook, lab, text.replace(value, f"(({value}))"))


def formula_with_powers_for_products(notebook, lab, activity):
    return paste_into_given_code(notebook, lab, rewritten(squared_formula(lab), powers=True))


def two_reference_lines_with_locals_renamed(notebook, lab, activity):
    """The first two statements in a row of a reference, every name they bind renamed."""
    kept = leaks.top_level_names(c.source for c in lab.cells if c.cell_type == "code" and c.role != "reference")
    for cell in lab.cells:
        if cell.role == "reference" and cell.cell_type == "code":
            for block in leaks.statements(cell.source):
                if len(block) >= 2:
                    renames = {n.id: f"{n.id}_copy" for s in block[:2] for n in ast.walk(s)
                               if isinstance(n, ast.Name) and n.id not in kept}
                    code = "\n".join(rewritten(node, renames=renames) for node in block[:2])
                    assert code != "\n".join(map(ast.unparse, block[:2]))
                    return paste_into_given_code(notebook, lab, code)
    raise AssertionError(f"{lab.name} has no reference with two statements in a row")


def instructor_note_without_its_tag(notebook, lab, activity):
    notebook.cells.insert(activity.stub.index, nbformat.v4.new_markdown_cell(
        "**Instructor note.** Students often forget the transpose here."))
    return r"release cell \d+ \(markdown-\w+\) contains instructor-only text"


LEAKY = [reference_lost_its_tag, solution_line_pasted_as_a_comment, solution_function_copied_into_given_code,
         instructor_note_without_its_tag, formula_respaced, formula_with_other_literals, formula_with_more_parentheses,
         formula_with_powers_for_products, two_reference_lines_with_locals_renamed]


@pytest.mark.parametrize("slip", LEAKY, ids=[slip.__name__ for slip in LEAKY])
def test_leaky_source_fails_the_build_naming_the_cell(tmp_path, capsys, lab, slip):
    notebook = copy.deepcopy(jupytext.read(lab.path))
    message = slip(notebook, lab, next(iter(lab.activities.values())))
    source = tmp_path / "source" / lab.name / f"{lab.name}.py"
    source.parent.mkdir(parents=True)
    jupytext.write(notebook, source, fmt="py:percent")
    out = tmp_path / "release"
    assert build_main(["--source", str(tmp_path / "source"), "--release", str(out)]) == 2
    assert re.search(message, capsys.readouterr().err)
    assert not out.exists(), "a refused build must write nothing"


def test_hidden_checks_stay_out_of_the_release(release_dir, lab):
    """The grader's own checks and probes (autograder/labs/<lab>/) share no line with the release."""
    text = "\n".join(fold(line) for cell in release_notebook(release_dir, lab).cells for line in cell.source.splitlines())
    checked = 0
    for path in sorted((ROOT / "autograder" / "labs" / lab.name).glob("*.py")):
        for line in map(fold, path.read_text().splitlines()):
            if len(line) < 25 or line.startswith(("#", "def ", "import ", "from ", '"""', "return ")):
                continue
            checked += 1
            assert line not in text, f"{path.name}: {line!r} is in the release"
    assert checked >= 10


def test_a_leak_is_quoted_as_python_quotes_its_code(lab):
    """The leak finder splits a source into lines once (leaks.segment); each statement it quotes
    must read as ast.get_source_segment gives it: in every cell of the lab, and where lines end in
    \\r\\n or \\r alone, hold a form feed, or hold characters of more than one byte before the code."""
    sources = [cell.source for cell in lab.cells if cell.cell_type == "code"] + [
        "x = 1\r\ny = [1,\r\n     2]\rz = 'é' ; w = x + y\n", "\fa = 1\nb = (a,\n  'ü€') ; c = 2", "ä = 1\n\n\nb = ä"]
    quoted = 0
    for source in sources:
        lines = leaks.LINE.findall(source)
        assert "".join(lines) == source
        for block in leaks.statements(source):
            for statement in block:
                assert leaks.segment(lines, statement) == ast.get_source_segment(source, statement), source
                quoted += 1
    assert quoted > 20
