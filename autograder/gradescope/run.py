"""What run_autograder runs on Gradescope for one submission: pick the notebook the student
uploaded, grade it with `python -m autograder grade` (the course's grader and sandbox, exactly as
for a class, less the gradebook that one submission has no use for), and write Gradescope's
results.json from our result, which already follows its schema. Usage: python -m
autograder.gradescope.run BASE (BASE is /autograder on Gradescope).

Gradescope runs this as root, in a container where bubblewrap may not be able to make its
sandbox. The grader then runs the submission as the user nobody, and this run first closes to
every user but root what a submission must not read: the bundle (reference solutions, the course
secret), the installed grader (each lab's hidden checks) and the results."""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder.grading.submission import SubmissionError, read_submission
from autograder.isolation.sandbox import GRADER_PACKAGES, choose_sandbox, hidden_paths
from autograder.labs import course_labs
from autograder.records.report import title_text
from autograder.records.results_store import atomic_write
from course.labs import ROOT

GRADESCOPE_KEYS = ("score", "execution_time", "output", "visibility")


def keep_private(base):
    """Make the bundle, the results and the grader's packages as this environment installed them
    (a checkout's are left alone) readable by root alone."""
    installed = [Path(path) for path in hidden_paths(GRADER_PACKAGES) if Path(path).is_relative_to(sys.prefix)]
    for path in (base / "source", base / "results", *installed):
        path.chmod(0o700 if path.is_dir() else 0o600)


def submitted_notebook(folder, lab_name):
    """(the notebook to grade, the other copies of it not graded). The lab's notebook is the one
    named <lab>.ipynb; uploaded more than once (at the top and in a folder, say), the one nearest
    the top of the upload is graded, of those equally near the first in sorted order. With none
    of that name, the only notebook uploaded is; with none, or several of other names, nothing
    (None, [])."""
    found = sorted(p for p in Path(folder).rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    named = sorted((path for path in found if path.name == f"{lab_name}.ipynb"),
                   key=lambda path: (len(path.relative_to(folder).parts), str(path)))
    if named:
        return named[0], named[1:]
    return (found[0], []) if len(found) == 1 else (None, [])


def not_graded(graded, others, folder):
    """The line of the feedback that says which copy of the notebook was graded."""
    shown = ", ".join(str(path.relative_to(folder)) for path in others)
    return (f"{graded.name} was uploaded more than once: {graded.relative_to(folder)}, the one nearest the top of "
            f"the upload, was graded, and not {shown}.")


def results_json(result, lab, protection):
    """Our result as results.json: the same score, tests and feedback, each test named as `lab`'s
    heading announces its activity, "1a · VJPs of ...", in plain text (Gradescope shows a test's
    name as it is: "2 · topological_order and backward", no backticks; the id stays in the test's
    extra_data).
    What Gradescope has no field for (the status, required and bonus points, the protection the
    submission ran under) goes to extra_data, and the grader's log is for the course staff:
    Gradescope shows it to them alone (stdout_visibility)."""
    named = {activity.id: title_text(activity.name) for activity in lab.activities.values()}
    tests = [{**test, "name": named.get(test["name"], test["name"]),
              "extra_data": {**test.get("extra_data", {}), "activity": test["name"]}} for test in result["tests"]]
    extra = {**result["extra_data"], "status": result["status"], "max_score": result["max_score"],
             "protection": str(protection)}
    return {**{key: result[key] for key in GRADESCOPE_KEYS}, "tests": tests, "stdout_visibility": "hidden",
            "extra_data": extra}


def no_result(message, status):
    return {"score": 0, "output": message, "visibility": "visible", "stdout_visibility": "hidden", "tests": [],
            "extra_data": {"status": status}}


def grade_submission(base):
    (lab_name,) = course_labs()  # a bundle carries one lab
    notebook, others = submitted_notebook(base / "submission", lab_name)
    if notebook is None:
        uploaded = sorted(p.name for p in (base / "submission").rglob("*") if p.is_file())
        return no_result(f"Nothing to grade: upload your notebook, {lab_name}.ipynb (uploaded: "
                         f"{', '.join(uploaded) or 'nothing'}).", "no_notebook")
    # Chosen here and passed on, so that the line in the staff's log is what the grading had.
    protection = choose_sandbox("auto")
    print(f"autograder: the submission runs with protection: {protection}", flush=True)
    with tempfile.TemporaryDirectory(prefix="gradescope-") as out, \
            tempfile.TemporaryDirectory(prefix="gradescope-upload-") as alone:
        # The upload's folders are the student's: one named `submitted` would make the grader read
        # the path as nbgrader's layout. The notebook's bytes are graded from a folder of ours,
        # read as any submission is (never through a link, a pipe or a device).
        try:
            graded = Path(alone) / notebook.name
            graded.write_bytes(read_submission(notebook))
        except SubmissionError as error:
            return no_result(f"{notebook.relative_to(base / 'submission')} could not be graded: {error}", error.kind)
        subprocess.run([sys.executable, "-I", "-m", "autograder", "grade", str(graded), "--out", out, "--jobs", "1",
                        "--no-gradebook", "--sandbox", protection.value], cwd=ROOT, stdin=subprocess.DEVNULL,
                       check=False)
        found = sorted(Path(out).glob("*/*.json"))  # <student>/<lab>.json
        if found:
            results = results_json(json.loads(found[0].read_text(encoding="utf-8")), course_labs()[lab_name],
                                   protection)
        else:
            results = no_result("The grader failed before it could grade this notebook; the course staff can see "
                                "why in the autograder's log.", "grader_error")
    if others:
        results["output"] = not_graded(notebook, others, base / "submission") + "\n" + results["output"]
    return results


def main(argv):
    base = Path(argv[1] if len(argv) > 1 else "/autograder")
    (base / "results").mkdir(parents=True, exist_ok=True)
    keep_private(base)
    atomic_write(base / "results" / "results.json", json.dumps(grade_submission(base), indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
