"""What the class report shows, computed from the class's records ({(student, lab): result}, as
`results_store.stored_results` reads them): per lab, where the class stands, how each activity
went, which known mistakes the class made, which records need a person, and how long grading
took. Plain data, so that the page (autograder/reports/report_page.py) and the tests read the same
figures. Every figure is of the records as they are: a lab's students are everyone with a record
of any lab, as in course.csv.

Decisions, each also said on the page:
* A record is *scored* when its activities were judged: status `graded`, or `timeout` (what it
  earned before its time ran out). `wrong_lab` counts as no submission (missing); any other
  status is *not gradable*.
* Scores are after the late penalty (what the student gets); the item analysis of activities uses
  the points as judged, before it, since a penalty says nothing of an activity.
* Late work is a scored record handed in after its due date and outside the grace period
  (`counts_as_late`); a record that was not scored has no points for a penalty to take.
* Discrimination is the Pearson correlation, over the scored records, of an activity's points
  with the points of the lab's other activities; undefined (None) when either does not vary.
"""
import copy
import math
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from autograder.labs import course_labs
from autograder.records.lateness import counts_as_late
from autograder.records.results_store import record_path
from autograder.records.tables import MISSING, NOT_HANDED_IN, SCORED, activity_order, earned

SLOWEST = 5
MOST_BINS = 20


@dataclass
class Mistake:
    names: str  # the catalogued mistakes named together (one advice), joined by " / "
    advice: str
    students: list


@dataclass
class Activity:
    id: str
    points: float
    optional: bool
    attempted: int
    passed: int
    mean_points: float
    not_attempted_rate: float
    pass_rate: float
    difficulty: float  # mean fraction of the points earned: low is hard
    discrimination: float  # None when undefined
    mistakes: list = field(default_factory=list)  # [Mistake], the most students first
    undiagnosed_students: list = field(default_factory=list)  # attempted failures no known mistake explains
    first_failed: list = field(default_factory=list)  # [(check, count)] of the undiagnosed, most first

    @property
    def undiagnosed(self):
        return len(self.undiagnosed_students)


@dataclass
class Attention:
    student: str
    status: str
    reason: str
    feedback: str  # the link to the record's HTML feedback (feedback_link)


@dataclass
class Standing:
    """One student's record of one lab, as the students' table and the late work show it."""
    status: str  # the record's, MISSING where there is none
    required: float = None  # after the late penalty; None when not scored
    bonus: float = None
    seconds_late: float = 0.0  # 0 unless it is late work (counts_as_late)
    penalty: float = 0.0  # the fraction of the points earned that lateness cost
    penalty_points: float = 0.0
    to_check: bool = False  # it is under what needs a person
    feedback: str = ""  # the link to the record's HTML feedback (feedback_link)

    @property
    def late(self):
        return self.seconds_late > 0


@dataclass
class LabReport:
    name: str
    title: str
    students: int
    scored: int
    missing: int
    not_gradable: int
    max_required: float
    max_bonus: float
    required: list  # per scored record, after the late penalty, sorted
    bonus: list
    activities: list  # [Activity], the hardest first
    attention: list  # [Attention]
    seconds: list  # grading time per record, sorted
    slowest: list  # [(student, seconds, status)]
    standings: dict  # {student: Standing} for every student of the class, those with no record included

    @property
    def late(self):
        return sum(1 for standing in self.standings.values() if standing.late)

    @property
    def any_failure(self):
        """Whether the table of mistakes has a row: an attempted activity failed by a scored record."""
        return any(a.mistakes or a.undiagnosed for a in self.activities)

    @property
    def mean_required(self):
        return mean(self.required)

    @property
    def mean_bonus(self):
        return mean(self.bonus)


def mean(values):
    return sum(values) / len(values) if values else None


def pearson(xs, ys):
    """The correlation of two equally long lists, or None when either does not vary."""
    if len(xs) < 2:
        return None
    mx, my = mean(xs), mean(ys)
    sx = math.fsum((x - mx) ** 2 for x in xs)
    sy = math.fsum((y - my) ** 2 for y in ys)
    if sx == 0 or sy == 0:
        return None
    return math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys)) / math.sqrt(sx * sy)


