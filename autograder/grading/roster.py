"""What a grading run is given: every submission under the paths, keyed by the record it makes,
(student, lab), and every file it leaves out, with the reason.

Who a record belongs to is read from the paths the operator gives on the command line, which are
trusted, never from what lies below them, which students made. A given path is in nbgrader's
layout when it or a folder above it is named `submitted`, and the outermost such folder is the
layout's root, so that no folder named so inside a student's folder, given by hand or by a shell
pattern (`submitted/aa/lab/*`), is ever taken for one (a course kept below a folder named
`submitted` must move: each of its records would be skipped, saying so). The given path is then
the root itself, a student's folder (`submitted/<student>`), a lab folder
(`submitted/<student>/<lab>`), a notebook in one, or something deeper, which is skipped. Below
the root, the folder directly in it is the student and the folder below that the record's lab
folder, and the record's notebook is one directly in the lab folder. Everything deeper is that
student's own files (nbgrader's collect copies sub-folders): never searched, so that no folder a
student makes, however named or deep, can make a record of anyone (a sub-folder is skipped,
naming whose it is). Any other given folder is plain: every notebook anywhere below it is a
record of the student its file's stem names, but that a folder named `submitted` found in it is
a root of the layout (so `grade course/` reads course/submitted/ as nbgrader's). The layout is
never searched below its lab folders, so no folder a student makes is ever taken for a root.

A student id (a student folder's name, or a plain folder's file stem) is stored as it is in the
results, the gradebook and nbgrader's autograded/ folder, since nbgrader's own commands build
paths from it. So one rule, `id_problem`, refuses every id that is not a single visible folder
name as it is: empty, not UTF-8, holding `/` or a control character, or beginning with a dot
(`.`, `..`, a hidden name). Its notebooks are skipped with the reason; nothing else is.

The lab is the folder's where that folder is named for one of the course's labs: the notebook
must then be that lab's, and a notebook of another lab there is graded as nothing (status
`wrong_lab`). Anywhere else the lab is recognised from the notebook's structure (see
`submission.identify`); a file that cannot be read as a lab's notebook keeps its folder's name in
the layout, and `UNRECOGNISED` outside it.

One record per key: when two files make the same key (two notebooks in one lab folder, or two
files of one stem and lab in a plain folder), the one named `<lab>.ipynb` is graded, else the
first in sorted order, and the others are listed as skipped, never graded over each other.
"""
import os
import stat
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.submission import SubmissionError, identify, load
from autograder.labs import course_labs

UNRECOGNISED = "unrecognised"  # the lab of a file outside nbgrader's layout that is no lab's notebook
LAYOUT = "submitted"  # the root of nbgrader's layout, submitted/<student>/<lab>/
LAB_DEPTH = 2  # how many folders below the root a record's lab folder is
TIMESTAMP = "timestamp.txt"  # nbgrader's submission time, beside the notebook
# What nbgrader's submit and the release put beside a notebook (the submission's secret, the
# release's settings, its data/ folder): nbgrader's collect hands them in with it, and they are
# no one's mistake.
BESIDE = (TIMESTAMP, "submission_secret.txt", "nbgrader_config.py")
DATA = "data"
CHECKPOINTS = ".ipynb_checkpoints"  # Jupyter's autosaves: never the submission, never worth a word
LAYOUT_HELP = "nbgrader's layout is submitted/<student>/<lab>/<lab>.ipynb"


@dataclass(frozen=True)
class Submission:
    student: str
    lab: str  # the record's lab (see the module's text)
    path: Path
    expected: str = None  # the lab the folder names, which the notebook must be; None outside the layout
    nbgrader: bool = False  # from nbgrader's layout, where the lab folder's timestamp.txt is the time handed in

    @property
    def key(self):
        return self.student, self.lab

    def __str__(self):
        return f"{self.student}/{self.lab}"


@dataclass(frozen=True)
class Found:
    """A notebook found under the given paths, and whose it is by where it was found."""
    path: Path
    student: str
    folder: str = None  # its lab folder's name in nbgrader's layout; None in a plain folder


@dataclass
class Roster:
    submissions: list = field(default_factory=list)
    skipped: list = field(default_factory=list)  # (path, why), in the order found

    def only(self, labs=None, students=None):
        """The roster restricted to the records of `labs` and `students` (None: all)."""
        kept = [s for s in self.submissions
                if (not labs or s.lab in labs) and (not students or s.student in students)]
        return Roster(kept, self.skipped)


