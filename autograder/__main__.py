"""python -m autograder grade PATH... --out DIR [--jobs N | --scheduler ADDRESS] [--db URL | --no-gradebook]
                           [--regrade] [--lab LAB] [--student STUDENT] [--course DIR|FILE] [limits] [--secret-file PATH]
python -m autograder report GRADED [--db URL] [--out FILE.html]
python -m autograder similarity GRADED [--lab LAB]
python -m autograder gradescope LAB --out FILE.zip [--secret-file PATH]
python -m autograder check NOTEBOOK
python -m autograder mutants --lab LAB [--activity A] [--visible] [--jobs N] [--limit N] [--sample N]
                             [--seed S] [--out FILE.json] [--list]
(installed with pip, `autograder` is the same command)

Every command works on the course folder (source/, data/, release/, course.toml): --course DIR,
else the current directory when it holds source/<lab>/<lab>.py, else the checkout the grader
runs from.

Grades submitted notebooks (files, or folders searched for *.ipynb). Every record is keyed by
(student, lab): the student is the id of nbgrader's submitted/<student>/<lab>/ layout, else the
file's stem. In DIR it writes <student>/<lab>.json (Gradescope results schema plus `status`) and
<student>/<lab>.html (feedback), the grades in nbgrader's gradebook (default
sqlite:///DIR/gradebook.db) with the autograded notebooks nbgrader's generate_feedback reads,
and the class's tables, rebuilt from every record in DIR after each run: grades.csv,
grades-<lab>.csv, course.csv, diagnoses.csv and canvas.csv, and the class report
(report.html). Due dates and the late policy come from the course file
(course.toml; see autograder/records/lateness.py). Exits 0 once every submission has a result, whatever
the scores. A run grades only the submissions without a current result in DIR (same notebook,
grader, lab and course secret), so an interrupted batch goes on where it stopped; --regrade
grades them all, and --lab and --student choose the records a run grades, leaving the others
as they are. The course secret chooses each submission's hidden inputs (see autograder/grading/secret.py).

`report` writes the class report of a results folder (every `grade` run writes it there too, as
report.html): per lab the score distribution, each activity's pass rate, difficulty and
discrimination, the known mistakes the class made, what needs a person, similar work, and grading
times; GRADED/similarity.csv beside it.

`similarity` compares the answers of a results folder's students, lab by lab and activity by
activity, and writes GRADED/similarity.html (the similar pairs and groups, their answers side by
side) and GRADED/similarity.csv (every pair scored 30% or more); the class report has the same
section (see autograder/reports/similarity/).

`gradescope` writes LAB's Gradescope autograder bundle, which grades each submission there with
this same grader and sandbox.
"""
import argparse
import os
import sys
from pathlib import Path

from autograder.isolation.sandbox import Limits, Pool
from autograder.isolation.warm import lab_imports
from course.folder import use_course


class DaskTLS(argparse.Action):
    """`grade`'s --tls-ca-file, --tls-cert and --tls-key (named as `dask scheduler`'s), kept in Dask's
    settings, where the client that --scheduler starts reads them; once one is given, that client
    sends nothing unencrypted."""

    def __call__(self, parser, namespace, value, option_string=None):
        import dask.config

        dask.config.set({self.dest: value, "distributed.comm.require-encryption": True})


