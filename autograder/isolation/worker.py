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
           {"op": "probe", "source": ..., "args": {...}}   run source, call probe(**args) (or the
                                                            function named by "probe", if given)
           {"op": "serve_reference", "imports": ...,        (to a worker started with a link, that
            "source": ..., "offered": [...]}                runs no submission code) become the
                                                            grader's side of the link: define the
                                                            reference functions offered, then run
                                                            probes on the submission's objects
                                                            across the link (see serve_reference)
Every request carries a random tag `seq` that its reply repeats, so the grader can tell its
replies from anything else written to OUT. A reply is one line, followed by its arrays' bytes
where it carries arrays (Channel's frames), of at most MAX_REPLY bytes in all (one that would be
longer is sent as an error instead), nested at most REPLY_NESTING deep; the grader takes nothing
longer or deeper for a reply.
While a probe runs, it may also call `_observe(value)`
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
import fcntl
import json
import math
import os
import re
import select
import signal
import sys

import numpy

# Taken before any submission code runs, so later monkeypatching of the modules cannot reach them.
_ndarray, _generic, _float64 = numpy.ndarray, numpy.generic, numpy.float64
_dumps, _loads, _b64encode, _b64decode = json.dumps, json.loads, base64.b64encode, base64.b64decode
_write, _read, _close = os.write, os.read, os.close
_isinstance, _type, _str, _dict, _exec, _compile, _len = isinstance, type, str, dict, exec, compile, len
_bytearray = bytearray
_fcntl, _GETPIPE_SZ = fcntl.fcntl, fcntl.F_GETPIPE_SZ
_function = type(lambda: None)
_probe_code = {}  # source -> code: every case of a lab sends the same probes, compiled once here
_asarray, _prod = numpy.asarray, math.prod
_PLAIN = (bool, int, float, str, type(None))
_NoneType = type(None)
MAX_ITEMS = 100_000  # scalar_engine's deepest hidden graph reports each of its 10,001 nodes
_MAX_STRING = 2000
# The largest reply of the labs' solved notebooks is 8.0 MB, its line and its arrays' bytes (10.7 MB
# as base64 text): a forward-mode case of 500,000 entries that only one forward pass can answer in
# time (tensor_engine's and pt03_autodiff's C; the others are under 0.31 MB). 24 MiB leaves room for
# twice that, while what the grader's JSON parser makes of a hostile line of that size stays under
# a GB, for as long as it takes to parse it.
MAX_REPLY = 24 << 20
# A read asks for a pipe's capacity, not more. A larger request is a buffer above glibc's threshold
# for mapping memory apart (128 KiB), mapped and unmapped again at every read of a process that has
# not yet freed such a block: two page faults and 15.6 us of CPU a read, against 1.1 us, on a line
# that tensor_engine's gradient checks cross 16,000 times a grading (bench/pipe_reads.py).
READ_BYTES = 1 << 16
# What the submission's side writes last when a MemoryError in the link's own code makes it close the
# line. Made in advance, since by then nothing can be allocated. The probe's reply then says
# MemoryError (run_probe), as when the answer's own allocation fails first, not ConnectionError.
RAN_OUT = b'{"ran_out": true}\n'
# encode() descends through at most 6 containers, 3 JSON levels each (a dict's object, its items
# and a pair); with the reply around them and an array's shape at the bottom, 21. Deeper is forged.
REPLY_NESTING = 32
# Feedback quotes what a submission chose to say (its exception messages) only this far.
QUOTED = 160
_MAX_DIMENSIONS = 32
_FRAMED = ("ndarray", "scalar")  # the descriptions whose "data" a framed Channel sends as a frame
_FRAMES_HEAD = b'{"frames": '  # how the line of a message with frames begins
# The whole head of such a line, as Channel.send writes it: the frames' sizes are read from it
# before the line is parsed, or whether it is parsed at all, so that a reader can step over them.
_FRAME_SIZES = re.compile(rb'\{"frames": \[(\d{1,12}(?:, \d{1,12}){0,%d})?\], "message": ' % (MAX_ITEMS - 1))


def _plain_tree(value, depth):
    """Whether `value` is a list of numbers, strings, None and such lists, within encode's limits
    (depth, items, string length): JSON carries it as it is, floats exactly (repr round-trips).
    Tuples and dicts are not: JSON would not give them back as they were. A loop, not a
    recursion: a graph of 10,000 nodes is sent this way, and both sides walk it for every case."""
    if _type(value) is not list:
        kind = _type(value)
        return (kind is bool or kind is int or kind is float or kind is _NoneType
                or kind is str and _len(value) <= _MAX_STRING)
    pending = [(value, depth)]
    while pending:
        items, level = pending.pop()
        if level >= 6 or _len(items) > MAX_ITEMS:
            return False
        for item in items:
            kind = _type(item)
            if kind is float or kind is int or kind is bool or kind is _NoneType:
                continue
            if kind is list:
                pending.append((item, level + 1))
            elif kind is not str or _len(item) > _MAX_STRING:
                return False
    return True


