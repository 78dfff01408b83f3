"""The commands of `python -m autograder` (parsed in __main__.py): grading a class, and
running a lab's mistake catalogue."""
import sys
import time
from dataclasses import replace
from pathlib import Path

from autograder.batch import grade_all
from autograder.grade import Options
from autograder.gradebook import GradebookWriter
from autograder.labs import course_labs, gradable_labs
from autograder.report import write_csv, write_html, write_json
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


def grading_options(args, pool):
    limits = Limits(cell_seconds=args.cell_timeout, submission_seconds=args.timeout, memory_bytes=args.memory << 20)
    return replace(Options(limits, choose_sandbox(args.sandbox), warm=not args.no_pool), pool=pool)


def command_mistakes(args, pool):
    from autograder.catalogue import print_table, run_catalogue  # its notebook tools are slow to import

    for lab_name in args.lab or sorted(gradable_labs()):
        print(f"== {lab_name}")
        print_table(run_catalogue(lab_name, grading_options(args, pool), args.jobs))
    return 0


def command_grade(args, pool):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    paths = find_notebooks(args.paths)
    names = unique_names(paths)
    options = grading_options(args, pool)
    gradebook = GradebookWriter(args.db or f"sqlite:///{(out / 'gradebook.db').resolve()}", out)
    gradebook.prepare(sorted(course_labs()))
    results, progress, gradebook_failures = [], Progress(len(paths)), []

    writing = 0.0

    def keep(name, result, answers):
        nonlocal writing
        started = time.monotonic()
        write_json(out, name, result)
        lab = result["extra_data"]["lab"]
        write_html(out, name, result, course_labs()[lab].title if lab else "Submission")
        try:
            gradebook.record(name, result, answers)
        except Exception as error:  # the JSON is written; keep grading, report at the end
            gradebook_failures.append(f"{name}: {type(error).__name__}: {error}")
        results.append((name, result))
        writing += time.monotonic() - started
        progress.step(name, result)

    grade_all(list(zip(names, paths)), options, args.jobs, keep)
    write_csv(out, results)
    graded = sum(result["status"] == "graded" for _, result in results)
    print(f"graded {graded} of {len(results)} submissions; results in {out}")
    phases = {}
    for _, result in results:
        for phase, seconds in result["extra_data"].get("phases", {}).items():
            phases[phase] = phases.get(phase, 0.0) + seconds
    phases["write"] = writing
    print("time by phase, summed over submissions: " + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()))
    for failure in gradebook_failures:
        print(f"autograder: not recorded in the gradebook: {failure}", file=sys.stderr)
    return 1 if gradebook_failures else 0
