"""Similar work across a class (`autograder similarity`, and the class report's section): pairs
and groups of students whose answers to an activity share more than the class's independent work
does.

normalise.py  an answer's code as syntax-tree tokens in one form (names, literals, comments,
              layout, dead code and the usual rewrites set aside);
engine.py     winnowed fragments of those tokens, weighted by their rarity in the class, an
              index of who holds each, and the scored pairs;
classwide.py  a graded class's answers read from its notebooks, and what an instructor reads.

Written here on Python's own parser rather than with a library: see engine.py for why.
"""
