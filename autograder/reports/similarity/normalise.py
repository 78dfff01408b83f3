"""An answer's code as a stream of tokens that survives what students do to hide a copy.

The tokens are the nodes of Python's own syntax tree, depth first, each with the line of the
student's code it comes from. Before the walk the tree is brought to one form, so that two
spellings of the same program give the same tokens:
* names the answer binds itself (arguments, variables, helpers) are masked, literals are reduced
  to their kind, and comments, blank lines and layout are gone with the text;
* docstrings and bare constants, `pass`, `if False:` blocks and code after a `return`, `raise`,
  `break` or `continue` are dropped (dead code);
* `x = x + y` becomes `x += y`; the operands of `+ * & | ^ == !=` are put in one order, and
  `a > b` is written `b < a`; `if not c: A else: B` (and `A if not c else B`) is written with `c`
  and the branches swapped; `a, b = x, y` is written one assignment per line;
* a list built by a loop of `append`s becomes the comprehension it spells, and `x = e` followed
  by `return x` becomes `return e`;
* the functions of the answer are put in one order (their order is the student's choice).
Names the answer uses but does not bind (np, Value, out.grad's `grad`) stay: they are the lab's,
and which of them an answer uses says something.
"""
import ast

from course.syntax import parse

MASK = "·"  # what a name the answer binds becomes
COMMUTATIVE = (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor)
MIRRORED = {ast.Gt: ast.Lt, ast.GtE: ast.LtE}  # `a > b` is written `b < a`


def bound_names(tree):
    """The names `tree` binds: its functions, their arguments, what it assigns or imports."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
    return names


def tokens(node, bound):
    """[(token, line)] of `node`'s subtree, depth first; a node without a line takes its parent's."""
    found = []
    stack = [(node, getattr(node, "lineno", 1))]
    while stack:
        item, line = stack.pop()
        line = getattr(item, "lineno", line)
        found.append((token(item, bound), line))
        children = [child for child in ast.iter_child_nodes(item) if not isinstance(child, ast.expr_context)]
        stack.extend((child, line) for child in reversed(children))
    return found


def token(node, bound):
    kind = type(node).__name__
    if isinstance(node, ast.Name):
        return MASK if node.id in bound else node.id
    if isinstance(node, ast.Attribute):
        return f".{node.attr}"
    if isinstance(node, ast.Constant):
        return f"{kind}:{type(node.value).__name__}"
    if isinstance(node, ast.keyword):
        return f"{kind}:{node.arg}"  # a keyword argument's name is the callee's, not the student's
    return kind


def shape(node, bound):
    """What `node` is once names are masked: the key that puts commutative operands in order."""
    return tuple(name for name, _ in tokens(node, bound))


class OneForm(ast.NodeTransformer):
    """Rewrites a tree to the one form described in the module's docstring."""

    def __init__(self, bound):
        self.bound = bound

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, COMMUTATIVE) and shape(node.right, self.bound) < shape(node.left, self.bound):
            node.left, node.right = node.right, node.left
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) != 1:
            return node
        if type(node.ops[0]) in MIRRORED:
            node.left, node.comparators, node.ops = node.comparators[0], [node.left], [MIRRORED[type(node.ops[0])]()]
        elif isinstance(node.ops[0], (ast.Eq, ast.NotEq)) and \
                shape(node.comparators[0], self.bound) < shape(node.left, self.bound):
            node.left, node.comparators = node.comparators[0], [node.left]
        return node

    def visit_If(self, node):
        self.generic_visit(node)
        if node.orelse and negated(node.test):
            node.test, node.body, node.orelse = node.test.operand, node.orelse, node.body
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if negated(node.test):
            node.test, node.body, node.orelse = node.test.operand, node.orelse, node.body
        return node

    def visit_Assign(self, node):
        self.generic_visit(node)
        value = node.value
        if len(node.targets) != 1 or not isinstance(value, ast.BinOp):
            return node
        target = node.targets[0]
        if same_place(target, value.left):
            return ast.copy_location(ast.AugAssign(target, value.op, value.right), node)
        if isinstance(value.op, COMMUTATIVE) and same_place(target, value.right):  # put second by the ordering
            return ast.copy_location(ast.AugAssign(target, value.op, value.left), node)
        return node

    def generic_visit(self, node):
        super().generic_visit(node)
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if isinstance(statements, list) and statements and isinstance(statements[0], ast.stmt):
                setattr(node, field, returned(live(comprehended(one_per_line(statements))))
                        or [ast.copy_location(ast.Pass(), node)])
        return node


def negated(test):
    return isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)