def encode(value, depth=0, raw=False):
    """Describe `value` without calling any method a submission could have defined. An array's
    numbers are base64 text, or with `raw` their bytes, for a framed Channel to send beside the line."""
    kind = _type(value)
    if kind is list and _plain_tree(value, depth):  # most of what probes send and get: one cheap walk
        return {"kind": "plain", "value": value}
    if kind is _ndarray:
        out = {"kind": "ndarray", "dtype": value.dtype.str, "shape": list(value.shape)}
        if value.dtype.kind in "biuf" and value.size <= 10_000_000:
            data = value.astype(_float64).tobytes()
            out["data"] = data if raw else _b64encode(data).decode()
        return out
    if kind in _PLAIN:
        if kind is float:
            return {"kind": "float", "hex": value.hex()}
        if kind is str:
            return {"kind": "str", "value": value[:_MAX_STRING]}
        return {"kind": kind.__name__, "value": value}
    if _isinstance(value, _generic) and kind.__module__ == "numpy":
        return {"kind": "scalar", "dtype": value.dtype.str, "data": encode(_asarray(value), raw=raw)["data"]
                if value.dtype.kind in "biuf" else None}
    if depth < 6 and kind in (tuple, list):
        return {"kind": kind.__name__, "items": [encode(item, depth + 1, raw) for item in value[:MAX_ITEMS]]}
    if depth < 6 and kind is dict:
        return {"kind": "dict", "items": [[encode(k, depth + 1, raw), encode(v, depth + 1, raw)]
                                          for k, v in list(_dict.items(value))[:MAX_ITEMS]]}
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
    """The inverse of encode: arguments in the worker, replies in the grader. A reply is
    whatever the submission managed to write, so anything but what encode makes (an array whose
    dtype is not a plain number, whose shape disagrees with its data) is a ValueError."""
    kind = value["kind"]
    if kind in ("ndarray", "scalar"):
        if value.get("data") is None:
            return Opaque(f"a {kind} of dtype {_str(value['dtype'])[:20]}")
        array = _array(value["dtype"], value.get("shape", ()), value["data"])
        return array if kind == "ndarray" else array[()]
    if kind == "float":
        return float.fromhex(value["hex"])
    if kind == "plain":
        if not _plain_tree(value["value"], 0):
            raise ValueError("a plain list holding something encode() would not send as one")
        return value["value"]
    if kind in ("list", "tuple"):
        items = [decode(item) for item in value["items"]]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        return {_hashable(decode(k)): decode(v) for k, v in value["items"]}
    if kind == "object":
        return Opaque(f"an object of type {_str(value['type'])[:80]}")
    return value["value"]


def _array(dtype, shape, data):
    """The array encode described, checked before anything is allocated for it."""
    dtype = numpy.dtype(dtype)
    if dtype.kind not in "biuf" or dtype.shape != () or dtype.itemsize > 16:
        raise ValueError(f"an array of dtype {dtype.str[:20]} is not one encode() sends")
    if _type(data) is not _str and _type(data) is not memoryview:  # base64 text, or a framed Channel's frame
        raise ValueError(f"an array's data is a {_type(data).__name__}, neither text nor a frame")
    flat = numpy.frombuffer(data if _type(data) is memoryview else _b64decode(data), dtype=_float64)
    if (_type(shape) is not list and shape != ()) or len(shape) > _MAX_DIMENSIONS or any(
            _type(n) is not int or n < 0 for n in shape) or _prod(shape) != flat.size:
        raise ValueError(f"an array's shape ({_str(shape)[:80]}) does not fit its {flat.size} values")
    return flat.astype(dtype).reshape(shape)


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
    return {"error": name, "message": _str(error)[:QUOTED + 1] if trusted else ""}


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


def frame_sizes(line):
    """The sizes of the frames that follow the framed `line`, from its head alone; None where
    the head is not one Channel.send writes."""
    head = _FRAME_SIZES.match(line)
    if head is None:
        return None
    return [int(size) for size in head.group(1).split(b", ")] if head.group(1) else []


def with_frames(line, frames):
    """The message of the framed `line`, each of its arrays' "data" (a frame's number) replaced by
    that frame of `frames` (their bytes, back to back, as frame_sizes says). What the writer says
    is a claim: a head that is not one, or an array that refers to a frame the line does not
    announce, is a ValueError."""
    sizes = frame_sizes(line)
    if sizes is None:
        raise ValueError("a message's frame sizes are not byte counts")
    starts = [0]
    for size in sizes:
        starts.append(starts[-1] + size)
    if starts[-1] != _len(frames):
        raise ValueError(f"a message announces {starts[-1]} bytes of frames and comes with {_len(frames)}")
    arrays = []  # every array's description: its "data" is to be a frame
    message = _loads(line, object_hook=lambda found: (
        arrays.append(found) if found.get("kind") in _FRAMED and _type(found.get("data")) is int else None, found)[1])
    frames = memoryview(frames)
    for array in arrays:
        number = array["data"]
        if not 0 <= number < _len(sizes):
            raise ValueError(f"an array's data refers to frame {number} of {_len(sizes)}")
        array["data"] = frames[starts[number]:starts[number + 1]]
    return message["message"]