def id_problem(name):
    """Why `name` cannot be a student id stored as it is (see the module's text), or None."""
    if not name:
        return "it is empty"
    if name.startswith("."):
        return "it begins with a dot (`.` and `..` name other folders, and a leading dot hides a folder)"
    if "/" in name:
        return "it holds a /"
    if any(unicodedata.category(character) == "Cc" for character in name):
        return "it holds a control character"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # bytes of the file system's name that are not UTF-8
        return "it is not UTF-8 text"
    return None


def refused_id(found, problem):
    renamed = "the student's folder" if found.folder is not None else "the file (a plain folder's file names are " \
                                                                       "its student ids)"
    return f"the student id {found.student!r} cannot be stored as it is, since {problem}: rename {renamed} to the " \
           "student's id"


def listing(folder, skipped):
    """The entries of `folder` in sorted order; none, and the reason in `skipped`, when it cannot be
    read (one folder's fault costs only what it holds)."""
    try:
        with os.scandir(folder) as entries:
            return sorted(entries, key=lambda entry: entry.name)
    except OSError as error:
        skipped.append((Path(folder), f"the folder cannot be searched: {error.strerror}"))
        return []


def other_file(entry, skipped, expected=False):
    """Say why `entry`, neither a notebook nor a folder that is searched, is left out, unless it
    is `expected` there."""
    if entry.is_symlink() and entry.is_dir():
        skipped.append((Path(entry.path), "a link to a folder, which is never followed"))
    elif not expected:
        skipped.append((Path(entry.path), "not a notebook (.ipynb)"))


def search(folder, skipped):
    """The Found *.ipynb entries under the plain `folder`, of any kind, in sorted order, and those
    of every root of nbgrader's layout in it; other files go to `skipped` with the reason (but for
    what comes with a notebook: BESIDE it, and its data/). No linked folder is searched (it could
    lead anywhere). Without recursion, so that no depth of folders can stop the roster."""
    levels = [level(folder, skipped, companions=False)]
    while levels:
        found = next(levels[-1], None)
        if found is None:
            levels.pop()
        elif isinstance(found, Found):
            yield found
        else:  # a sub-folder's level: searched now, where the sub-folder sorts among its folder's entries
            levels.append(found)


def level(folder, skipped, companions):
    """What the plain `folder` itself holds, in sorted order: its notebooks (Found), those of a
    root of nbgrader's layout in it, and for each other sub-folder the level that searches it.
    The `companions` are the files of a notebook's data/ folder, which are no one's mistake."""
    entries = listing(folder, skipped)
    has_notebook = any(entry.name.endswith(".ipynb") for entry in entries)
    for entry in entries:
        if entry.name.endswith(".ipynb"):
            yield Found(Path(entry.path), Path(entry.path).stem)
        elif entry.is_dir(follow_symlinks=False):
            if entry.name == LAYOUT:
                yield from layout_root(entry.path, skipped)
            elif entry.name != CHECKPOINTS:
                yield level(entry.path, skipped, companions or (entry.name == DATA and has_notebook))
        else:
            other_file(entry, skipped, companions or entry.name in BESIDE and has_notebook)


def layout_place(path):
    """The parts of `path` below the root of nbgrader's layout it is in (see the module's text),
    else None: () for the root itself, (student,), (student, lab folder), (student, lab folder,
    file)..."""
    absolute = Path(os.path.abspath(path))
    roots = [folder for folder in (absolute, *absolute.parents) if folder.name == LAYOUT]
    return absolute.parts[len(roots[-1].parts):] if roots else None  # the outermost


def lab_folder(folder, student, name, skipped):
    """The notebooks directly in `student`'s lab folder `name`; its sub-folders are the student's
    own files, never searched."""
    entries = listing(folder, skipped)
    has_notebook = any(entry.name.endswith(".ipynb") for entry in entries)
    if not has_notebook:
        skipped.append((Path(folder), "an assignment folder with no notebook in it"))
    for entry in entries:
        if entry.name.endswith(".ipynb"):
            yield Found(Path(entry.path), student, name)
        elif entry.is_dir(follow_symlinks=False):
            if entry.name != CHECKPOINTS and not (entry.name == DATA and has_notebook):
                skipped.append((Path(entry.path), inside(student, name)))
        else:
            other_file(entry, skipped, entry.name in BESIDE and has_notebook)


def inside(student, name):
    return (f"inside {shown(student)}'s {shown(name)} folder: {shown(student)}'s own files, never searched for a "
            f"submission (only the notebooks directly in a lab folder are graded; {LAYOUT_HELP})")


