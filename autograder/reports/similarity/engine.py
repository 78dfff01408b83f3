"""Which students of a class wrote one activity's answer alike, beyond what independent work shares.

Each answer's tokens (normalise.answer_tokens) are cut into K-token fragments, hashed, and
winnowed: of every WINDOW consecutive fragments the one of least hash is kept, so a shared run of
K + WINDOW - 1 tokens or more is always seen and an answer keeps about 2 / (WINDOW + 1) of its
fragments. Fragments of the release's own code (the stub, the given cells) are dropped: every
student has them.

A fragment's weight is its rarity in the class, log(n / m) for a fragment m of the n answers
hold: what half the class writes weighs little, what one student writes weighs most. Only
fragments at most `rare_cap(n)` answers hold are looked up in the index (fragment -> answers), so
a class of a thousand is never compared pair by pair in full: a pair is scored when it shares a
rare fragment. Its score is the weight of what it shares over the weight of the lighter answer
(dead code added to a copy does not dilute it), and it is *similar* when the score is at least
THRESHOLD on at least MIN_SHARED rare fragments: an activity whose correct forms are a line or
two gives too few fragments to say anything, and says nothing.

Written here, not with a library. copydetect (Python, the same winnowing) tokenises with
Pygments, which masks names but cannot bring `x = x + y` and `x += y`, operand order or a loop
and its comprehension to one form (normalise.py works on the syntax tree for that); it compares
every file with every other in full, where a class of a thousand needs an index; and it knows
template code to exclude but not a fragment's rarity in the class. Its part that would remain,
hashing and winnowing, is the twenty lines below. Dolos needs Node.js on the course machine.
No dependency is added.
"""
import math
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache

from autograder.reports.similarity.normalise import answer_tokens

K = 8  # tokens of the syntax tree per fragment: a line such as `a.grad += out.grad * b.data` is 9
WINDOW = 4
THRESHOLD = 0.6
MIN_SHARED = 4  # rare fragments a similar pair shares at the least
RARE = 0.05  # the share of the class beyond which a fragment is common...
FEWEST_COMMON = 4  # ...but never a fragment this few answers hold, however small the class


@dataclass(frozen=True)
class Pair:
    activity: str
    first: str  # the two students, in order
    second: str
    score: float  # 0..1
    shared: int  # rare fragments they share

    @property
    def similar(self):
        return self.score >= THRESHOLD and self.shared >= MIN_SHARED


@dataclass
class ActivityIndex:
    """One activity of one class: every answer's fragments, and who holds each."""
    activity: str
    prints: dict  # {student: {fragment hash: the lines its tokens come from}}
    holders: dict = field(default_factory=dict)  # {fragment hash: [students]}

    def __post_init__(self):
        for student, held in self.prints.items():
            for fragment in held:
                self.holders.setdefault(fragment, []).append(student)

    def weight(self, fragment):
        return math.log(len(self.prints) / len(self.holders[fragment])) if fragment in self.holders else 0.0

    def mass(self, student):
        return sum(self.weight(f) for f in self.prints[student])


def hashes(names):
    """The hash of every K-token fragment of the token names `names`, in order."""
    return [zlib.crc32("\x1f".join(names[i:i + K]).encode()) for i in range(len(names) - K + 1)]


def fragments(pairs_of_token_and_line):
    """{hash: the lines its tokens come from} of the winnowed K-token fragments of a token stream."""
    lines = [line for _, line in pairs_of_token_and_line]
    hashes_in_order = hashes([name for name, _ in pairs_of_token_and_line])
    chosen = {}
    for start in range(max(1, len(hashes_in_order) - WINDOW + 1)):
        window = hashes_in_order[start:start + WINDOW]
        if not window:
            break
        least = min(window)
        place = start + max(i for i, h in enumerate(window) if h == least)  # the rightmost, as winnowing does
        chosen.setdefault(hashes_in_order[place], frozenset(lines[place:place + K]))
    return chosen


@lru_cache(maxsize=4096)  # a class hands in many answers alike: the same text is read once
def code_fragments(source):
    """fragments() of `source`; shared, so never changed by a caller."""
    return fragments(answer_tokens(source))


@lru_cache(maxsize=256)
def every_hash(source):
    """The hash of every K-token fragment of `source`, winnowed or not."""
    return frozenset(hashes([name for name, _ in answer_tokens(source)]))


def rare_cap(answers):
    """How many of `answers` answers may hold a fragment for it to count as evidence."""
    return max(FEWEST_COMMON, math.ceil(RARE * answers))


def activity_index(activity, sources, given=()):
    """The ActivityIndex of {student: answer source}, without the fragments of the `given` sources
    (the stub and the release's given code: every fragment of theirs, not the winnowed ones alone,
    since a pasted cell is winnowed in its new place) and without answers left with no fragment
    of their own."""
    known = set().union(*map(every_hash, given))
    prints = {}
    for student, source in sources.items():
        held = {h: span for h, span in code_fragments(source).items() if h not in known}
        if held:
            prints[student] = held
    return ActivityIndex(activity, prints)


def scored_pairs(index):
    """Every Pair of the activity that shares a rare fragment, the highest score first."""
    cap = rare_cap(len(index.prints))
    evidence, counts = defaultdict(float), Counter()
    for fragment, students in index.holders.items():
        if 1 < len(students) <= cap:
            weight = index.weight(fragment)
            for i, first in enumerate(students):
                for second in students[i + 1:]:
                    key = (first, second) if first < second else (second, first)
                    evidence[key] += weight
                    counts[key] += 1
    mass = {student: index.mass(student) for student in {s for key in evidence for s in key}}
    pairs = [scored(index, key, shared, counts[key], mass) for key, shared in evidence.items()
             if shared > 0]  # not all held by everyone
    return sorted(pairs, key=lambda p: (-p.score, p.first, p.second))


def scored(index, students, weight, count, mass):
    """The Pair of `students` (two, in order) sharing `count` rare fragments that weigh `weight` in
    all, where `mass` is {student: index.mass(student)}."""
    first, second = students
    return Pair(index.activity, first, second, min(1.0, weight / min(mass[first], mass[second])), count)


def shared_lines(index, first, second):
    """The lines of each answer that hold a rare fragment the other holds too: ({line}, {line})."""
    cap = rare_cap(len(index.prints))
    common = [f for f in index.prints[first].keys() & index.prints[second].keys() if len(index.holders[f]) <= cap]
    return tuple(set().union(*(index.prints[student][f] for f in common)) for student in (first, second))


def groups(pairs):
    """The groups of students that similar pairs join (connected components), largest first."""
    parent = {}

    def root(student):
        while parent.setdefault(student, student) != student:
            parent[student] = parent[parent[student]]
            student = parent[student]
        return student

    for pair in pairs:
        if pair.similar:
            parent[root(pair.first)] = root(pair.second)
    members = defaultdict(set)
    for student in parent:
        members[root(student)].add(student)
    return sorted((sorted(group) for group in members.values() if len(group) > 1), key=lambda g: (-len(g), g))
