"""Grade one class locally (`--jobs 2`) and on a 2-worker Dask cluster on this machine, in one run,
and project the time to grade a course on a real cluster from what was measured.

    python -m bench.cluster_throughput [--count 20] [--students 3000] [--labs 3] [--nodes 20] [--cores 8]

The class mixes a few variants of the first lab (solved, blank, one activity missing, one wrong,
one broken file). Printed per submission: the whole command's wall time, the core-seconds that
grading took (wall time x workers), and the client's own writing (feedback, gradebook, JSON),
which is serial. The scheduling overhead per task is the time a round trip of an empty task
carrying a notebook's bytes takes through the scheduler. The client's writing of one result is
timed apart, with the gradebook in SQLite and in PostgreSQL (a throwaway server, as in the tests,
or the one AUTOGRADER_TEST_POSTGRES names). The projection is

    per-submission core-seconds x submissions / worker cores + overhead per task x submissions

with the client's serial writing as a floor. The machine is shared: only figures from the same
run compare well.
"""
import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.helpers import LABS, ROOT, grade_command, lab_notebook, read, records_in
from tests.services import dask_cluster, postgres_database, postgres_server
from tests.submissions import save_class, variants

WORKERS = 2
EMPTY_TASKS = 400


def graded(submitted, out, *options):
    """Wall seconds of one `grade` command."""
    started = time.perf_counter()
    done = subprocess.run(grade_command(submitted, "--out", out, *options), cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"grading failed:\n{done.stdout}\n{done.stderr}")
    return time.perf_counter() - started


def writing_cost(graded_out, submitted, db_url, out):
    """Seconds the client spends writing one result (feedback page, gradebook entry, JSON) once
    the gradebook is set up: the serial part of any batch."""
    from autograder.gradebook import GradebookWriter
    from autograder.labs import course_labs
    from autograder.report import write_html, write_json
    from autograder.submission import answers, load

    out.mkdir()
    writer = GradebookWriter(db_url, out)
    named = [(key, result, answers(course_labs()[result["extra_data"]["lab"]], load(Path(result["extra_data"]["path"])))
              if result["tests"] else {}) for key, result in sorted(records_in(graded_out).items())]
    try:
        writer.record(*next((*k, r, a) for k, r, a in named if r["tests"]))  # sets the gradebook up, untimed
        started = time.perf_counter()
        for (student, lab), result, code in named:
            write_html(out, result)
            writer.record(student, lab, result, code)
            write_json(out, result)
        return (time.perf_counter() - started) / len(named)
    finally:
        writer.close()


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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=20, help="submissions in the measured class")
    parser.add_argument("--students", type=int, default=3000)
    parser.add_argument("--labs", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--cores", type=int, default=8, help="cores per node, one worker thread each")
    args = parser.parse_args()
    lab = LABS[0]
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        from build_student import build

        build(scratch / "release")
        build(scratch / "solved", solved=True)
        kinds = variants(lab, read(lab_notebook(scratch / "solved", lab)), read(lab_notebook(scratch / "release", lab)))
        submitted = save_class(scratch / "class", lab, kinds, args.count)
        payload = (submitted / "student-00" / lab.name / f"{lab.name}.ipynb").read_bytes()
        n = args.count

        local = graded(submitted, scratch / "local", "--jobs", str(WORKERS))
        started = time.perf_counter()
        with dask_cluster(scratch / "cluster", workers=WORKERS) as cluster:
            cluster_start = time.perf_counter() - started
            cold = graded(submitted, scratch / "cold", "--scheduler", cluster.address)
            warm = graded(submitted, scratch / "warm", "--scheduler", cluster.address)
            overhead = overhead_per_task(cluster.address, payload)
        writing = {"SQLite": writing_cost(scratch / "local", submitted, f"sqlite:///{scratch / 'w1' / 'gradebook.db'}",
                                          scratch / "w1")}
        with postgres_server() as server, postgres_database(server) as database:
            writing["PostgreSQL"] = writing_cost(scratch / "local", submitted, database, scratch / "w2")

    print(f"{lab.name}: a class of {n} submissions ({', '.join(name for name, _ in kinds)}, in turn), "
          f"on {WORKERS} workers of this machine")
    rows = [("--jobs 2 (local pool)", local), (f"Dask, {WORKERS} workers, first batch", cold),
            (f"Dask, {WORKERS} workers, warm workers", warm)]
    for label, wall in rows:
        print(f"  {label:<34} {wall:6.1f} s: {wall / n:5.2f} s per submission, {WORKERS * wall / n:5.2f} "
              f"core-s per submission")
    for database, seconds in writing.items():
        print(f"  the client writing one result with the gradebook in {database}: {seconds * 1000:.0f} ms")
    print(f"  cluster start-up (scheduler and {WORKERS} workers registered): {cluster_start:.1f} s")
    print(f"  scheduling overhead: {overhead * 1000:.1f} ms per task ({EMPTY_TASKS} empty tasks, "
          f"{len(payload) // 1024} KiB each)")
    print(f"  Dask warm / --jobs 2: {warm / local:.2f}x the wall time")

    total, cores = args.labs * args.students, args.nodes * args.cores
    cost = WORKERS * warm / n  # core-seconds per submission, start-up included once per batch
    grading = cost * total / cores + overhead * total
    write = max(writing.values())
    floor = write * total
    print(f"projection: {args.labs} labs x {args.students} students = {total} submissions on {args.nodes} nodes x "
          f"{args.cores} cores = {cores} worker threads")
    print(f"  {cost:.2f} core-s x {total} / {cores} + {overhead * 1000:.1f} ms x {total} = "
          f"{grading:.0f} s ({grading / 60:.1f} min)")
    print(f"  the client's serial writing: {write * 1000:.0f} ms x {total} = {floor:.0f} s ({floor / 60:.1f} min)"
          f"; the batch takes about {max(grading, floor) / 60:.1f} min, bound by "
          f"{'the grading' if grading >= floor else 'the client writing results'}")


if __name__ == "__main__":
    sys.exit(main())
