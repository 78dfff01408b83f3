"""Mutation testing of a lab's hidden (and visible) checks: how many one-change slips of the
reference answers the checks catch.

    python -m autograder mutants --lab LAB [--activity A] [--visible] [--jobs N] [--limit N]
                                 [--sample N] [--seed S] [--out FILE.json] [--list]

Why a mutator of our own rather than mutmut or cosmic-ray: the code under mutation is not a
package's files but the instructor notebook's reference answers, one notebook cell per activity
(`lab.activities[a].reference.source`), and the "test suite" is the grader's hidden checks run on
a notebook in the sandbox, one activity at a time. Both tools mutate files on disk and judge a
mutant by running their own test runner (pytest and the like) over the package; feeding them a
cell would mean writing each cell out as a module, a runner that rebuilds the notebook around it
and a way to map their results back to activities, which is more than the mutator itself. The
mutator here is small: it parses each reference function with `ast`, makes one change at a time
and unparses the function, and the grader's own machinery (`catalogue.fingerprints_by_seed`)
grades it as it grades a catalogued mistake.

A mutant is ONE change to one function of an activity (see OPERATORS for the kinds). Mutants with
identical source are kept once; docstrings, string literals, f-strings, error messages and
`raise NotImplementedError` lines are never mutated. Each has a stable id,
``<activity>:<function>:L<line in the function>:<operator>:<digest of the change>``, so that an
equivalent mutant can be listed once in autograder/labs/<lab>/equivalent_mutants.toml with the
reason it is equivalent; survivors listed there count as "equivalent", the others as "surviving".
The run is a measure: it exits 0 whatever the score.
"""
import ast
import copy
import hashlib
import random
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

from autograder.diagnosis.case_tokens import PASSED
from autograder.diagnosis.matching import FINGERPRINT_SEEDS
from autograder.labs import HERE as LABS, course_labs
from autograder.labs.vocabulary import Mistake
from course.syntax import parse

DEFAULT_SEED = 101  # not a FINGERPRINT_SEED: the catalogue's fingerprints were never built on it
assert DEFAULT_SEED not in FINGERPRINT_SEEDS
EQUIVALENT = "equivalent_mutants.toml"
CHUNK = 4  # mutants per job graded in one call, so that one grader failure costs only its chunk

BINOPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.MatMult: ast.Mult,
          ast.Pow: ast.Mult, ast.FloorDiv: ast.Div, ast.Mod: ast.FloorDiv}
COMPARES = {ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Eq: ast.NotEq,
            ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}
SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.MatMult: "@", ast.Pow: "**",
           ast.FloorDiv: "//", ast.Mod: "%"}
# Swapped arguments here break the call or the object it builds on any input: every check catches
# them, so grading them measures nothing.
NO_SWAP = {"isinstance", "issubclass", "getattr", "hasattr", "setattr", "print", "Value", "Tensor"}
EXP_LOG = {"exp", "log", "log1p", "expm1"}
CLIP, ROUND = "np.clip({}, -500, 500)", "np.round({}, 8)"


@dataclass(frozen=True)
class Mutant:
    id: str
    activity: str
    function: str
    line: int  # in the function, its `def` being line 1
    operator: str
    description: str
    line_text: str  # the reference's line the change is on
    code: str  # the whole mutated function

    def mistake(self):
        return Mistake(self.activity, self.description, "", self.code)


# ---- the mutator --------------------------------------------------------------------------------

def _shown(node, width=70):
    text = ast.unparse(node).replace("\n", "; ")
    return text if len(text) <= width else text[:width - 1] + "…"


def _is_numeric(node):
    """Whether an expression is numeric by its look alone: arithmetic, a NumPy call or float().
    Wrapping anything else in np.clip would test types, not values."""
    if isinstance(node, (ast.BinOp, ast.UnaryOp)) and not isinstance(getattr(node, "op", None), ast.Not):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id in ("float", "abs", "sum", "max", "min")
        owner = getattr(func, "value", None)
        return isinstance(owner, ast.Name) and owner.id in ("np", "math")
    return False


