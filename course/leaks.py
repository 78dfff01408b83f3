"""Find instructor material in a student notebook before it ships: a reference's lines as text,
and its code in any layout (compared as syntax trees)."""
import ast
import builtins
import copy
import functools
import re

from course.cells import defined_functions
from course.syntax import parse

# Prose wraps anywhere, so short markdown lines ("order.") are no evidence of a leak.
SHORTEST_PROSE = 25
# Lines a stub shares with its solution by necessity: signatures, returning a bare name,
# lone keywords and brackets.
TRIVIAL = re.compile(r"^(def \w+\(.*\):|return \w*|else:|try:|continue|break|pass|[()\[\]{},:]*)$")
MARKERS = re.compile(r"instructor (answer|reference|copy|note)", re.IGNORECASE)
# A statement smaller than this, in syntax-tree nodes, is an idiom any code has ("return out",
# "backward(loss)"); from this size on, no reference statement of the three labs is in their
# release, while a formula such as `return v * (1 - y ** 2)` is caught.
SMALLEST_STATEMENT = 5
# Two statements in a row with their names renamed: below this size they are idioms too
# ("x = f(y); return x": 9 nodes, and the three labs' releases have such pairs).
SMALLEST_PAIR = 12
SIMPLE = (ast.Return, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Raise, ast.Assert, ast.Delete)


def fold(line):
    return " ".join(line.split())


def telling_lines(cell):
    """The folded lines of a reference cell that would give something away."""
    lines = {fold(line) for line in cell.source.splitlines()}
    if cell.cell_type == "markdown":
        return {line for line in lines if len(line) >= SHORTEST_PROSE}
    return {line for line in lines if line and not TRIVIAL.match(line)}


class Canonical(ast.NodeTransformer):
    """A statement with its layout gone: numbers as floats (1 is 1.0), `x ** 2` as `x * x`,
    `x += e` as `x = x + e`, and, when `local` is given, those names numbered in order of use,
    so that renaming a function's locals changes nothing. Parentheses and whitespace are not in
    the tree at all."""

    def __init__(self, local=frozenset()):
        self.local, self.names = local, {}

    def visit_Name(self, node):
        name = self.names.setdefault(node.id, f"_{len(self.names)}") if node.id in self.local else node.id
        return ast.Name(name, ast.Load())

    def visit_arg(self, node):
        return ast.arg(self.names.setdefault(node.arg, f"_{len(self.names)}") if node.arg in self.local else node.arg)

    def visit_Constant(self, node):
        return ast.Constant(float(node.value) if type(node.value) in (int, float) else node.value)

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        return ast.Assign([node.target], ast.BinOp(copy.deepcopy(node.target), node.op, node.value))

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Pow) and isinstance(node.right, ast.Constant) and node.right.value == 2.0:
            return ast.BinOp(node.left, ast.Mult(), copy.deepcopy(node.left))
        return node


def canonical(nodes, local=frozenset()):
    """(the canonical form of `nodes` as text, its size in tree nodes)."""
    tree = Canonical(local).visit(ast.Module([copy.deepcopy(node) for node in nodes], []))
    return ast.dump(tree, annotate_fields=False), sum(not isinstance(n, ast.expr_context) for n in ast.walk(tree)) - 1


def statements(source):
    """The simple statements of `source` in blocks (one list per body), docstrings and other bare
    strings left out: prose is the text check's."""
    try:
        tree = parse(source)
    except SyntaxError:
        return []
    blocks = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                blocks.append([statement for statement in block if isinstance(statement, SIMPLE) and not (
                    isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))])
    return blocks


def top_level_names(sources):
    """The names the code in `sources` binds at the top of a cell (its imports, functions, classes
    and variables), with Python's builtins: what a copy keeps when it renames the rest."""
    names = set(dir(builtins))
    for source in sources:
        try:
            tree = parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
            else:
                names.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return frozenset(names)


LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")  # a line and its end, as Python's parser counts lines


def segment(lines, node):
    """What ast.get_source_segment gives for `node`, from its source's `lines` (LINE's matches)
    split once: ast splits the whole source again for every node it is asked about."""
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first].encode()[node.col_offset:node.end_col_offset].decode()
    return "".join([lines[first].encode()[node.col_offset:].decode(), *lines[first + 1:last],
                    lines[last].encode()[:node.end_col_offset].decode()])


@functools.lru_cache(maxsize=None)
def code_shapes(source, kept):
    """((canonical form, the code as written in `source`), ...): each statement of
    SMALLEST_STATEMENT nodes or more with its names as they are, and each two statements that
    follow each other with every name but those `kept` renamed (one renamed line is an idiom; two
    in a row of SMALLEST_PAIR nodes are a copy). Kept for each source: a build checks the same
    cells for every notebook it makes of a lab."""
    shapes, lines = {}, LINE.findall(source)
    for block in statements(source):
        for statement in block:
            form, size = canonical([statement])
            if size >= SMALLEST_STATEMENT and form not in shapes:
                shapes[form] = segment(lines, statement)
        for first, second in zip(block, block[1:]):
            local = {n.id for s in (first, second) for n in ast.walk(s) if isinstance(n, ast.Name)} - kept
            form, size = canonical([first, second], local)
            if size >= SMALLEST_PAIR and form not in shapes:
                shapes[form] = "\n".join(segment(lines, s) for s in (first, second))
    return tuple(shapes.items())


def find_leaks(lab, notebook):
    """Messages naming each leak of `lab`'s instructor material into `notebook`."""
    secrets, code = {}, {}
    kept = top_level_names(cell.source for cell in lab.cells if cell.cell_type == "code" and cell.role != "reference")
    for cell in lab.cells:
        if cell.role == "reference":
            for line in telling_lines(cell):
                secrets.setdefault(line, cell)
            if cell.cell_type == "code":
                for form, written in code_shapes(cell.source, kept):
                    code.setdefault(form, (written, cell))
    solved_names = {name: activity.id for activity in lab.activities.values()
                    for name in activity.functions}
    leaks = []
    for index, cell in enumerate(notebook.cells):
        where = f"release cell {index + 1} ({cell.get('id', '?')})"  # counted from 1, as the source's cells
        text = "\n".join(fold(line) for line in cell.source.splitlines())
        for line, origin in secrets.items():
            if line in text:
                leaks.append(f"{where} contains {line!r} from {origin.label}")
        if MARKERS.search(cell.source):
            leaks.append(f"{where} contains instructor-only text: {MARKERS.search(cell.source).group(0)!r}")
        if cell.cell_type != "code":
            continue
        for form, written in code_shapes(cell.source, kept):
            if form in code and not all(fold(line) in secrets for line in written.splitlines()):  # else named above
                reference, origin = code[form]
                leaks.append(f"{where} holds {fold(written)!r}, which is {fold(reference)!r} from {origin.label} "
                             "written another way")
        if cell.get("outputs") or cell.get("execution_count") is not None:
            leaks.append(f"{where} has saved outputs")
        if not cell.metadata.get("nbgrader", {}).get("grade_id", "").endswith("-answer"):
            for name in sorted(defined_functions(cell.source, where) & set(solved_names)):
                leaks.append(f"{where} defines {name}, which students write in activity "
                             f"{solved_names[name]}: is it a reference cell without its tag?")
    return leaks

