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
from autograder.results_store import plan, provenance
from autograder.sandbox import Limits, choose_sandbox
from autograder.secret import course_secret
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


def grading_limits(args):
    return Limits(cell_seconds=args.cell_timeout, submission_seconds=args.timeout, memory_bytes=args.memory << 20)


def grading_options(args, pool, secret):
    return replace(Options(grading_limits(args), choose_sandbox(args.sandbox), warm=not args.no_pool), pool=pool,
                   secret=secret)


def command_mistakes(args, pool):
    from autograder.catalogue import print_table, run_catalogue  # its notebook tools are slow to import

    options = grading_options(args, pool, course_secret(args.secret_file))
    for lab_name in args.lab or sorted(gradable_labs()):
        print(f"== {lab_name}")
        print_table(run_catalogue(lab_name, options, args.jobs))
    return 0


def command_grade(args, pool):
    secret = course_secret(args.secret_file)  # a missing or short secret file is said before anything is done
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    paths = find_notebooks(args.paths)
    named = list(zip(unique_names(paths), paths))
    client = None
    if args.scheduler:  # before anything else, so that an unreachable scheduler is said at once
        from autograder.distributed import connect

        client = connect(args.scheduler)
    gradebook = GradebookWriter(args.db or f"sqlite:///{(out / 'gradebook.db').resolve()}", out)
    try:
        gradebook.prepare(sorted(course_labs()))
        todo, kept = plan(named, out, secret, args.regrade)
        return grade_and_write(args, pool, client, out, gradebook, todo, kept, secret)
    except KeyboardInterrupt:
        print(f"autograder: interrupted; every result written so far is kept in {out}: run the same command "
              "again to grade the rest", file=sys.stderr)
        return 130
    finally:
        gradebook.close()
        if client is not None:
            client.close()


def grade_and_write(args, pool, client, out, gradebook, todo, kept, secret):
    """Grade `todo`, writing each result as it comes (feedback, gradebook, then the JSON, which
    marks it done), then the CSV over `kept` and the new results."""
    digests = {name: digest for name, _, digest in todo}
    results, progress, problems = {name: result for name, _, result in kept}, Progress(len(todo)), []
    writing = 0.0

    def keep(name, result, answers):
        nonlocal writing
        started = time.monotonic()
        result["extra_data"].update(provenance(result, digests[name], secret))
        lab = result["extra_data"]["lab"]
        write_html(out, name, result, course_labs()[lab].title if lab else "Submission")
        try:
            gradebook.record(name, result, answers)
        except Exception as error:  # the JSON is still written; a later run records it (catch_up)
            problems.append(f"not recorded in the gradebook: {name}: {type(error).__name__}: {error}")
        write_json(out, name, result)
        results[name] = result
        writing += time.monotonic() - started
        progress.step(name, result)

    named_paths = [(name, path) for name, path, _ in todo]
    if client is not None and todo:
        from autograder.distributed import Settings, grade_on_cluster

        settings = Settings(grading_limits(args), args.sandbox, not args.no_pool)  # each node resolves the sandbox
        problems += [f"no result, run again: {failure}" for failure in grade_on_cluster(client, named_paths, settings,
                                                                                          secret, keep)]
    elif todo:
        grade_all(named_paths, grading_options(args, pool, secret), args.jobs, keep)
    try:
        recorded = gradebook.catch_up(kept)
    except Exception as error:  # their JSONs stand; the next run tries again
        problems.append(f"earlier results not recorded in the gradebook: {type(error).__name__}: {error}")
        recorded = 0
    write_csv(out, list(results.items()))
    graded = sum(result["status"] == "graded" for result in results.values())
    print(f"graded {graded} of {len(results)} submissions; results in {out}")
    if kept:
        print(f"{len(kept)} already had a current result and were not graded again (--regrade grades them all)"
              + (f"; {recorded} of them recorded in the gradebook now" if recorded else ""))
    phases = {}
    for name in digests:
        for phase, seconds in results.get(name, {}).get("extra_data", {}).get("phases", {}).items():
            phases[phase] = phases.get(phase, 0.0) + seconds
    phases["write"] = writing
    print("time by phase, summed over submissions: " + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()))
    for problem in problems:
        print(f"autograder: {problem}", file=sys.stderr)
    return 1 if problems else 0