def _guarded(template, expr):
    """`template` around `expr` for floats and arrays alone, each evaluated once: a result of
    another type (a Value, a Tensor) goes through as it was."""
    text = (f"({template.format('_m')} if isinstance(_m := ({ast.unparse(expr)}), (float, np.ndarray)) "
            f"else _m)")
    return parse(text, mode="eval").body


def _skipped(tree):
    """The ids of nodes no mutation may touch: docstrings, strings, f-strings and whatever a
    `raise` says (an error message, or the stub's NotImplementedError)."""
    skip = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            skip |= {id(n) for n in ast.walk(body[0])}
        if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            skip |= {id(n) for n in ast.walk(node)}
        if isinstance(node, ast.Raise):
            skip |= {id(n) for n in ast.walk(node) if n is not node}
            if _stub(node):
                skip.add(id(node))
    return skip


def _stub(node):
    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def _parents(tree):
    return {id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}


def _replace(parent, old, new):
    for name, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, name, new)
            return
        if isinstance(value, list) and any(v is old for v in value):
            value[next(i for i, v in enumerate(value) if v is old)] = new
            return
    raise LookupError("node not under its parent")


def _constants(value):
    """The values a numeric constant is mutated to."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [1] if value == 0 else [value - 1]  # one off-by-one is enough: the grading costs
    if isinstance(value, float):
        if value == 0.0:
            return [1.0]
        if abs(value) < 1e-4:  # an epsilon: without it, and a visible one
            return [0.0, 1e-6 if value != 1e-6 else 1e-3]
        return [0.0, value * 2]
    return []


def _edits(node, parent):
    """[(operator, line, before, after, apply)] for every single change at `node`; `apply(copy of
    node, copy of parent)` makes the change in a copy of the tree."""
    edits = []
    line = getattr(node, "lineno", getattr(parent, "lineno", 0))

    def replacing(operator, new):
        before, after = _in_context(node, parent, new) if isinstance(
            node, (ast.Constant, ast.UnaryOp, ast.Attribute)) else (_shown(node), _shown(new))
        edits.append((operator, line, before, after,
                      lambda n, p, made=new: _replace(p, n, copy.deepcopy(made) if isinstance(made, ast.AST)
                                                      else parse(made, mode="eval").body)))

    if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in BINOPS:
        swapped = BINOPS[type(node.op)]
        mutated = copy.deepcopy(node)
        mutated.op = swapped()
        name = f"{SYMBOLS[type(node.op)]}→{SYMBOLS[swapped]}"
        if isinstance(node, ast.AugAssign):
            edits.append((f"aug{name}", line, _shown(node), _shown(mutated),
                          lambda n, p, s=swapped: setattr(n, "op", s())))
        else:
            replacing(name, mutated)
    if isinstance(node, ast.AugAssign):
        plain = ast.Assign([copy.deepcopy(node.target)], copy.deepcopy(node.value), lineno=node.lineno)
        edits.append(("aug→assign", line, _shown(node), _shown(plain),
                      lambda n, p: _replace(p, n, ast.Assign([n.target], n.value, lineno=n.lineno))))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        replacing("drop-minus", node.operand)
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in COMPARES:
                mutated = copy.deepcopy(node)
                mutated.ops[i] = COMPARES[type(op)]()
                replacing("compare", mutated)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not (
            isinstance(parent, ast.keyword) and parent.arg in ("axis", "keepdims")):
        for value in _constants(node.value):
            replacing("bool" if isinstance(value, bool) else "constant", ast.Constant(value))
    if isinstance(node, ast.keyword) and node.arg == "axis":
        value = node.value
        targets = ["None"] if not (isinstance(value, ast.Constant) and value.value is None) else ["0"]
        if isinstance(value, ast.Constant) and isinstance(value.value, int) and not isinstance(value.value, bool):
            targets.insert(0, str(1 if value.value in (0, -1) else 0))
        for target in targets:
            edits.append(("axis", line, _shown(node), f"axis={target}",
                          lambda n, p, t=target: setattr(n, "value", parse(t, mode="eval").body)))
    if isinstance(node, ast.keyword) and node.arg == "keepdims" and isinstance(node.value, ast.Constant):
        flipped = not node.value.value
        edits.append(("keepdims", line, _shown(node), f"keepdims={flipped}",
                      lambda n, p, f=flipped: setattr(n, "value", ast.Constant(f))))
    if isinstance(node, ast.Call) and len(node.args) == 2 and not any(isinstance(a, ast.Starred) for a in node.args):
        callee = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        if callee not in NO_SWAP and ast.dump(node.args[0]) != ast.dump(node.args[1]):
            mutated = copy.deepcopy(node)
            mutated.args.reverse()
            replacing("swap-args", mutated)
    if isinstance(node, ast.Attribute) and node.attr == "T":
        replacing("drop-T", node.value)
    if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "transpose":
        if isinstance(node.func, ast.Attribute) and not node.args and not (
                isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "torch")):
            replacing("drop-T", node.func.value)
        elif node.args:
            replacing("drop-T", node.args[0])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in EXP_LOG \
            and isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "math") and node.args:
        mutated = copy.deepcopy(node)
        if node.func.attr in ("exp", "expm1"):  # the overflow guard a student adds
            mutated.args[0] = _guarded(CLIP, node.args[0])
            shown = copy.deepcopy(node)  # the guard that spares other types is left out of the description
            shown.args[0] = parse(CLIP.format(ast.unparse(node.args[0])), mode="eval").body
            edits.append(("clip-exp", line, _shown(node), _shown(shown),
                          lambda n, p, made=mutated: _replace(p, n, copy.deepcopy(made))))
        else:  # the epsilon a student adds against log(0)
            mutated.args[0] = ast.BinOp(copy.deepcopy(node.args[0]), ast.Add(), ast.Constant(1e-12))
            replacing("eps-log", mutated)
    if isinstance(node, ast.Return) and node.value is not None:
        results = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
        for index, result in enumerate(results):
            if not _is_numeric(result):
                continue
            for operator, template in (("clip-return", CLIP), ("round-return", ROUND)):
                def wrap(n, p, i=index, t=template):
                    if isinstance(n.value, ast.Tuple):
                        n.value.elts[i] = _guarded(t, n.value.elts[i])
                    else:
                        n.value = _guarded(t, n.value)
                edits.append((operator, line, _shown(result), template.format("…"), wrap))
            if not isinstance(result, ast.UnaryOp):
                edits.append(("add-minus", line, _shown(result), _shown(ast.UnaryOp(ast.USub(), result)),
                              lambda n, p, i=index: _negate(n, i)))
    if isinstance(node, ast.stmt) and isinstance(getattr(parent, "body", None), list) and not isinstance(
            node, (ast.FunctionDef, ast.Pass)) and not (isinstance(node, ast.Raise) and _stub(node)):
        # A function's final return dropped only returns None, which any check catches.
        last = isinstance(parent, ast.FunctionDef) and node is parent.body[-1]
        # The only statement of an inner block dropped is its block dropped, which the block's
        # own statement already is (`if c: raise E` → `if c: pass` is dropping the if).
        alone = not isinstance(parent, ast.FunctionDef) and len(_body_of(parent, node)) == 1
        if not (isinstance(node, ast.Return) and last) and not _binds_new_names(node) and not alone:
            edits.append(("drop", line, _headline(node), "(dropped)", _drop))
        if _repeatable(node):
            edits.append(("duplicate", line, _headline(node), "(run twice)", _duplicate))
    return edits


def _headline(statement):
    """A statement as one line: a compound one by its header."""
    lines = ast.unparse(statement).splitlines()
    text = lines[0] + (" …" if len(lines) > 1 else "")
    return text if len(text) <= 70 else text[:69] + "…"


def _binds_new_names(statement):
    """Whether a statement only binds plain names and reads none of them: dropping it leaves a
    NameError on the next line, a mutant every check catches and none measures."""
    if not isinstance(statement, ast.Assign) or _repeatable(statement):
        return False
    return all(isinstance(t, ast.Name) or (isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts))
               for t in statement.targets)


def _in_context(node, parent, new):
    """(before, after) of replacing `node` by `new`, shown within its parent expression: `1` → `0`
    says little, `a.ndim == 1` → `a.ndim == 0` says where."""
    if not isinstance(parent, ast.expr):
        return _shown(node), _shown(new)
    mutated = copy.deepcopy(parent)
    site = next(m for o, m in zip(ast.walk(parent), ast.walk(mutated)) if o is node)
    _replace(_parents(mutated).get(id(site), mutated), site, copy.deepcopy(new))
    return _shown(parent), _shown(mutated)


def _negate(node, index):
    if isinstance(node.value, ast.Tuple):
        node.value.elts[index] = ast.UnaryOp(ast.USub(), node.value.elts[index])
    else:
        node.value = ast.UnaryOp(ast.USub(), node.value)


def _repeatable(node):
    """Whether running a statement twice can change anything: an augmented assignment, a call
    for its effect, or an assignment that reads what it writes (x = x.sum(...))."""
    if isinstance(node, (ast.AugAssign, ast.Expr)):
        return not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
    if isinstance(node, ast.Assign):
        written = {ast.dump(t) for target in node.targets for t in ast.walk(target) if isinstance(t, ast.Name)}
        return any(ast.dump(ast.Name(n.id, ast.Store())) in written
                   for n in ast.walk(node.value) if isinstance(n, ast.Name))
    return False


def _body_of(parent, node):
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list) and any(s is node for s in block):
            return block
    raise LookupError("statement not in a block of its parent")


def _drop(node, parent):
    block = _body_of(parent, node)
    block.remove(node)
    if not block:
        block.append(ast.Pass())


def _duplicate(node, parent):
    block = _body_of(parent, node)
    block.insert(block.index(node), copy.deepcopy(node))


def _sites(tree, skip):
    return [node for node in ast.walk(tree) if id(node) not in skip]


def function_mutants(activity, function, source):
    """The Mutants of one top-level function, whose source (decorators included) is `source`."""
    tree = parse(source).body[0]
    original = ast.unparse(tree)
    parents = _parents(tree)
    skip = _skipped(tree)
    made, seen, taken = [], {original}, set()
    lines = source.splitlines()
    for index, node in enumerate(_sites(tree, skip)):
        parent = parents.get(id(node), tree)
        for operator, line, before, after, apply in _edits(node, parent):
            mutated = copy.deepcopy(tree)
            site = _sites(mutated, _skipped_like(tree, mutated, skip))[index]
            apply(site, _parents(mutated).get(id(site), mutated))
            try:
                code = ast.unparse(ast.fix_missing_locations(mutated))
                compile(code, f"<mutant of {function}>", "exec")
            except (SyntaxError, ValueError, TypeError):
                continue
            if code in seen:
                continue
            seen.add(code)
            number = line - tree.lineno + 1
            change = f"{before} → {after}"
            digest = hashlib.sha256(f"{operator}\n{change}".encode()).hexdigest()[:6]
            key = f"{activity}:{function}:L{number}:{operator}:{digest}"
            suffix = 2
            while key in taken:  # the same change twice on one line
                key = f"{activity}:{function}:L{number}:{operator}:{digest}-{suffix}"
                suffix += 1
            taken.add(key)
            text = lines[line - tree.lineno].strip() if 0 <= line - tree.lineno < len(lines) else ""
            made.append(Mutant(key, activity, function, number, operator,
                               f"line {number} of {function}: {_described(node, parents, before, after)}", text,
                               code + "\n"))
    return made


def _described(node, parents, before, after):
    """The change as the report says it: a default value by its parameter's name, since `False`
    → `True` alone does not say which (the id keeps the bare change, so that it stays put)."""
    parent = parents.get(id(node))
    while isinstance(parent, ast.expr):  # a constant inside a default such as (0.9, 0.999)
        node, parent = parent, parents.get(id(parent))
    if isinstance(parent, ast.arguments):
        positional = parent.posonlyargs + parent.args
        named = dict(zip(positional[len(positional) - len(parent.defaults):], parent.defaults))
        named.update((a, d) for a, d in zip(parent.kwonlyargs, parent.kw_defaults) if d is not None)
        name = next((a.arg for a, d in named.items() if d is node), None)
        if name:
            return f"the default `{name}={before}` → `{name}={after}`"
    return f"`{before}` → `{after}`"


def _skipped_like(tree, mutated, skip):
    """`skip` carried over to a deep copy of `tree`, node for node."""
    return {id(m) for o, m in zip(ast.walk(tree), ast.walk(mutated)) if id(o) in skip}


def lab_mutants(lab, activities=None):
    """Every Mutant of the reference functions of `lab`'s activities (default: all), in order."""
    made = []
    for activity in lab.activities.values():
        if activities and activity.id not in activities:
            continue
        source = activity.reference.source
        lines = source.splitlines()
        for node in parse(source).body:
            if isinstance(node, ast.FunctionDef) and node.name in activity.functions:
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                made += function_mutants(activity.id, node.name, "\n".join(lines[first - 1:node.end_lineno]) + "\n")
    return made


