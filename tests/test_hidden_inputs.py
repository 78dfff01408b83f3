"""Hidden inputs differ per submission: a notebook's cases are drawn from HMAC(course secret,
its SHA-256), so that inputs one submission collects (here, leaked into its own feedback) say
nothing about another's, while the same bytes get the same grade wherever the same secret
grades them. For every lab and several random seeds, the reference passes every hidden check
and a catalogued mistake of each activity fails."""
import copy
import importlib
import json
import random
import re
import secrets
import shutil
import subprocess
import threading
from dataclasses import replace
from concurrent.futures import ThreadPoolExecutor

import nbformat
import numpy as np
import pytest

from autograder.grading.grade import Options
from autograder.grading.roster import Submission
import autograder.grading.secret as secret_module
from autograder.grading.secret import course_secret, secret_version, submission_seed
from autograder.isolation.sandbox import Limits
from autograder.labs import grading_for
from autograder.labs.notebooks import solved_notebook, student_notebook
from autograder.measuring.catalogue import outcomes_by_seed, patched
from autograder.records.results_store import notebook_digest, plan, provenance
from tests.helpers import LABS, ROOT, comparable, grade_command, results_in
from tests.submissions import save, with_answer

SEEDS = [random.getrandbits(64) for _ in range(2)]  # new ones every run; a failure names them
OPTIONS = Options(Limits(cell_seconds=30))


def leaves(value, path=()):
    """(path, leaf) pairs of a case's arguments, nested dicts, lists and tuples unfolded."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, path + (key,))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from leaves(item, path + (index,))
    else:
        yield path, value


def structure_and_numbers(args):
    """(structure, numbers) of a case's arguments: the structure is every leaf's place, type and
    shape, with the numbers written into texts (a constant in an expression) masked; the numbers
    are every floating-point value, flattened, and the seeds a probe draws its input from."""
    structure, numbers = [], []
    for path, leaf in leaves(args):
        if isinstance(leaf, np.ndarray):
            structure.append((path, leaf.dtype.str, leaf.shape))
            numbers += leaf.ravel().tolist() if leaf.dtype.kind in "fiu" else []
        elif isinstance(leaf, (float, np.floating)):
            structure.append((path, "float"))
            numbers.append(float(leaf))
        elif isinstance(leaf, str):
            structure.append((path, re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "#", leaf)))
        elif path and path[-1] == "seed" and isinstance(leaf, int):  # a probe drawing its own large input
            structure.append((path, "seed"))
            numbers.append(float(leaf))
        else:
            structure.append((path, leaf))
    return structure, numbers


def notebook_bytes(lab):
    return (ROOT / "release" / lab.name / f"{lab.name}.ipynb").read_bytes()


def test_two_notebooks_get_inputs_of_the_same_structure_and_other_values(lab):
    """One byte more in a notebook gives other values in most cases of every activity that draws
    numbers at all (the rest hold values that make their class: a root that is its own leaf, a
    dual number at 0; tensor_engine's to_dot draws none, its answers are the submission's own
    node ids); what the cases are, their probes and shapes, stays."""
    secret = secrets.token_bytes(32)
    first, second = (submission_seed(secret, data) for data in (notebook_bytes(lab), notebook_bytes(lab) + b"\n"))
    assert first != second
    ours, theirs = grading_for(lab.name, first).cases, grading_for(lab.name, second).cases
    assert list(ours) == list(theirs) == list(lab.activities)
    for activity in lab.activities:
        assert [case.probe for case in ours[activity]] == [case.probe for case in theirs[activity]]
        drawing = differing = 0
        for mine, other in zip(ours[activity], theirs[activity], strict=True):
            (structure, numbers), (other_structure, other_numbers) = map(structure_and_numbers, (mine.args, other.args))
            assert structure == other_structure, f"{lab.name} {activity}: {mine.title} changed its structure"
            drawing += bool(numbers)
            differing += numbers != other_numbers
        assert differing > drawing / 2 or not drawing, \
            f"{lab.name} {activity}: {differing} of {drawing} cases drew other values"


def test_the_same_seed_draws_the_same_inputs(lab):
    seed = SEEDS[0]
    again = importlib.import_module(f"autograder.labs.{lab.name}.cases").cases(seed)
    for activity, cases in grading_for(lab.name, seed).cases.items():
        for case, repeated in zip(cases, again[activity], strict=True):
            assert structure_and_numbers(case.args) == structure_and_numbers(repeated.args), case.title


def test_the_seed_depends_on_every_byte_and_on_the_secret():
    secret, data = secrets.token_bytes(32), notebook_bytes(LABS[0])
    seed = submission_seed(secret, data)
    assert 0 <= seed < 2 ** 64 and seed == submission_seed(secret, bytes(data))
    assert seed != submission_seed(secret, data[:-1] + bytes([data[-1] ^ 1]))
    assert seed != submission_seed(secrets.token_bytes(32), data)


def test_the_secret_comes_from_the_file_given_then_the_environment_then_the_course_root(tmp_path, monkeypatch):
    default = tmp_path / "root" / ".autograder-secret"
    default.parent.mkdir()
    monkeypatch.setattr(secret_module, "SECRET_FILE", default)
    monkeypatch.delenv(secret_module.ENVIRONMENT, raising=False)
    made = course_secret()
    assert len(made) == secret_module.NEW_SECRET_BYTES and default.read_bytes() == made
    assert default.stat().st_mode & 0o777 == 0o600 and course_secret() == made
    monkeypatch.setenv(secret_module.ENVIRONMENT, "a passphrase of the course staff")
    assert course_secret() == b"a passphrase of the course staff"
    given = tmp_path / "given"
    given.write_bytes(secrets.token_bytes(20))
    assert course_secret(given) == given.read_bytes()


def test_threads_that_need_the_secret_first_all_get_the_one_made(tmp_path, monkeypatch):
    """A fresh checkout's first batch: its grading threads (one PID) ask for the secret at once."""
    monkeypatch.delenv(secret_module.ENVIRONMENT, raising=False)
    start = threading.Barrier(16)

    def ask(_):
        start.wait()
        return course_secret()

    for attempt in range(20):  # the race is lost only now and then
        folder = tmp_path / str(attempt)
        folder.mkdir()
        monkeypatch.setattr(secret_module, "SECRET_FILE", folder / ".autograder-secret")
        with ThreadPoolExecutor(max_workers=16) as threads:
            got = set(threads.map(ask, range(16)))
        assert got == {secret_module.SECRET_FILE.read_bytes()}
        assert [p.name for p in folder.iterdir()] == [".autograder-secret"]


