"""The course secret, and the seed it gives each submission's hidden inputs.

Every random input of a lab's hidden checks is drawn from a seed of the submission's own:
HMAC-SHA256(course secret, SHA-256 of the notebook's bytes), its first 64 bits. The same
notebook therefore gets the same inputs, and the same grade, wherever the same secret grades
it, while the inputs one submission received say nothing about another's: without the secret
no one can tell which inputs a notebook will be asked about.

The secret is, in this order: the bytes of the file given with `--secret-file`, the text of the
environment variable AUTOGRADER_SECRET, or the file `.autograder-secret` in the course root,
created with 32 random bytes the first time it is needed (git-ignored; the Gradescope bundle
carries it, so that Gradescope grades with the course's secret). Results record
`secret_version`, a hash of the secret, never the secret: a changed secret makes every result
stale.
"""
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from course.labs import ROOT

SECRET_FILE = ROOT / ".autograder-secret"
ENVIRONMENT = "AUTOGRADER_SECRET"
NEW_SECRET_BYTES = 32
MIN_SECRET_BYTES = 16  # a student who knows a notebook's inputs could try every shorter secret against them


def course_secret(path=None):
    """The course secret as bytes (see the module's docstring for where it comes from); a clear
    SystemExit when the one named is missing or too short to be a secret."""
    if path is not None:
        try:
            secret = Path(path).read_bytes()
        except OSError as error:
            raise SystemExit(f"autograder: cannot read the secret file {path}: {error.strerror}") from None
        return _long_enough(secret, f"the secret file {path}")
    if os.environ.get(ENVIRONMENT):
        return _long_enough(os.environ[ENVIRONMENT].encode(), f"the environment variable {ENVIRONMENT}")
    if not SECRET_FILE.is_file():
        _create(SECRET_FILE)
    return _long_enough(SECRET_FILE.read_bytes(), f"the secret file {SECRET_FILE}")


def _long_enough(secret, where):
    if len(secret) < MIN_SECRET_BYTES:
        raise SystemExit(f"autograder: {where} holds {len(secret)} bytes; a course secret needs at least "
                         f"{MIN_SECRET_BYTES}, and random ones are best (`head -c 32 /dev/urandom > FILE`)")
    return secret


def _create(path):
    """Write a new random secret to `path`, readable by its owner alone. It is written aside and
    linked into place, which fails if another process or thread got there first: then that one's
    stands. The name aside is random, not the PID, because the threads of a batch share a PID."""
    partial = path.with_name(f".{path.name}.{secrets.token_hex(8)}.partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(secrets.token_bytes(NEW_SECRET_BYTES))
        try:
            os.link(partial, path)
        except FileExistsError:
            pass
    finally:
        partial.unlink(missing_ok=True)


def submission_seed(secret, data):
    """The seed of the hidden inputs of the notebook whose bytes are `data`: a 64-bit integer."""
    digest = hmac.new(secret, hashlib.sha256(data).digest(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big")


def secret_version(secret):
    """What a result records of the secret it was graded with: enough to tell two secrets apart,
    nothing to recover either."""
    return hashlib.sha256(b"autograder course secret\0" + secret).hexdigest()[:16]
