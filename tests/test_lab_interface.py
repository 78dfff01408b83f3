"""Every lab's grading knowledge passes the interface check, and a lab that fails it is
refused by name: in the suite, and for its submissions (status lab_not_gradable)."""
import ast
import importlib
import shutil


import autograder.diagnosis.matching as diagnosis
from autograder.grading.grade import grade
import autograder.labs as labs
from autograder.labs import grading_for, problems_of
from autograder.labs.policy import NUMPY_ONLY, policy_problems
from autograder.labs.vocabulary import Case, Mistake
from tests.helpers import lab_notebook


def test_grading_knowledge_is_complete(lab):
    problems, _ = problems_of(lab)
    assert problems == [], f"lab {lab.name}: " + "; ".join(problems)


def test_lab_files_import_only_the_shared_vocabulary(lab):
    """Every module of a lab's grading knowledge imports, of the grader, only the shared
    vocabularies and its own lab's modules (relative imports resolved), and probes.py, which
    runs in the sandbox, nothing of it at all."""
    own = f"autograder.labs.{lab.name}"
    for path in sorted((labs.HERE / lab.name).glob("*.py")):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = ".".join(own.split(".")[:len(own.split(".")) + 1 - node.level]) if node.level else ""
                imported |= {".".join(filter(None, [base, node.module])) or base}
                imported |= {f"{base}.{alias.name}" for alias in node.names if node.level and not node.module}
            elif isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
        grader = {name for name in imported if name.split(".")[0] in ("autograder", "course")}
        allowed = set() if path.name == "probes.py" else {"autograder.labs.vocabulary", "autograder.labs.contracts"}
        strange = {name for name in grader - allowed if name != own and not name.startswith(own + ".")}
        assert not strange and not (path.name == "probes.py" and grader), \
            f"{lab.name}/{path.name} imports {sorted(grader)}"


def test_every_activity_has_cases_and_three_mistakes(lab):
    grading = grading_for(lab.name)
    for activity in lab.activities:
        assert grading.cases[activity]
        assert sum(m.activity == activity for m in grading.mistakes) >= labs.MIN_MISTAKES


def test_missing_files_are_named(lab, tmp_path):
    problems, _ = problems_of(lab, folder=tmp_path)
    assert problems == [f"autograder/labs/{lab.name}/{part} is missing" for part in labs.FILES]


def module(lab, part):
    return importlib.import_module(f"autograder.labs.{lab.name}.{part}")


def test_too_few_mistakes_are_named(lab, monkeypatch):
    first = next(iter(lab.activities))
    catalogue = module(lab, "mistakes").MISTAKES
    two_left = [m for m in catalogue if m.activity == first][:2] + [m for m in catalogue if m.activity != first]
    monkeypatch.setattr(module(lab, "mistakes"), "MISTAKES", two_left)
    problems, _ = problems_of(lab)
    assert f"activity {first} has 2 catalogued mistakes in mistakes.py; at least 3 are needed" in problems


def test_unknown_activities_are_named(lab, monkeypatch):
    cases_module = module(lab, "cases")
    real = cases_module.cases(labs.CHECK_SEED)
    first = next(iter(lab.activities))
    stray = Case("Z9", "a case of no activity", next(iter(real.values()))[0].probe, {}, lambda answer: None)
    monkeypatch.setattr(cases_module, "cases", lambda seed: {**real, "Z9": [stray]})
    monkeypatch.setattr(cases_module, "DEPENDS", {first: ("Q",)})
    monkeypatch.setattr(module(lab, "mistakes"), "MISTAKES", [
        *module(lab, "mistakes").MISTAKES, Mistake("Z9", "a mistake of no activity", "x", "def f():\n    pass\n")])
    problems = " | ".join(problems_of(lab)[0])
    assert "cases for activity Z9, which the notebook does not have" in problems
    assert "DEPENDS names activity Q" in problems
    assert "mistake 'a mistake of no activity' names activity Z9" in problems