def one_per_line(statements):
    """`statements` with `a, b = x, y` written `a = x` then `b = y`, where no value reads a name
    the targets hold (`a, b = b, a` stays)."""
    result = []
    for statement in statements:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and \
                isinstance(statement.targets[0], ast.Tuple) and isinstance(statement.value, ast.Tuple) and \
                len(statement.targets[0].elts) == len(statement.value.elts) and \
                not any(isinstance(e, ast.Starred) for e in statement.targets[0].elts + statement.value.elts) and \
                not names(statement.targets[0]) & names(statement.value):
            result += [ast.copy_location(ast.Assign([target], value), statement)
                       for target, value in zip(statement.targets[0].elts, statement.value.elts)]
        else:
            result.append(statement)
    return result


def names(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def same_place(target, expression):
    """Whether `expression` reads what `target` writes (`x` and `x`, `p.data` and `p.data`)."""
    return ast.dump(target).replace("Store()", "Load()") == ast.dump(expression)


def live(statements):
    """`statements` without dead code: docstrings and bare constants, `pass`, `if False:` and what
    follows a jump."""
    kept = []
    for statement in statements:
        if isinstance(statement, ast.Pass) or isinstance(statement, ast.Expr) and isinstance(statement.value,
                                                                                              ast.Constant):
            continue
        if isinstance(statement, ast.If) and isinstance(statement.test, ast.Constant) and not statement.test.value:
            kept.extend(statement.orelse)
            continue
        kept.append(statement)
        if isinstance(statement, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
            break
    return kept


def comprehended(statements):
    """`statements` with `r = []` followed by `for ...: r.append(e)` (an `if` around the append
    allowed) written as `r = [e for ...]`."""
    result = []
    for statement in statements:
        built = result and appended_list(result[-1], statement)
        if built:
            result[-1] = built
        else:
            result.append(statement)
    return result


def returned(statements):
    """`statements` with `x = e` then `return x` written as `return e`."""
    if len(statements) < 2:
        return statements
    before, last = statements[-2:]
    if isinstance(last, ast.Return) and isinstance(last.value, ast.Name) and isinstance(before, ast.Assign) and \
            len(before.targets) == 1 and isinstance(before.targets[0], ast.Name) and \
            before.targets[0].id == last.value.id:
        return statements[:-2] + [ast.copy_location(ast.Return(before.value), before)]
    return statements


def appended_list(before, loop):
    """`r = [e for ...]` when `before` is `r = []` and `loop` appends to r alone, else None."""
    if not (isinstance(before, ast.Assign) and len(before.targets) == 1 and isinstance(before.targets[0], ast.Name)
            and isinstance(before.value, ast.List) and not before.value.elts):
        return None
    if not (isinstance(loop, ast.For) and not loop.orelse and len(loop.body) == 1):
        return None
    body, conditions = loop.body[0], []
    if isinstance(body, ast.If) and not body.orelse and len(body.body) == 1:
        conditions, body = [body.test], body.body[0]
    call = body.value if isinstance(body, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "append"
            and isinstance(call.func.value, ast.Name) and call.func.value.id == before.targets[0].id
            and len(call.args) == 1 and not call.keywords):
        return None
    comprehension = ast.comprehension(loop.target, loop.iter, conditions, 0)
    return ast.copy_location(ast.Assign(before.targets, ast.copy_location(ast.ListComp(call.args[0], [comprehension]),
                                                                         loop)), before)


def ordered_functions(tree, bound):
    """The module's statements with its functions sorted by their masked form (other statements
    keep their places)."""
    functions = [s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
    places = [i for i, s in enumerate(tree.body) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for place, function in zip(places, sorted(functions, key=lambda f: shape(f, bound))):
        tree.body[place] = function
    return tree


def syntax_tree(source):
    """The tree of `source`, read as IPython reads a cell where Python cannot (a line magic or a
    shell escape, which would otherwise keep a whole answer from being compared), or None when
    neither can read it (a half-written line)."""
    try:
        return parse(source)
    except SyntaxError:
        pass
    except (ValueError, RecursionError, MemoryError):
        return None
    try:
        from IPython.core.inputtransformer2 import TransformerManager  # the grade extra's; only these cells need it

        return parse(TransformerManager().transform_cell(source))
    except Exception:  # without IPython, or whatever it makes of a student's text: only not compared
        return None


def answer_tokens(source):
    """[(token, line)] of the answer `source` in one form, or [] when it does not parse (nothing
    to compare)."""
    tree = syntax_tree(source)
    if tree is None:
        return []
    bound = bound_names(tree)
    try:
        tree = ordered_functions(OneForm(bound).visit(tree), bound)
        return [(name, line) for name, line in tokens(tree, bound)[1:]]  # the Module node says nothing
    except RecursionError:  # nested beyond what the walk can rewrite
        return []