def sample(mutants, count, seed):
    """`count` of `mutants` drawn with `seed`, in their order: the same for the same inputs."""
    if count >= len(mutants):
        return list(mutants)
    chosen = set(random.Random(seed).sample(range(len(mutants)), count))
    return [m for i, m in enumerate(mutants) if i in chosen]


# ---- equivalent mutants ------------------------------------------------------------------------

def equivalents_path(lab_name):
    return LABS / lab_name / EQUIVALENT


def equivalents(lab_name, path=None):
    """({mutant id: why}, [problems]) from the lab's equivalent_mutants.toml (or `path`); an entry
    without a reason is a problem and does not count."""
    path = path or equivalents_path(lab_name)
    if not path.is_file():
        return {}, [f"{path.name} is missing"]
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        return {}, [f"{path.name} is not valid TOML: {error}"]
    listed, problems = {}, []
    for key, entry in data.items():
        why = entry.get("why") if isinstance(entry, dict) else None
        if isinstance(why, str) and why.strip():
            listed[key] = why.strip()
        else:
            problems.append(f"{path.name}: [\"{key}\"] needs a non-empty why = \"...\"")
    return listed, problems


# ---- grading -----------------------------------------------------------------------------------

@dataclass
class Verdict:
    mutant: Mutant
    hidden: bool | None = None  # caught by the hidden checks; None when grading failed
    fingerprint: tuple = ()
    visible: bool | None = None
    visible_message: str = ""
    error: str = ""
    status: str = field(default="")


