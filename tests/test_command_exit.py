"""`python -m autograder` ends without the interpreter's teardown (autograder/__main__.py `run`):
what it says, its exit status and its clean-up are those of a normal exit."""
import os
import subprocess
import sys

from tests.helpers import ROOT, grade_command


def command(args, tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir(exist_ok=True)
    environment = {key: value for key, value in os.environ.items() if key != "TORCHINDUCTOR_CACHE_DIR"}
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**environment, "TMPDIR": str(scratch)}), scratch


def test_a_run_that_ends_early_leaves_its_folders_removed_and_its_words_said(tmp_path):
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{ this is not JSON")
    done, scratch = command(grade_command(broken, "--out", tmp_path / "out", "--no-gradebook"), tmp_path)
    assert done.returncode == 0, done.stderr
    assert "statuses: invalid_notebook 1" in done.stdout, done.stdout  # flushed before the process ended
    assert list(scratch.iterdir()) == [], "the run's scratch folders (removed at exit) are left behind"
    assert (tmp_path / "out" / "broken").is_dir()


def test_a_refused_command_says_why_with_status_1_and_bad_arguments_get_2(tmp_path):
    missing, _ = command(grade_command(tmp_path / "nowhere.ipynb", "--out", tmp_path / "out"), tmp_path)
    assert missing.returncode == 1 and "no such file or folder" in missing.stderr, missing.stderr
    usage, _ = command([sys.executable, "-m", "autograder", "grade"], tmp_path)
    assert usage.returncode == 2 and "the following arguments are required" in usage.stderr, usage.stderr
