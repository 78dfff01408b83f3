"""Mutation testing (autograder/measuring/mutants.py): the mutator makes the one change each operator
promises, and a small fixed sample of each lab's mutants is caught by the hidden checks or shown
equivalent. The whole run is a tool (`python -m autograder mutants --lab LAB`), far too long for
the suite; the sample keeps its figure honest between runs."""
import ast
from functools import cache

import pytest

from autograder.grading.grade import Options
from autograder.isolation.sandbox import Limits
from autograder.measuring import mutants as mutator
from autograder.measuring.mutants import equivalents, equivalents_path, function_mutants, grade_mutants, sample

# Drawn once for the suite, not tuned to what passes: three per lab keeps the three labs' grading
# within about 40 s on two busy cores.
SAMPLE, SAMPLE_SEED, GRADING_SEED = 3, 2026, 101


@cache
def _mutants_of(name):
    from autograder.labs import course_labs

    return mutator.lab_mutants(course_labs()[name])


def lab_mutants(lab):
    """A lab's mutants, made once for the module (a few seconds for tensor_engine)."""
    return _mutants_of(lab.name)


def bodies(source):
    """{mutated function body, one statement a line} of every mutant of the function `source`."""
    return {ast.unparse(ast.parse(m.code).body[0].body[-1]) for m in function_mutants("1a", "f", source)}


def codes(source):
    return [m.code for m in function_mutants("1a", "f", source)]


@pytest.mark.parametrize("source, expected", [
    ("def f(a, b):\n    return a + b\n", "return a - b"),
    ("def f(a, b):\n    return a - b\n", "return a + b"),
    ("def f(a, b):\n    return a * b\n", "return a / b"),
    ("def f(a, b):\n    return a / b\n", "return a * b"),
    ("def f(a, b):\n    return a @ b\n", "return a * b"),
    ("def f(a, b):\n    return a ** b\n", "return a * b"),
    ("def f(a):\n    return -a\n", "return a"),
    ("def f(a):\n    return a * 2\n", "return -(a * 2)"),
    ("def f(a):\n    return a > 0\n", "return a >= 0"),
    ("def f(a):\n    return a <= 0\n", "return a < 0"),
    ("def f(a):\n    return a == 0\n", "return a != 0"),
    ("def f(a):\n    return a[0]\n", "return a[1]"),
    ("def f(a):\n    return a[3]\n", "return a[2]"),
    ("def f(a):\n    return a * 0.5\n", "return a * 0.0"),
    ("def f(a):\n    return a * 0.5\n", "return a * 1.0"),
    ("def f(a):\n    return a + 1e-12\n", "return a + 0.0"),
    ("def f(a):\n    return a + 1e-12\n", "return a + 1e-06"),
    ("def f(a):\n    return a.sum(axis=1)\n", "return a.sum(axis=0)"),
    ("def f(a):\n    return a.sum(axis=1)\n", "return a.sum(axis=None)"),
    ("def f(a):\n    return a.sum(axis=0, keepdims=True)\n", "return a.sum(axis=0, keepdims=False)"),
    ("def f(a, b):\n    return np.outer(a, b)\n", "return np.outer(b, a)"),
    ("def f(a, b):\n    return a.T @ b\n", "return a @ b"),
    ("def f(a):\n    return np.transpose(a) * 1.5\n", "return a * 1.5"),
    ("def f(a):\n    return np.exp(a)\n", "return np.exp(np.clip(_m, -500, 500) if isinstance((_m := a), "
                                          "(float, np.ndarray)) else _m)"),
    ("def f(a):\n    return np.log(a)\n", "return np.log(a + 1e-12)"),
    ("def f(a, b):\n    return a * b\n", "return np.clip(_m, -500, 500) if isinstance((_m := (a * b)), "
                                         "(float, np.ndarray)) else _m"),
    ("def f(a, b):\n    return a * b\n", "return np.round(_m, 8) if isinstance((_m := (a * b)), "
                                         "(float, np.ndarray)) else _m"),
])
def test_each_operator_makes_its_change(source, expected):
    assert expected in bodies(source)


def test_statements_are_dropped_duplicated_and_augmented_assignments_become_plain_ones():
    source = "def f(a, b):\n    a.grad += b\n    a.seen = True\n    return a\n"
    made = codes(source)
    assert "def f(a, b):\n    a.seen = True\n    return a\n" in made  # dropped
    assert "def f(a, b):\n    a.grad += b\n    a.grad += b\n    a.seen = True\n    return a\n" in made
    assert "def f(a, b):\n    a.grad = b\n    a.seen = True\n    return a\n" in made
    assert "def f(a, b):\n    a.grad -= b\n    a.seen = True\n    return a\n" in made
    assert "def f(a, b):\n    a.grad += b\n    a.seen = True\n" not in made, "the final return is never dropped"
    inner = "def f(a):\n\n    def g():\n        a.grad += 1\n    return g\n"
    assert "def f(a):\n\n    def g():\n        pass\n    return g\n" in codes(inner), "an emptied body holds a pass"
    guarded = "def f(a):\n    if a < 0:\n        raise ValueError('negative')\n    return a\n"
    assert "def f(a):\n    return a\n" in codes(guarded)
    assert "def f(a):\n    if a < 0:\n        pass\n    return a\n" not in codes(guarded), "the if's drop says it"