def test_a_secret_that_is_missing_or_short_is_refused_by_name(tmp_path, monkeypatch):
    with pytest.raises(SystemExit, match=f"cannot read the secret file {tmp_path / 'absent'}"):
        course_secret(tmp_path / "absent")
    short = tmp_path / "short"
    short.write_bytes(b"guessable")
    with pytest.raises(SystemExit, match=f"the secret file {short} holds 9 bytes; .* at least "
                                         f"{secret_module.MIN_SECRET_BYTES}"):
        course_secret(short)
    monkeypatch.setenv(secret_module.ENVIRONMENT, "short")
    with pytest.raises(SystemExit, match=f"the environment variable {secret_module.ENVIRONMENT} holds 5 bytes"):
        course_secret()


def test_a_result_of_another_secret_is_stale(tmp_path):
    old, new = secrets.token_bytes(32), secrets.token_bytes(32)
    notebook = tmp_path / "student.ipynb"
    notebook.write_bytes(notebook_bytes(LABS[0]))
    result = {"extra_data": {"student": "student", "lab": LABS[0].name}}
    digest = notebook_digest(notebook)
    result["extra_data"].update(provenance(result, digest, old))
    (tmp_path / "student").mkdir()
    (tmp_path / "student" / f"{LABS[0].name}.json").write_text(json.dumps(result))
    assert result["extra_data"]["secret_version"] == secret_version(old) != secret_version(new)
    assert old.hex() not in json.dumps(result)
    submission = Submission("student", LABS[0].name, notebook)
    assert plan([submission], tmp_path, old) == ([], [(submission, result)])
    assert plan([submission], tmp_path, new) == ([(submission, digest)], [])


# ------------------------------------------------------------------ a submission that leaks its inputs
def leaking(lab):
    """The solved notebook with the first activity's functions replaced by ones that raise a
    ValueError holding the numbers they were given: Python's own exceptions carry their message
    into the feedback, so this is how a student would collect the hidden inputs."""
    activity = next(iter(lab.activities.values()))
    numbers = "[a.tolist() if hasattr(a, 'tolist') else getattr(a, 'data', a) for a in args]"
    code = "\n".join(f"def {name}(*args):\n    raise ValueError(repr({numbers}))\n" for name in activity.functions)
    solved = solved_notebook(lab, student_notebook(lab))
    return activity.id, with_answer(solved, activity.id, patched(activity.reference.source, code))


@pytest.fixture(scope="module")
def leaks(tmp_path_factory):
    """A folder with the leaking notebook of the first lab and a copy of it one markdown cell
    longer, and two course secrets: (folder, the first activity, {name: secret file})."""
    lab = LABS[0]
    folder = tmp_path_factory.mktemp("leaks")
    activity, notebook = leaking(lab)
    submitted = folder / "batch"  # a plain folder, whose files' stems name the students
    submitted.mkdir()
    save(notebook, submitted, "leaky")
    longer = copy.deepcopy(notebook)
    longer.cells.append(nbformat.v4.new_markdown_cell("I added a note.", id="my-note"))
    save(longer, submitted, "leaky-copy")
    keys = {}
    for name in ("first", "second"):
        keys[name] = folder / f"{name}.secret"
        keys[name].write_bytes(secrets.token_bytes(32))
    return submitted, activity, keys


