"""Hostile and broken submissions, graded together with a solved control, one batch per lab:
no false pass, no trace on the machine, and the control's result is what it gets alone.

Each lab's corpus is the generic attacks plus those written for it alone (tests/adversarial/);
the expected scores come from the lab's activities. The attacks on the process (files, signals,
limits, pipes) meet the same sandbox whatever the lab: the suite grades them with the first lab's
corpus only, and re-grades them cold there. Every lab's batch holds the attacks on what a check
believes, which that lab's own judges decide."""
import subprocess
import sys

import pytest

from autograder.isolation.cgroups import available as cgroups_available
from autograder.isolation.sandbox import bwrap_available
from tests.adversarial.common import SKIPPED
from tests.adversarial.corpus import attacks, false_passes, grade_corpus, on_the_process, verdict
from tests.helpers import LABS, ROOT, all_points, lab_notebook, results_in

pytestmark = pytest.mark.slow


def graded_here(lab):
    """The attacks of `lab`'s corpus that the suite grades (see the module's docstring)."""
    return [attack for attack in attacks(lab) if lab.name == LABS[0].name or not attack.on_the_process]


def per_attack(select=lambda attack: True):
    """(lab, attack name) for every attack each lab's batch grades, for the tests that look at
    one attack. The session scope keeps the tests of one lab together, so that its batch is
    graded once; the names carry the lab so that no two labs' tests are grouped together."""
    return pytest.mark.parametrize(
        ("lab", "attack"),
        [pytest.param(lab, f"{lab.name}/{attack.name}", id=f"{lab.name}-{attack.name}")
         for lab in LABS for attack in graded_here(lab) if select(attack)],
        indirect=["lab"], scope="session")


def test_the_corpus_is_large_enough(lab):
    assert len(attacks(lab)) >= 25


def test_isolation_is_available_here():
    """The set-up installs bubblewrap, and grading runs as root: without both the grader would
    run unsandboxed, and this suite must say so rather than pass."""
    assert bwrap_available(), "bubblewrap missing: run `make` set-up (tools/install-debian.sh)"
    assert cgroups_available(), "cannot create control groups: process and memory caps are off"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, lab, release_dir, solved_dir):
    """The lab's corpus and a solved control, graded in one sandboxed batch."""
    made, results, run, context = grade_corpus(
        lab, lab_notebook(solved_dir, lab), lab_notebook(release_dir, lab),
        tmp_path_factory.mktemp(f"hostile-{lab.name}"), tmp_path_factory.mktemp(f"hostile-results-{lab.name}"),
        sandbox="bwrap", timeout=1800, chosen={attack.name for attack in graded_here(lab)})
    return lab, made, results, run, context


def test_batch_finishes(corpus):
    _, made, results, run, _ = corpus
    assert run.returncode == 0, run.stderr
    assert set(results) == {name for name, attack in made.items() if attack.status != SKIPPED} | {"control"}


@per_attack()
def test_attack_gets_the_expected_result(corpus, lab, attack):
    _, made, results, _, _ = corpus
    name = attack.split("/", 1)[1]
    assert verdict(lab, made[name], results.get(name)) == "ok"


def test_no_false_passes(corpus):
    _, made, results, _, _ = corpus
    assert {name: false_passes(attack, results.get(name, {})) for name, attack in made.items()
            if false_passes(attack, results.get(name, {}))} == {}


@per_attack(lambda attack: attack.host_check is not None)
def test_no_trace_left_on_the_machine(corpus, lab, attack):
    _, made, _, _, context = corpus
    name = attack.split("/", 1)[1]
    assert made[name].host_check(context) is None


def test_control_is_unaffected_by_its_neighbours(corpus, tmp_path, solved_dir):
    lab, _, results, _, _ = corpus
    alone = tmp_path / "alone"
    subprocess.run([sys.executable, "-m", "autograder", "grade", str(lab_notebook(solved_dir, lab)),
                    "--out", str(alone), "--sandbox", "bwrap"], cwd=ROOT, check=True, capture_output=True, timeout=600)
    single = results_in(alone)[lab.name]
    assert [(t["name"], t["score"], t["output"]) for t in results["control"]["tests"]] == \
        [(t["name"], t["score"], t["output"]) for t in single["tests"]]
    assert results["control"]["score"] == all_points(lab)
    assert results["control"]["extra_data"]["required"] == results["control"]["max_score"]


def scores(results):
    """What grading decided for each submission: its status and each activity's points."""
    return {name: (result["status"], [(t["name"], t["score"]) for t in result["tests"]])
            for name, result in results.items()}


def regrade(lab, tmp_path, release_dir, solved_dir, *options, chosen=None):
    _, results, run, _ = grade_corpus(lab, lab_notebook(solved_dir, lab), lab_notebook(release_dir, lab),
                                      tmp_path / "batch", tmp_path / "out", sandbox="bwrap", timeout=2400,
                                      options=options, chosen=chosen)
    assert run.returncode == 0, run.stderr
    return results


@pytest.mark.parametrize("lab", [LABS[0]], ids=[LABS[0].name], indirect=True, scope="session")
def test_cold_workers_on_a_busy_machine_give_the_same_results(corpus, tmp_path, release_dir, solved_dir, cpu_hogs):
    """The warm pool is an optimisation only, and limits count CPU time: graded again with
    `--no-pool` beside two CPU-bound processes, the attacks on the worker and the machine get the
    same results. (One re-run answers both questions: either difference alone would change a
    result.) Those attacks are the same for every lab, so one lab's are re-graded; the attacks on
    what a check believes run the same code warm or cold, and each lab's own code is re-graded
    cold and busy through its mistake catalogue (test_mistakes.py)."""
    lab, _, warm, _, _ = corpus
    chosen = on_the_process(lab)
    cold = regrade(lab, tmp_path, release_dir, solved_dir, "--no-pool", chosen=chosen)
    assert all(process.poll() is None for process in cpu_hogs), "a CPU hog stopped before the re-run ended"
    assert scores(cold) == scores({name: warm[name] for name in chosen | {"control"}})