def build_parser():
    """Every command with its options, as `--help` shows them and the documentation's reference reads them."""
    installed = Path(sys.argv[0]).name == "autograder"  # the console command pip installs
    parser = argparse.ArgumentParser(prog="autograder" if installed else "python -m autograder", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    grading = commands.add_parser("grade", help="grade submissions")
    grading.add_argument("paths", nargs="+", metavar="PATH", help="notebooks, or folders holding them")
    grading.add_argument("--out", required=True, metavar="DIR", help="where the results go")
    grading.add_argument("--db", metavar="URL", help="nbgrader gradebook (default sqlite:///DIR/gradebook.db; "
                                                     "postgresql://USER:PASSWORD@HOST:PORT/DATABASE works too)")
    grading.add_argument("--scheduler", metavar="ADDRESS",
                         help="grade on this Dask cluster (tcp://HOST:8786) instead of the local pool; --jobs is unused")
    for flag, setting, what in (("--tls-ca-file", "ca-file", "the CA certificate that signed the cluster's"),
                                ("--tls-cert", "client.cert", "this client's certificate"),
                                ("--tls-key", "client.key", "this client's private key")):
        grading.add_argument(flag, metavar="PATH", action=DaskTLS, dest=f"distributed.comm.tls.{setting}",
                             default=argparse.SUPPRESS, help=f"{what}, PEM, for a scheduler at tls://HOST:PORT "
                                                             f"(Dask's setting distributed.comm.tls.{setting})")
    grading.add_argument("--no-gradebook", action="store_true",
                         help="write no nbgrader gradebook (nor its autograded notebooks): the results, feedback and "
                              "tables only, as for one submission on Gradescope")
    grading.add_argument("--regrade", action="store_true",
                         help="grade every submission again, even those with a current result in DIR")
    grading.add_argument("--lab", action="append", metavar="LAB",
                         help="grade only the records of this lab (repeatable); the tables still show the whole class")
    grading.add_argument("--student", action="append", metavar="STUDENT",
                         help="grade only the records of this student (repeatable)")
    catalogue = commands.add_parser("mistakes", help="run a lab's catalogue of wrong answers through the checks")
    catalogue.add_argument("--lab", action="append", help="a lab to run (repeatable; default: every lab)")
    prints = commands.add_parser("fingerprints", help="build the stored fingerprints of a lab's catalogue, "
                                                      "which name the mistake a failing answer behaves like")
    prints.add_argument("--lab", action="append", help="a lab to build (repeatable; default: every lab)")
    prints.add_argument("--check", action="store_true", help="build nothing; fail when a lab's file is out of date")
    prints.add_argument("--measure", type=int, metavar="SEED",
                        help="build nothing; diagnose the lab's variants.py and strangers.py on this seed, by the "
                             "replay and by tokens alone")
    prints.add_argument("--catalogue", action="store_true",
                        help="with --measure, the catalogue too (its own test measures it on a seed it was built from)")
    mutation = commands.add_parser("mutants", help="mutation testing: how many one-change slips of a lab's reference "
                                                   "answers its hidden (and visible) checks catch")
    mutation.add_argument("--lab", required=True, help="the lab to mutate")
    mutation.add_argument("--activity", action="append", help="mutate only this activity (repeatable)")
    mutation.add_argument("--visible", action="store_true", help="run the visible check cells on every mutant too")
    mutation.add_argument("--limit", type=int, metavar="N", help="grade only the first N mutants")
    mutation.add_argument("--sample", type=int, metavar="N", help="grade N mutants drawn with --seed")
    mutation.add_argument("--seed", type=int, default=101, metavar="S",
                          help="the seed of the hidden inputs, and of --sample's draw (default 101, which is not "
                               "one the fingerprints are built on)")
    mutation.add_argument("--out", metavar="FILE.json", help="write the report as JSON too")
    mutation.add_argument("--list", action="store_true", help="list the mutants and grade nothing")
    report = commands.add_parser("report", help="write the class report: one HTML page of how the class did")
    report.add_argument("graded", metavar="GRADED", help="a results folder of `grade` (its --out)")
    report.add_argument("--db", metavar="URL", help="take the scores from this nbgrader gradebook (where manual "
                                                    "grading lands); records only it holds are shown too")
    report.add_argument("--out", metavar="FILE.html", help="where the page goes (default GRADED/report.html)")
    similar = commands.add_parser("similarity", help="pairs and groups of students whose answers are similar beyond "
                                                     "what independent work shares")
    similar.add_argument("graded", metavar="GRADED", help="a results folder of `grade` (its --out)")
    similar.add_argument("--lab", action="append", metavar="LAB", help="compare this lab only (repeatable)")
    bundle = commands.add_parser("gradescope", help="write a lab's Gradescope autograder bundle")
    bundle.add_argument("lab", help="the lab, as named in source/")
    bundle.add_argument("--out", required=True, metavar="FILE.zip", help="where the bundle goes")
    checking = commands.add_parser("check", help="a student's check (python -m autodiff_check) with the grader's own "
                                                 "reading of the notebook: its visible checks in a fresh kernel, no "
                                                 "hidden checks")
    checking.add_argument("notebook", metavar="NOTEBOOK", help="the student notebook (.ipynb)")
    for command in (grading, catalogue, prints, mutation):
        command.add_argument("--jobs", type=int, help="submissions graded at once (default: one per CPU)")
        command.add_argument("--cell-timeout", type=float, default=60.0, metavar="S",
                             help="seconds for one cell or one check (default 60)")
        command.add_argument("--timeout", type=float, default=600.0, metavar="S",
                             help="seconds for a whole submission (default 600)")
        command.add_argument("--memory", type=int, default=6144, metavar="MiB", help="memory per submission")
        command.add_argument("--disk", type=int, default=Limits.disk_bytes >> 20, metavar="MiB",
                             help="what a submission can write, in its folder and in /tmp each (sandboxed)")
        command.add_argument("--sandbox", choices=("auto", "bwrap", "user", "none"), default="auto",
                             help="bubblewrap isolation: auto uses it when it works here, else (as root) runs "
                                  "submissions as the user nobody, which `user` asks for without the sandbox")
        command.add_argument("--no-pool", action="store_true",
                             help="start every worker cold instead of forking it from a warm zygote")
    for command in (grading, catalogue, prints, mutation, report, similar, bundle, checking):
        command.add_argument("--course", metavar="DIR", type=Path,
                             help="the course folder (default: the current directory when it holds source/, else "
                                  "the checkout the grader runs from)" + (
                                 "; a file instead is the course file with due dates and the late policy (default: "
                                 "course.toml in the course folder; see autograder/records/lateness.py)"
                                 if command is grading else ""))
    for command in (grading, catalogue, prints, mutation, bundle):
        command.add_argument("--secret-file", metavar="PATH",
                             help="the course secret, which chooses each submission's hidden inputs (default: "
                                  "$AUTOGRADER_SECRET, else .autograder-secret in the course root, made on first use)")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    # Before anything reads the course. A results folder's report needs no course.
    if args.course is not None and (args.course.is_dir() or args.command != "grade"):
        use_course(args.course)
        args.course = None
    elif args.command != "report":
        use_course()
    if args.command == "gradescope":  # grades nothing here, so no zygote
        from autograder.gradescope.bundle import write_bundle

        return write_bundle(args.lab, args.out, args.secret_file)
    if args.command == "check":  # a student's notebook in a kernel of its own: no zygote, no sandbox
        from autograder.cli.check import command_check

        return command_check(args.notebook)
    if args.command == "report":  # reads results only
        from autograder.cli.commands import command_report

        return command_report(args)
    if args.command == "similarity":  # reads results and notebooks only
        from autograder.cli.commands import command_similarity

        return command_similarity(args)
    if args.command == "fingerprints" and args.check:  # reads files only
        from autograder.cli.commands import command_fingerprints

        return command_fingerprints(args, None)
    args.jobs = (os.cpu_count() or 1) if args.jobs is None else args.jobs
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.command == "mutants":
        from autograder.cli.commands import mutants_problem

        problem = mutants_problem(args)
        if problem:
            parser.error(problem)
        if args.list:  # grades nothing, so no zygote
            from autograder.cli.commands import command_mutants

            return command_mutants(args, None)
    # The zygote imports PyTorch and the rest while this process imports the grader: start it first.
    # On a Dask cluster each worker has its own, and this process grades nothing itself. One
    # notebook is graded by a worker or two of each kind: those start cold (see sandbox.Pool).
    local = not getattr(args, "scheduler", None)
    one_notebook = args.command == "grade" and len(args.paths) == 1 and Path(args.paths[0]).is_file()
    pool = None if args.no_pool or args.sandbox in ("user", "none") or not local else \
        Pool.launch(lab_imports, eager=not one_notebook)
    # jsonschema (under nbformat) imports rfc3987_syntax where it is installed, and that builds a
    # grammar for seconds; notebooks never need its IRI formats, so the grader goes without.
    sys.modules.setdefault("rfc3987_syntax", None)
    try:
        from autograder.cli.commands import command_fingerprints, command_grade, command_mistakes, command_mutants

        command = {"grade": command_grade, "mistakes": command_mistakes, "fingerprints": command_fingerprints,
                   "mutants": command_mutants}
        return command[args.command](args, pool)
    finally:
        if pool is not None:
            pool.close()


def run():
    """The command: main(), then an exit that skips the interpreter's teardown once the run's work
    is done. Freeing PyTorch's modules and objects one by one at exit took 0.5 to 1 s of CPU,
    a sixth of what grading one submission costs. The atexit handlers still run (they remove
    the run's scratch folders) and the standard streams are flushed; every file the run writes
    is closed by then. Where a thread that is not a daemon still runs, the exit waits for it,
    unless the run was interrupted."""
    import atexit
    import threading

    try:
        status = main()
    except SystemExit as stop:
        status = stop.code
    if status is not None and not isinstance(status, int):  # as Python does with sys.exit("message")
        print(status, file=sys.stderr)
        status = 1
    # 130: the run was interrupted and has written what it keeps; a grading thread it left
    # behind (grading.batch.grade_all) must not hold the exit.
    if status != 130 and any(thread.is_alive() and not thread.daemon for thread in threading.enumerate()
                             if thread is not threading.current_thread()):
        sys.exit(status)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that went away (`| head`), a stream closed
            pass
    os._exit(status or 0)


if __name__ == "__main__":
    run()
