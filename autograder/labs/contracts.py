"""What a lab's functions allow, declared once: the domain their hidden inputs are drawn from.

A lab's ``contracts.py`` holds ``CONTRACTS = [Contract(...), ...]``, one per function an activity
asks for, written from what the notebook promises (its text, the stub's docstring and
signature), not from the cases: the argument kinds and dtypes, the shape classes, the range of
values with its boundaries, the state a call may meet, which arguments have defaults, which
kinds of result are allowed and what may change in place. The lab's ``cases.py`` draws inputs
from these declarations (`Values.draw`, `Values.boundaries`) and marks every Case with the
boundaries it holds (`Case.drawn`), so that a test can show that every declared boundary is in
the hidden cases, whatever the seed.

Values are classified by the band their magnitude lies in (`band`): the same bands say which
boundaries a contract must draw and, for the dependency test, which kinds of value another
activity's checks feed a function (tests/test_contract_coverage.py).
"""
import math
from dataclasses import dataclass, field

import numpy as np

TINY = 1e-9  # below this a value is "tiny": where students' invented epsilons and thresholds live
SMALL = 1e-3
LARGE = 1e3
HUGE = 1e300
SUBNORMAL = np.finfo(np.float64).tiny  # 2.2e-308, the smallest normal float64
REQUIRED = object()  # an argument without a default


def band(x):
    """The band of one number: 'zero', 'nan', or a sign and a magnitude ('+tiny', '-large')."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if x == 0:
        return "zero"
    sign, size = "+" if x > 0 else "-", abs(x)
    if math.isinf(size):
        return sign + "inf"
    for name, below in (("subnormal", SUBNORMAL), ("tiny", TINY), ("small", SMALL), ("ordinary", LARGE),
                        ("large", HUGE)):
        if size < below:
            return sign + name
    return sign + "huge"


def bands_of(value):
    """The set of bands of the entries of a number or an array (empty for anything else)."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return frozenset()
    flat = np.unique(array.ravel())
    return frozenset(band(x) for x in flat)


def shape_class(value):
    """'0-d', 'size-1' (every axis of length 1), 'empty', or the rank with a mark of its size-1 axes."""
    shape = np.shape(value)
    if shape == ():
        return "0-d"
    if 0 in shape:
        return "empty"
    if all(n == 1 for n in shape):
        return "size-1"
    return f"{len(shape)}-d" + (" with a size-1 axis" if 1 in shape else "")


@dataclass(frozen=True)
class Values:
    """The numbers an argument's entries may take: [low, high] (an end `open` is excluded), the
    non-finite values the notebook allows, and the points where a rule changes (`kinks`, e.g.
    relu's 0). `large` is the largest finite magnitude a case should use where the range is open
    (exp's argument stays below log(max float64) = 709.78)."""
    low: float = -math.inf
    high: float = math.inf
    open_low: bool = False
    open_high: bool = False
    nonfinite: tuple = ()  # of "inf", "-inf", "nan"
    kinks: tuple = ()
    large: float = 1e12

    def admits(self, x):
        x = float(x)
        if math.isnan(x):
            return "nan" in self.nonfinite
        if math.isinf(x):
            return ("inf" if x > 0 else "-inf") in self.nonfinite
        above = x > self.low if self.open_low else x >= self.low
        below = x < self.high if self.open_high else x <= self.high
        return above and below

    def boundaries(self):
        """{name: value}: every boundary of the range that the range admits, always drawn: zero,
        tiny and subnormal values of both signs, each kink and its neighbours, the ends (or just
        inside an open end), the largest finite magnitudes, and the allowed non-finite values."""
        found = {"zero": 0.0, "a tiny positive value": 1e-12, "a tiny negative value": -1e-12,
                 "a subnormal positive value": 5e-324, "a subnormal negative value": -5e-324,
                 "a large positive value": self._largest(+1), "a large negative value": self._largest(-1)}
        for kink in self.kinks:
            step = 1e-12 * max(1.0, abs(kink))
            found.update({f"the kink at {kink:g}": kink, f"just above the kink at {kink:g}": kink + step,
                          f"just below the kink at {kink:g}": kink - step})
        for name, end, is_open, inward in (("low", self.low, self.open_low, math.inf),
                                           ("high", self.high, self.open_high, -math.inf)):
            if math.isfinite(end):
                found[f"the {name} end {end:g}"] = np.nextafter(end, inward) if is_open else end
                found[f"just inside the {name} end {end:g}"] = end + (1e-12 * max(1.0, abs(end))) * np.sign(inward)
        found.update({f"{name}": float(name) for name in self.nonfinite})
        return {name: float(value) for name, value in found.items() if self.admits(value)}

    def _largest(self, sign):
        end = self.high if sign > 0 else self.low
        if math.isfinite(end):
            return float(np.nextafter(end, 0.0)) if (self.open_high if sign > 0 else self.open_low) else float(end)
        return sign * self.large

    def draw(self, rng, shape, scale=1.0, boundary=None):
        """An array of `shape` of ordinary values the range admits (about `scale` in size),
        with `boundary` (a value of `boundaries()`) planted in at least one entry, and in about
        a third of them."""
        values = rng.normal(scale=scale, size=shape)
        lowest = self.low if math.isfinite(self.low) else -math.inf
        highest = self.high if math.isfinite(self.high) else math.inf
        if math.isfinite(lowest) and math.isfinite(highest):
            values = rng.uniform(lowest, highest, size=shape)
        elif math.isfinite(lowest):
            values = lowest + np.abs(values) + (scale * 0.1 if self.open_low else 0.0)
        elif math.isfinite(highest):
            values = highest - np.abs(values) - (scale * 0.1 if self.open_high else 0.0)
        values = np.array(values, dtype=np.float64)
        if boundary is not None:
            flat = values.reshape(-1)
            if flat.size:
                planted = rng.random(flat.size) < 1 / 3
                planted[rng.integers(flat.size)] = True
                flat[planted] = boundary
            values = flat.reshape(np.shape(values))
        return values


@dataclass(frozen=True)
class Arg:
    name: str
    kinds: tuple = ("ndarray",)  # what may be passed: "ndarray", "float", "int", "Tensor", "Value", "list", ...
    dtypes: tuple = ("float64",)
    shapes: tuple = ()  # the shape classes the notebook allows (shape_class's names, or the lab's own words)
    values: Values = None  # None: not numeric (a graph, a dict of parameters, ...)
    default: object = REQUIRED


@dataclass(frozen=True)
class Contract:
    function: str
    activity: str
    args: tuple  # (Arg, ...), in the order of the function's signature
    results: tuple  # the kinds of result the notebook allows ("ndarray", "float", "tuple of 2 ndarray", ...)
    states: tuple = ()  # the state a call may meet ("a gradient already held by an interior node", ...)
    in_place: tuple = ()  # what the call may change in place; every other argument must come back as sent
    note: str = ""  # what else the notebook promises, in a sentence
    compared: tuple = field(default=())  # how the judges compare the result ("exactly: order and multiplicity", ...)

    def arg(self, name):
        return next(arg for arg in self.args if arg.name == name)

    def boundaries(self):
        """[(argument, boundary name, value)] of every numeric argument: what the hidden cases
        must always hold."""
        return [(arg.name, name, value) for arg in self.args if arg.values is not None
                for name, value in arg.values.boundaries().items()]


def drawn(function, argument, boundary):
    """The label a Case carries (Case.drawn) for a boundary of a contract that it holds."""
    return f"{function}({argument}): {boundary}"