class Channel:
    """Messages as JSON lines. A framed channel sends an array's bytes as they are, after the
    line, instead of as base64 text inside it: a message that carries arrays is the line
    {"frames": [their sizes], "message": ...}, in which each array's "data" is its frame's number,
    followed by the frames. A re-grade sends hundreds of MB across a link, and a grading of
    pt03_autodiff or tensor_engine sends the grader 12 MB of arrays; as text each MB cost about
    10 ms of CPU between the two sides (docs/speed.md). A Link's channel (`framed`) sends and reads
    frames; a worker's channel to the grader (`sends_frames`) sends them, and the grader reads them
    (sandbox.Lines); what the grader sends carries none."""

    def __init__(self, fd_in, fd_out, framed=False, sends_frames=False):
        self.fd_in, self.fd_out, self.buffer, self.closed = fd_in, fd_out, _bytearray(), False
        self.framed, self.sends_frames = framed, framed or sends_frames

    def left_behind(self):
        """The lines waiting in the pipe and the buffer, read without waiting for more: what the
        other side wrote before it closed its end. Once its writer is gone a pipe holds at most its
        capacity, so reading stops there: a side that shut only its reading end and writes on would
        otherwise keep this one reading for as long as it liked, and what it writes then is not
        what it left."""
        try:
            most = _fcntl(self.fd_in, _GETPIPE_SZ)
        except OSError:
            most = READ_BYTES
        taken = 0
        try:
            while not self.closed and taken < most and select.select([self.fd_in], [], [], 0)[0]:
                chunk = _read(self.fd_in, READ_BYTES)
                if not chunk:
                    break
                taken += _len(chunk)
                self.buffer += chunk
        except OSError:
            pass
        return bytes(self.buffer).split(b"\n")[:-1]

    def receive(self):
        if self.closed:
            return None
        # A message of megabytes comes in many reads of a pipe's 64 KiB: each byte is searched
        # for the line's end once, and the buffer grows in place (a bytes buffer copied itself
        # whole at every read: seconds of CPU for one large array).
        searched = 0
        while (end := self.buffer.find(b"\n", searched)) < 0:
            searched = _len(self.buffer)
            chunk = _read(self.fd_in, READ_BYTES)
            if not chunk:
                return None
            self.buffer += chunk
        line = self.buffer[:end]
        del self.buffer[:end + 1]
        if not (self.framed and line.startswith(_FRAMES_HEAD)):  # most messages carry no array
            return _loads(line)
        return self._with_frames(line)

    def _with_frames(self, line):
        """The message of a framed `line`, its arrays' data the frames that follow it; None when
        the stream ends first."""
        sizes = frame_sizes(line)
        if sizes is None:
            raise ValueError("a message's frame sizes are not byte counts")
        total = sum(sizes)
        while _len(self.buffer) < total:
            chunk = _read(self.fd_in, READ_BYTES)
            if not chunk:
                return None
            self.buffer += chunk
        frames = bytes(self.buffer[:total])  # copied out: the buffer is cut next
        del self.buffer[:total]
        return with_frames(line, frames)

    def send(self, reply, seq, limit=MAX_REPLY):
        """`limit`: None on a Link, whose other end is a worker with its own memory cap."""
        reply["seq"] = seq
        frames = []
        if self.sends_frames:
            def framed(data):  # an array's bytes (encode's `raw`): written after the line
                if _type(data) is not bytes:
                    raise TypeError(f"a {_type(data).__name__} is not sent across a line")
                frames.append(data)
                return _len(frames) - 1
            text = _dumps(reply, default=framed)
            if frames:
                text = f'{_FRAMES_HEAD.decode()}{_dumps([_len(frame) for frame in frames])}, "message": {text}}}'
        else:
            text = _dumps(reply)
        data = (text + "\n").encode()
        if limit is not None and len(data) + sum(map(_len, frames)) > limit:  # the grader would take it for garbage
            data = (_dumps({"error": "ReplyTooLarge", "seq": seq, "message": f"the answer takes "
                            f"{len(data) + sum(map(_len, frames))} bytes as a reply; the grader reads at most "
                            f"{MAX_REPLY}"}) + "\n").encode()
            frames = []
        if self.closed:
            raise ConnectionError("the reference engine's line is closed")
        for part in (data, *frames):
            part = memoryview(part)  # slices of a view copy nothing: a large message needs no second copy
            while part:
                part = part[_write(self.fd_out, part):]

    def close(self):
        if not self.closed:
            self.closed = True
            for fd in {self.fd_in, self.fd_out}:
                try:
                    _close(fd)
                except OSError:
                    pass