def histogram(values, top):
    """[(low, high, count)]: bins of a whole width covering 0..top, at most MOST_BINS of them;
    each holds low <= value < high, the last also its high end."""
    width = max(1, math.ceil(top / MOST_BINS)) if top > 0 else 1
    edges = list(range(0, int(math.ceil(top)) + 1, width)) or [0]
    if edges[-1] < top or len(edges) == 1:
        edges.append(edges[-1] + width)
    counts = [0] * (len(edges) - 1)
    for value in values:
        place = min(max(0, int(value // width)), len(counts) - 1)
        counts[place] += 1
    return [(low, high, count) for low, high, count in zip(edges, edges[1:], counts)]


def with_gradebook(records, held):
    """The records with the scores a gradebook holds (autograder.records.gradebook.held_scores) in place of
    the grader's, and a record for every submission only the gradebook holds (graded elsewhere,
    or its result file gone): scores alone, nothing of what the grader found."""
    merged = dict(records)
    for (student, lab_name), gradebook in held.items():
        lab = course_labs().get(lab_name)
        if lab is None:
            continue
        result = copy.deepcopy(records.get((student, lab_name)) or gradebook_only(student, lab, gradebook))
        tests = {test["name"]: test for test in result["tests"]}
        extra = result["extra_data"]
        extra["required"] = extra["bonus"] = 0
        for activity_id, activity in lab.activities.items():
            points = gradebook["points"].get(activity_id, tests[activity_id]["score"] if activity_id in tests else 0)
            if activity_id in tests:
                tests[activity_id]["score"] = points
            extra["bonus" if activity.optional else "required"] += points
        total = extra["required"] + extra["bonus"]
        late = extra.setdefault("late", {})
        # A penalty of 0 points from nothing earned says nothing of its fraction: the record's stands.
        late["penalty"] = min(1.0, gradebook["penalty"] / total) if total else late.get("penalty", 0.0)
        if gradebook["seconds_late"] is not None:
            late["seconds_late"] = gradebook["seconds_late"]
        extra["penalty_points"], result["score"] = gradebook["penalty"], total
        merged[(student, lab_name)] = result
    return merged


def gradebook_only(student, lab, gradebook):
    tests = [{"name": activity_id, "score": 0, "max_score": activity.points, "output": "",
              "status": "passed" if gradebook["points"].get(activity_id, 0) >= activity.points else "failed",
              "tags": ["optional"] if activity.optional else []} for activity_id, activity in lab.activities.items()]
    return {"status": "graded", "score": 0, "tests": tests, "execution_time": None,
            "output": "held in the gradebook only: no result file in this folder",
            "extra_data": {"student": student, "lab": lab.name, "source": "gradebook"}}


def class_report(records, out=None, page_folder=None):
    """{lab: LabReport} for every lab of the course that has a record; `out` (the results folder)
    lets each record link its feedback page, relative to `page_folder` (default `out`)."""
    students = sorted({student for student, _ in records})
    labs = sorted({lab for _, lab in records if lab in course_labs()})
    links = (out, page_folder or out)
    return {lab: lab_report(lab, students, {s: r for (s, l), r in records.items() if l == lab}, links)
            for lab in labs}


def lab_report(lab_name, students, by_student, links):
    lab = course_labs()[lab_name]
    scored = {s: r for s, r in sorted(by_student.items()) if r["status"] in SCORED}
    handed_in = {s for s, r in by_student.items() if r["status"] not in NOT_HANDED_IN}
    required = sorted(earned(r)[0] for r in scored.values())
    bonus = sorted(earned(r)[1] for r in scored.values())
    feedback = {s: feedback_link(links, s, lab_name) for s in by_student}
    needs = {s: attention(s, r, feedback[s]) for s, r in sorted(by_student.items())}
    order = activity_order(lab_name, list(by_student.values()))
    activities = sorted((activity_summary(lab, a, scored) for a in order if a in lab.activities),
                        key=lambda item: (item.difficulty if item.difficulty is not None else 2, order.index(item.id)))
    times = sorted(((r["execution_time"], s, r["status"]) for s, r in by_student.items()
                    if r.get("execution_time") is not None), reverse=True)
    return LabReport(
        name=lab_name, title=lab.title, students=len(students), scored=len(scored),
        missing=len(students) - len(handed_in),
        not_gradable=sum(1 for s in handed_in if by_student[s]["status"] not in SCORED),
        max_required=sum(a.points for a in lab.activities.values() if not a.optional),
        max_bonus=sum(a.points for a in lab.activities.values() if a.optional),
        required=required, bonus=bonus, activities=activities,
        attention=[item for items in needs.values() for item in items],
        seconds=sorted(t for t, _, _ in times), slowest=[(s, t, status) for t, s, status in times[:SLOWEST]],
        standings={s: standing(by_student.get(s), bool(needs.get(s)), feedback.get(s, "")) for s in students})


def standing(result, to_check, feedback):
    """The Standing of a student's `result` of a lab (None: no record)."""
    if result is None:
        return Standing(MISSING)
    if result["status"] not in SCORED:
        return Standing(result["status"], to_check=to_check, feedback=feedback)
    extra = result["extra_data"]
    late = extra.get("late", {})
    required, bonus = earned(result)
    if not counts_as_late(result):
        return Standing(result["status"], required, bonus, to_check=to_check, feedback=feedback)
    return Standing(result["status"], required, bonus, late["seconds_late"], late["penalty"],
                    extra.get("penalty_points", 0.0), to_check, feedback)


def feedback_link(links, student, lab_name):
    """The link from the page to the record's HTML feedback, "" when there is none. `links`:
    (results folder, the page's folder) or (None, None). A folder's name escapes odd characters
    as %XX (results_store.file_stem), so the link quotes its own "%" to reach that name."""
    out, page_folder = links
    if out is None or not record_path(out, student, lab_name, ".html").is_file():
        return ""
    return quote(Path(os.path.relpath(record_path(out, student, lab_name, ".html"), page_folder)).as_posix())


def points_of(result):
    return {test["name"]: test["score"] for test in result["tests"]}


def not_attempted(result):
    """The activities whose answer cell is still the stub (results before the field existed say
    so only in their messages)."""
    extra = result["extra_data"]
    if "not_attempted" in extra:
        return set(extra["not_attempted"])
    return {test["name"] for test in result["tests"] if test["output"].startswith("not attempted")}


def activity_summary(lab, activity_id, scored):
    activity = lab.activities[activity_id]
    points = {s: points_of(r).get(activity_id, 0) for s, r in scored.items()}
    rest = {s: sum(points_of(r).values()) - points[s] for s, r in scored.items()}
    untouched = {s for s, r in scored.items() if activity_id in not_attempted(r)}
    passed = sum(1 for s, r in scored.items() if any(t["name"] == activity_id and t["status"] == "passed"
                                                     for t in r["tests"]))
    n = len(scored)
    summary = Activity(
        id=activity_id, points=activity.points, optional=activity.optional, attempted=n - len(untouched),
        passed=passed, mean_points=mean(list(points.values())),
        not_attempted_rate=len(untouched) / n if n else None, pass_rate=passed / n if n else None,
        difficulty=mean([p / activity.points for p in points.values()]) if activity.points else None,
        discrimination=pearson([points[s] for s in scored], [rest[s] for s in scored]))
    named, unexplained = {}, Counter()
    for student, result in scored.items():
        test = next((t for t in result["tests"] if t["name"] == activity_id), None)
        if test is None or test["status"] == "passed" or student in untouched:
            continue
        diagnosis = result["extra_data"].get("diagnoses", {}).get(activity_id)
        if diagnosis:
            key = (" / ".join(diagnosis["mistakes"]), diagnosis["advice"])
            named.setdefault(key, []).append(student)
        else:
            summary.undiagnosed_students.append(student)
            unexplained[result["extra_data"].get("first_failed", {}).get(activity_id, "")] += 1
    summary.mistakes = [Mistake(names, advice, who) for (names, advice), who
                        in sorted(named.items(), key=lambda item: (-len(item[1]), item[0]))]
    summary.first_failed = sorted(unexplained.items(), key=lambda item: (-item[1], item[0]))
    return summary


def attention(student, result, feedback):
    """The record's reasons for a person to look at it: not scored, out of time, a check that
    hung or killed its worker, or a hand-in time the grader's evidence disputes; `feedback` is
    its link (feedback_link)."""
    status, extra = result["status"], result["extra_data"]
    if status not in SCORED:
        return [Attention(student, status, result["output"], feedback)]
    reasons = []
    if status == "timeout":
        reasons.append("its time ran out before every activity was judged")
    messages = {test["name"]: test["output"] for test in result["tests"]}
    reasons += [f"activity {a}: {messages.get(a, 'a hidden check did not finish')}" for a in extra.get("stopped", ())]
    reasons += [f"hand-in time: {check}" for check in extra.get("late", {}).get("to_check", ())]
    return [Attention(student, status, "; ".join(reasons), feedback)] if reasons else []


def course_rows(reports):
    """One row per lab for the course page."""
    return [{"lab": r.name, "title": r.title, "students": r.students, "scored": r.scored, "missing": r.missing,
             "late": r.late, "not_gradable": r.not_gradable, "mean_required": r.mean_required,
             "max_required": r.max_required, "mean_bonus": r.mean_bonus, "max_bonus": r.max_bonus,
             "attention": len(r.attention)} for r in reports.values()]


def student_rows(reports):
    """One row per student of the class for the students' table: (student, [Standing per lab, in
    the order of `reports`])."""
    students = sorted({student for report in reports.values() for student in report.standings})
    return [(student, [report.standings[student] for report in reports.values()]) for student in students]


def late_work(reports):
    """[(student, LabReport, Standing)] of every late record, lab by lab, each lab's by student."""
    return [(student, report, standing) for report in reports.values()
            for student, standing in sorted(report.standings.items()) if standing.late]
