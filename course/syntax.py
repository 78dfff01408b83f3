"""`parse`: ast.parse that threads may call at once.

CPython 3.11 keeps the depth counter of the syntax tree it builds in state that all threads
share, so two threads parsing at the same moment can fail with "SystemError: AST constructor
recursion depth mismatch" (CPython issue 106905, fixed in later versions). The grader parses
submissions in several threads (a run's --jobs, a Dask worker's tasks); under load the race cost
a submission its result. Every parse of the course's code goes through one lock.
"""
import ast
import threading

_ONE_AT_A_TIME = threading.Lock()


def parse(source, *args, **kwargs):
    with _ONE_AT_A_TIME:
        return ast.parse(source, *args, **kwargs)
