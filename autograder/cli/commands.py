"""The commands of `python -m autograder` (parsed in __main__.py): grading a class, and
running a lab's mistake catalogue."""
import importlib.util
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from autograder.cli.progress import Progress, summary
from autograder.diagnosis.matching import REBUILD, stored
from autograder.grading.batch import grade_all
from autograder.grading.grade import Options, error_result
from autograder.grading.roster import roster
from autograder.grading.secret import course_secret
from autograder.isolation.sandbox import Limits, choose_sandbox
from autograder.labs import course_labs, gradable_labs
from autograder.records.gradebook import GradebookWriter, canvas_people
from autograder.records.interrupts import held_interrupts
from autograder.records.lateness import NO_TIMESTAMP, apply_late, lateness, read_course, refusal, untimed, untimed_notice
from autograder.records.report import write_html, write_json
from autograder.records.results_store import (REPORT, SIMILARITY, atomic_write, current_result, plan, provenance,
                                              stored_results)
from autograder.records.tables import missing, write_tables
from autograder.reports.report_page import render, render_similarity
from autograder.reports.similarity.classwide import CSV, class_similarity, similarity_sheet, summary_lines


class NoGradebook:
    """Stands in for GradebookWriter under --no-gradebook: nbgrader is then never imported, which
    saves seconds where one submission is graded (Gradescope)."""

    def prepare(self, lab_names, due=None):
        pass

    def record(self, student, lab_name, result, answers):
        pass

    def catch_up(self, kept):
        return 0

    def close(self):
        pass


def grading_limits(args):
    return Limits(cell_seconds=args.cell_timeout, submission_seconds=args.timeout, memory_bytes=args.memory << 20,
                  disk_bytes=args.disk << 20)


def grading_options(args, pool, secret):
    return replace(Options(grading_limits(args), choose_sandbox(args.sandbox), warm=not args.no_pool), pool=pool,
                   secret=secret)


def command_mistakes(args, pool):
    from autograder.measuring.catalogue import print_table, run_catalogue  # its notebook tools are slow to import

    options = grading_options(args, pool, course_secret(args.secret_file))
    for lab_name in args.lab or sorted(gradable_labs()):
        print(f"== {lab_name}")
        print_table(run_catalogue(lab_name, options, args.jobs))
    return 0


def mutants_problem(args):
    """What is wrong with `mutants`' arguments, or None."""
    labs = course_labs()
    if args.lab not in labs:
        return f"no lab {args.lab} in source/ (there are {', '.join(sorted(labs))})"
    unknown = [a for a in args.activity or () if a not in labs[args.lab].activities]
    if unknown:
        return f"{args.lab} has no activity {', '.join(unknown)} (it has {', '.join(labs[args.lab].activities)})"
    if any(n is not None and n < 1 for n in (args.limit, args.sample)):
        return "--limit and --sample must be at least 1"
    return None


def command_mutants(args, pool):
    # its notebook tools are slow to import
    from autograder.measuring.mutants import classify, equivalents, grade_mutants, lab_mutants, render, sample, summary

    lab = course_labs()[args.lab]
    mutants = lab_mutants(lab, args.activity)
    generated = len(mutants)
    if args.sample is not None:
        mutants = sample(mutants, args.sample, args.seed)
    if args.limit is not None:
        mutants = mutants[:args.limit]
    if args.list:
        for m in mutants:
            print(f"{m.id}\n    {m.description}")
        print(f"{len(mutants)} of {generated} mutants")
        return 0
    listed, problems = equivalents(args.lab)
    options = grading_options(args, pool, course_secret(args.secret_file))
    started = time.monotonic()
    verdicts = grade_mutants(args.lab, mutants, options, args.jobs, args.seed, args.visible,
                             lambda done, total, what: print(f"  {what} {done}/{total} mutants run", file=sys.stderr,
                                                             flush=True))
    report = summary(args.lab, classify(verdicts, listed), args.seed, args.visible, listed, problems,
                     time.monotonic() - started, generated)
    print(render(report), end="")
    if args.out:
        with open(args.out, "w") as out:
            json.dump(report, out, indent=1)
            out.write("\n")
    return 0