# ------------------------------------------------------------------ the reference engine's line
class Link:
    """A line between the submission's worker and a reference worker, for re-grading an activity
    on a correct engine without putting the reference solution in the submission's process.

    The reference worker holds the reference functions; the submission's worker holds, in their
    place, functions that only call them across the line. An object crosses by value when it is
    plain data (encode's kinds), else as a handle: the side that holds it keeps it, the other
    gets a proxy. The reference side's proxies (Remote) forward what the reference code does with
    the submission's objects (attributes, calls, operators, iteration, isinstance); the
    submission's side gets nothing but call stubs for the reference's objects, so no attribute,
    code object or source of the reference can be reached from there. Each side, while it waits
    for a reply, serves the other's requests, so calls may nest to any depth.

    Most of what reference code does with the submission's objects is to read and write plain
    attributes (a Value's data and grad): a round trip each would make a re-grade ten times
    slower than grading. So a handle to an object whose class is plain (see `snapshot`) carries
    its plain attributes, and the reference side reads them from that copy for as long as no
    code of the submission can have run since: until the reference side next asks for something
    or replies (`epoch`). Its writes to such an object go one way, without waiting."""

    def __init__(self, fd_in, fd_out, serving):
        self.channel, self.serving = Channel(fd_in, fd_out, framed=True), serving
        self.exports, self.ids, self.proxies, self.count, self.asked = {}, {}, {}, 0, 0
        self.namespace = None  # where names are looked up: the user's, or the reference's
        self.epoch = 0  # the reference side's: which copies of attributes are still current
        self.failed = None  # the submission side's: a one-way write that raised, told with the next reply
        self.thrown = {}  # the submission side's: id on the other side -> the exception made for it here
        self.lent = set()  # the reference side's: ids of the objects whose public attributes the other side may read
        self.relayed = {}  # the reference side's: id -> (an error of the other side's, rebuilt; how it described it)
        self.broken = None  # why the line was closed (lose), once it was
        self.ran_out = False  # the reference side's: the other side closed the line for want of memory (RAN_OUT)

    # values crossing the line
    def pack(self, value, depth=0, share_arrays=False):
        """`value` for the other side. The submission's arrays cross by value, except those it
        passes as arguments to a reference function (`share_arrays`), which cross as handles, so
        that reference code that writes into them (numerical_grad) writes into the submission's."""
        kind = _type(value)
        if kind is Remote and value._link is self:
            return {"kind": "back", "id": value._id}
        if kind is _ndarray:
            if value.dtype.kind in "biuf" and not (share_arrays and not self.serving):
                return encode(value, raw=True)
        elif kind in _PLAIN or (_isinstance(value, _generic) and kind.__module__ == "numpy"):
            return encode(value, raw=True)
        elif depth < 12 and kind in (tuple, list):
            return {"kind": kind.__name__, "items": [self.pack(item, depth + 1, share_arrays) for item in value]}
        elif depth < 12 and kind is dict:
            return {"kind": "dict", "items": [[self.pack(k, depth + 1), self.pack(v, depth + 1, share_arrays)]
                                              for k, v in _dict.items(value)]}
        if self.serving and _isinstance(value, BaseException):  # to be raised there, as one of Python's own
            return {"kind": "exception", "id": self._export(value), "name": describe_error(value)["error"].split(" ")[0]}
        stub_of = self.ids.get(("stub", id(value)))
        if stub_of is not None:
            return {"kind": "back", "id": stub_of}
        packed = {"kind": "ref", "id": self._export(value)}
        if packed["id"] in self.lent:
            packed["lent"] = True
        if not self.serving:
            attributes = snapshot(value)
            if attributes is not None:
                packed["attrs"] = attributes
        elif kind is _function and value.__closure__:
            # The submission's objects a reference closure (a backward rule) will read: a call
            # to it brings their attributes along. Their ids are all the submission learns.
            held = [cell.cell_contents._id for cell in value.__closure__ if _type(cell.cell_contents) is Remote
                    and cell.cell_contents._link is self]
            if held:
                packed["holds"] = held
        return packed

    def _export(self, value):
        """The id the other side knows `value` by. Exported objects are kept, so ids are never reused."""
        if id(value) not in self.ids:
            self.count += 1
            self.ids[id(value)], self.exports[self.count] = self.count, value
        return self.ids[id(value)]

    def unpack(self, value):
        kind = value["kind"]
        if kind == "back":
            return self.exports[value["id"]]
        if kind == "exception" and not self.serving:
            self.thrown[value["id"]] = made = rebuilt({"error": value["name"]}, BaseException)
            return made
        if kind == "ref":
            found = self.proxies.get(value["id"])
            if found is None:
                found = Remote(self, value["id"]) if self.serving else self._stub(value["id"], value.get("holds", ()))
                if value.get("lent") and not self.serving:
                    found = self._borrowed(value["id"], found)
                self.proxies[value["id"]] = found
            if self.serving and "attrs" in value:
                found._remember(value["attrs"])
            return found
        if kind in ("list", "tuple"):
            items = [self.unpack(item) for item in value["items"]]
            return items if kind == "list" else tuple(items)
        if kind == "dict":
            return {self.unpack(k): self.unpack(v) for k, v in value["items"]}
        return decode(value)

    def _stub(self, ident, holds=()):
        link, holds = self, [held for held in holds if held in self.exports]

        def reference_function(*args, **kwargs):
            message = {"op": "call", "target": ident, "args": link.pack(list(args), share_arrays=True),
                       "kwargs": link.pack(kwargs, share_arrays=True)}
            fresh = [[held, attributes] for held in holds if (attributes := snapshot(link.exports[held])) is not None]
            if fresh:
                message["fresh"] = fresh
            return link.request(message)

        self.ids[("stub", id(reference_function))] = ident
        return reference_function

    def _borrowed(self, ident, call):
        """The submission's side of an object the other side lent (see `apart`'s _lend)."""
        borrowed = Borrowed(call, lambda name: self.request({"op": "getattr", "target": ident, "name": name}))
        self.ids[("stub", id(borrowed))] = ident
        return borrowed

    # the conversation
    def receive(self):
        """The other side's next message, or None once the line is closed. A read that fails part
        way (a MemoryError holding a large message) leaves the rest of the stream out of step: the
        line is closed then, so that neither side waits for a reply that can no longer come."""
        try:
            return self.channel.receive()
        except BaseException as error:
            self.lose(f"a message could not be read: {describe_error(error)['error']}", _isinstance(error, MemoryError))
            return None

    def lose(self, why, ran_out=False):
        """Close the line, which has lost its place in the conversation: each side's wait ends at once.
        The submission's side says first when it was running out of memory (RAN_OUT)."""
        self.broken = self.broken or why
        if ran_out and not self.serving and not self.channel.closed:
            try:
                _write(self.channel.fd_out, RAN_OUT)
            except OSError:
                pass
        self.channel.close()

    def request(self, message):
        self.asked += 1
        number = message["id"] = self.asked
        before = self.epoch
        self.epoch += 1  # the submission's code may run before the reply
        self.post(message)
        while True:
            incoming = self.receive()
            if incoming is None:
                raise self.lost("the other side closed it")
            if self.serving and incoming.get("ran_out"):
                self.ran_out = True
                raise self.lost("the submission's side ran out of memory")
            if incoming.get("reply") == number:
                if "error" in incoming:
                    raise self.raised(incoming)
                if incoming.get("clean") and self.epoch == before + 1:  # no code of the submission's ran
                    self.epoch = before
                if "attrs" in incoming and "target" in message:  # the target as the submission's side left it
                    self.proxies[message["target"]]._remember(incoming["attrs"])
                self.raise_failed()
                return self.unpack(incoming["value"])
            if "op" in incoming:
                self.answer(incoming)
            elif self.serving:  # calls nest, so the one reply this side can be given is to its last request
                self.lose("a reply came to a request not waiting for one")
            # else the submission's side: a late reply to a request its code gave up on (a signal handler's raise)

    def raised(self, reply):
        """The exception an error reply stands for: the very one this side sent, when the other
        side's code let it through (a block's __exit__), else one of Python's own."""
        found = self.exports.get(reply.get("raised")) if self.serving else None
        if _isinstance(found, BaseException):
            return found
        made = rebuilt(reply["error"])
        if self.serving:
            self.relayed[id(made)] = (made, reply["error"])
        return made

    def describe(self, error):
        """A probe's error on the reference side, for its reply: one of the other side's as that
        side described it (its kind's own name, as describe_error there gives it), else as usual."""
        found = self.relayed.get(id(error))
        return dict(found[1]) if found is not None and found[0] is error else describe_error(error)

    def raise_failed(self):
        if self.failed is not None:
            failed, self.failed = self.failed, None
            raise failed

    def tell(self, message):
        """A request that has no reply (a write to a plain object: see `snapshot`)."""
        self.post(message)

    def post(self, message):
        """Write a request. The other side may be gone already (its worker killed): the line is
        lost then, as when a read finds it closed, so that what waits on it learns at once. A
        submission's side that closed the line for want of memory wrote RAN_OUT first: then the
        line is lost for that, whether this side was writing or reading when it closed."""
        try:
            self.channel.send(message, "link", limit=None)
        except OSError as error:
            if self.serving and any(line.endswith(RAN_OUT.rstrip()) for line in self.channel.left_behind()):
                self.ran_out = True
                raise self.lost("the submission's side ran out of memory") from None
            raise self.lost(f"a message could not be written: {describe_error(error)['error']}") from None

    def lost(self, why):
        """Close the line (see `lose`) and make the error its waiting caller is to raise."""
        self.lose(why)
        return ConnectionError(f"the reference engine's line closed: {self.broken}")

    def answer(self, message):
        """Perform the other side's request and reply to it. A request that cannot be replied to
        (no id: not this protocol's) closes the reference side's line."""
        if "id" not in message and not message.get("oneway"):
            if self.serving:
                self.lose("a request without an id")
            return
        if message.get("oneway"):
            try:
                self.perform(message)
            except BaseException as error:
                self.failed = self.failed or error
            return
        try:
            self.raise_failed()
            reply = {"reply": message["id"]}
            attributes = None
            if message["op"] == "getattr" and not self.serving:
                target = self.exports[message["target"]]
                attributes = snapshot(target)
            if attributes is not None and message["name"] in attributes:
                # From the instance's __dict__, where a plain class looks first: no code runs.
                reply.update(value=self.pack(_object_getattribute(target, "__dict__")[message["name"]]), clean=True,
                             attrs=attributes)
            elif message["op"] == "made":  # kept here, however plain: the other side's code writes into it
                reply["value"] = {"kind": "ref", "id": self._export(self.perform(message))}
            else:
                reply["value"] = self.pack(self.perform(message))
                if attributes is not None:
                    reply["attrs"] = snapshot(target)
        except BaseException as error:  # the other side's code failed: its caller is told how
            reply = {"reply": message["id"], "error": describe_error(error)}
            sent = next((ident for ident, made in self.thrown.items() if made is error), None)
            if sent is not None:
                reply["raised"] = sent
        self.epoch += 1  # control goes back to the other side
        try:
            self.channel.send(reply, "link", limit=None)
        except BaseException as error:  # a reply too large to write (MemoryError): the other side still waits for one
            try:
                self.channel.send({"reply": message["id"], "error": describe_error(error)}, "link", limit=None)
            except BaseException:
                self.lose("a reply could not be written", _isinstance(error, MemoryError))

    def perform(self, message):
        op = message["op"]
        if self.serving:  # the submission may only call what the reference engine gave it
            if op == "function" and message["name"] in self.namespace.offered:
                return self.namespace[message["name"]]
            if op == "getattr" and message["target"] in self.lent and not message["name"].startswith("_"):
                return getattr(self.exports[message["target"]], message["name"])
            if op == "call":
                target = self.exports[message["target"]]
                for held, attributes in message.get("fresh", ()):
                    if held in self.proxies:
                        self.proxies[held]._remember(attributes)
                return target(*self.unpack(message["args"]), **self.unpack(message["kwargs"]))
            raise PermissionError("the reference engine only answers calls, and reads of what it lent")
        if op == "global":
            if "value" in message:  # a probe putting back what the submission's code switched
                self.namespace[message["name"]] = self.unpack(message["value"])
                return None
            return self.namespace[message["name"]]
        if op in ("builtin", "made"):
            import builtins

            found = getattr(builtins, message["name"])
            return found() if op == "made" else found
        target = self.exports[message["target"]]
        if op == "enter":  # a `with` block on the other side: looked up on the type, as Python does
            return _type(target).__enter__(target)
        if op == "exit":
            error = self.unpack(message["value"])
            return _type(target).__exit__(target, None if error is None else _type(error), error, None)
        if op == "getattr":
            return getattr(target, message["name"])
        if op == "setattr":
            return setattr(target, message["name"], self.unpack(message["value"]))
        if op == "call":
            return target(*self.unpack(message["args"]), **self.unpack(message["kwargs"]))
        if op == "operator" and message["name"] in OPERATORS:
            operands = self.unpack(message["args"])
            if message.get("reflected"):
                return OPERATORS[message["name"]](*operands, target)
            return OPERATORS[message["name"]](target, *operands)
        if op == "value":
            return _asarray(target) if message.get("array") else target
        if op == "items":
            return list(target)
        if op == "instancecheck":
            return _isinstance(self.unpack(message["value"]), target)
        raise PermissionError(f"unknown request {op!r}")

    def serve(self):
        while (message := self.receive()) is not None:
            self.answer(message)