def grade_mutants(lab_name, mutants, options, jobs, seed=DEFAULT_SEED, visible=False, progress=None):
    """A Verdict per mutant: its activity judged by the hidden checks on `seed` (the reference
    engine for every other activity), and by its visible check when `visible`."""
    from autograder.measuring.catalogue import fingerprints_by_seed, patched, visible_verdict

    lab = course_labs()[lab_name]
    verdicts = [Verdict(m) for m in mutants]
    step = CHUNK * jobs
    for start in range(0, len(verdicts), step):
        chunk = verdicts[start:start + step]
        try:
            runs = fingerprints_by_seed(lab_name, [v.mutant.mistake() for v in chunk], (seed,), options, jobs)
        except Exception:  # one mutant's grader failure: grade the chunk one by one to find it
            runs = []
            for verdict in chunk:
                try:
                    runs += fingerprints_by_seed(lab_name, [verdict.mutant.mistake()], (seed,), options, 1)
                except Exception as error:
                    verdict.error = f"{type(error).__name__}: {error}"
                    runs.append(None)
        for verdict, outcomes in zip(chunk, runs):
            if outcomes is not None:
                verdict.fingerprint = tuple(outcomes[0].fingerprint)
                verdict.hidden = any(token != PASSED for token in verdict.fingerprint)
        if progress:
            progress(min(start + step, len(verdicts)), len(verdicts), "hidden checks of")
    if visible:
        def seen(verdict):
            answer = patched(lab.activities[verdict.mutant.activity].reference.source, verdict.mutant.code)
            try:
                return visible_verdict(lab, verdict.mutant.activity, answer, options)
            except Exception as error:
                return None, f"could not run: {type(error).__name__}: {error}"

        with ThreadPoolExecutor(max_workers=jobs) as threads:
            for done, (verdict, (caught, message)) in enumerate(zip(verdicts, threads.map(seen, verdicts)), 1):
                verdict.visible, verdict.visible_message = caught, message
                if progress and (done % step == 0 or done == len(verdicts)):
                    progress(done, len(verdicts), "visible checks of")
    return verdicts