def command_fingerprints(args, pool):
    from autograder.measuring.fingerprints import build, catalogue_answers, check, measure, stranger_answers, variant_answers

    labs = args.lab or sorted(gradable_labs())
    if args.check:
        stale = check(labs)
        print("\n".join(stale) or f"fingerprints current for {', '.join(labs)}")
        return 1 if stale else 0
    options = grading_options(args, pool, course_secret(args.secret_file))
    for lab_name in labs:
        print(f"== {lab_name}")
        if args.measure is None:
            for activity, names in build(lab_name, options, args.jobs):
                print(f"activity {activity}: not named, the cases cannot tell these apart and their advice "
                      f"differs: {'; '.join(names)}")
            print(f"wrote the fingerprints ({REBUILD.format(lab=lab_name)})")
            continue
        if check([lab_name]):
            raise SystemExit("\n".join(check([lab_name])))
        everything = []
        kinds = [("catalogue", catalogue_answers)] if args.catalogue else []
        for kind, answers in kinds + [("variants", variant_answers), ("strangers", stranger_answers)]:
            answers = answers(lab_name)
            measured = measure(lab_name, answers, args.measure, options, args.jobs)
            for m in measured:
                if m.failed and m.named and not m.right:
                    print(f"  WRONG {m.answer!r} ({m.of or 'a stranger'}) named as {list(m.named)}")
                elif m.failed and not m.named and m.of:
                    print(f"  none  {m.answer!r} ({m.of})")
                if m.failed and m.by_tokens and not m.rightly(m.by_tokens):
                    print(f"  tokens alone named {m.answer!r} ({m.of or 'a stranger'}) as {list(m.by_tokens)}")
            print_rates(kind, measured, args.measure)
            if kind != "catalogue":
                everything += measured
        print_rates("variants and strangers", everything, args.measure)
    return 0


def print_rates(kind, measured, seed):
    """A line per rule: the replay the grader uses, and tokens alone, the rule it replaced."""
    from autograder.measuring.fingerprints import rates

    for rule, by_tokens in (("replay", False), ("tokens alone", True)):
        failing, diagnosed, right = rates(measured, by_tokens)
        print(f"{kind} by {rule}: {len(measured)} answers, {failing} fail on seed {seed}, {diagnosed} diagnosed "
              f"(coverage {diagnosed / max(failing, 1):.0%}), {right} rightly, {diagnosed - right} wrongly "
              f"(precision {right / max(diagnosed, 1):.1%})")


def gradebook_wanted(args):
    """Whether this run writes nbgrader's gradebook: unless --no-gradebook, and, without --db, only
    where nbgrader is installed (a grading node's `grade` extra has none; the instructor's has)."""
    try:
        installed = importlib.util.find_spec("nbgrader") is not None
    except (ImportError, ValueError):  # a package that is there but cannot be imported
        installed = False
    if args.no_gradebook and args.db:
        raise SystemExit("autograder: --db names a gradebook, and --no-gradebook writes none")
    if args.db and not installed:
        raise SystemExit("autograder: --db needs nbgrader, which is not installed here: install the grader with "
                         "its instructor extra (pip install \".[instructor]\"), or leave --db out")
    if not args.no_gradebook and not installed:
        print("autograder: nbgrader is not installed here, so no gradebook is written (the results, feedback and "
              "tables are); install the instructor extra for one", file=sys.stderr)
    return installed and not args.no_gradebook