def graded(submitted, out, key, *options):
    run = subprocess.run(grade_command(submitted, "--out", out, "--secret-file", key, *options), cwd=ROOT,
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


@pytest.fixture(scope="module")
def with_first_secret(leaks, tmp_path_factory):
    """The leaks graded with the first secret, --jobs 1 and --jobs 2: {jobs: results folder}."""
    submitted, _, keys = leaks
    outs = {jobs: tmp_path_factory.mktemp(f"jobs{jobs}") for jobs in (1, 2)}
    for jobs, out in outs.items():
        graded(submitted, out, keys["first"], "--jobs", str(jobs))
    return outs


def feedback(out, name, activity):
    return next(test["output"] for test in results_in(out)[name]["tests"] if test["name"] == activity)


@pytest.mark.slow
def test_inputs_leaked_by_one_notebook_are_not_those_of_another(leaks, with_first_secret):
    _, activity, _ = leaks
    out = with_first_secret[1]
    mine, copy = feedback(out, "leaky", activity), feedback(out, "leaky-copy", activity)
    assert "raised ValueError: [" in mine and "raised ValueError: [" in copy, mine
    assert mine.split("raised ValueError: ")[1] != copy.split("raised ValueError: ")[1]
    assert results_in(out)["leaky"]["score"] == results_in(out)["leaky-copy"]["score"]


@pytest.mark.slow
def test_the_same_notebook_gets_the_same_result_with_one_job_or_two(with_first_secret):
    ones, twos = (results_in(out) for out in with_first_secret.values())
    assert sorted(ones) == sorted(twos) == ["leaky", "leaky-copy"]
    assert {name: comparable(result) for name, result in ones.items()} == \
        {name: comparable(result) for name, result in twos.items()}


@pytest.mark.slow
def test_a_run_again_with_the_same_secret_keeps_every_result(leaks, with_first_secret, tmp_path):
    submitted, _, keys = leaks
    out = tmp_path / "again"
    shutil.copytree(with_first_secret[1], out)
    before = {path: path.read_bytes() for path in out.glob("*/*.json")}
    said = graded(submitted, out, keys["first"])
    assert f"{len(before)} already had a current result" in said
    assert {path: path.read_bytes() for path in out.glob("*/*.json")} == before


@pytest.mark.slow
def test_another_secret_makes_the_results_stale_and_asks_other_inputs(leaks, with_first_secret, tmp_path):
    submitted, activity, keys = leaks
    out = tmp_path / "rekeyed"
    shutil.copytree(with_first_secret[1], out)
    old = results_in(out)
    said = graded(submitted, out, keys["second"])
    assert "already had a current result" not in said
    new = results_in(out)
    for name in old:
        assert new[name]["extra_data"]["secret_version"] == secret_version(keys["second"].read_bytes())
        assert old[name]["extra_data"]["secret_version"] == secret_version(keys["first"].read_bytes())
        assert feedback(out, name, activity) != feedback(with_first_secret[1], name, activity)


# ------------------------------------------------------------------ the labs' verdicts hold for any seed
@pytest.mark.slow
def test_the_reference_passes_every_hidden_check_whatever_the_seed(lab, pool):
    solved = solved_notebook(lab, student_notebook(lab))
    failed = {(activity, seed): outcome.message
              for activity, outcomes in outcomes_by_seed(lab.name, solved, SEEDS, replace(OPTIONS, pool=pool)).items()
              for seed, outcome in zip(SEEDS, outcomes) if not outcome.passed}
    assert failed == {}, f"{lab.name}'s reference fails with seeds {SEEDS}"


@pytest.mark.slow
def test_a_catalogued_mistake_of_each_activity_fails_whatever_the_seed(lab, pool):
    solved = solved_notebook(lab, student_notebook(lab))
    missed = {}
    for activity in lab.activities.values():
        mistake = next(m for m in grading_for(lab.name).mistakes if m.activity == activity.id)
        notebook = with_answer(solved, activity.id, patched(activity.reference.source, mistake.code))
        (outcomes,) = outcomes_by_seed(lab.name, notebook, SEEDS, replace(OPTIONS, pool=pool),
                                       [activity.id]).values()
        for seed, outcome in zip(SEEDS, outcomes):
            if outcome.passed or mistake.hint not in outcome.message:
                missed[(mistake.description, seed)] = outcome.message
    assert missed == {}, f"{lab.name}: mistakes missed with seeds {SEEDS}"
