"""`parse`: ast.parse that threads may call at once.

CPython 3.11 keeps the depth counter of the syntax tree it builds in state that all threads
share, so two threads parsing at the same moment can fail with "SystemError: AST constructor
recursion depth mismatch" (CPython issue 106905, fixed in later versions). The grader parses
submissions in several threads (a run's --jobs, a Dask worker's tasks); under load the race cost
a submission its result. Every parse of the course's code goes through one lock.
"""
import ast
import symtable
import threading

_ONE_AT_A_TIME = threading.Lock()


def parse(source, *args, **kwargs):
    with _ONE_AT_A_TIME:
        return ast.parse(source, *args, **kwargs)


def free_reads(source):
    """The names `source` reads from the namespace it runs in: every name its top level reads,
    and every global name a function, class or comprehension in it reads (a function's own
    locals and arguments are not). SyntaxError as `parse`."""
    with _ONE_AT_A_TIME:
        top = symtable.symtable(source, "<cell>", "exec")
    found, tables = set(), [top]
    while tables:
        table = tables.pop()
        found |= {symbol.get_name() for symbol in table.get_symbols()
                  if symbol.is_referenced() and (table is top or symbol.is_global())}
        tables.extend(table.get_children())
    return found
