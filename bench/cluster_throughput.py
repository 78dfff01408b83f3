"""Grade a synthetic class of every lab on a 2-worker Dask cluster on this machine, count the CPU
it took, and project from that the time to grade a whole course on a real cluster.

    python -m bench.cluster_throughput [--per-lab 300] [--students 3000] [--labs 3] [--nodes 20] [--cores 8]

For each lab of source/, `--per-lab` students hand in a notebook built from the lab's mistake
catalogue: of every ten, five solved notebooks with one catalogued mistake patched into that
activity's reference answer (the catalogue taken in turn, so a class of 300 meets every
mistake), three solved, one blank (the release) and one solved but for an activity left as
the stub (the activities taken in turn). Each notebook carries its student's id in its metadata:
the grader draws a submission's hidden inputs from the notebook's bytes, and copies of one file
would share (and cache) them, which a real class never does.

The whole class is graded by one `grade --scheduler` command. The CPU counted is everything it
took: before the cluster starts, this process moves into a cpuacct control group of its own
(bench/cpu.py `counted`), so the client command, the scheduler, the Dask workers and the
sandboxed grading workers they fork (whose groups the grader nests below its own) are all
counted there; the group's usage is read just before and just after the command. Per lab, the
results give the statuses, the activities passed and failed, and the CPU the submissions' own
code used (what the time limit counts); start-ups, loading the labs, the client and Dask are in
the total only. Also measured: the scheduling overhead per task (a batch of empty tasks, each
carrying a notebook's bytes), and the client's writing of one result (feedback page, gradebook
entry, JSON) with the gradebook in SQLite and in PostgreSQL (a throwaway server, as in the
tests, or the one AUTOGRADER_TEST_POSTGRES names), timed on up to 150 results once each lab is
set up in the gradebook; it is serial. The projection is

    CPU seconds per submission x submissions / cores + overhead per task x submissions

floored by the client's writing (with the slower gradebook) x submissions. It assumes grading is
CPU-bound and spread evenly over the cores. The per-submission CPU includes the workers' start-up
and each submission's own hidden cases, so a small class overstates it; a large one (the
default 300 per lab) gives a course's. The machine is shared: only figures from the same run
compare well.
"""
import argparse
import copy
import itertools
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from autograder.labs import grading_for
from autograder.measuring.catalogue import patched
from bench import cpu
from tests.helpers import LABS, ROOT, grade_command, lab_notebook, read, records_in
from tests.services import dask_cluster, postgres_database, postgres_server
from tests.submissions import answer_cell, with_answer

WORKERS = 2
EMPTY_TASKS = 400
WRITES = 150  # results the client's writing is timed on: enough for a steady figure
# Of every ten students: 5 with a catalogued mistake, 3 solved, 1 blank, 1 with an activity left
# as the stub; a small class (--per-lab 4) still meets each kind.
MIX = ("mistake", "solved", "blank", "stub", "mistake", "solved", "mistake", "mistake", "solved", "mistake")


def make_class(submitted, lab, solved, blank, count):
    """Write `count` submissions of `lab` as submitted/<student>/<lab>/<lab>.ipynb; return
    {student: kind}, the kind naming what was changed ("wrong-2", "stub-A", "solved", "blank")."""
    mistakes = itertools.cycle(grading_for(lab.name).mistakes)
    stubs = itertools.cycle(lab.activities)
    kinds = {}
    for number, kind in zip(range(count), itertools.cycle(MIX)):
        student = f"student-{number:04d}"
        if kind == "mistake":
            mistake = next(mistakes)
            kind, reference = f"wrong-{mistake.activity}", lab.activities[mistake.activity].reference.source
            notebook = with_answer(solved, mistake.activity, patched(reference, mistake.code))
        elif kind == "stub":
            activity = next(stubs)
            kind, notebook = f"stub-{activity}", with_answer(solved, activity, answer_cell(blank, activity).source)
        else:
            notebook = copy.deepcopy(solved if kind == "solved" else blank)
        notebook.metadata["bench_student"] = student  # its own bytes, hence its own hidden inputs
        target = submitted / student / lab.name
        target.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, target / f"{lab.name}.ipynb")
        kinds[student] = kind
    return kinds


def writing_cost(graded_out, db_url, out):
    """Seconds the client spends writing one result (feedback page, gradebook entry, JSON) once
    the gradebook is set up: the serial part of any batch."""
    from autograder.records.gradebook import GradebookWriter
    from autograder.labs import course_labs
    from autograder.records.report import write_html, write_json
    from autograder.grading.submission import answers, load

    out.mkdir()
    writer = GradebookWriter(db_url, out)
    named = [(key, result, answers(course_labs()[result["extra_data"]["lab"]], load(Path(result["extra_data"]["path"])))
              if result["tests"] else {}) for key, result in sorted(records_in(graded_out).items())]
    # A lab's first record makes its assignment (seconds, once a course): untimed.
    first = {key[1]: (key, result, code) for key, result, code in reversed(named) if result["tests"]}
    setup = {key for key, _, _ in first.values()}
    timed = [item for item in named if item[0] not in setup][:WRITES] or named
    try:
        for (student, lab), result, code in first.values():
            writer.record(student, lab, result, code)
        started = time.perf_counter()
        for (student, lab), result, code in timed:
            write_html(out, result)
            writer.record(student, lab, result, code)
            write_json(out, result)
    finally:
        writer.close()  # commits what is staged: part of the writing where commits are batched
    return (time.perf_counter() - started) / len(timed)