def command_grade(args, pool):
    args.no_gradebook = not gradebook_wanted(args)
    secret = course_secret(args.secret_file)  # a missing or short secret file is said before anything is done
    course = read_course(args.course, course_labs())
    out = Path(args.out)
    given = roster(args.paths)
    chosen = given.only(args.lab, args.student)
    if not chosen.submissions:
        raise SystemExit(f"autograder: none of the {len(given.submissions)} submissions found is of "
                         + " and ".join(filter(None, [args.lab and f"lab {', '.join(args.lab)}",
                                                      args.student and f"student {', '.join(args.student)}"])))
    for line in untimed_notice(course, chosen.submissions):  # the course's decision, said while it can still change it
        print(f"autograder: {line}", file=sys.stderr)
    for lab_name in sorted({s.lab for s in chosen.submissions} & set(course_labs())):
        if stored(lab_name) is None:  # grading goes on: an unnamed mistake is only less feedback
            print(f"autograder: {lab_name}'s fingerprints are missing or out of date, so its failures are not "
                  f"named as known mistakes; rebuild them with {REBUILD.format(lab=lab_name)}", file=sys.stderr)
    client = None
    if args.scheduler:  # before anything else, so that an unreachable scheduler is said at once
        from autograder.grading.distributed import connect

        client = connect(args.scheduler)
    out.mkdir(parents=True, exist_ok=True)  # only now: a run refused above writes nothing
    db_url = args.db or f"sqlite:///{(out / 'gradebook.db').resolve()}"
    gradebook = NoGradebook() if args.no_gradebook else GradebookWriter(db_url, out)
    run, problems, code, writing, todo = {}, [], 0, {"write": 0.0}, []
    try:
        try:
            gradebook.prepare(sorted(course_labs()), course.due)
            refused = untimed(course, chosen.submissions, "refuse")
            refusing = set(refused)
            todo, kept = plan([s for s in chosen.submissions if s not in refusing], out, secret, args.regrade)
            run.update(refresh_late(out, course, kept))
            grade_and_write(args, pool, client, out, gradebook, course, todo, secret, run, problems, writing, refused)
            try:
                recorded = gradebook.catch_up(kept)
            except Exception as error:  # their JSONs stand; the next run tries again
                problems.append(f"earlier results not recorded in the gradebook: {type(error).__name__}: {error}")
                recorded = 0
            if kept:
                print(f"{len(kept)} already had a current result and were not graded again (--regrade grades them all)"
                      + (f"; {recorded} of them recorded in the gradebook now" if recorded else ""))
        except KeyboardInterrupt:
            code = 130
            problems.append(f"interrupted; every result written so far is kept in {out}, and the tables show them: "
                            "run the same command again to grade the rest")
            problems.extend(caught_up(gradebook, run, out, todo, secret))
    finally:
        try:
            gradebook.close()  # commits nothing unless catch_up was interrupted while recording
        except Exception as error:  # their JSONs stand; the next run records them
            problems.append(f"earlier results not recorded in the gradebook: {type(error).__name__}: {error}")
        if client is not None:
            client.close()
        try:
            people = {} if args.no_gradebook else canvas_people(db_url)
        except Exception as error:  # a gradebook that is down: canvas.csv names students by id alone
            people = {}
            problems.append(f"canvas.csv names students by their nbgrader id only: the gradebook's students "
                            f"could not be read ({type(error).__name__}: {error})")
        records = write_tables(out, people)  # whatever happened, the tables show every record there is
        try:
            write_class_report(records, out, out / REPORT, str(out))
        except Exception as error:  # the results and tables stand; `report` can write it again
            problems.append(f"the class report was not written ({type(error).__name__}: {error}); "
                            f"python -m autograder report {out} writes it")
    print("\n".join(summary(run, len(chosen.submissions), missing(records), chosen.skipped, out)))
    phases = {}
    for submission, _ in todo:
        for phase, seconds in run.get(submission, {}).get("extra_data", {}).get("phases", {}).items():
            phases[phase] = phases.get(phase, 0.0) + seconds
    if todo:
        phases.update(writing)
        print("time by phase, summed over submissions: " + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()))
    for problem in problems:
        print(f"autograder: {problem}", file=sys.stderr)
    return code or (1 if problems else 0)


def caught_up(gradebook, run, out=None, todo=(), secret=None):
    """After Ctrl-C: make the gradebook hold every result this run wrote, wherever the interrupt
    fell: between a JSON and its record, inside a batch's commit, or between a JSON's renaming
    and `run`'s note of it. So the current JSONs in `out` of `todo` ((submission, digest): what
    this run was to grade) are read back, besides `run`. What this cannot do, a second Ctrl-C
    included, is said; the next run catches up the same way."""
    try:
        written = {submission: result for submission, digest in todo
                   if (result := current_result(out, submission, digest, secret)) is not None}
        gradebook.catch_up(list({**written, **run}.items()))
    except (Exception, KeyboardInterrupt) as error:
        return [f"results not recorded in the gradebook yet, the next run records them: "
                f"{type(error).__name__}: {error}"]
    return []


def refresh_late(out, course, kept):
    """The kept results, each with its lateness as the course file gives it now: a result whose
    due date, policy, extension or time handed in changed since it was written is written again
    (feedback, then JSON), without grading anything again; `catch_up` then records it."""
    refreshed = {}
    for submission, result in kept:
        late = lateness(course, submission)
        if result["extra_data"].get("late") != late:
            apply_late(result, late)
            write_html(out, result)
            write_json(out, result)
        refreshed[submission] = result
    return refreshed