def test_a_clip_keeps_results_that_are_not_numbers_as_they_were():
    source = "def f(a, b):\n    return a + b\n"
    clipped = next(m for m in function_mutants("1a", "f", source) if m.operator == "clip-return")
    namespace = {"np": __import__("numpy")}
    exec(clipped.code, namespace)
    assert namespace["f"]("ab", "c") == "abc"
    assert namespace["f"](400.0, 200.0) == 500.0


def test_mutants_are_deduplicated_and_their_ids_are_stable_and_unique():
    source = "def f(a):\n    return -(-a)\n"  # dropping either minus gives the same function
    made = function_mutants("1a", "f", source)
    assert sum("return -a" in m.code for m in made) == 1
    again = function_mutants("1a", "f", source)
    assert [m.id for m in made] == [m.id for m in again]
    assert len({m.id for m in made}) == len(made)
    assert made[0].id.startswith("1a:f:L2:")
    # An id names the change, not the function around it: editing another line keeps it.
    shifted = function_mutants("1a", "f", "def f(a):\n    return -(-a)\n\n\n")
    assert {m.id for m in shifted} == {m.id for m in made}


def test_docstrings_strings_f_strings_and_stubs_are_left_alone():
    source = ('def f(a):\n    """Add 1 to a, 0 times."""\n    if a < 0:\n'
              '        raise ValueError(f"a is {a + 1}, expected {0}")\n'
              '    raise NotImplementedError("1a: write f")\n')
    made = function_mutants("1a", "f", source)
    assert made, "the comparison and the ValueError still have mutants"
    for mutant in made:
        assert '"""Add 1 to a, 0 times."""' in mutant.code
        assert "raise NotImplementedError('1a: write f')" in mutant.code
        assert "{a + 1}, expected {0}" in mutant.code or "raise ValueError" not in mutant.code


def test_descriptions_show_the_change_in_its_expression():
    made = function_mutants("1a", "f", "def f(a):\n    return a.sum(axis=0) + 1\n")
    descriptions = {m.description for m in made}
    assert "line 2 of f: `a.sum(axis=0) + 1` → `a.sum(axis=0) + 0`" in descriptions
    assert "line 2 of f: `axis=0` → `axis=1`" in descriptions


def test_a_default_is_described_by_its_parameter_and_its_id_by_the_change_alone():
    made = function_mutants("A", "step", "def step(p, lr, betas=(0.9, 0.999), *, eps=1e-08):\n    return p\n")
    descriptions = {m.description for m in made}
    assert "line 1 of step: the default `betas=(0.9, 0.999)` → `betas=(0.0, 0.999)`" in descriptions
    assert "line 1 of step: the default `eps=1e-08` → `eps=0.0`" in descriptions


def test_a_sample_is_the_same_for_the_same_seed(lab):
    mutants = lab_mutants(lab)
    assert sample(mutants, SAMPLE, SAMPLE_SEED) == sample(mutants, SAMPLE, SAMPLE_SEED)
    # A lab as small as the new-lab scaffold's has a handful; a large one must stay affordable to run.
    assert 1 <= len(mutants) <= 500, f"{lab.name} has {len(mutants)} mutants; the run should stay affordable"


def test_an_equivalent_mutant_needs_a_reason(tmp_path):
    path = tmp_path / "equivalent_mutants.toml"
    path.write_text('["1a:f:L2:constant:abc"]\nwhy = "a is only compared with 0"\n\n'
                    '["1a:f:L3:drop:def"]\nwhy = " "\n')
    listed, problems = equivalents("any", path)
    assert listed == {"1a:f:L2:constant:abc": "a is only compared with 0"}
    assert len(problems) == 1 and "1a:f:L3:drop:def" in problems[0]


def test_each_labs_equivalent_mutants_are_listed_with_reasons(lab):
    if not equivalents_path(lab.name).is_file():  # a new lab has none yet
        return
    listed, problems = equivalents(lab.name)
    assert problems == []
    ids = {m.id for m in lab_mutants(lab)}
    assert set(listed) <= ids, f"{lab.name} lists mutants that no longer exist: {sorted(set(listed) - ids)}"


def test_a_sample_of_mutants_is_caught_or_shown_equivalent(lab, pool):
    chosen = sample(lab_mutants(lab), SAMPLE, SAMPLE_SEED)
    listed, _ = equivalents(lab.name)
    verdicts = grade_mutants(lab.name, chosen, Options(Limits(cell_seconds=30), pool=pool), jobs=2,
                             seed=GRADING_SEED)
    missed = [f"{v.mutant.id}: {v.mutant.description}" for v in verdicts
              if not v.hidden and v.mutant.id not in listed]
    assert missed == [], f"{lab.name}'s hidden checks miss these mutants (catch them, or list them with a reason " \
                         f"in {equivalents_path(lab.name).name}): {missed}"