def rebuilt(error, base=Exception):
    """The other side's exception, as one of Python's own (only those cross the line); `base`:
    the widest kind it may be."""
    import builtins

    kind = getattr(builtins, error["error"].split(" ")[0], RuntimeError)
    kind = kind if _isinstance(kind, type) and issubclass(kind, base) else RuntimeError
    return kind(error.get("message", ""))


import operator as _operator  # noqa: E402  -- kept beside the only code that uses it

OPERATORS = {name: getattr(_operator, name) for name in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "neg", "pos", "abs", "lt", "le", "eq", "ne",
    "gt", "ge", "getitem", "setitem", "truth", "invert", "and_", "or_", "xor", "contains")}
OPERATORS["len"] = len


def _forward(name, reflected=False):
    """An operator of Remote, worked out by the submission's object. Reflected (`2.0 * proxy`,
    `array @ proxy`): the other operand declined, so the object is asked with itself on the right."""
    def method(self, *args):
        flags = {"reflected": True} if reflected else {}
        return self._ask("operator", name=name, args=self._link.pack(list(args)), **flags)
    return method


_SNAPSHOT_ITEMS, _SNAPSHOT_CHARS = 64, 1000
_HELD = {"kind": "held"}  # in a snapshot: an attribute that is not plain data, only written one way
_object_getattribute, _object_setattr, _object_delattr = object.__getattribute__, object.__setattr__, object.__delattr__
_guarded_names = {}  # class -> the names its data descriptors take (None: no snapshots of its instances)