def classify(verdicts, listed):
    for verdict in verdicts:
        if verdict.hidden:
            verdict.status = "caught"
        elif verdict.hidden is None:
            verdict.status = "error"
        else:
            verdict.status = "equivalent" if verdict.mutant.id in listed else "surviving"
    return verdicts


def summary(lab_name, verdicts, seed, visible, listed, problems, seconds, generated):
    rows = {}
    for verdict in verdicts:
        row = rows.setdefault(verdict.mutant.activity, {"mutants": 0, "hidden_caught": 0, "visible_caught": 0,
                                                        "equivalent": 0, "surviving": 0, "errors": 0})
        row["mutants"] += 1
        row["hidden_caught"] += verdict.status == "caught"
        row["visible_caught"] += bool(verdict.visible)
        row["equivalent"] += verdict.status == "equivalent"
        row["surviving"] += verdict.status == "surviving"
        row["errors"] += verdict.status == "error"
    total = {key: sum(row[key] for row in rows.values())
             for key in ("mutants", "hidden_caught", "visible_caught", "equivalent", "surviving", "errors")}
    for row in (*rows.values(), total):
        judged = row["mutants"] - row["equivalent"] - row["errors"]
        row["hidden_score"] = round(row["hidden_caught"] / judged, 4) if judged else None
        row["visible_score"] = round(row["visible_caught"] / judged, 4) if judged and visible else None
        if not visible:
            row["visible_caught"] = None
    ids = {v.mutant.id for v in verdicts}
    return {
        "lab": lab_name, "seed": seed, "visible": visible, "generated": generated, "graded": len(verdicts),
        "seconds": round(seconds, 1), "activities": rows, "total": total,
        "equivalents_problems": problems,
        # Only the activities this run made mutants of: --activity leaves the others' entries unchecked.
        "stale_equivalents": sorted(key for key in listed if key not in ids and key.split(":")[0] in rows)
        if len(verdicts) == generated else [],
        "mutants": [{**asdict(v.mutant), "status": v.status, "hidden_caught": v.hidden,
                     "fingerprint": list(v.fingerprint), "visible_caught": v.visible,
                     "visible_message": v.visible_message, "error": v.error,
                     "why_equivalent": listed.get(v.mutant.id, "")} for v in verdicts],
    }


