"""Which results are current, and writing results so that no interruption leaves half of one.

A result is current when the same notebook bytes were graded by the same grader and the same lab
with the same course secret: its JSON records the notebook's SHA-256, the versions of the grader
and of the lab (hashes of their source files, so any edit counts, bumped or not) and of the
secret (a hash of it: the secret chooses the hidden inputs, see autograder/secret.py). A batch run again grades only the
submissions without a current result, so an interrupted batch (Ctrl-C, a killed client, a lost
Dask worker) costs at most the submissions that were being graded. Options such as the time
limits are not part of the version: after changing them, `--regrade`.

Every file is written whole or not at all (`atomic_write`), and a submission's JSON is written
after its feedback and its gradebook entry, so a JSON on disk means the rest is there too. The
files of a submission are named by `file_stem`, whatever characters or length its name has.
"""
import hashlib
import json
import os
import string
from functools import cache
from pathlib import Path

from autograder.labs import course_labs
from autograder.secret import secret_version
from autograder.submission import SubmissionError, read_submission
from course.labs import ROOT

# Within the smallest name limit of the usual file systems (eCryptfs: 143 bytes) with the longest
# suffix added (".html"); the same on every machine, so a results folder can be moved.
STEM_BYTES = 128
PLAIN = frozenset((string.ascii_letters + string.digits + "_-.").encode())


def file_stem(name):
    """The stem of the files holding the results of submission `name`: the name itself when it
    is plain (ASCII letters, digits, `_`, `-`, `.`, not starting with a dot), else each other
    byte of its UTF-8 as %XX (`%` included, and a leading dot), so no stem is a path component
    or hidden, and different names never share a stem. A stem over STEM_BYTES keeps its start
    and ends in `~` and 64 bits of the whole name's SHA-256 (`~` is never kept as it is)."""
    data = name.encode("utf-8", "surrogatepass")  # a lone surrogate is no other character's bytes
    stem = "".join(chr(byte) if byte in PLAIN and (position or byte != ord(".")) else f"%{byte:02X}"
                   for position, byte in enumerate(data)) or "%"  # "%" alone is no escape: only "" gives it
    if len(stem) <= STEM_BYTES:
        return stem
    start = stem[:STEM_BYTES - 17]
    if "%" in start[-2:]:  # keep the start decodable: no escape cut in two
        start = start[:start.rindex("%")]
    return f"{start}~{hashlib.sha256(data).hexdigest()[:16]}"


def atomic_write(path, data):
    """Write `data` (text or bytes) to `path` through a temporary file renamed over it: a
    reader, or the next run after a crash, sees the old file or the new one, never a part.
    No fsync: a file emptied by a power cut fails to parse, so it is not current and is
    graded again, which costs less than syncing every file of a large class."""
    path = Path(path)
    # Named from a hash, so that it is no longer than any name: `path`'s may be at the limit.
    partial = path.with_name(f".{hashlib.sha256(os.fsencode(path.name)).hexdigest()[:16]}.{os.getpid()}.partial")
    try:
        partial.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def _digest(paths):
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@cache
def grader_version():
    """Changes with any file of the grader or of the lab model it reads notebooks with."""
    return _digest([*(ROOT / "autograder").glob("*.py"), *(ROOT / "course").glob("*.py")])


@cache
def lab_version(lab_name):
    """Changes with the lab's instructor notebook, grading knowledge or data; None for no lab."""
    lab = course_labs().get(lab_name)
    if lab is None:
        return None
    data = [ROOT / "data" / name for name in lab.data_files if (ROOT / "data" / name).is_file()]
    return _digest([lab.path, *(ROOT / "autograder" / "labs" / lab_name).rglob("*.py"), *data])


def notebook_digest(path):
    """The SHA-256 of the submitted file, or None when it is not graded as it is (unreadable,
    too large, a link, a pipe...: never current, and its result says why)."""
    try:
        return hashlib.sha256(read_submission(path)).hexdigest()
    except SubmissionError:
        return None


def provenance(result, digest, secret):
    """What makes `result` current: the notebook it graded and the versions (of the grader, the
    lab and the course secret) that graded it."""
    lab = result["extra_data"]["lab"]
    return {"notebook_sha256": digest, "grader_version": grader_version(), "lab_version": lab_version(lab),
            "secret_version": secret_version(secret)}


def current_result(out, name, digest, secret):
    """The stored result of submission `name` in `out` if it is current, else None."""
    if digest is None:
        return None
    try:
        result = json.loads((Path(out) / f"{file_stem(name)}.json").read_text(encoding="utf-8"))
        extra = result["extra_data"]
        wanted = provenance(result, digest, secret)
    except (OSError, ValueError, TypeError, KeyError):  # missing, half-written by a crash, or not ours
        return None
    return result if all(extra.get(key) == value for key, value in wanted.items()) else None


def plan(named_paths, out, secret, regrade=False):
    """Split (name, path) pairs into those to grade, as (name, path, digest), and the current
    results to keep, as (name, path, result)."""
    todo, kept = [], []
    for name, path in named_paths:
        digest = notebook_digest(path)
        result = None if regrade else current_result(out, name, digest, secret)
        if result is None:
            todo.append((name, path, digest))
        else:
            kept.append((name, path, result))
    return todo, kept