def _guarded(kind):
    """The names that reading or writing on a `kind` instance would take through a descriptor
    (code the submission may have written) rather than the instance's __dict__; None when
    Python's own attribute methods are replaced, so that any access may run such code."""
    if kind in _guarded_names:
        return _guarded_names[kind]
    names = None
    if (_type(kind) is type and kind.__getattribute__ is _object_getattribute and kind.__setattr__ is _object_setattr
            and kind.__delattr__ is _object_delattr and "__getattr__" not in _dict(kind.__dict__)):
        names = frozenset(name for klass in kind.__mro__ for name, attribute in _dict(klass.__dict__).items()
                          if hasattr(_type(attribute), "__set__") or hasattr(_type(attribute), "__delete__"))
    _guarded_names[kind] = names
    return names


def snapshot(value):
    """`value`'s instance attributes, for the reference side: plain data (numbers, strings,
    None) by value, the others as _HELD; None when its class is not plain (see _guarded)."""
    kind = _type(value)
    guarded = None if kind is type else _guarded(kind)
    if guarded is None:
        return None
    try:
        attributes = _object_getattribute(value, "__dict__")
    except AttributeError:
        return None
    if _type(attributes) is not dict:
        return None
    copied = {}
    for name, item in _dict.items(attributes):
        if _type(name) is not _str or name in guarded:
            continue
        plain = _type(item) in _PLAIN and not (_type(item) is _str and len(item) > _SNAPSHOT_CHARS)
        copied[name] = encode(item) if plain else _HELD
        if len(copied) == _SNAPSHOT_ITEMS:
            break
    return copied


