"""The grader grades in threads (a run's --jobs, a Dask worker's tasks), and CPython 3.11's
ast.parse is not safe to call from two threads at once (course/syntax.py): a race under load
once turned a submission into a grader_error. Every parse in the grader's own process goes
through course.syntax.parse, which takes one lock."""
import ast

from tests.helpers import ROOT

# Code that runs in a process of its own with one thread, or before any thread starts.
ONE_THREAD = {"autograder/isolation/worker.py", "autograder/isolation/zygote.py", "autograder/isolation/warm.py", "course/syntax.py"}


def test_the_grader_parses_code_only_through_the_lock():
    direct = []
    for path in sorted([*ROOT.glob("autograder/**/*.py"), *ROOT.glob("course/*.py")]):
        name = path.relative_to(ROOT).as_posix()
        if name in ONE_THREAD:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("parse", "literal_eval") and \
                    isinstance(node.value, ast.Name) and node.value.id == "ast":
                direct.append(f"{name}:{node.lineno}")
    assert direct == [], "use course.syntax.parse instead of ast.parse in " + ", ".join(direct)
