"""This checkout beside another revision of it, for the benches that grade the same notebooks with
both: the command line they share, and the scratch folder with the two trees."""
import argparse
import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from bench.cpu import run
from tests.helpers import ROOT

HERE = "this checkout"


def arguments(doc, rounds, **more):
    """The parsed command line: --before REV, --rounds, --lab, and `more` ({option: default})."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--before", required=True, help="the revision to compare with (a commit, a tag, HEAD~1)")
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--lab", action="append", help="only these labs (default: every lab)")
    for option, default in more.items():
        parser.add_argument(f"--{option}", type=type(default), default=default)
    return parser.parse_args()


@contextmanager
def beside(rev):
    """(scratch folder, {name: tree}, secret file): this checkout and `rev` in a detached git worktree
    of the scratch folder, removed on leaving, and one course secret, so that both draw the same
    hidden inputs."""
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        trees = {HERE: ROOT, rev: scratch / "before"}
        secret = scratch / "secret"
        secret.write_bytes(os.urandom(32))
        subprocess.run(["git", "worktree", "add", "--detach", str(trees[rev]), rev], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            yield scratch, trees, secret
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(trees[rev])], cwd=ROOT, capture_output=True)


def grade_command(tree, *args):
    """bench.cpu's Measured of `tree`'s own `python -m autograder grade ARGS`."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(tree / "student")])}
    return run([sys.executable, "-m", "autograder", "grade", *args], cwd=tree, env=env)
