"""The commands of `python -m autograder` (parsed in __main__.py): grading a class, and
running a lab's mistake catalogue."""
import os
import stat
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


def search(folder):
    """The *.ipynb entries under `folder`, of any kind, in sorted order; no linked folder is
    searched (it could lead anywhere), nor a notebook's .ipynb_checkpoints."""
    try:
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError as error:  # before anything is graded, so nothing is lost
        raise SystemExit(f"autograder: cannot search the folder {folder}: {error.strerror}") from None
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            if entry.name != ".ipynb_checkpoints":
                yield from search(entry.path)
        elif entry.name.endswith(".ipynb"):
            yield Path(entry.path)


def find_notebooks(paths):
    """The submissions under `paths` (notebooks, or folders searched for them), each once. A
    path that is not a regular file (a link, a pipe...) is kept: grading gives it its status.
    Once means once per file and student: `./a.ipynb` and `a.ipynb`, or a folder and a notebook
    in it, are one submission; a file hard-linked into two students' folders is one each."""
    found, seen = [], set()
    for given in map(Path, paths):
        try:
            folder = stat.S_ISDIR(given.lstat().st_mode)
        except FileNotFoundError:
            raise SystemExit(f"autograder: {given}: no such file or folder") from None
        except OSError as error:
            raise SystemExit(f"autograder: {given}: {error.strerror}") from None
        for path in search(given) if folder else [given]:
            try:
                info = path.lstat()
                key = (info.st_dev, info.st_ino, student_name(path))
            except OSError:  # gone since the search saw it: grading says so
                key = (os.path.abspath(path), student_name(path))
            if key not in seen:
                seen.add(key)
                found.append(path)
    if not found:
        raise SystemExit("autograder: no notebooks to grade")
    return found


def unique_names(paths):
    """A name for each path: its student name, or for a second one of the same name that name
    with the first free `-2`, `-3`... (free also of every name given before it)."""
    names, taken = [], set()
    for path in paths:
        name = student_name(path)
        candidate, count = name, 1
        while candidate in taken:
            count += 1
            candidate = f"{name}-{count}"
        taken.add(candidate)
        names.append(candidate)
    return names


def printable(name):
    """`name` for the terminal: a character that is not printable could move the cursor or
    rewrite what is shown."""
    return "".join(character if character.isprintable() else "?" for character in name)


class Progress:
    def __init__(self, total):
        self.total, self.done, self.shown = total, 0, sys.stderr.isatty()

    def step(self, name, result):
        self.done += 1
        if self.shown:
            filled = 30 * self.done // self.total
            shown = printable(name)[:30]
            sys.stderr.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} {shown:<30}")
            if self.done == self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()


def grading_limits(args):
    return Limits(cell_seconds=args.cell_timeout, submission_seconds=args.timeout, memory_bytes=args.memory << 20,
                  disk_bytes=args.disk << 20)


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
