"""python -m autograder grade PATH... --out DIR [--jobs N] [--db URL] [limits]

Grades submitted notebooks (files, or folders searched for *.ipynb) and writes, in DIR:
<name>.json (Gradescope results schema plus `status`), <name>.html (feedback), grades.csv,
and the grades in nbgrader's gradebook (default sqlite:///DIR/gradebook.db) with the
autograded notebooks nbgrader's generate_feedback reads. <name> is the student id of
nbgrader's submitted/<student>/<lab>/ layout, else the file's stem. Exits 0 once every
submission has a result, whatever the scores.
"""
import argparse
import os
import sys
from pathlib import Path

from autograder.batch import grade_all
from autograder.grade import Options
from autograder.gradebook import GradebookWriter
from autograder.labs import course_labs, gradable_labs
from autograder.report import write_csv, write_html, write_json
from autograder.catalogue import print_table, run_catalogue
from autograder.sandbox import Limits, choose_sandbox
from autograder.submission import student_name


def find_notebooks(paths):
    found = []
    for path in map(Path, paths):
        if path.is_dir():
            found += sorted(p for p in path.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
        elif path.exists():
            found.append(path)
        else:
            raise SystemExit(f"autograder: {path}: no such file or folder")
    if not found:
        raise SystemExit("autograder: no notebooks to grade")
    return found


def unique_names(paths):
    names, taken = [], {}
    for path in paths:
        name = student_name(path)
        taken[name] = taken.get(name, 0) + 1
        names.append(name if taken[name] == 1 else f"{name}-{taken[name]}")
    return names


class Progress:
    def __init__(self, total):
        self.total, self.done, self.shown = total, 0, sys.stderr.isatty()

    def step(self, name, result):
        self.done += 1
        if self.shown:
            filled = 30 * self.done // self.total
            sys.stderr.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} {name[:30]:<30}")
            if self.done == self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()


def grading_options(args):
    limits = Limits(cell_seconds=args.cell_timeout, submission_seconds=args.timeout, memory_bytes=args.memory << 20)
    return Options(limits, choose_sandbox(args.sandbox), warm=not args.no_pool)


def command_mistakes(args):
    for lab_name in args.lab or sorted(gradable_labs()):
        print(f"== {lab_name}")
        print_table(run_catalogue(lab_name, grading_options(args), args.jobs))
    return 0


def command_grade(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    paths = find_notebooks(args.paths)
    names = unique_names(paths)
    options = grading_options(args)
    gradebook = GradebookWriter(args.db or f"sqlite:///{(out / 'gradebook.db').resolve()}", out)
    results, progress, gradebook_failures = [], Progress(len(paths)), []

    def keep(name, result, answers):
        write_json(out, name, result)
        lab = result["extra_data"]["lab"]
        write_html(out, name, result, course_labs()[lab].title if lab else "Submission")
        try:
            gradebook.record(name, result, answers)
        except Exception as error:  # the JSON is written; keep grading, report at the end
            gradebook_failures.append(f"{name}: {type(error).__name__}: {error}")
        results.append((name, result))
        progress.step(name, result)

    grade_all(list(zip(names, paths)), options, args.jobs, keep)
    write_csv(out, results)
    graded = sum(result["status"] == "graded" for _, result in results)
    print(f"graded {graded} of {len(results)} submissions; results in {out}")
    for failure in gradebook_failures:
        print(f"autograder: not recorded in the gradebook: {failure}", file=sys.stderr)
    return 1 if gradebook_failures else 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    grading = commands.add_parser("grade", help="grade submissions")
    grading.add_argument("paths", nargs="+", metavar="PATH", help="notebooks, or folders holding them")
    grading.add_argument("--out", required=True, metavar="DIR", help="where the results go")
    grading.add_argument("--db", metavar="URL", help="nbgrader gradebook (default sqlite:///DIR/gradebook.db)")
    catalogue = commands.add_parser("mistakes", help="run a lab's catalogue of wrong answers through the checks")
    catalogue.add_argument("--lab", action="append", help="a lab to run (repeatable; default: every lab)")
    for command in (grading, catalogue):
        command.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="submissions graded at once")
        command.add_argument("--cell-timeout", type=float, default=60.0, metavar="S",
                             help="seconds for one cell or one check (default 60)")
        command.add_argument("--timeout", type=float, default=600.0, metavar="S",
                             help="seconds for a whole submission (default 600)")
        command.add_argument("--memory", type=int, default=6144, metavar="MiB", help="memory per submission")
        command.add_argument("--sandbox", choices=("auto", "bwrap", "none"), default="auto",
                             help="bubblewrap isolation: auto uses it when it works here")
        command.add_argument("--no-pool", action="store_true",
                             help="start every worker cold instead of forking it from a warm zygote")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    return command_grade(args) if args.command == "grade" else command_mistakes(args)


if __name__ == "__main__":
    sys.exit(main())
