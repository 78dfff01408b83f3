"""What run_autograder runs on Gradescope for one submission: pick the notebook the student
uploaded, grade it with `python -m autograder grade` (the course's grader and sandbox, exactly as
for a class), and write Gradescope's results.json from our result, which already follows its
schema. Usage: python -m autograder.gradescope.run BASE (BASE is /autograder on Gradescope)."""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder.labs import course_labs
from autograder.results_store import atomic_write
from course.labs import ROOT

GRADESCOPE_KEYS = ("score", "execution_time", "output", "visibility", "tests")


def submitted_notebook(folder, lab_name):
    """The notebook to grade: the one named <lab>.ipynb, else the only one; None when there is none,
    or several and none of them has the lab's name."""
    found = sorted(p for p in Path(folder).rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    named = [path for path in found if path.name == f"{lab_name}.ipynb"]
    if len(named) == 1:
        return named[0]
    return found[0] if len(found) == 1 else None


def results_json(result):
    """Our result as results.json: the same score, tests and feedback. What Gradescope has no field
    for (the status, required and bonus points) moves to extra_data, and the grader's log is for
    the course staff: Gradescope shows it to them alone (stdout_visibility)."""
    extra = {**result["extra_data"], "status": result["status"], "max_score": result["max_score"]}
    return {**{key: result[key] for key in GRADESCOPE_KEYS}, "stdout_visibility": "hidden", "extra_data": extra}


def no_result(message, status):
    return {"score": 0, "output": message, "visibility": "visible", "stdout_visibility": "hidden", "tests": [],
            "extra_data": {"status": status}}


def grade_submission(base):
    (lab_name,) = course_labs()  # a bundle carries one lab
    notebook = submitted_notebook(base / "submission", lab_name)
    if notebook is None:
        uploaded = sorted(p.name for p in (base / "submission").rglob("*") if p.is_file())
        return no_result(f"Nothing to grade: upload your notebook, {lab_name}.ipynb (uploaded: "
                         f"{', '.join(uploaded) or 'nothing'}).", "no_notebook")
    with tempfile.TemporaryDirectory(prefix="gradescope-") as out:
        subprocess.run([sys.executable, "-m", "autograder", "grade", str(notebook), "--out", out, "--jobs", "1"],
                       cwd=ROOT, stdin=subprocess.DEVNULL, check=False)
        found = sorted(Path(out).glob("*/*.json"))  # <student>/<lab>.json
        if not found:
            return no_result("The grader failed before it could grade this notebook; the course staff can see why "
                             "in the autograder's log.", "grader_error")
        return results_json(json.loads(found[0].read_text(encoding="utf-8")))


def main(argv):
    base = Path(argv[1] if len(argv) > 1 else "/autograder")
    (base / "results").mkdir(parents=True, exist_ok=True)
    atomic_write(base / "results" / "results.json", json.dumps(grade_submission(base), indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
