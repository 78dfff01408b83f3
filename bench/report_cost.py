"""What the class report costs (autograder/reports/report_page.py): a synthetic class of STUDENTS students
in each of the course's labs (300 x 3 = 900 results by default, written as the grader writes them:
scores drawn per activity, late work, known mistakes named from each lab's catalogue with its
advice, first failing checks, not gradable and wrong-lab records, grading times), its page built
from the results folder, against the class's CSV tables (autograder/records/tables.py, which every grade
run already rebuilds) as the baseline, alternately, in one process. Prints the medians over rounds
of wall and CPU seconds, and their ratios to the baseline.

    python -m bench.report_cost [--rounds 5] [--students 300]     (from the repository root)
"""
import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from autograder.labs import course_labs, grading_for
from autograder.records.results_store import REPORT, atomic_write, record_path, stored_results
from autograder.records.tables import write_tables
from autograder.reports.report_page import render

STATUSES = ["graded"] * 92 + ["timeout", "invalid_notebook", "wrong_lab", "grader_error"] * 2


def synthetic_result(student, lab, draw):
    """One record of `lab`, as the grader writes it, with what the report reads drawn at random."""
    status = draw.choice(STATUSES)
    mistakes = grading_for(lab.name).mistakes
    tests, diagnoses, untouched, first_failed = [], {}, [], {}
    skill = draw.random()
    for activity_id, activity in lab.activities.items():
        passed = draw.random() < 0.35 + 0.6 * skill
        stub = not passed and draw.random() < 0.2
        tests.append({"name": activity_id, "score": activity.points if passed else 0, "max_score": activity.points,
                      "status": "passed" if passed else "failed", "visibility": "visible",
                      "output": "passed all 24 hidden checks" if passed else "failed 3 of 24 hidden checks",
                      "tags": ["optional"] if activity.optional else []})
        if stub:
            untouched.append(activity_id)
        elif not passed:
            known = [m for m in mistakes if m.activity == activity_id]
            if known and draw.random() < 0.7:
                mistake = draw.choice(known)
                diagnoses[activity_id] = {"mistakes": [mistake.description], "advice": mistake.advice,
                                          "matched_on": "tokens"}
            else:
                first_failed[activity_id] = f"{activity_id} on input class {draw.randrange(6)} of shape (#, #)"
    if status not in ("graded", "timeout"):
        tests, diagnoses, untouched, first_failed = [], {}, [], {}
    required = sum(t["score"] for t in tests if not t["tags"])
    bonus = sum(t["score"] for t in tests if t["tags"])
    late = draw.random() < 0.15
    return {"status": status, "score": required + bonus, "max_score": required, "visibility": "visible",
            "output": "Score." if tests else "the file is not a Jupyter notebook", "tests": tests,
            "execution_time": round(draw.uniform(4, 40), 2),
            "extra_data": {"student": student, "lab": lab.name, "required": required, "bonus": bonus,
                           "max_required": sum(a.points for a in lab.activities.values() if not a.optional),
                           "max_bonus": sum(a.points for a in lab.activities.values() if a.optional),
                           "late": {"penalty": 0.1 if late else 0.0, "seconds_late": 7200.0 if late else 0.0},
                           "penalty_points": round((required + bonus) * 0.1, 2) if late else 0,
                           "diagnoses": diagnoses, "not_attempted": untouched,
                           "stopped": ["1a"] if status == "timeout" else [], "first_failed": first_failed}}


def write_class(out, students, seed=5):
    draw = random.Random(seed)
    for lab in course_labs().values():
        for number in range(students):
            student = f"student-{number:03d}"
            result = synthetic_result(student, lab, draw)
            atomic_write(record_path(out, student, lab.name, ".json"), json.dumps(result))


def timed(work):
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--students", type=int, default=300, help="students per lab")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch)
        write_class(out, args.students)
        records = len(stored_results(out))
        steps = {"tables (baseline)": lambda: write_tables(out),
                 "report": lambda: atomic_write(out / REPORT, render(stored_results(out), out))}
        times = {name: [] for name in steps}
        for round_number in range(args.rounds + 1):  # round 0 imports the report's modules and warms caches
            for name, step in steps.items():
                seconds = timed(step)
                if round_number:
                    times[name].append(seconds)
        size = (out / REPORT).stat().st_size
    print(f"{records} records ({args.students} students x {len(course_labs())} labs), medians of {args.rounds} rounds;"
          f" the page is {size / 1024:.0f} KiB")
    base_wall, base_cpu = (statistics.median(t[i] for t in times["tables (baseline)"]) for i in (0, 1))
    for name, measured in times.items():
        wall, cpu = (statistics.median(t[i] for t in measured) for i in (0, 1))
        print(f"{name:18} wall {wall:6.2f} s ({wall / base_wall:5.2f} x)   CPU {cpu:6.2f} s ({cpu / base_cpu:5.2f} x)")


if __name__ == "__main__":
    main()