class Remote:
    """The reference side's proxy for an object of the submission's (see Link)."""
    __slots__ = ("_link", "_id", "_attrs", "_epoch", "__weakref__")
    # Above NumPy's arrays, so that `array @ proxy` asks the proxy (__rmatmul__), whose object
    # answers as it would in its own process, instead of NumPy reading it as an array.
    __array_priority__ = 1000

    def __init__(self, link, ident):
        object.__setattr__(self, "_link", link)
        object.__setattr__(self, "_id", ident)
        object.__setattr__(self, "_attrs", None)  # a snapshot of its plain attributes, or None
        object.__setattr__(self, "_epoch", -1)  # the link's epoch when _attrs was current

    def _remember(self, attributes):
        object.__setattr__(self, "_attrs", {name: _HELD if value == _HELD else decode(value)
                                            for name, value in attributes.items()})
        object.__setattr__(self, "_epoch", self._link.epoch)

    def _ask(self, op, **fields):
        return self._link.request({"op": op, "target": self._id, **fields})

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):  # NumPy's and Python's probing: never the submission's
            raise AttributeError(name)
        if self._epoch == self._link.epoch:
            found = self._attrs.get(name, _HELD)
            if found is not _HELD:
                return found
        return self._ask("getattr", name=name)

    def __setattr__(self, name, value):
        link = self._link
        if self._epoch == link.epoch and name in self._attrs:  # no code of the submission's runs for it
            packed = link.pack(value)
            link.tell({"op": "setattr", "target": self._id, "name": name, "value": packed, "oneway": True})
            self._attrs[name] = value if _type(value) in _PLAIN else _HELD
            return
        self._ask("setattr", name=name, value=link.pack(value))

    def __call__(self, *args, **kwargs):
        return self._ask("call", args=self._link.pack(list(args)), kwargs=self._link.pack(kwargs))

    def __hash__(self):
        return hash((Remote, self._id))

    def __iter__(self):
        return iter(self._ask("items"))

    def __len__(self):
        return self._ask("operator", name="len", args=self._link.pack([]))

    def __bool__(self):
        return self._ask("operator", name="truth", args=self._link.pack([]))

    def __float__(self):
        return float(self._ask("value"))

    def __index__(self):
        return self._ask("value").__index__()

    def __array__(self, dtype=None, copy=None):
        return _asarray(self._ask("value", array=True), dtype=dtype)

    def __instancecheck__(self, value):
        return self._ask("instancecheck", value=self._link.pack(value))

    def __repr__(self):
        return f"<the submission's object {self._id}>"

    def __enter__(self):
        return self._ask("enter")

    def __exit__(self, kind, error, trace):
        return self._ask("exit", value=self._link.pack(error))

    __add__, __radd__ = _forward("add"), _forward("add", True)
    __sub__, __rsub__ = _forward("sub"), _forward("sub", True)
    __mul__, __rmul__ = _forward("mul"), _forward("mul", True)
    __truediv__, __rtruediv__ = _forward("truediv"), _forward("truediv", True)
    __pow__, __rpow__ = _forward("pow"), _forward("pow", True)
    __matmul__, __rmatmul__ = _forward("matmul"), _forward("matmul", True)
    __neg__, __pos__, __abs__ = _forward("neg"), _forward("pos"), _forward("abs")
    __lt__, __le__, __gt__, __ge__ = _forward("lt"), _forward("le"), _forward("gt"), _forward("ge")
    __eq__, __ne__ = _forward("eq"), _forward("ne")
    __getitem__, __setitem__ = _forward("getitem"), _forward("setitem")


class Borrowed:
    """An object the grader's side of a link lent the submission's (a test network): it may be
    called, and its public attributes read, across the line; the reference side refuses the rest."""
    __slots__ = ("_call", "_read", "__weakref__")

    def __init__(self, call, read):
        object.__setattr__(self, "_call", call)
        object.__setattr__(self, "_read", read)

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self._read(name)


class ReferenceNamespace(dict):
    """The reference functions' globals: the reference's own definitions and the modules the lab
    imports, then the submission's names (the lab's given classes and helpers), fetched across the
    line (objects once, plain values each time); Python's builtins are never asked for there."""

    def __init__(self, link, offered):
        super().__init__()
        self.link, self.offered = link, frozenset(offered)

    def __missing__(self, name):
        import builtins

        if name.startswith("__") or hasattr(builtins, name):
            raise KeyError(name)
        try:
            found = self.link.request({"op": "global", "name": name})
        except Exception:
            if self.link.broken is not None:  # not a name the submission lacks: the line is gone
                raise
            raise KeyError(name) from None
        if _type(found) is Remote:  # a class or a function: a flag (no_grad's) must be read afresh
            self[name] = found
        return found


