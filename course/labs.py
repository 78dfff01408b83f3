"""Find the labs under ``source/`` and check that each follows the tag vocabulary."""
import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, replace
from importlib.metadata import version
from pathlib import Path

import nbformat

from course.cells import LabError, is_optional, read_cells
from course.folder import course_root

ROOT = course_root()


def read_text_notebook(path):
    """The notebook that jupytext reads from the text file `path` (``<course>/source/<lab>/<lab>.py``).
    Importing jupytext and parsing a lab take about half a second of CPU, which a run that grades
    one submission would pay for its lab and the others; so what jupytext read is kept in the
    course's build/parsed/ under a digest of the text and jupytext's version, and read back as
    JSON while neither has changed."""
    text = path.read_bytes()
    digest = hashlib.sha256(text + version("jupytext").encode()).hexdigest()[:24]
    parsed = path.parent.parent.parent / "build" / "parsed"
    kept = parsed / f"{path.stem}-{digest}.ipynb"
    try:
        return nbformat.from_dict(json.loads(kept.read_text(encoding="utf-8")))
    except (OSError, ValueError):  # not kept yet, or a copy cut short: read the text
        pass
    import jupytext

    notebook = jupytext.reads(text.decode("utf-8"), fmt="py")
    part = None
    try:  # a course folder that cannot be written to is read from its text each time
        parsed.mkdir(parents=True, exist_ok=True)
        for stale in parsed.glob(f"{path.stem}-*.ipynb"):
            stale.unlink(missing_ok=True)
        descriptor, part = tempfile.mkstemp(dir=parsed, suffix=".part")
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump(notebook, out)
        os.replace(part, kept)
    except OSError:
        if part is not None:
            Path(part).unlink(missing_ok=True)
    return notebook


@dataclass(frozen=True)
class Activity:
    id: str
    points: int
    optional: bool
    stub: object
    reference: object
    checks: tuple
    functions: tuple  # what the student writes, in the order the stub defines it
    title: str = ""  # its heading's words between the id and the points: "VJPs of +, * and @"

    @property
    def name(self):
        """The id with the title, as students see the activity announced: "1a · VJPs of +, * and @"."""
        return f"{self.id} · {self.title}" if self.title else self.id


