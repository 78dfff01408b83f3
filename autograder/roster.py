"""What a grading run is given: every submission under the paths, keyed by the record it makes,
(student, lab), and every file it leaves out, with the reason.

The student is nbgrader's student id where the path follows nbgrader's layout
(`submitted/<student>/<folder>/<file>.ipynb`), else the file's stem. The lab is the folder's
where that folder is named for one of the course's labs: the notebook must then be that lab's,
and a notebook of another lab there is graded as nothing (status `wrong_lab`). Anywhere else the
lab is recognised from the notebook's content; a file that cannot be read as a lab's notebook
keeps its folder's name in the layout, and `UNRECOGNISED` outside it.

One record per key: when two files make the same key (two notebooks in one lab folder, or two
files of one stem and lab outside the layout), the one named `<lab>.ipynb` is graded, else the
first in sorted order, and the others are listed as skipped, never graded over each other.
"""
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from autograder.labs import course_labs
from autograder.submission import SubmissionError, identify, load, nbgrader_place, student_name

UNRECOGNISED = "unrecognised"  # the lab of a file outside nbgrader's layout that is no lab's notebook
TIMESTAMP = "timestamp.txt"  # nbgrader's submission time, beside the notebook
# What nbgrader's submit and the release put beside a notebook (the submission's secret, the
# release's settings, its data/ folder): nbgrader's collect hands them in with it, and they are
# no one's mistake.
BESIDE = (TIMESTAMP, "submission_secret.txt", "nbgrader_config.py")
DATA = "data"
CHECKPOINTS = ".ipynb_checkpoints"  # Jupyter's autosaves: never the submission, never worth a word


@dataclass(frozen=True)
class Submission:
    student: str
    lab: str  # the record's lab (see the module's text)
    path: Path
    expected: str = None  # the lab the folder names, which the notebook must be; None outside the layout

    @property
    def key(self):
        return self.student, self.lab

    def __str__(self):
        return f"{self.student}/{self.lab}"


@dataclass
class Roster:
    submissions: list = field(default_factory=list)
    skipped: list = field(default_factory=list)  # (path, why), in the order found

    def only(self, labs=None, students=None):
        """The roster restricted to the records of `labs` and `students` (None: all)."""
        kept = [s for s in self.submissions
                if (not labs or s.lab in labs) and (not students or s.student in students)]
        return Roster(kept, self.skipped)


def search(folder, skipped, companions=False):
    """The *.ipynb entries under `folder`, of any kind, in sorted order; other files go to
    `skipped` with the reason (but for what comes with a notebook: BESIDE it, and its data/, the
    `companions`), and so does an assignment folder of nbgrader's layout
    (`submitted/<student>/<folder>/`) that holds no notebook. No linked folder is searched (it
    could lead anywhere)."""
    try:
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError as error:  # before anything is graded, so nothing is lost
        raise SystemExit(f"autograder: cannot search the folder {folder}: {error.strerror}") from None
    has_notebook = any(entry.name.endswith(".ipynb") for entry in entries)
    for entry in entries:
        if entry.name.endswith(".ipynb"):
            yield Path(entry.path)
        elif entry.is_dir(follow_symlinks=False):
            if entry.name == CHECKPOINTS:
                continue
            found = list(search(entry.path, skipped, companions or (entry.name == DATA and has_notebook)))
            if not found and Path(os.path.abspath(entry.path)).parts[-3:-2] == ("submitted",):
                skipped.append((Path(entry.path), "an assignment folder with no notebook in it"))
            yield from found
        elif entry.is_symlink() and entry.is_dir():
            skipped.append((Path(entry.path), "a link to a folder, which is never followed"))
        elif not (companions or entry.name in BESIDE and has_notebook):
            skipped.append((Path(entry.path), "not a notebook (.ipynb)"))


def find_paths(paths, skipped):
    """The notebooks under `paths` (notebooks, or folders searched for them), each once. A path
    that is not a regular file (a link, a pipe...) is kept: grading gives it its status. Once
    means once per file and student: `./a.ipynb` and `a.ipynb`, or a folder and a notebook in it,
    are one submission; a file hard-linked into two students' folders (or two of one student's lab
    folders) is one each."""
    found, seen = [], set()
    for given in map(Path, paths):
        try:
            folder = stat.S_ISDIR(given.lstat().st_mode)
        except FileNotFoundError:
            raise SystemExit(f"autograder: {given}: no such file or folder") from None
        except OSError as error:
            raise SystemExit(f"autograder: {given}: {error.strerror}") from None
        for path in search(given, skipped) if folder else [given]:
            place = nbgrader_place(path) or student_name(path)
            try:
                info = path.lstat()
                key = (info.st_dev, info.st_ino, place)
            except OSError:  # gone since the search saw it: grading says so
                key = (os.path.abspath(path), place)
            if key not in seen:
                seen.add(key)
                found.append(path)
    return found


def keyed(path, labs):
    """The Submission that `path` makes."""
    place = nbgrader_place(path)
    student = student_name(path)
    if place is not None and place[1] in labs:
        return Submission(student, place[1], path, expected=place[1])
    try:
        lab = identify(load(path), list(labs.values())).name
    except SubmissionError:  # grading gives the status and the reason
        lab = place[1] if place is not None else UNRECOGNISED
    return Submission(student, lab, path)


def preferred(submission):
    """Sort key among the files of one record: the notebook named for its lab comes first."""
    return submission.path.name != f"{submission.lab}.ipynb", str(submission.path)


def roster(paths):
    """The Roster of `paths`; SystemExit when there is nothing to grade."""
    skipped, labs = [], course_labs()
    by_key = {}
    for path in find_paths(paths, skipped):
        submission = keyed(path, labs)
        by_key.setdefault(submission.key, []).append(submission)
    chosen = []
    for key, candidates in by_key.items():
        first, *others = sorted(candidates, key=preferred)
        chosen.append(first)
        skipped += [(other.path, f"another file for {first}, which is graded from {first.path}") for other in others]
    if not chosen:
        where = "; ".join(f"{path} ({why})" for path, why in skipped[:5])
        raise SystemExit("autograder: no notebooks to grade" + (f"; skipped: {where}" if where else ""))
    return Roster(sorted(chosen, key=lambda s: (s.student, s.lab, str(s.path))), skipped)