def shown(name):
    """`name` as the summary prints it: quoted, escapes and all, where it is no id as it is."""
    return name if id_problem(name) is None else repr(name)


def student_folder(folder, student, skipped):
    """The notebooks of `student`'s lab folders."""
    for entry in listing(folder, skipped):
        if entry.is_dir(follow_symlinks=False):
            if entry.name != CHECKPOINTS:
                yield from lab_folder(entry.path, student, entry.name, skipped)
        elif entry.name.endswith(".ipynb"):
            skipped.append((Path(entry.path), f"in {shown(student)}'s folder but in no lab folder: {LAYOUT_HELP}"))
        else:
            other_file(entry, skipped)


def layout_root(folder, skipped):
    """The notebooks of every student folder in the layout's root `folder`."""
    for entry in listing(folder, skipped):
        if entry.is_dir(follow_symlinks=False):
            if entry.name != CHECKPOINTS:
                yield from student_folder(entry.path, entry.name, skipped)
        elif entry.name.endswith(".ipynb"):
            skipped.append((Path(entry.path), f"in no student's folder: {LAYOUT_HELP}"))
        else:
            other_file(entry, skipped)


def in_layout(given, below, is_folder, skipped):
    """The notebooks that the `given` path, `below` the layout's root, holds."""
    if len(below) > LAB_DEPTH + 1 or (len(below) == LAB_DEPTH + 1 and is_folder):
        skipped.append((given, inside(*below[:LAB_DEPTH])))
    elif not is_folder and len(below) <= LAB_DEPTH:
        skipped.append((given, f"in no lab folder: {LAYOUT_HELP}"))
    elif not is_folder:
        yield Found(given, *below[:LAB_DEPTH])
    elif len(below) == LAB_DEPTH:
        yield from lab_folder(given, *below, skipped)
    elif below:
        yield from student_folder(given, below[0], skipped)
    else:
        yield from layout_root(given, skipped)


def found_under(given, skipped):
    """Every notebook the `given` path (a notebook, or a folder searched for them) holds. A path
    that is not a regular file (a link, a pipe...) is kept: grading gives it its status."""
    try:
        is_folder = stat.S_ISDIR(given.lstat().st_mode)
    except FileNotFoundError:
        raise SystemExit(f"autograder: {given}: no such file or folder") from None
    except OSError as error:
        raise SystemExit(f"autograder: {given}: {error.strerror}") from None
    below = layout_place(given)
    if below is not None:
        return in_layout(given, below, is_folder, skipped)
    return search(given, skipped) if is_folder else [Found(given, given.stem)]


def find_paths(paths, skipped):
    """The notebooks under `paths` (Found), each once: `./a.ipynb` and `a.ipynb`, or a folder and a
    notebook in it, are one; a file hard-linked into two students' folders (or two of one
    student's lab folders) is one each."""
    found, seen = [], set()
    for given in map(Path, paths):
        for one in found_under(given, skipped):
            try:
                info = one.path.lstat()
                key = (info.st_dev, info.st_ino, one.student, one.folder)
            except OSError:  # gone since the search saw it: grading says so
                key = (os.path.abspath(one.path), one.student, one.folder)
            if key not in seen:
                seen.add(key)
                found.append(one)
    return found


def keyed(found, labs):
    """The Submission that the Found notebook `found` makes."""
    nbgrader = found.folder is not None
    if found.folder in labs:
        return Submission(found.student, found.folder, found.path, expected=found.folder, nbgrader=True)
    try:
        lab = identify(load(found.path), list(labs.values())).name
    except SubmissionError:  # grading gives the status and the reason
        lab = found.folder if nbgrader else UNRECOGNISED
    return Submission(found.student, lab, found.path, nbgrader=nbgrader)


def folder_lab(path):
    """The course lab that the lab folder of the notebook `path` names in nbgrader's layout, else None."""
    below = layout_place(path) or ()
    return below[1] if len(below) == LAB_DEPTH + 1 and below[1] in course_labs() else None


def preferred(submission):
    """Sort key among the files of one record: the notebook named for its lab comes first."""
    return submission.path.name != f"{submission.lab}.ipynb", str(submission.path)


def roster(paths):
    """The Roster of `paths`; SystemExit when there is nothing to grade."""
    skipped, labs = [], course_labs()
    by_key = {}
    for found in find_paths(paths, skipped):
        problem = id_problem(found.student)
        if problem:
            skipped.append((found.path, refused_id(found, problem)))
            continue
        submission = keyed(found, labs)
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