def empty_task(data):
    return len(data)


def overhead_per_task(address, payload):
    """Seconds per task of a batch of empty tasks, each sent with `payload`, through the scheduler."""
    from distributed import Client

    with Client(address, set_as_default=False) as client:
        client.submit(empty_task, b"", pure=False).result()  # the connection and the function, once
        started = time.perf_counter()
        client.gather([client.submit(empty_task, payload, pure=False) for _ in range(EMPTY_TASKS)])
        return (time.perf_counter() - started) / EMPTY_TASKS


def statuses(results):
    """'graded 298, timeout 2'."""
    return ", ".join(f"{status} {n}" for status, n in Counter(r["status"] for r in results).most_common())


def lab_line(lab, kinds, results):
    """One lab's figures from its results."""
    tests = Counter(test["status"] for result in results.values() for test in result["tests"])
    own_cpu = sum(result["extra_data"].get("cpu_seconds") or 0 for result in results.values())
    wrong = {student: kind.removeprefix("wrong-") for student, kind in kinds.items() if kind.startswith("wrong-")}
    caught = sum(any(t["name"] == activity and t["status"] == "failed" for t in results[student]["tests"])
                 for student, activity in wrong.items() if student in results)
    return (f"  {lab:<14} {len(kinds):4d} submissions, {len(results)} results: "
            f"{statuses(results.values())}; activities passed "
            f"{tests['passed']}, failed {tests['failed']}; mistakes caught {caught}/{len(wrong)}; "
            f"the submissions' own CPU {own_cpu:.1f} s ({own_cpu / len(kinds):.2f} s each)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-lab", type=int, default=300, help="submissions of each lab in the measured class")
    parser.add_argument("--students", type=int, default=3000)
    parser.add_argument("--labs", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--cores", type=int, default=8, help="cores per node, one worker thread each")
    args = parser.parse_args()
    if args.per_lab < 1:
        parser.error("--per-lab must be at least 1")
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        from build_student import build

        build(scratch / "release")
        build(scratch / "solved", solved=True)
        submitted, out = scratch / "class" / "submitted", scratch / "out"
        kinds = {lab.name: make_class(submitted, lab, read(lab_notebook(scratch / "solved", lab)),
                                      read(lab_notebook(scratch / "release", lab)), args.per_lab) for lab in LABS}
        n = sum(map(len, kinds.values()))
        payload = max((path.read_bytes() for path in submitted.glob("*/*/*.ipynb")), key=len)

        with cpu.counted() as counted, dask_cluster(scratch / "cluster", workers=WORKERS) as cluster:
            before, started = counted.seconds(), time.perf_counter()
            done = subprocess.run(grade_command(submitted, "--out", out, "--scheduler", cluster.address), cwd=ROOT,
                                  capture_output=True, text=True)
            wall, used = time.perf_counter() - started, counted.seconds() - before
            if done.returncode != 0:
                raise SystemExit(f"grading failed:\n{done.stdout}\n{done.stderr}")
            overhead = overhead_per_task(cluster.address, payload)
        records = records_in(out)
        writing = {"SQLite": writing_cost(out, f"sqlite:///{scratch / 'w1' / 'gradebook.db'}", scratch / "w1")}
        try:
            with postgres_server() as server, postgres_database(server) as database:
                writing["PostgreSQL"] = writing_cost(out, database, scratch / "w2")
        except (Exception, pytest.fail.Exception) as error:  # no server to be had: the rest still stands
            print(f"(PostgreSQL not measured: {str(error).splitlines()[0]})")

    print(f"{n} submissions ({args.per_lab} of each of {len(LABS)} labs) graded by one command on a Dask cluster "
          f"of {WORKERS} single-threaded workers on this machine")
    for lab in LABS:
        print(lab_line(lab.name, kinds[lab.name], {s: r for (s, name), r in records.items() if name == lab.name}))
    print(f"  all: {len(records)} results, {statuses(records.values())}; {wall:.1f} s wall "
          f"({wall / n:.2f} s per submission), {used:.1f} CPU s counted ({used / n:.2f} CPU s per submission, "
          f"{used / wall:.2f} cores busy on average)")
    print(f"  scheduling overhead: {overhead * 1000:.1f} ms per task ({EMPTY_TASKS} empty tasks, "
          f"{len(payload) // 1024} KiB each)")
    for database, seconds in writing.items():
        print(f"  the client writing one result with the gradebook in {database}: {seconds * 1000:.0f} ms")

    total, cores = args.labs * args.students, args.nodes * args.cores
    cost = used / n
    grading = cost * total / cores + overhead * total
    write = max(writing.values())
    floor = write * total
    print(f"projection: {args.labs} labs x {args.students} students = {total} submissions on {args.nodes} nodes x "
          f"{args.cores} cores = {cores} cores, assuming grading is CPU-bound and spread evenly over them")
    print(f"  {cost:.2f} CPU s x {total} / {cores} + {overhead * 1000:.1f} ms x {total} = "
          f"{grading:.0f} s ({grading / 60:.1f} min)")
    print(f"  the client's serial writing: {write * 1000:.0f} ms x {total} = {floor:.0f} s ({floor / 60:.1f} min)"
          f"; the batch takes about {max(grading, floor) / 60:.1f} min, bound by "
          f"{'the grading' if grading >= floor else 'the client writing results'}")


if __name__ == "__main__":
    sys.exit(main())