def serve_reference(link, imports, source, offered, channel=None):
    """In the grader's side of a link, a worker that runs no submission code: define the
    reference functions, then answer the line until it closes, and, given the grader's
    `channel`, run the probes it sends there (see `apart`)."""
    namespace = link.namespace = ReferenceNamespace(link, offered)
    for statement in ast.parse(imports).body:
        try:  # the lab may import what this worker lacks (PyTorch): the reference does not need it
            _exec(_compile(ast.Module(body=[statement], type_ignores=[]), "<lab imports>", "exec"), namespace)
        except ImportError:
            pass
    _exec(_compile(source, "<reference>", "exec"), namespace)
    if channel is None:
        link.serve()
        return
    while (request := idle(channel, link)) is not None:
        if request["op"] == "probe":
            link.relayed.clear()
            run_probe(apart(link, channel.fd_out, request["seq"]), request, channel, link, line=link)


def apart(link, fd_out, seq):
    """The scope of a probe run on this side of the link: the submission's names are proxies of
    its objects (see ReferenceNamespace), so the probe's own code, its observations and its reply
    stay out of the submission's process, which only answers what the probe asks of its objects.
    Besides _observe, such a probe has _student(name), a builtin of the submission's process
    (`id`), _made(name), an object made there by calling one (a `dict` that the submission's code
    is to write into: a plain one would cross by value), and _set_global(name, value) to put back
    a global of its namespace, and _lend(value), which lets the submission's code read value's
    public attributes (a test network's params, its zero_grad) besides calling it."""
    scope = ReferenceNamespace(link, ())
    scope["_observe"] = _observer(fd_out, seq)
    scope["_student"] = lambda name: link.request({"op": "builtin", "name": name})
    scope["_made"] = lambda name: link.request({"op": "made", "name": name})
    scope["_lend"] = lambda value: (link.lent.add(link._export(value)), value)[1]
    scope["_set_global"] = lambda name, value: link.request({"op": "global", "name": name, "value": link.pack(value)})
    return scope


def run_probe(scope, request, channel, describer, line=None):
    """Run the probe `request` names in `scope` and send its reply; `describer.describe` says
    what an error was. `line`: the link a probe run apart works across; once it is lost, the
    reply says so (`line_lost`), and the grader starts both workers again before it asks anything
    more, so that what one case did to the line costs no later case (grade.Session.ask)."""
    seq = request["seq"]

    def said(reply):
        if line is None or line.broken is None:
            return reply
        if line.ran_out:  # whatever the probe's code made of the closed line after that
            reply = {"error": "MemoryError", "message": line.broken}
        return {**reply, "line_lost": True}

    try:
        source = request["source"]
        code = _probe_code.get(source)
        if code is None:
            code = _probe_code[source] = _compile(source, "<string>", "exec")
        _exec(code, scope)
        answer = scope[request.get("probe", "probe")](**{k: decode(v) for k, v in request["args"].items()})
        channel.send(said({"ok": True, "value": encode(answer, raw=channel.sends_frames)}), seq)
    except BaseException as error:  # the submission's errors are the grader's data
        channel.send(said(describer.describe(error)), seq)


def idle(channel, line):
    """The grader's next request, or None once its pipe closes. Meanwhile, given a `line`, the
    other side's requests on it are answered: a probe running there works on this side's objects."""
    while line is not None and not line.channel.closed and b"\n" not in channel.buffer:
        if b"\n" not in line.channel.buffer and line.channel.fd_in not in select.select(
                [channel.fd_in, line.channel.fd_in], [], [])[0]:
            break
        message = line.receive()
        if message is None:  # the other side is gone: the grader's pipe is all that is left
            break
        if "op" in message:  # not a late reply to a request given up on
            line.answer(message)
    return channel.receive()


def main(fd_in, fd_out, hidden=(), link=None):
    from IPython.core.interactiveshell import InteractiveShell

    # As a fresh interpreter has them, however the worker was started: a zygote's child starts
    # with every signal at its default (zygote.become_worker), where a write to a pipe no longer
    # read would kill it at once, though started cold it raises BrokenPipeError.
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if hidden:
        sys.meta_path.insert(0, Unavailable(hidden))
    absence = Absence(hidden)
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False  # its SQLite file would need the file locks seccomp.py refuses
    shell = InteractiveShell.instance(config=config)
    # The grader reads a failed cell's exception, never its rendering, and IPython takes seconds of
    # the submission's CPU time to render the 10,000 frames of a RecursionError.
    shell.showtraceback = lambda *args, **kwargs: None
    channel = Channel(fd_in, fd_out, sends_frames=True)
    line = None
    if link is not None:
        line = Link(link[0], link[1], serving=False)
        line.namespace = shell.user_ns
        # What the given code of a re-grade calls: reference_functions("backward", ...) gives stubs.
        shell.user_ns["_reference_functions"] = lambda *names: [line.request({"op": "function", "name": name})
                                                                for name in names]
    channel.send({"ready": True}, "0")
    answering = None  # the line, once this worker is known to be the submission's side of it
    while (request := idle(channel, answering)) is not None:
        seq = request["seq"]
        if request["op"] == "serve_reference" and link is not None and answering is None:
            channel.send({"ok": True}, seq)
            serve_reference(Link(link[0], link[1], serving=True), request["imports"], request["source"],
                            request["offered"], channel)
            return
        answering = line
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
            run_probe(scope, request, channel, absence)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), _loads(sys.argv[3]) if len(sys.argv) > 3 else (),
         _loads(sys.argv[4]) if len(sys.argv) > 4 else None)