def test_missing_cases_and_unknown_probes_are_named(lab, monkeypatch):
    cases_module = module(lab, "cases")
    real = cases_module.cases(labs.CHECK_SEED)
    first, *rest = lab.activities
    wrong_probe = Case(first, "a case asking a probe that does not exist", "no_such_probe", {}, lambda answer: None)
    monkeypatch.setattr(cases_module, "cases",
                        lambda seed: {first: [wrong_probe], **{a: real[a] for a in rest[:-1]}})
    problems = problems_of(lab)[0]
    assert "case 'a case asking a probe that does not exist' asks probe no_such_probe, which probes.py does not define" \
        in problems
    if rest:
        assert f"activity {rest[-1]} has no hidden cases in cases.py" in problems


def test_submission_of_a_lab_without_grading_knowledge_is_not_gradable(lab, solved_dir, tmp_path, monkeypatch):
    (tmp_path / lab.name).mkdir()
    for part in labs.FILES:
        if part != "probes.py":
            shutil.copyfile(labs.HERE / lab.name / part, tmp_path / lab.name / part)
    monkeypatch.setattr(labs, "HERE", tmp_path)
    grading_for.cache_clear()
    try:
        result, _ = grade(lab_notebook(solved_dir, lab))
    finally:
        grading_for.cache_clear()
    assert result["status"] == "lab_not_gradable"
    assert f"lab {lab.name} cannot be graded" in result["output"] and "probes.py is missing" in result["output"]
    assert result["score"] == 0 and result["extra_data"]["lab"] == lab.name


def test_the_pytorch_policy_must_be_declared(lab, monkeypatch):
    monkeypatch.delattr(module(lab, "cases"), "USES_PYTORCH")
    problems = " | ".join(problems_of(lab)[0])
    assert "cases.py must define USES_PYTORCH" in problems


def test_the_pytorch_policy_must_agree_with_the_notebook(lab, monkeypatch):
    """Declaring an activity graded without PyTorch as one that uses it (or the reverse)
    contradicts what its text tells students, and so does naming an activity that is not there."""
    uses = grading_for(lab.name).uses_pytorch
    flipped = next(iter(lab.activities))
    monkeypatch.setattr(module(lab, "cases"), "USES_PYTORCH", tuple(uses ^ {flipped}) + ("Z9",))
    problems = " | ".join(problems_of(lab)[0])
    assert "USES_PYTORCH names activity Z9, which the notebook does not have" in problems
    assert f"activity {flipped} " in problems and NUMPY_ONLY in problems


def test_every_activity_graded_without_pytorch_says_so(lab):
    """What students read under each heading matches how the grader treats the activity."""
    uses = grading_for(lab.name).uses_pytorch
    assert policy_problems(lab, uses) == []
    assert set(lab.activities) - uses, f"{lab.name} grades every activity with PyTorch available"


def test_a_lab_is_checked_on_the_cases_of_the_first_seed_it_is_asked_for(monkeypatch):
    """A run of one submission computes its lab's cases once, not once more for the check; a seed
    whose cases fail is that submission's problem (GraderError), and the lab stays gradable."""
    from autograder.isolation.errors import GraderError

    module = importlib.import_module("autograder.labs.pt03_autodiff.cases")
    real, asked = module.cases, []

    def counted(seed):
        asked.append(seed)
        if seed == 99:
            raise ValueError("this seed draws a singular matrix")
        return real(seed)

    monkeypatch.setattr(module, "cases", counted)
    grading_for.cache_clear()
    try:
        # The grader looks at the stored fingerprints first; that must not check the lab.
        diagnosis.stored.cache_clear()
        assert diagnosis.stored("pt03_autodiff") is not None and asked == []
        first = grading_for("pt03_autodiff", 12345)
        assert grading_for("pt03_autodiff", 12345) is first and asked == [12345]
        grading_for("pt03_autodiff", 7)
        assert asked == [12345, 7]
        grading_for.cache_clear()
        asked.clear()
        try:
            grading_for("pt03_autodiff", 99)
            raise AssertionError("the failing seed's cases were not reported")
        except GraderError as error:
            assert "cases(seed) raised ValueError: this seed draws a singular matrix" in str(error)
        assert asked == [99, labs.CHECK_SEED, 99], "the check is made again on CHECK_SEED's cases"
        assert grading_for("pt03_autodiff", 5).cases, "the lab is still gradable for other seeds"
    finally:
        grading_for.cache_clear()
