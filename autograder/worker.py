"""The grader's hands inside the sandbox: run a submission's code, answer the grader's probes.

This file is the only part of the grader a submission can see, so it imports nothing from
the grader and holds no expected value. It reads one JSON request per line from file
descriptor IN and writes one JSON reply per line to OUT (both given on the command line).
Replies carry plain data only: numbers, strings, and arrays as dtype, shape and raw bytes.
The grader compares them with its own answers, in its own process.

Requests:  {"op": "run", "source": ...}                     execute a cell
           {"op": "run_each", "source": ...}                execute a cell statement by statement,
                                                            going on after a statement that fails
                                                            for want of a hidden module
           {"op": "probe", "source": ..., "args": {...}}   define probe(), call probe(**args)
Every request carries a random tag `seq` that its reply repeats, so the grader can tell its
replies from anything else written to OUT. While a probe runs, it may also call `_observe(value)`
(a name of its scope): the value is encoded and written to OUT at once, as
{"observation": ..., "seq": ...}, before any more of the submission's code runs, so nothing the
submission does later in the probe can change what was seen. The grader collects a request's
observations in order, with its reply.

A worker may be started without some top-level modules (HIDDEN, a JSON list after the two file
descriptors): importing them fails. The sandbox hides their files too, so this finder only
makes the refusal say why; it is not what keeps them out. An error that comes from a hidden
module's absence (importing it, or using a name that a failed statement would have bound) is
marked `unavailable` in its reply, so the feedback can say that the code needed that module.
"""
import ast
import base64
import json
import os
import sys

import numpy

# Taken before any submission code runs, so later monkeypatching of the modules cannot reach them.
_ndarray, _generic, _float64 = numpy.ndarray, numpy.generic, numpy.float64
_dumps, _loads, _b64encode, _b64decode = json.dumps, json.loads, base64.b64encode, base64.b64decode
_write, _read = os.write, os.read
_isinstance, _type, _str, _dict, _exec, _compile = isinstance, type, str, dict, exec, compile
_asarray = numpy.asarray
_PLAIN = (bool, int, float, str, type(None))
_MAX_ITEMS = 10000


def encode(value, depth=0):
    """Describe `value` without calling any method a submission could have defined."""
    kind = _type(value)
    if kind is _ndarray:
        out = {"kind": "ndarray", "dtype": value.dtype.str, "shape": list(value.shape)}
        if value.dtype.kind in "biuf" and value.size <= 10_000_000:
            out["data"] = _b64encode(value.astype(_float64).tobytes()).decode()
        return out
    if kind in _PLAIN:
        if kind is float:
            return {"kind": "float", "hex": value.hex()}
        if kind is str:
            return {"kind": "str", "value": value[:2000]}
        return {"kind": kind.__name__, "value": value}
    if _isinstance(value, _generic) and kind.__module__ == "numpy":
        return {"kind": "scalar", "dtype": value.dtype.str, "data": encode(_asarray(value))["data"]
                if value.dtype.kind in "biuf" else None}
    if depth < 6 and kind in (tuple, list):
        return {"kind": kind.__name__, "items": [encode(item, depth + 1) for item in value[:_MAX_ITEMS]]}
    if depth < 6 and kind is dict:
        return {"kind": "dict", "items": [[encode(k, depth + 1), encode(v, depth + 1)]
                                          for k, v in list(_dict.items(value))[:_MAX_ITEMS]]}
    return {"kind": "object", "type": _str(kind.__qualname__) if _type(kind.__qualname__) is str else "?"}


def _observer_factory(write=_write, dumps=_dumps, describe=encode):
    """Built at import: the observers it makes write with the functions of that moment, so a
    submission that later patches json, os or this module's names does not reach them."""
    def observer(fd, seq):
        def observe(value):
            data = (dumps({"observation": describe(value), "seq": seq}) + "\n").encode()
            while data:
                data = data[write(fd, data):]
        return observe
    return observer


_observer = _observer_factory()


class Opaque:
    """Stands for a value the worker would not describe further (an unknown object's type)."""

    def __init__(self, what):
        self.what = what

    def __repr__(self):
        return self.what


def decode(value):
    """The inverse of encode: arguments in the worker, replies in the grader."""
    kind = value["kind"]
    if kind in ("ndarray", "scalar"):
        if value.get("data") is None:
            return Opaque(f"a {kind} of dtype {value['dtype']}")
        flat = numpy.frombuffer(_b64decode(value["data"]), dtype=_float64)
        array = flat.astype(numpy.dtype(value["dtype"])).reshape(value.get("shape", ()))
        return array if kind == "ndarray" else array[()]
    if kind == "float":
        return float.fromhex(value["hex"])
    if kind in ("list", "tuple"):
        items = [decode(item) for item in value["items"]]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        return {_hashable(decode(k)): decode(v) for k, v in value["items"]}
    if kind == "object":
        return Opaque(f"an object of type {value['type']}")
    return value["value"]