def grade_and_write(args, pool, client, out, gradebook, course, todo, secret, run, problems, writing, refused):
    """Grade `todo`, writing each result as it comes (feedback, the JSON, which marks it done, then
    the gradebook), putting it in `run` and the seconds that took in writing["write"]; each of
    `refused`, which lacks the timestamp.txt the course file requires, gets a result saying so,
    written the same way but never current, so that the next run grades it where that changed. The
    gradebook commits its records in batches; the last is committed here however grading ends,
    and what a batch lost, catch_up records from the JSONs (after Ctrl-C, or in the next run)."""
    from autograder.records.gradebook import NotRecorded

    digests = {**dict(todo), **dict.fromkeys(refused)}  # no digest: a refusal is never a current result
    progress = Progress(len(todo) + len(refused))

    def not_recorded(lost):  # every record of the failed batch: their JSONs stand, and a later run records them
        problems.extend(f"not recorded in the gradebook: {name}: {lost.reason}" for name in lost.names)

    def keep(submission, result, answers, seconds=None):  # seconds: how long a cluster's worker graded it
        started = time.monotonic()
        extra = result["extra_data"]
        extra.update(student=submission.student, lab=submission.lab, path=str(submission.path))
        extra.update(provenance(result, digests[submission], secret))
        apply_late(result, lateness(course, submission))
        with held_interrupts():  # a Ctrl-C here lands once the result is written and recorded
            write_html(out, result)
            write_json(out, result)
            run[submission] = result
            try:
                gradebook.record(submission.student, submission.lab, result, answers)
            except NotRecorded as lost:
                not_recorded(lost)
            except Exception as error:  # the JSON is written; a later run records it (catch_up)
                problems.append(f"not recorded in the gradebook: {submission}: {type(error).__name__}: {error}")
        writing["write"] += time.monotonic() - started
        progress.finish(submission, result, seconds)

    for submission in refused:
        keep(submission, error_result(submission.student, submission.path, NO_TIMESTAMP, refusal(submission),
                                      time.monotonic(), submission.lab), {})
    submissions = [submission for submission, _ in todo]
    try:
        if client is not None and todo:
            from autograder.grading.distributed import Settings, grade_on_cluster

            settings = Settings(grading_limits(args), args.sandbox, not args.no_pool)  # each node resolves the sandbox
            failures = grade_on_cluster(client, submissions, settings, secret, keep, progress.queue, progress.start)
            problems += [f"no result, run again: {failure}" for failure in failures]
        elif todo:
            grade_all(submissions, grading_options(args, pool, secret), args.jobs, keep, progress.start)
    finally:
        progress.close()
        started = time.monotonic()
        try:
            gradebook.close()  # the last batch, Ctrl-C or not; catch_up opens the gradebook again
        except NotRecorded as lost:
            not_recorded(lost)
        writing["write"] += time.monotonic() - started


def command_report(args):
    graded = Path(args.graded)
    if not graded.is_dir():
        raise SystemExit(f"autograder: {graded} is not a folder of results (the --out of `grade`)")
    records = stored_results(graded)
    if args.db:
        from autograder.reports.class_report import with_gradebook
        from autograder.records.gradebook import held_scores

        records = with_gradebook(records, held_scores(args.db))
    if not records:
        raise SystemExit(f"autograder: {graded} holds no results" + (" and the gradebook no submissions" if args.db
                                                                     else ""))
    target = Path(args.out) if args.out else graded / REPORT
    # The gradebook's URL may hold a password: the page names it only as a gradebook.
    write_class_report(records, graded, target, str(graded) + (" and its gradebook" if args.db else ""))
    print(f"wrote {target} and {graded / CSV}: {len(records)} records")
    return 0


def write_class_report(records, graded, target, source):
    """The class report at `target`, and beside the results (`graded`) similarity.csv, whose pairs
    its section of similar work shows."""
    found = class_similarity(records)
    atomic_write(graded / CSV, similarity_sheet(found))
    atomic_write(target, render(records, graded, source=source, page_folder=target.resolve().parent, similar=found))


def command_similarity(args):
    graded = Path(args.graded)
    if not graded.is_dir():
        raise SystemExit(f"autograder: {graded} is not a folder of results (the --out of `grade`)")
    records = stored_results(graded)
    unknown = sorted(set(args.lab or ()) - set(course_labs()))
    if unknown:
        raise SystemExit(f"autograder: no lab {', '.join(unknown)} in the course (there are "
                         f"{', '.join(sorted(course_labs()))})")
    found = class_similarity(records, args.lab)
    if not found:
        raise SystemExit(f"autograder: {graded} holds no results" + (f" of {', '.join(args.lab)}" if args.lab else ""))
    atomic_write(graded / CSV, similarity_sheet(found))
    atomic_write(graded / SIMILARITY, render_similarity(found, source=str(graded)))
    print("\n".join(summary_lines(found)))
    print(f"wrote {graded / SIMILARITY} and {graded / CSV}")
    return 0
