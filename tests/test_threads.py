"""The grader grades in threads (a run's --jobs, a Dask worker's tasks), and CPython 3.11's
ast.parse is not safe to call from two threads at once (course/syntax.py): a race under load
turned submissions into grader_errors, twice. Every parse in the grader's own process, its
libraries' included, takes one lock."""
import ast
import json
import shutil
import subprocess
import sys

import pytest

from tests.helpers import LABS, ROOT, lab_notebook

# Code that runs in a process of its own with one thread.
ONE_THREAD = {"autograder/isolation/worker.py", "autograder/isolation/zygote.py", "course/syntax.py"}

# A grading run in a process of its own, every syntax tree it builds outside its main thread
# noted with whether the lock was held: ast.parse builds one through compile(), whoever calls it.
# The grader imports course.syntax itself, as it does when run as a command.
WATCHED_RUN = """
import ast, builtins, json, sys, threading, traceback
from autograder.__main__ import main

seen = {"locked": 0, "unlocked": []}
plain_compile = builtins.compile


def compile(source, filename, mode, flags=0, *args, **kwargs):
    if flags & ast.PyCF_ONLY_AST and threading.current_thread() is not threading.main_thread():
        syntax = sys.modules.get("course.syntax")  # as the grader itself imported it, or not yet
        if syntax is not None and syntax._ONE_AT_A_TIME._is_owned():
            seen["locked"] += 1
        else:
            seen["unlocked"].append(" <- ".join(f"{frame.filename}:{frame.lineno}"
                                                for frame in traceback.extract_stack()[-4:-1][::-1]))
    return plain_compile(source, filename, mode, flags, *args, **kwargs)


builtins.compile = compile
status = main(["grade", sys.argv[1], "--out", sys.argv[2], "--jobs", "2", "--no-gradebook"])
print(json.dumps({"status": status, **seen}))
"""


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


@pytest.mark.slow
def test_every_syntax_tree_a_grading_thread_builds_is_built_under_the_lock(solved_dir, tmp_path):
    """The grader's own parses, and those of what it calls in its threads: PyTorch parsing its
    source as it is imported there, `inspect` reading a builtin's signature, a zygote's first
    start reading the labs' imports. A class of each lab's solved notebook, graded with --jobs 2
    in a fresh process, so that all of these happen in grading threads."""
    folder = tmp_path / "class"
    folder.mkdir()
    for lab in LABS:
        shutil.copy(lab_notebook(solved_dir, lab), folder / f"{lab.name}.ipynb")
    run = subprocess.run([sys.executable, "-c", WATCHED_RUN, str(folder), str(tmp_path / "out")], cwd=ROOT,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["status"] == 0, run.stdout
    assert seen["locked"] > 0, "no grading thread parsed anything: the run did not test what it should"
    assert seen["unlocked"] == [], "syntax trees built in a grading thread without the lock: " + str(seen["unlocked"])