def render(report):
    visible = report["visible"]
    out = [f"== {report['lab']}: {report['graded']} of {report['generated']} mutants graded on seed "
           f"{report['seed']} in {report['seconds']} s"]
    header = f"{'activity':<10}{'mutants':>8}{'hidden':>8}" + (f"{'visible':>9}" if visible else "") + \
             f"{'equiv':>7}{'surviving':>11}{'errors':>8}{'score':>8}" + (f"{'vis.score':>11}" if visible else "")
    out.append(header)

    def row(name, r):
        score = "-" if r["hidden_score"] is None else f"{r['hidden_score']:.1%}"
        line = f"{name:<10}{r['mutants']:>8}{r['hidden_caught']:>8}"
        if visible:
            line += f"{r['visible_caught']:>9}"
        line += f"{r['equivalent']:>7}{r['surviving']:>11}{r['errors']:>8}{score:>8}"
        if visible:
            line += f"{'-' if r['visible_score'] is None else format(r['visible_score'], '.1%'):>11}"
        return line

    for activity, r in report["activities"].items():
        out.append(row(activity, r))
    out.append(row("total", report["total"]))
    out.append("mutation score = caught by the hidden checks / (mutants - equivalent - errors)")
    for problem in report["equivalents_problems"]:
        out.append(f"warning: {problem}")
    for key in report["stale_equivalents"]:
        out.append(f"warning: {EQUIVALENT} lists {key}, which is no longer a mutant")
    for kind in ("surviving", "equivalent", "error"):
        chosen = [m for m in report["mutants"] if m["status"] == kind]
        if not chosen:
            continue
        out.append(f"\n{kind} ({len(chosen)}):")
        for m in chosen:
            out.append(f"  {m['id']}\n      {m['description']}\n      line: {m['line_text']}")
            if kind == "equivalent":
                out.append(f"      why: {m['why_equivalent']}")
            if kind == "error":
                out.append(f"      error: {m['error']}")
            if visible:
                out.append(f"      visible check: {'caught' if m['visible_caught'] else 'passed'}: "
                           f"{m['visible_message'][:200]}")
    return "\n".join(out) + "\n"
