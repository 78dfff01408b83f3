"""Which results are current, and writing results so that no interruption leaves half of one.

A result is current when the same notebook bytes were graded by the same grader and the same lab
with the same course secret: its JSON records the notebook's SHA-256, the versions of the grader
and of the lab (hashes of their source files, so any edit counts, bumped or not) and of the
secret (a hash of it: the secret chooses the hidden inputs, see autograder/grading/secret.py). A batch run again grades only the
submissions without a current result, so an interrupted batch (Ctrl-C, a killed client, a lost
Dask worker) costs at most the submissions that were being graded. Options such as the time
limits are not part of the version: after changing them, `--regrade`.

Every file is written whole or not at all (`atomic_write`), and a submission's JSON is written
after its feedback and its gradebook entry, so a JSON on disk means the rest is there too.

A record is keyed by (student, lab) and lives in `<out>/<student>/<lab>.json` (and `.html`): the
folder is `student_folder(student)`, the file `file_stem(lab)`, whatever characters or length
the names have.
"""
import hashlib
import json
import os
import string
from pathlib import Path

from autograder.grading.secret import secret_version
from autograder.grading.submission import SubmissionError, read_submission
from autograder.grading.versions import grader_version, lab_version

# Within the smallest name limit of the usual file systems (eCryptfs: 143 bytes) with the longest
# suffix added (".html"); the same on every machine, so a results folder can be moved.
STEM_BYTES = 128
PLAIN = frozenset((string.ascii_letters + string.digits + "_-.").encode())
# What the results folder holds beside the students' folders (nbgrader's folders and gradebook,
# the class report, and the tables, *.csv): a student of one of these names gets a folder whose name is escaped.
REPORT = "report.html"  # the class report (autograder/reports/report_page.py)
SIMILARITY = "similarity.html"  # `autograder similarity`'s page (autograder/reports/similarity/)
RESERVED = frozenset(("autograded", "feedback", "gradebook.db", REPORT, SIMILARITY))


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


def student_folder(student):
    """The name of the folder holding `student`'s records: `file_stem(student)`, with its first
    character escaped where the stem is a name the results folder uses itself (its tables end in
    .csv), so that no student's folder ever stands in for one of them."""
    stem = file_stem(student)
    if stem in RESERVED or (stem.lower().endswith(".csv") and not stem.startswith("%")):
        return f"%{ord(stem[0]):02X}{stem[1:]}"
    return stem


def record_path(out, student, lab, suffix):
    """Where the record (student, lab) keeps its file with `suffix` (.json, .html)."""
    return Path(out) / student_folder(student) / f"{file_stem(lab)}{suffix}"


def record_key(result):
    """The (student, lab) a result is the record of."""
    extra = result["extra_data"]
    return extra["student"], extra["lab"] or ""


def stored_results(out):
    """Every record in the results folder `out` that can be read: {(student, lab): result}, keyed
    by what the result says (a file that is not a result of ours is passed over)."""
    found = {}
    for path in sorted(Path(out).glob("*/*.json")):
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
            key = record_key(result)
        except (OSError, ValueError, TypeError, KeyError):  # half-written by a crash, or not ours
            continue
        if path == record_path(out, key[0], key[1], ".json"):  # a copy moved by hand is not a record
            found[key] = result
    return found


def atomic_write(path, data):
    """Write `data` (text or bytes) to `path` through a temporary file renamed over it: a
    reader, or the next run after a crash, sees the old file or the new one, never a part.
    No fsync: a file emptied by a power cut fails to parse, so it is not current and is
    graded again, which costs less than syncing every file of a large class."""
    path = Path(path)
    # Named from a hash, so that it is no longer than any name: `path`'s may be at the limit.
    partial = path.with_name(f".{hashlib.sha256(os.fsencode(path.name)).hexdigest()[:16]}.{os.getpid()}.partial")
    path.parent.mkdir(parents=True, exist_ok=True)  # a student's first record makes the student's folder
    try:
        partial.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path


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


def current_result(out, submission, digest, secret):
    """The stored result of `submission` (a roster.Submission) in `out` if it is current, else None."""
    if digest is None:
        return None
    try:
        result = json.loads(record_path(out, *submission.key, ".json").read_text(encoding="utf-8"))
        extra = result["extra_data"]
        wanted = provenance(result, digest, secret)
    except (OSError, ValueError, TypeError, KeyError):  # missing, half-written by a crash, or not ours
        return None
    if result.get("status") == "grader_error":  # the grader's fault, never the student's: try again
        return None
    return result if all(extra.get(key) == value for key, value in wanted.items()) else None


def plan(submissions, out, secret, regrade=False):
    """Split roster.Submissions into those to grade, as (submission, digest), and the current
    results to keep, as (submission, result)."""
    todo, kept = [], []
    for submission in submissions:
        digest = notebook_digest(submission.path)
        result = None if regrade else current_result(out, submission, digest, secret)
        if result is None:
            todo.append((submission, digest))
        else:
            kept.append((submission, result))
    return todo, kept
