"""Hostile and broken submissions, graded together with a solved control: no false pass, no
trace on the machine, and the control's result is what it gets alone."""
import json
import subprocess
import sys
import uuid

import pytest

from autograder.cgroups import available as cgroups_available
from autograder.sandbox import bwrap_available
from conftest import LAB, ROOT, read
from adversarial.corpus import attacks, false_passes, verdict, write_corpus

pytestmark = pytest.mark.slow


def test_the_corpus_is_large_enough():
    assert len(attacks()) >= 25


def test_isolation_is_available_here():
    """The set-up installs bubblewrap, and grading runs as root: without both the grader would
    run unsandboxed, and this suite must say so rather than pass."""
    assert bwrap_available(), "bubblewrap missing: run `make` set-up (tools/install-sandbox.sh)"
    assert cgroups_available(), "cannot create control groups: process and memory caps are off"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, lab, release_dir, solved_dir):
    batch = tmp_path_factory.mktemp("hostile")
    context = {"root": str(ROOT), "batch": str(batch), "token": f"adv-{uuid.uuid4().hex[:8]}",
               "token_seconds": f"{900 + uuid.uuid4().int % 99}.{uuid.uuid4().int % 1000:03d}", "lab": lab}
    solved = read(solved_dir / LAB / f"{LAB}.ipynb")
    made = write_corpus(batch, solved, read(release_dir / LAB / f"{LAB}.ipynb"), context)
    (batch / "control.ipynb").write_bytes((solved_dir / LAB / f"{LAB}.ipynb").read_bytes())
    out = tmp_path_factory.mktemp("hostile-results")
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(batch), "--out", str(out),
                          "--cell-timeout", "10", "--sandbox", "bwrap"], cwd=ROOT, capture_output=True, text=True,
                         timeout=1800)
    results = {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}
    return made, results, run, context


def test_batch_finishes(corpus):
    made, results, run, _ = corpus
    assert run.returncode == 0, run.stderr
    assert set(results) == set(made) | {"control"}


@pytest.mark.parametrize("name", [attack.name for attack in attacks()])
def test_attack_gets_the_expected_result(corpus, name):
    made, results, _, _ = corpus
    assert verdict(made[name], results[name]) == "ok"


def test_no_false_passes(corpus):
    made, results, _, _ = corpus
    assert {name: false_passes(attack, results[name]) for name, attack in made.items()
            if false_passes(attack, results[name])} == {}


@pytest.mark.parametrize("name", [attack.name for attack in attacks() if attack.host_check])
def test_no_trace_left_on_the_machine(corpus, name):
    made, _, _, context = corpus
    assert made[name].host_check(context) is None


def test_control_is_unaffected_by_its_neighbours(corpus, tmp_path, solved_dir):
    _, results, _, _ = corpus
    alone = tmp_path / "alone"
    subprocess.run([sys.executable, "-m", "autograder", "grade", str(solved_dir / LAB / f"{LAB}.ipynb"),
                    "--out", str(alone), "--sandbox", "bwrap"], cwd=ROOT, check=True, capture_output=True, timeout=600)
    single = json.loads((alone / f"{LAB}.json").read_text())
    assert [(t["name"], t["score"], t["output"]) for t in results["control"]["tests"]] == \
        [(t["name"], t["score"], t["output"]) for t in single["tests"]]
    assert results["control"]["score"] == 18