def _hashable(key):
    return key if _type(key) in _PLAIN or _type(key) is tuple else Opaque(repr(key))


def describe_error(error):
    """Type and message of an exception. A message is reported only where no submission code
    produced it (Python's and NumPy's own exceptions); a class the submission defined is named
    after the built-in exception it derives from."""
    kind = _type(error)
    base = next((k for k in kind.__mro__ if k.__module__ == "builtins"), BaseException)
    name = base.__name__ if kind is base else f"{base.__name__} ({_str(kind.__qualname__)})"
    trusted = kind is base or _str(kind.__module__).split(".")[0] in ("numpy", "torch")
    return {"error": name, "message": _str(error)[:1000] if trusted else ""}


class Unavailable:
    """A meta path finder that refuses the hidden modules with a message naming the policy."""

    def __init__(self, hidden):
        self.hidden = frozenset(hidden)

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.hidden:
            raise ModuleNotFoundError(f"No module named '{name}': it is not available when this code is graded",
                                      name=name)
        return None


def bound_names(node):
    """The names a top-level statement binds (over-approximated: names bound inside it count)."""
    names = set()
    for inner in ast.walk(node):
        if _isinstance(inner, ast.Name) and _isinstance(inner.ctx, ast.Store):
            names.add(inner.id)
        elif _isinstance(inner, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in inner.names}
        elif _isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(inner.name)
    return names


class Absence:
    """What the hidden modules' absence has cost so far: the names left unbound by statements
    that failed for want of them."""

    def __init__(self, hidden):
        self.hidden, self.unbound = frozenset(hidden), set()

    def caused(self, error):
        try:
            return self._caused(error)
        except BaseException:  # attributes a submission's own exception set to anything at all
            return False

    def _caused(self, error):
        if _isinstance(error, ImportError):
            return _str(error.name or "").split(".")[0] in self.hidden
        if _isinstance(error, KeyError):  # sys.modules["torch"]
            return bool(error.args) and error.args[0] in self.hidden
        return _isinstance(error, NameError) and (error.name in self.unbound or error.name in self.hidden)

    def describe(self, error):
        described = describe_error(error)
        if self.hidden and self.caused(error):
            described["unavailable"] = True
        return described


def run_each(shell, source, absence):
    """Run a cell one top-level statement at a time, so that a statement that fails for want of
    a hidden module (an `import torch` at the top of a cell) leaves the others standing. Any
    other error stops the cell there, as it would in the notebook; the reply describes it, or
    else the first statement that needed a hidden module."""
    try:
        tree = ast.parse(shell.transform_cell(source))
    except BaseException as error:
        return describe_error(error)
    first = None
    for node in tree.body:
        try:
            _exec(_compile(ast.Module(body=[node], type_ignores=[]), "<cell>", "exec"), shell.user_ns)
        except BaseException as error:  # the submission's errors are the grader's data
            if not absence.caused(error):
                return absence.describe(error)
            absence.unbound |= bound_names(node)
            first = first if first is not None else error
    return absence.describe(first) if first is not None else {"ok": True}


class Channel:
    def __init__(self, fd_in, fd_out):
        self.fd_in, self.fd_out, self.buffer = fd_in, fd_out, b""

    def receive(self):
        while b"\n" not in self.buffer:
            chunk = _read(self.fd_in, 1 << 20)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return _loads(line)

    def send(self, reply, seq):
        reply["seq"] = seq
        data = (_dumps(reply) + "\n").encode()
        while data:
            data = data[_write(self.fd_out, data):]


def main(fd_in, fd_out, hidden=()):
    from IPython.core.interactiveshell import InteractiveShell

    if hidden:
        sys.meta_path.insert(0, Unavailable(hidden))
    absence = Absence(hidden)
    shell = InteractiveShell.instance()
    channel = Channel(fd_in, fd_out)
    channel.send({"ready": True}, "0")
    while (request := channel.receive()) is not None:
        seq = request["seq"]
        if request["op"] == "run":
            result = shell.run_cell(request["source"], store_history=False, silent=True)
            failure = result.error_before_exec or result.error_in_exec
            channel.send(absence.describe(failure) if failure is not None else {"ok": True}, seq)
        elif request["op"] == "run_each":
            channel.send(run_each(shell, request["source"], absence), seq)
        elif request["op"] == "probe":
            sys.settrace(None)
            sys.setprofile(None)
            scope = _dict(shell.user_ns)
            scope["_observe"] = _observer(fd_out, seq)
            try:
                _exec(request["source"], scope)
                answer = scope["probe"](**{k: decode(v) for k, v in request["args"].items()})
                channel.send({"ok": True, "value": encode(answer)}, seq)
            except BaseException as error:  # the submission's errors are the grader's data
                channel.send(absence.describe(error), seq)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), _loads(sys.argv[3]) if len(sys.argv) > 3 else ())
