"""Another revision of this repository, checked out beside it for as long as a bench compares the two."""
import subprocess
from contextlib import contextmanager

from tests.helpers import ROOT


@contextmanager
def checked_out(rev, folder):
    """`rev` in a detached git worktree at `folder`, removed again on leaving."""
    subprocess.run(["git", "worktree", "add", "--detach", str(folder), rev], cwd=ROOT, check=True, capture_output=True)
    try:
        yield folder
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(folder)], cwd=ROOT, capture_output=True)
