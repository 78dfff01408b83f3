"""The token a hidden case leaves, for the fingerprint of an activity (autograder/diagnosis/matching.py).

`pass`, `raises <Error>`, `stopped` (the check hung or killed the worker), `not run` (an earlier
check stopped it), or, for a wrong answer, a coarse kind of discrepancy read from the judge's
message (`shape`, `transposed`, `sign`, `zero`, `double`, `half`, `nonfinite`, `some
entries`, `value`, `other`) followed by the message's words with its numbers left out, since the
seed draws them. Reading the kind from the message keeps every lab's judges as they are: they
all say what they compared as "got X, expected Y" (or "is X, expected Y"), "shape S, expected T"
or "k of n entries".
The stored fingerprints depend on this file (autograder/diagnosis/matching.py hashes it).
"""
import math
import re

PASSED, STOPPED, NOT_RUN = "pass", "stopped", "not run"

_NUMBER = r"(?<![\w.])[-+]?(?:nan|inf|(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)(?!\w)"
NUMBERS = re.compile(_NUMBER, re.IGNORECASE)
GOT_EXPECTED = re.compile(rf"({_NUMBER})(?: at \([^)]*\))?,? expected ({_NUMBER})", re.IGNORECASE)
SHAPES = re.compile(r"shape (\([^)]*\)),? expected (\([^)]*\))")
ENTRIES = re.compile(r"(\d+) of (\d+) entr")
# Words whose number follows a count the seed draws ("1 entry is", "3 entries are").
AGREEING = [(re.compile(r"\b(?:is|are)\b"), "is"), (re.compile(r"\b(?:was|were)\b"), "was"),
            (re.compile(r"\bentr(?:y|ies)\b"), "entries")]


def raised(kind):
    return f"raises {kind}"


def failed(title, message):
    """The token of a case whose judge found `message` wrong with the answer."""
    words = NUMBERS.sub("#", message.removeprefix(title).strip(" :"))
    for pattern, word in AGREEING:
        words = pattern.sub(word, words)
    return f"{discrepancy(message)} · {words}"


def discrepancy(message):
    """The coarse kind of what a judge's message says is wrong."""
    shapes = SHAPES.search(message)
    if shapes:
        got, expected = (tuple(NUMBERS.findall(s)) for s in shapes.groups())
        return "transposed" if got == expected[::-1] and got != expected else "shape"
    pair = GOT_EXPECTED.search(message)
    entries = ENTRIES.search(message)
    if entries and int(entries.group(1)) < int(entries.group(2)):
        return "some entries"
    if pair:
        return _numbers_kind(float(pair.group(1)), float(pair.group(2)))
    return "other"


def _numbers_kind(got, expected):
    if not math.isfinite(got):
        return "nonfinite"
    if got == 0:
        return "zero"
    if expected == 0 or not math.isfinite(expected):
        return "value"
    ratio = got / expected
    for kind, factor in (("sign", -1.0), ("double", 2.0), ("half", 0.5)):
        if math.isclose(ratio, factor, rel_tol=1e-6):
            return kind
    return "value"  # a sign or a ratio that the seed's values choose says nothing of the slip


def kind(token):
    """The token's kind alone."""
    return token.split(" · ")[0]


def words(token):
    """What the judge said, without the kind that the seed's values may change."""
    return token.split(" · ")[-1]
