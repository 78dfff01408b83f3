"""Every function an activity asks for has a declared contract (autograder/labs/<lab>/contracts.py)
that agrees with the notebook's signature, and the hidden cases hold every boundary it declares,
whatever the seed."""
import ast
import importlib
import math

import pytest

from autograder.labs import course_labs, grading_for
from autograder.labs.contracts import REQUIRED, Values, band, drawn
from autograder.labs.vocabulary import reference_function
from course.syntax import parse

LABS = sorted(course_labs())
SEEDS = (0, 7)


def contracts_of(lab_name):
    return importlib.import_module(f"autograder.labs.{lab_name}.contracts").CONTRACTS


def signature(lab_name, name):
    """[(argument name, has a default)] of the reference function `name`."""
    function = next(node for node in parse(reference_function(lab_name, name)).body
                    if isinstance(node, ast.FunctionDef))
    arguments = function.args.posonlyargs + function.args.args
    with_default = len(function.args.defaults)
    return [(arg.arg, index >= len(arguments) - with_default) for index, arg in enumerate(arguments)]


@pytest.mark.parametrize("lab_name", LABS)
def test_every_function_has_one_contract(lab_name):
    declared = [(c.activity, c.function) for c in contracts_of(lab_name)]
    wanted = [(a.id, f) for a in course_labs()[lab_name].activities.values() for f in a.functions]
    assert sorted(declared) == sorted(wanted)


@pytest.mark.parametrize("lab_name", LABS)
def test_contract_arguments_follow_the_signature(lab_name):
    for contract in contracts_of(lab_name):
        declared = [(arg.name, arg.default is not REQUIRED) for arg in contract.args]
        assert declared == signature(lab_name, contract.function), contract.function
        assert contract.results, f"{contract.function} declares no result kind"


@pytest.mark.parametrize("lab_name", LABS)
@pytest.mark.parametrize("seed", SEEDS)
def test_hidden_cases_hold_every_declared_boundary(lab_name, seed):
    labels = {label for cases in grading_for(lab_name, seed).cases.values() for case in cases for label in case.drawn}
    missing = [drawn(contract.function, argument, name) for contract in contracts_of(lab_name)
               for argument, name, _ in contract.boundaries()
               if drawn(contract.function, argument, name) not in labels]
    assert not missing, f"{len(missing)} declared boundaries are in no hidden case: {missing[:12]}"


def test_boundaries_lie_in_their_range():
    ranges = [Values(), Values(low=0.0, open_low=True), Values(high=709.78, kinks=(0.0,)),
              Values(low=-1.0, high=1.0, nonfinite=("inf",))]
    for values in ranges:
        found = values.boundaries()
        assert found and all(values.admits(x) for x in found.values())
    log_domain = Values(low=0.0, open_low=True).boundaries()
    assert "a tiny negative value" not in log_domain and log_domain["a subnormal positive value"] == 5e-324
    assert Values(high=709.78).boundaries()["a large positive value"] == 709.78


def test_bands_part_magnitudes_at_their_thresholds():
    assert [band(x) for x in (0.0, 5e-324, -1e-12, 1e-6, 2.0, -5e3, 1e301, math.inf, math.nan)] == [
        "zero", "+subnormal", "-tiny", "+small", "+ordinary", "-large", "+huge", "+inf", "nan"]
