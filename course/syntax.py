"""`parse`: ast.parse that threads may call at once, made the process's own ast.parse.

CPython 3.11 keeps the depth counter of the syntax tree it builds in state that all threads
share, so two threads parsing at the same moment can fail with "SystemError: AST constructor
recursion depth mismatch" (CPython issue 106905, fixed in later versions). The grader parses in
several threads (a run's --jobs, a Dask worker's tasks, the gradebook's writer), and so does code
it calls there that is not its own: PyTorch parses its source as it is imported and as it
scripts functions, `inspect` parses the signatures of builtins, and a zygote's first start reads
the labs' imports. A lock taken only by the course's own parses left those free, and under load
a solved notebook became a grader_error. So every parse of the process takes the one lock:
importing this module puts the locked `parse` in the place of `ast.parse`, where every caller
looks it up.
"""
import ast
import symtable
import threading

# Re-entrant: a parse can run Python code (a finalizer the collector calls) that parses again.
_ONE_AT_A_TIME = threading.RLock()
_unlocked_parse = getattr(ast.parse, "__wrapped__", ast.parse)  # the stdlib's, were this module loaded again


def parse(source, *args, **kwargs):
    with _ONE_AT_A_TIME:
        return _unlocked_parse(source, *args, **kwargs)


parse.__wrapped__ = _unlocked_parse
ast.parse = parse


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
