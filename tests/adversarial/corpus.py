"""Hostile and broken submissions, each with the result the grader must give it.

Most attacks leave one or two activities unsolved and try to get their points anyway; the
expected result is 0 for those activities and full marks for the honest rest. Some attacks
aim at the machine rather than the score; they must leave no trace on it.

A lab's corpus is every generic attack (generic.py and channels.py, written in terms of any lab), the answers
that hand their work to PyTorch (delegation.py: one from the lab's policy, and real ones for
pt03_autodiff), the attacks through the batch folder's links, pipes and names (files.py), the
faults that must cost no more than their own activity (faults.py), and the attacks written for
that lab alone (SPECIFIC: pt03.py for pt03_autodiff; methods.py, on what a hidden check
certifies, for pt03_autodiff and tensor_engine; forgery.py, replies and observations forged
with the worker's stolen tag, for tensor_engine). The expected scores come from the lab's
activities, points and policy.

    python -m tests.adversarial.corpus [--lab NAME]    grade the corpus of each lab (or of NAME)
                                                       with a solved control, print the table
"""
import copy
import subprocess
import sys
import uuid
from pathlib import Path

import nbformat

from tests.adversarial import channels, delegation, faults, files, forgery, generic, methods, pt03
from tests.adversarial.common import SKIPPED
from tests.helpers import CELL_TIMEOUT, ROOT, results_in
# lab name -> the functions (lab) -> [Attack] of the attacks that make sense for it alone
SPECIFIC = {pt03.LAB: (pt03.attacks, methods.pt03_attacks), methods.TENSOR: (methods.tensor_attacks, forgery.attacks)}


def own_attacks(lab):
    """The attacks written for `lab` alone (none for some labs)."""
    return [attack for made in SPECIFIC.get(lab.name, ()) for attack in made(lab)]


def attacks(lab):
    """The corpus of `lab`: the generic attacks, then its own. Names are unique."""
    made = generic.attacks(lab) + channels.attacks(lab) + delegation.attacks(lab) + files.attacks(lab) + \
        faults.attacks(lab) + own_attacks(lab)
    names = [attack.name for attack in made]
    assert len(names) == len(set(names)), f"attack names repeat in the corpus of {lab.name}"
    return made


def new_context(batch, out):
    """What attacks aim at: the course root, the batch and results folders, and tokens that make
    what they leave behind recognisable."""
    return {"root": str(ROOT), "batch": str(batch), "out": str(out), "token": f"adv-{uuid.uuid4().hex[:8]}",
            "token_seconds": f"{900 + uuid.uuid4().int % 99}.{uuid.uuid4().int % 1000:03d}"}


def on_the_process(lab):
    """The names of the attacks on the worker and the machine rather than on what a check
    believes: those whose results could depend on how workers start and how busy the machine is."""
    return {attack.name for attack in attacks(lab) if attack.on_the_process}


def write_corpus(lab, folder, solved, blank, context, chosen=None):
    """Write every attack on `lab` (or those named in `chosen`) into `folder`; return {name: Attack}."""
    made = {}
    for attack in attacks(lab):
        if chosen is not None and attack.name not in chosen:
            continue  # each gets its own copies: an attack that edits them in place spoils the next
        built = attack.build(lab, copy.deepcopy(solved), copy.deepcopy(blank), context)
        path = Path(folder) / f"{attack.name}.ipynb"
        if callable(built):  # an attack on the folder itself makes its own entry (a link, a pipe...)
            built(path)
        elif isinstance(built, bytes):
            path.write_bytes(built)
        else:
            nbformat.write(built, path)
        made[attack.name] = attack
    return made


def grade_corpus(lab, solved_path, blank_path, batch, out, sandbox="auto", timeout=None, options=(), chosen=None):
    """Write `lab`'s corpus (the attacks named in `chosen`, where given) and a solved control
    (`solved_path`, copied byte for byte) into `batch`, grade them in one run into `out` (with the
    grader's `options` added). Returns (made, results by name, the run, context)."""
    batch, out = Path(batch), Path(out)
    batch.mkdir(parents=True, exist_ok=True)
    context = new_context(batch, out)
    solved = nbformat.read(solved_path, as_version=4)
    made = write_corpus(lab, batch, solved, nbformat.read(blank_path, as_version=4), context, chosen)
    (batch / "control.ipynb").write_bytes(Path(solved_path).read_bytes())
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(batch), "--out", str(out),
                          "--cell-timeout", CELL_TIMEOUT, "--sandbox", sandbox, *options], cwd=ROOT, check=False, capture_output=True,
                         text=True, timeout=timeout)
    # By the student each record names: file names are escaped (README, Grading).
    results = results_in(out)
    return made, results, run, context