class Lab:
    """One instructor notebook: ``source/<name>/<name>.py``, the text that is the truth."""

    def __init__(self, path):
        self.path = Path(path)
        self.name = self.path.stem
        if not self.path.is_file():
            raise LabError(f"{self.path}: no such instructor notebook")
        self.notebook = read_text_notebook(self.path)
        meta = self.notebook.metadata.get("course", {})
        if meta.get("lab") != self.name:
            raise LabError(f"{self.path}: the notebook metadata must say course: lab: {self.name}")
        self.title = meta.get("title", self.name)
        self.data_files = tuple(meta.get("data", ()))
        self.cells = read_cells(self.notebook, self.path)
        self.activities = self._activities()

    def _activities(self):
        order, stubs, references, checks = [], {}, {}, {}
        for position, cell in enumerate(self.cells):
            if cell.role == "stub":
                if cell.activity in stubs:
                    raise LabError(f"{cell.label}: activity {cell.activity} has a second stub")
                stubs[cell.activity] = cell
                order.append(cell.activity)
                following = self.cells[position + 1] if position + 1 < len(self.cells) else None
                if not (following and following.role == "reference" and following.cell_type == "code"
                        and following.activity == cell.activity):
                    raise LabError(f"{cell.label}: the stub of activity {cell.activity} must be "
                                   "directly followed by its reference cell")
                references[cell.activity] = following
            elif cell.role == "check":
                checks.setdefault(cell.activity, []).append(cell)
            elif cell.role == "reference" and cell.cell_type == "code":
                before = self.cells[position - 1]
                if before.role != "stub" or before.activity != cell.activity:
                    raise LabError(f"{cell.label}: a reference code cell must directly follow "
                                   f"the stub of activity {cell.activity}")
        for activity in set(checks) - set(stubs):
            raise LabError(f"{checks[activity][0].label}: a check for activity {activity}, which has no stub")
        activities = {}
        for activity in order:
            if activity not in checks:
                raise LabError(f"{stubs[activity].label}: activity {activity} has no check cell")
            stub, reference = stubs[activity], references[activity]
            functions = sorted(stub.defined_functions(), key=stub.source.index)
            missing = set(functions) - reference.defined_functions()
            if not functions or missing:
                raise LabError(f"{reference.label}: the reference of activity {activity} must define "
                               f"what its stub defines ({', '.join(functions) or 'nothing'})")
            for function in functions:
                expected = f"Complete Activity {activity}: {function}"
                if expected not in stub.source:
                    raise LabError(f"{stub.label}: {function} must raise NotImplementedError('{expected}')")
            activities[activity] = Activity(activity, sum(c.points for c in checks[activity]),
                                            is_optional(activity), stub, reference,
                                            tuple(checks[activity]), tuple(functions))
        return self._with_titles(activities)

    def _with_titles(self, activities):
        """Each activity is announced by a heading that shows its id and its points; what the
        heading says between them is the activity's title."""
        titled = {}
        for activity in activities.values():
            unit = "bonus point" if activity.optional else "point"
            kind = "Optional" if activity.optional else "Activity"
            pattern = re.compile(rf"^#+ .*\b{kind} {re.escape(activity.id)}\b[\s·:.—-]*(.*?)\s*"
                                 rf"\({activity.points} {unit}s?\)", re.MULTILINE)
            found = next((match for c in self.cells[:activity.stub.index] if c.cell_type == "markdown"
                          for match in [pattern.search(c.source)] if match), None)
            if found is None:
                raise LabError(f"{self.name}: no heading '{kind} {activity.id} ... "
                               f"({activity.points} {unit}s)' before the stub of activity {activity.id}")
            titled[activity.id] = replace(activity, title=found.group(1))
        return titled

    def release_cells(self):
        """(cell, id) for every cell that reaches the student notebook, with ids that stay put
        when unrelated cells change: answers and checks are named after their activity, the
        rest after a digest of their text."""
        taken, checks = set(), {}
        for cell in self.cells:
            if cell.role == "reference":
                continue
            if cell.role == "stub":
                cell_id = f"{cell.activity}-answer"
            elif cell.role == "check":
                checks[cell.activity] = checks.get(cell.activity, 0) + 1
                count = checks[cell.activity]
                cell_id = f"{cell.activity}-check" + (f"-{count}" if count > 1 else "")
            else:
                cell_id = f"{cell.cell_type}-{hashlib.sha1(cell.source.encode()).hexdigest()[:10]}"
            while cell_id in taken:  # identical given cells
                cell_id += "-x"
            taken.add(cell_id)
            yield cell, cell_id

    @property
    def folder(self):
        return self.path.parent

    def twin_is_current(self):
        """Whether the executed .ipynb beside the .py has the .py's cells (`make instructor` writes it)."""
        try:
            paired = nbformat.read(self.path.with_suffix(".ipynb"), as_version=4)
        except (OSError, ValueError):
            return False
        return [(c.cell_type, c.source) for c in self.notebook.cells] == [(c.cell_type, c.source) for c in paired.cells]

    def copy_data(self, folder):
        """Copy the data files the lab reads into `folder`/data/, where its notebook looks."""
        for name in self.data_files:
            source = ROOT / "data" / name
            if not source.is_file():
                raise LabError(f"{self.path}: data file {source} is missing")
            (Path(folder) / "data").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, Path(folder) / "data" / name)


def find_labs(source=ROOT / "source"):
    """Every lab in ``source``, sorted by name."""
    source = Path(source)
    if not source.is_dir():
        raise LabError(f"{source}: no such folder of instructor notebooks")
    return [Lab(path) for path in sorted(source.glob("*/*.py")) if path.stem == path.parent.name]
