"""A compact, comparable sketch of what an answer computed on one hidden case (autograder/diagnosis/matching.py).

A diagnosis is earned by what the answer computes: the grader asks a failing activity the cases
of one fixed seed (diagnosis.REPLAY_SEED) again, and names a catalogued mistake only where the
answer's replies agree with that mistake's, case for case. The fingerprints file keeps each
mistake's sketches of that seed, so a sketch must be small and plain JSON, yet tell apart any two
replies a judge would tell apart from the truth.

    sketch(reply, observations=None) -> JSON-able data
    same(a, b) -> whether two sketches stand for the same reply, within the tolerance

Arrays keep their shape, dtype kind, counts of nan/+inf/-inf and their largest finite magnitude;
small ones keep every value, larger ones PROJECTIONS dot products with fixed pseudo-random weights
(drawn from the array's size alone, so both sides use the same ones) and, per product, the sum of
the magnitudes of its terms, which scales what float rounding and the tolerance allow.
The stored sketches depend on this file (diagnosis.inputs_digest hashes it).
"""
import hashlib
import math
from functools import lru_cache

import numpy as np

from autograder.isolation.worker import Opaque

PROJECTIONS = 4
WHOLE = 16  # arrays up to this many entries are kept entry for entry: most hidden cases' replies are
# The judges compare with atol = rtol = 1e-9 against the truth. Two answers of the same slip written
# another way (einsum for @, a loop for a sum) differ by rounding, about 1e-15 relative: a relative
# tolerance ten times the judges' leaves room for long sums and still parts any slip a judge sees.
TOLERANCE = 1e-8
ABSOLUTE = 1e-9  # the judges' atol, per entry
DIGITS = 12  # stored floats keep this many significant digits: far below TOLERANCE, a third of the bytes
MAX_ITEMS = 64  # a container's items beyond these are summarised by their count
MAX_DEPTH = 8
RAISES, STOPPED, NOT_RUN = "raises", "stopped", "not run"


def sketch(reply, observations=None):
    """The sketch of a decoded reply, and of a probe's observations when it makes some."""
    if observations is None:
        return _sketch(reply, 0)
    return ["with", _sketch(reply, 0), [_sketch(item, 0) for item in observations[:MAX_ITEMS]]]


def raised(error):
    return [RAISES, str(error)[:80]]


def _float(value):
    value = float(value)
    if not math.isfinite(value):
        return str(value)  # 'nan', 'inf', '-inf': JSON proper has none of them
    return float(f"{value:.{DIGITS}g}")


def _is_number(value):
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


@lru_cache(maxsize=64)
def _weights(size):
    # Uniform on [-1, 1]: cheaper to draw than normals, and as good at telling arrays apart.
    return np.random.default_rng([size, 20261205]).uniform(-1.0, 1.0, (PROJECTIONS, size))


def _array(array):
    array = np.asarray(array)
    kind = "b" if array.dtype.kind == "b" else "i" if array.dtype.kind in "iu" else array.dtype.kind
    if kind not in "bif":
        return ["?", type(array).__name__, str(array.dtype)[:20]]
    values = array.astype(np.float64).ravel()
    finite = np.isfinite(values)
    counts = [int(np.isnan(values).sum()), int((values == np.inf).sum()), int((values == -np.inf).sum())]
    clean = np.where(finite, values, 0.0)
    peak = _float(np.abs(clean).max()) if clean.size else 0.0
    head = ["a", list(array.shape), kind, counts, peak]
    if values.size <= WHOLE:
        return head + [[_float(v) for v in values]]
    weights = _weights(values.size)
    products = weights @ clean
    scales = np.abs(weights) @ np.abs(clean)
    return head + [[_float(p) for p in products], [_float(s) for s in scales]]


def _sketch(value, depth):
    if depth > MAX_DEPTH:
        return ["deep"]
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return ["b", bool(value)]
    if _is_number(value):
        return ["n", _float(value)]
    if isinstance(value, np.ndarray):
        return _array(value)
    if isinstance(value, str):
        return ["s", hashlib.sha256(value.encode(errors="replace")).hexdigest()[:12]]
    if isinstance(value, Opaque):
        return ["o", str(value)[:80]]
    if isinstance(value, (list, tuple)):
        tag = "l" if isinstance(value, list) else "t"
        if len(value) > MAX_ITEMS and all(_is_number(item) for item in value):
            return [tag, len(value), _array(np.asarray(value, dtype=np.float64))]
        return [tag, len(value), [_sketch(item, depth + 1) for item in value[:MAX_ITEMS]]]
    if isinstance(value, dict):
        items = sorted(((repr(key)[:80], item) for key, item in value.items()), key=lambda pair: pair[0])
        return ["d", len(items), [[key, _sketch(item, depth + 1)] for key, item in items[:MAX_ITEMS]]]
    return ["o", type(value).__name__]


def _close(a, b):
    """Two stored floats (or their non-finite names) within the tolerance, relative and absolute."""
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return abs(a - b) <= ABSOLUTE + TOLERANCE * max(abs(a), abs(b))


def same(a, b):
    """Whether sketches `a` and `b` stand for replies a judge could not tell apart, within TOLERANCE:
    the same structure, types, shapes, dtype kinds and non-finite counts, and values that agree."""
    if not isinstance(a, list) or not isinstance(b, list):
        return a == b
    if len(a) != len(b) or not a or a[0] != b[0]:
        return False
    tag = a[0]
    if tag == "n":
        return _close(a[1], b[1])
    if tag == "a":
        return _same_array(a, b)
    if tag in ("l", "t"):
        return a[1] == b[1] and (same(a[2], b[2]) if a[2] and a[2][0] == "a" else _same_items(a[2], b[2]))
    if tag == "d":
        return a[1] == b[1] and len(a[2]) == len(b[2]) and all(
            ka == kb and same(va, vb) for (ka, va), (kb, vb) in zip(a[2], b[2]))
    if tag == "with":
        return same(a[1], b[1]) and _same_items(a[2], b[2])
    return a == b


def _same_items(a, b):
    return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))


def _same_array(a, b):
    (_, shape_a, kind_a, counts_a, peak_a, *values_a), (_, shape_b, kind_b, counts_b, peak_b, *values_b) = a, b
    if shape_a != shape_b or kind_a != kind_b or counts_a != counts_b or not _close(peak_a, peak_b):
        return False
    if len(values_a) == 1:  # kept whole
        return len(values_b) == 1 and all(_close(x, y) for x, y in zip(values_a[0], values_b[0]))
    (products_a, scales_a), (products_b, scales_b) = values_a, values_b
    # Entries that each agree within ABSOLUTE + TOLERANCE * |x| move a product by at most ABSOLUTE
    # times the sum of its weights' magnitudes (at most the size) plus TOLERANCE times its scale.
    size = math.prod(shape_a)
    return all(abs(pa - pb) <= ABSOLUTE * size + TOLERANCE * max(sa, sb)
               for pa, pb, sa, sb in zip(products_a, products_b, scales_a, scales_b))
