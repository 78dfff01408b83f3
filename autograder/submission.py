"""Read a submitted notebook, recognise its lab, and turn it into the code the grader runs.

The submitted file is read once into memory and never written. What runs is the lab's own
given code (from the instructor notebook, not the submission's copy, which a student may have
edited) interleaved with every code cell the student wrote or changed, in the student's order.
Unchanged check cells and given demos that call student code are left out: no score depends
on them.
"""
import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.errors import GradingProblem

MAX_BYTES = 64 << 20


class SubmissionError(GradingProblem):
    """A submission that cannot be graded; `kind` becomes its status."""


@dataclass(frozen=True)
class Step:
    source: str
    student: bool  # False: the lab's given code
    label: str  # how the feedback names it


def load(path):
    """The submission as an nbformat v4 notebook, or SubmissionError."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise SubmissionError("too_large", f"the file is {size / 2**20:.0f} MiB; the limit is "
                                               f"{MAX_BYTES >> 20} MiB (clear the outputs and save again)")
        data = path.read_bytes()
    except OSError as error:
        raise SubmissionError("unreadable", f"cannot read the file: {error.strerror}") from None
    if not data.strip():
        raise SubmissionError("invalid_notebook", "the file is empty")
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise SubmissionError("invalid_notebook", f"the file is not a Jupyter notebook (not JSON: {error})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("nbformat"), int):
        raise SubmissionError("invalid_notebook", "the file is JSON but not a Jupyter notebook (no nbformat)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            notebook = nbformat.reads(data.decode("utf-8"), as_version=4)
        if any(not isinstance(cell.get("source", ""), str) for cell in notebook.cells):
            raise ValueError("a cell's source is not text")
    except Exception as error:  # nbformat raises many kinds on malformed input
        raise SubmissionError("invalid_notebook", f"the notebook is malformed: {error}") from None
    return notebook


def defined_names(source):
    return set(re.findall(r"^def (\w+)\s*\(", source, re.MULTILINE))


def identify(notebook, labs):
    """The lab a notebook belongs to, from its metadata or, failing that, its content."""
    claimed = notebook.metadata.get("course", {})
    claimed = claimed.get("lab") if isinstance(claimed, dict) else None
    code = [c.source for c in notebook.cells if c.cell_type == "code"]
    defined = set().union(*map(defined_names, code)) if code else set()
    best, best_score = None, 0
    for lab in labs:
        functions = {f for activity in lab.activities.values() for f in activity.functions}
        given = {c.source for c in lab.cells if c.role == "given" and c.cell_type == "code"}
        score = len(defined & functions) + sum(source in given for source in code)
        if score and lab.name == claimed:
            return lab
        if score > best_score:
            best, best_score = lab, score
    if best is None:
        raise SubmissionError("unknown_lab", "this notebook is not one of the course's labs "
                                             f"({', '.join(lab.name for lab in labs)}): none of their code is in it")
    return best


def program(lab, notebook):
    """The steps to run: given code from the lab, the student's code where the student put it."""
    ids = {}
    for cell, cell_id in lab.release_cells():
        ids[cell_id] = cell
    by_source = {c.source: c for c in lab.cells if c.cell_type == "code" and c.role in ("given", "check")}
    after = {}  # index of the given cell a student cell follows (None: before all) -> student steps
    anchor = None
    for position, cell in enumerate(notebook.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        known = by_source.get(cell.source)
        claimed = ids.get(cell.get("id")) or ids.get(_grade_id(cell))
        if known is not None:
            anchor = known.index if known.role == "given" else anchor
            continue
        # Anything else is the student's code, an edited check cell included: running it can
        # only cost the student time, since no score depends on a check cell.
        if claimed is not None and claimed.role == "given" and claimed.cell_type == "code":
            anchor = claimed.index  # a markdown cell's id would attach the code where no step follows
        after.setdefault(anchor, []).append(Step(cell.source, True, f"your cell {position + 1}"))
    steps = list(after.get(None, []))
    for cell in lab.cells:
        if cell.role == "given" and cell.cell_type == "code":
            if not cell.requires:
                steps.append(Step(cell.source, False, f"given cell {cell.index + 1}"))
            steps.extend(after.get(cell.index, []))
    return steps


def _grade_id(cell):
    nbgrader = cell.get("metadata", {}).get("nbgrader", {})
    return nbgrader.get("grade_id") if isinstance(nbgrader, dict) else None


def student_name(path):
    """nbgrader's submitted/<student>/<lab>/<file>.ipynb gives the student; else the file stem."""
    parts = Path(path).parts
    if len(parts) >= 4 and parts[-4] == "submitted":
        return parts[-3]
    return Path(path).stem


def untouched(lab, notebook):
    """The activities whose answer cell still holds the stub, character for character."""
    found = answers(lab, notebook)
    return {activity.id for activity in lab.activities.values()
            if found.get(f"{activity.id}-answer", "").strip() == activity.stub.source.strip()}


def answers(lab, notebook):
    """The student's code for each answer cell, found by cell id or, if ids were lost, by the
    functions the cell defines."""
    found = {}
    for activity in lab.activities.values():
        key = f"{activity.id}-answer"
        for cell in notebook.cells:
            if cell.cell_type == "code" and (cell.get("id") == key or _grade_id(cell) == key):
                found[key] = cell.source
        if key not in found:
            for cell in notebook.cells:
                if cell.cell_type == "code" and defined_names(cell.source) & set(activity.functions):
                    found[key] = cell.source
    return found