def verdict(lab, attack, result):
    """'ok', or what differs from the expected result (None: the attack has no record)."""
    if attack.status == SKIPPED:
        return "ok" if result is None else f"a record ({result['status']}), expected none"
    if result is None:
        return f"no record, expected {attack.expected()}"
    if result["status"] != attack.status:
        return f"status {result['status']}, expected {attack.status}"
    if attack.status != "graded":
        return "ok"
    scores = {t["name"]: t["score"] for t in result["tests"]}
    wrong = [a for a, activity in lab.activities.items()
             if scores.get(a) != (0 if a in attack.zero else activity.points)]
    if wrong:
        return f"wrong scores for {', '.join(wrong)}: {scores}"
    return (attack.result_check and attack.result_check(result)) or "ok"


def false_passes(attack, result):
    """Activities the attack got points for although it did not solve them honestly."""
    scores = {t["name"]: t["score"] for t in result.get("tests", [])}
    return [a for a in attack.zero if scores.get(a, 0) > 0]


def shortened(name, width=40):
    """An attack's name for the table: files.py's long-name attack would widen every row."""
    return name if len(name) <= width else name[:width - 3] + "..."


def table(lab, made, results, context):
    """The corpus's results, one line per attack, and the control's score."""
    own = [attack.name for attack in own_attacks(lab)]
    rows = []
    for name, attack in made.items():
        result = results.get(name)
        if result is None:
            rows.append((shortened(name), attack.expected(), "no record", verdict(lab, attack, result)))
            continue
        got = result["status"] if result["status"] != "graded" else f"{result['score']} points, 0 for " + (
            ", ".join(t["name"] for t in result["tests"] if t["score"] == 0) or "none")
        trace = attack.host_check(context) if attack.host_check else None
        rows.append((shortened(name), attack.expected(), got, verdict(lab, attack, result) + (f"; {trace}" if trace else "")))
    header = ("attack", "expected", "got", "verdict")
    widths = [max(len(row[i]) for row in [header, *rows]) + 2 for i in range(3)]
    handing = len(delegation.attacks(lab))
    lines = [f"{lab.name}: {len(made)} attacks, {len(made) - len(own) - handing} generic, {handing} handing "
             "their work to PyTorch" + (f" and {len(own)} for {lab.name} alone ({', '.join(own)})" if own else "")]
    lines += ["".join(cell.ljust(width) for cell, width in zip(row, widths)) + row[3] for row in [header, *rows]]
    control = results.get("control")
    full = sum(a.points for a in lab.activities.values())
    lines.append(f"control (solved): {control['score'] if control else 'no result'} points of {full}")
    return lines


def main(argv=None):
    """Grade each lab's corpus with a solved control, print the tables."""
    import argparse
    import tempfile
    import time

    from build_student import build
    from course.labs import find_labs

    parser = argparse.ArgumentParser(prog="python -m tests.adversarial.corpus", description=__doc__.split("\n")[0])
    parser.add_argument("--lab", help="only this lab (default: every lab of source/)")
    args = parser.parse_args(argv)
    labs = find_labs(ROOT / "source")
    if args.lab:
        labs = [lab for lab in labs if lab.name == args.lab]
        if not labs:
            parser.error(f"no lab {args.lab} in source/")
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        build(scratch / "release")
        build(scratch / "solved", solved=True)
        for lab in labs:
            started = time.monotonic()
            made, results, run, context = grade_corpus(
                lab, scratch / "solved" / lab.name / f"{lab.name}.ipynb",
                scratch / "release" / lab.name / f"{lab.name}.ipynb",
                scratch / lab.name / "batch", scratch / lab.name / "out")
            if run.stderr.strip():
                print(run.stderr.strip(), file=sys.stderr)
            print("\n".join(table(lab, made, results, context)))
            print(f"graded in {time.monotonic() - started:.0f} s\n")


if __name__ == "__main__":
    main()
