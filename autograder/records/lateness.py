"""Due dates and the late policy: when a submission was handed in, how late that was, and what
it costs.

The course file (`course.toml` in the course root, or `grade --course FILE`) gives each lab's due
date, the late policy, and extensions per student and lab:

    timezone = "Europe/London"        # due dates written without an offset are in this zone (default UTC)

    [late]                            # every lab's policy, unless the lab gives its own
    per = "day"                       # "day" or "hour": each one started costs `penalty`; "none": no cost
    penalty = 0.10                    # the fraction of the points earned lost per started day (hour)
    max_penalty = 0.50                # never more than this fraction (a late submission keeps half)
    zero_after_hours = 168            # later than this, no points at all (leave out for no cutoff)
    grace_minutes = 10                # this late still counts as on time, and is said so
    missing_timestamp = "file-time"   # a submission with no timestamp.txt: see below

    [labs.pt03_autodiff]
    due = 2026-12-01T23:59:00         # a TOML date-time, or a string such as "2026-12-01 23:59"
    released = 2026-11-17T09:00:00    # optional: when students got it; a hand-in claimed before is said
    late = { per = "hour", penalty = 0.01 }    # this lab's own policy, over [late]

    [extensions.s03]                  # per student: hours added to a lab's due date
    pt03_autodiff = 48

The time a submission was handed in is claimed by nbgrader's `timestamp.txt` beside the notebook
in its `submitted/<student>/<lab>/` folder, a file the student's side writes: it is read in one
place (`read_claim`), at most TIMESTAMP_BYTES, and any content that is no time a calendar holds in
UTC is refused there, costing that record alone; the notebook's own times then count, and a
person is asked to check. A submission with no timestamp.txt at all (outside that layout too, as
in a class downloaded from an LMS) is what `missing_timestamp` decides, where its lab has a due
date: "file-time" (the default) counts the notebook file's modification time, as a copy kept it,
and the result says so; "on-time" counts it as handed in on time; "refuse" grades none of them,
each record getting a result that says why (status `no_timestamp`), the rest of the run going on.
`grade` says, before grading, how many submissions lack one and which setting applies, where
that is more than a few or all of a lab's (`untimed_notice`). The claim is then
weighed against what the grader's file system shows (`weighed`): a disagreement of more than
TOLERANCE is said for a person to check (`to_check` in the result, a line of the feedback, the
run's summary, the class report) and decides the time that counts. The penalty is a fraction of
the points the submission earned, required and bonus alike, worked out in decimals as the course
file writes them (0.1 a day for 3 days is 30%, never 30.000000000000004%); it is applied when
results are written, never by grading, so a changed due date, policy or extension takes effect on
the next run without grading anything again. The feedback's score line gives the points after the
penalty with its arithmetic ("12/12 + 4 bonus, \u221220% (handed in 26 h late: 2 started days at
10%): 12.8"), the same number as the result's `score`. Handed in after the due date but within
the grace period is on time, said so, and not late anywhere: `counts_as_late` is the one test.
"""
import math
import os
import tomllib
from dataclasses import dataclass, field, fields
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from autograder.grading.submission import SubmissionError, read_regular
from course.labs import ROOT

COURSE_FILE = ROOT / "course.toml"
TIMESTAMP = "timestamp.txt"
TIMESTAMP_BYTES = 200  # nbgrader writes one line of about 30 characters
UNITS = {"day": 86400, "hour": 3600}
SCORE = "Score: "  # the start of a scored result's first line of output, its points
HANDED_IN = "Handed in"  # the start of the line a result's output gives to lateness
TO_CHECK = "Hand-in time for a person to check"  # the start of its line on the evidence disagreeing
# How far the claimed hand-in time may be from what the grader sees before it is said: clocks
# differ, and nbgrader's submit copies the notebook a moment before it writes timestamp.txt.
TOLERANCE = timedelta(minutes=15)
MODIFIED = "the notebook file's modification time"
ARRIVED = "the time the notebook was put in its folder (its ctime)"
# What a submission without timestamp.txt counts as: its notebook's own times, on time, or no result.
MISSING_TIMESTAMP = ("file-time", "on-time", "refuse")
NO_TIMESTAMP = "no_timestamp"  # the status of a record refused for having none
MANY_UNTIMED = 3  # from this many submissions of a lab without timestamp.txt, `grade` says so before grading


class CourseFileError(ValueError):
    pass


@dataclass(frozen=True)
class Policy:
    per: str = "day"  # "day", "hour" or "none"
    penalty: float = 0.0
    max_penalty: float = 1.0
    zero_after_hours: float = None
    grace_minutes: float = 0.0
    missing_timestamp: str = "file-time"  # one of MISSING_TIMESTAMP


@dataclass(frozen=True)
class Course:
    due: dict = field(default_factory=dict)  # lab -> aware datetime
    released: dict = field(default_factory=dict)  # lab -> aware datetime: no hand-in is earlier
    policies: dict = field(default_factory=dict)  # lab -> Policy (absent: the default)
    default: Policy = Policy()
    extensions: dict = field(default_factory=dict)  # (student, lab) -> timedelta

    def policy(self, lab):
        return self.policies.get(lab, self.default)


def _policy(table, base, where):
    if not isinstance(table, dict):
        raise CourseFileError(f"{where} must be a table of the policy's settings")
    known = {f.name for f in fields(Policy)}
    unknown = sorted(set(table) - known)
    if unknown:
        raise CourseFileError(f"{where} has no setting {', '.join(unknown)} (the settings: {', '.join(sorted(known))})")
    values = {f.name: getattr(base, f.name) for f in fields(Policy)}
    values.update(table)
    if values["per"] not in (*UNITS, "none"):
        raise CourseFileError(f"{where}: per is {values['per']!r}; use \"day\", \"hour\" or \"none\"")
    if values["missing_timestamp"] not in MISSING_TIMESTAMP:
        raise CourseFileError(f"{where}: missing_timestamp is {values['missing_timestamp']!r}; use "
                              + ", ".join(f'"{choice}"' for choice in MISSING_TIMESTAMP))
    for name in ("penalty", "max_penalty"):
        if isinstance(values[name], bool) or not isinstance(values[name], (int, float)) or not 0 <= values[name] <= 1:
            raise CourseFileError(f"{where}: {name} is {values[name]!r}; use a fraction from 0 to 1 (0.1 is 10%)")
    for name in ("zero_after_hours", "grace_minutes"):
        value = values[name]
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            raise CourseFileError(f"{where}: {name} is {value!r}; use a number of at least 0")
    return Policy(**values)


def _moment(value, zone, where):
    """An aware datetime from a TOML date-time, date or string; a time without an offset is in `zone`."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            raise CourseFileError(f"{where} is {value!r}, which is not a date and time such as "
                                  "\"2026-12-01 23:59\"") from None
    if isinstance(value, date) and not isinstance(value, datetime):
        value = datetime.combine(value, time(23, 59, 59))  # a day alone: due at its end
    if not isinstance(value, datetime):
        raise CourseFileError(f"{where} is {value!r}, which is not a date and time")
    return value if value.tzinfo is not None else value.replace(tzinfo=zone)


def read_course(path=None, labs=()):
    """The Course of the course file at `path` (default: course.toml in the course root, where a
    missing file means no due dates). `labs` are the course's lab names, which the file may name."""
    given = path is not None
    path = Path(path) if given else COURSE_FILE
    if not given and not path.exists():
        return Course()
    try:
        with open(path, "rb") as handle:
            table = tomllib.load(handle)
    except OSError as error:
        raise SystemExit(f"autograder: cannot read the course file {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise SystemExit(f"autograder: the course file {path} is not valid TOML: {error}") from None
    try:
        return _course(table, set(labs))
    except CourseFileError as error:
        raise SystemExit(f"autograder: the course file {path}: {error}") from None


def _course(table, labs):
    unknown = sorted(set(table) - {"timezone", "late", "labs", "extensions"})
    if unknown:
        raise CourseFileError(f"no section or setting {', '.join(unknown)} (the file has timezone, [late], "
                              "[labs.<lab>] and [extensions.<student>])")
    try:
        zone = ZoneInfo(table.get("timezone", "UTC"))
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise CourseFileError(f"timezone {table.get('timezone')!r} is not a time zone such as \"Europe/London\" "
                              "or \"UTC\"") from None
    default = _policy(table.get("late", {}), Policy(), "[late]")
    due, released, policies = {}, {}, {}
    for lab, settings in table.get("labs", {}).items():
        where = f"[labs.{lab}]"
        if lab not in labs:
            raise CourseFileError(f"{where}: the course has no lab {lab} (its labs: {', '.join(sorted(labs))})")
        if not isinstance(settings, dict) or set(settings) - {"due", "released", "late"}:
            raise CourseFileError(f"{where} takes due, released and late only")
        if "due" in settings:
            due[lab] = _moment(settings["due"], zone, f"{where} due")
        if "released" in settings:
            released[lab] = _moment(settings["released"], zone, f"{where} released")
            if lab in due and released[lab] > due[lab]:
                raise CourseFileError(f"{where} released is after its due date; give the time students got the lab")
        if "late" in settings:
            policies[lab] = _policy(settings["late"], default, f"{where} late")
    extensions = {}
    for student, granted in table.get("extensions", {}).items():
        if not isinstance(granted, dict):
            raise CourseFileError(f"[extensions.{student}] must give hours per lab, such as pt03_autodiff = 48")
        for lab, hours in granted.items():
            where = f"[extensions.{student}] {lab}"
            if lab not in labs:
                raise CourseFileError(f"{where}: the course has no lab {lab}")
            if isinstance(hours, bool) or not isinstance(hours, (int, float)) or hours < 0:
                raise CourseFileError(f"{where} is {hours!r}; give the extension in hours, at least 0")
            extensions[(student, lab)] = timedelta(hours=hours)
    return Course(due, released, policies, default, extensions)


def parse_timestamp(text):
    """nbgrader's timestamp.txt ("2026-12-01 23:59:07.123456 UTC", or an ISO 8601 time) as an
    aware datetime in UTC; a time without a zone is UTC, as nbgrader reads it. ValueError, naming
    the problem, for anything else, a time that cannot be put in UTC included."""
    text = text.strip()
    # Python's ISO 8601 reading takes any one character between the date and the time, a NUL too.
    if not (text.isascii() and text.isprintable()):
        raise ValueError("it holds characters other than printable ASCII, and nbgrader writes one plain line")
    example = "such as 2026-12-01 23:59:07.123456 UTC"
    moment, _, zone_name = text.rpartition(" ")
    zone = None
    try:
        if moment and zone_name[:1] in ("+", "-"):  # a numeric offset, "+0100" or "-05:00"
            value = datetime.fromisoformat(f"{moment}{zone_name}")
        else:
            if moment and zone_name and not zone_name[0].isdigit():
                zone = timezone.utc if zone_name.upper() in ("UTC", "Z", "GMT") else ZoneInfo(zone_name)
                text = moment
            value = datetime.fromisoformat(text)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a zone name the system cannot look up
        raise ValueError(f"{text[:60]!r} is not a date and time {example}") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=zone or timezone.utc)
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:  # "9999-12-31 23:59:59 -23:59" is in year 10000 in UTC
        raise ValueError(f"{text[:60]!r} is outside the dates a calendar can hold once put in UTC") from None


def read_claim(folder):
    """(the moment `folder`'s timestamp.txt claims, or None; why it was refused, or None), and
    (None, None) where there is no such file. The file is the student's: it is read as a
    submission is (read_regular: never through a link, a pipe or a device) and never beyond
    TIMESTAMP_BYTES, and whatever its bytes are, they cost this record alone."""
    stamp = Path(folder) / TIMESTAMP
    if not os.path.lexists(stamp):
        return None, None
    try:
        data = read_regular(stamp, TIMESTAMP_BYTES, longer_than_nbgrader_writes)
        return parse_timestamp(data.decode("utf-8")), None
    except SubmissionError as error:
        if error.kind == "not_a_regular_file":
            return None, f"{TIMESTAMP} is not a regular file"
        return None, f"{TIMESTAMP} could not be read ({error})"
    except Exception as error:  # anything the student's bytes make the parser do ends here, for this record alone
        return None, f"{TIMESTAMP} could not be read ({error})"


def longer_than_nbgrader_writes(size):
    return ValueError(f"it is {size} bytes, longer than the {TIMESTAMP_BYTES} that nbgrader's one line takes")


def handed_in(path, nbgrader):
    """(the time the notebook at `path` states it was handed in, where that was read from, why a
    timestamp.txt that is there was not read or None). The time is timestamp.txt's claim where
    `path` is a record's notebook in nbgrader's layout (`nbgrader`), whose lab folder holds it,
    else the notebook file's modification time."""
    note, refused = "", None
    if nbgrader:
        claim, refused = read_claim(Path(path).parent)
        if claim is not None:
            return claim, TIMESTAMP, None
        note = f"; {refused or f'no {TIMESTAMP} beside it'}"
    try:
        moment = utc_time(os.lstat(path).st_mtime)
    except OSError:
        return None, "nowhere: the file is gone", None
    return moment, MODIFIED + note, refused


def utc_time(seconds):
    """The aware datetime of a file time; None for one no calendar holds (a time is the student's to set)."""
    try:
        return datetime.fromtimestamp(seconds, timezone.utc)
    except (OverflowError, ValueError, OSError):
        return None


@dataclass(frozen=True)
class Seen:
    """What the grader's own file system says of a notebook's times."""
    written: datetime  # its modification time: its last write, which copies that keep times keep, and
    # which the student can set (None: out of any calendar)
    arrived: datetime  # the earlier ctime of the notebook and its folder: the kernel set it when they
    # were put where the grader reads them, and no copy can make it earlier


def seen(path):
    """The Seen of the notebook at `path`, None when it is gone."""
    try:
        notebook, folder = os.lstat(path), os.lstat(Path(path).parent)
    except OSError:
        return None
    return Seen(utc_time(notebook.st_mtime), utc_time(min(notebook.st_ctime, folder.st_ctime)))


def weighed(claim, evidence, released, now):
    """(the time the submission counts as handed in, where that time is from, [what a person should
    check]) from the student's `claim` (None: none was read) and the grader's own evidence: the
    notebook's Seen times, the lab's `released` time (or None) and `now`, this run's time. A
    disagreement beyond TOLERANCE is said, and moves the time that counts: to the notebook's last
    write when that is later than the claim (a notebook is not handed in before it was written),
    and to its arrival when the claim is later than that (it was here by then, whatever anyone
    wrote). The notebook's modification time stands in for a claim there is none of. Times are
    compared by their differences, which no claim, however far out, makes overflow."""
    checks = []
    here_by = min(filter(None, (evidence.arrived, now)))
    written = evidence.written
    if written is None:
        checks.append("the notebook's modification time is outside any calendar, so it was set by hand and is not "
                      "used")
    elif written - here_by > TOLERANCE:
        checks.append(f"the notebook's modification time ({shown(written)}) is later than it was put in its folder "
                      f"({shown(here_by)}), so it was set by hand and is not used")
        written = None
    if claim is None:
        return (written, MODIFIED, checks) if written else (here_by, ARRIVED, checks)
    counted, source = claim, TIMESTAMP
    if written is not None and written - claim > TOLERANCE:
        checks.append(f"{TIMESTAMP} says {shown(claim)}, but the notebook was last written "
                      f"{duration((written - claim).total_seconds())} later ({shown(written)}), which counts")
        counted, source = written, f"{MODIFIED}, later than {TIMESTAMP}'s claim"
    if claim - here_by > TOLERANCE:
        future = " in the future of this grading run," if claim - now > TOLERANCE else ""
        checks.append(f"{TIMESTAMP} says {shown(claim)},{future} after the notebook was put in its folder "
                      f"({shown(here_by)}), which counts")
        counted, source = here_by, f"{ARRIVED}, earlier than {TIMESTAMP}'s claim"
    if released is not None and released - claim > TOLERANCE:
        checks.append(f"{TIMESTAMP} says {shown(claim)}, before the lab was released ({shown(released)})")
    return counted, source, checks


def shown(moment):
    """'2026-12-01 23:59 UTC'; a year before 1000 with its four digits, which strftime drops."""
    return moment.astimezone(timezone.utc).isoformat(" ", "minutes")[:16] + " UTC"


def duration(seconds):
    """'26 h 5 min', '3 min'."""
    minutes = math.ceil(seconds / 60)
    hours, minutes = divmod(minutes, 60)
    return " ".join(filter(None, [f"{hours} h" if hours else "", f"{minutes} min" if minutes or not hours else ""]))


def exact(number):
    """`number` as the decimal it is written as: a course file's 0.1 is one tenth, not the binary
    float nearest it, so 3 started days at 0.1 are 0.3, which a cap of 0.3 is then reached by."""
    return Decimal(str(number))


def percent(fraction):
    """'30%', '7.5%'."""
    return f"{(exact(fraction) * 100).normalize():f}%"


def after_grace(policy, seconds):
    """Whether a submission `seconds` after its due date counts as late: after the grace period,
    not at its end."""
    return exact(seconds) > exact(policy.grace_minutes) * 60


def penalty(policy, seconds):
    """(the fraction lost, a Decimal; why, in a few words, "" where it is on time) for a submission
    `seconds` after its due date. The cap is said exactly where it decides the fraction: reached or
    passed."""
    if not after_grace(policy, seconds):
        return Decimal(0), ""
    if policy.zero_after_hours is not None and exact(seconds) > exact(policy.zero_after_hours) * 3600:
        return Decimal(1), f"later than the cutoff of {policy.zero_after_hours:g} h after the due date"
    if policy.per == "none" or not policy.penalty:
        return Decimal(0), "the late policy costs nothing"
    rate, cap = exact(policy.penalty), exact(policy.max_penalty)
    started = math.ceil(exact(seconds) / UNITS[policy.per])
    counted = f"{started} started {policy.per}{'s' if started > 1 else ''} at {percent(rate)}"
    if rate * started < cap:
        return rate * started, counted
    if rate * started == cap:
        return cap, f"{counted}, the most it can cost"
    return cap, f"{counted} would be {percent(rate * started)}, and {percent(cap)} is the most it can cost"


def lacks_timestamp(submission):
    """Whether the roster's `submission` has no timestamp.txt at all: outside nbgrader's layout,
    or none beside its notebook. One that is there but cannot be read is a claim refused, which
    the notebook's own times replace and a person is asked to check, whatever `missing_timestamp`."""
    return not submission.nbgrader or not os.path.lexists(Path(submission.path).parent / TIMESTAMP)


def untimed(course, submissions, setting=None):
    """The `submissions` whose lab has a due date and that lack timestamp.txt, those whose lab's
    `missing_timestamp` is `setting` only where it is given."""
    return [s for s in submissions if s.lab in course.due and lacks_timestamp(s)
            and setting in (None, course.policy(s.lab).missing_timestamp)]


UNTIMED_MEANS = {
    "file-time": "each counts as handed in when its notebook file was last written, a time a copy or a download "
                 "may have changed",
    "on-time": "each counts as handed in on time",
    "refuse": "none of them is graded: each gets a result that says why",
}


def untimed_notice(course, submissions):
    """What `grade` says before grading: per lab with a due date, how many of `submissions` lack
    timestamp.txt and what its `missing_timestamp` does with them, where they are MANY_UNTIMED or
    more, or every submission of the lab."""
    lines = []
    for lab in sorted(course.due):
        of_lab = [s for s in submissions if s.lab == lab]
        lacking = untimed(course, of_lab)
        if lacking and (len(lacking) >= MANY_UNTIMED or len(lacking) == len(of_lab)):
            setting = course.policy(lab).missing_timestamp
            choices = ", ".join(f'"{choice}"' for choice in MISSING_TIMESTAMP)
            lines.append(f"{lab}: {len(lacking)} of {len(of_lab)} submissions have no {TIMESTAMP} (nbgrader's "
                         f"record of when each was handed in; a download from an LMS has none), and missing_timestamp "
                         f"is \"{setting}\": {UNTIMED_MEANS[setting]}; set missing_timestamp in the course file's "
                         f"[late], or the lab's late = {{ ... }}, to {choices} to decide otherwise")
    return lines


def refusal(submission):
    """What the record of a `submission` refused for lacking timestamp.txt says, to its student
    and to the course staff."""
    where = "" if submission.nbgrader else " (it was not handed in through nbgrader, which writes one)"
    return (f"Not graded: there is no {TIMESTAMP} beside this notebook{where}, so when it was handed in is not "
            "known, and this course grades no submission of this lab without one (the course file's "
            "missing_timestamp is \"refuse\"). Hand it in again with nbgrader's Submit, or ask the course staff, "
            "who can grade it by setting missing_timestamp to \"file-time\" or \"on-time\".")


def lateness(course, submission, now=None):
    """What the result of the roster's `submission` records of its time: when it counts as handed
    in (see `weighed`) and from where that was read, what a person should check of it
    (`to_check`), and where the lab has a due date, how late it was, whether that `counts_as_late`
    (after the grace period), the fraction of its points that costs (`penalty`) and why
    (`reason`), with a sentence for people (`said`). Without timestamp.txt, the lab's
    `missing_timestamp` decides. `now` is the run's time."""
    student, lab = submission.key
    path = submission.path
    due, policy = course.due.get(lab), course.policy(lab)
    missing = due is not None and lacks_timestamp(submission)
    if missing and policy.missing_timestamp == "refuse":  # the record is refused, not graded: no time counts
        return {"submitted": None, "source": f"nowhere: no {TIMESTAMP}, and the course file refuses a submission "
                                             "without one"}
    moment, source, refused = handed_in(path, submission.nbgrader)
    late = {"submitted": moment.isoformat() if moment else None, "source": source}
    evidence = seen(path)
    if evidence is None:  # the file is gone: nothing to weigh, nothing to say
        return late
    claim = moment if source == TIMESTAMP else None
    counted, counted_from, checks = weighed(claim, evidence, course.released.get(lab),
                                            now or datetime.now(timezone.utc))
    if refused:
        checks.insert(0, f"{refused}, so the notebook's own times count")
    if claim is not None:
        late["claimed"] = claim.isoformat()
    extension = course.extensions.get((student, lab), timedelta(0))
    if missing and policy.missing_timestamp == "on-time" and counted > due + extension:
        counted, counted_from = due + extension, (f"the due date: there is no {TIMESTAMP}, and the course file "
                                                  "counts a submission without one as on time")
    if counted != moment:
        late.update(submitted=counted.isoformat(), source=counted_from)
    if checks:
        late["to_check"] = checks
    if due is None:  # nothing to say of lateness
        return late
    seconds = (counted - (due + extension)).total_seconds()
    fraction, why = penalty(policy, seconds)
    granted = f" with an extension of {extension.total_seconds() / 3600:g} h" if extension else ""
    read_from = late["source"].split(";")[0] if refused else late["source"]  # why it was refused is the check's to say
    details = f"({shown(counted)}, from {read_from}; due {shown(due)}{granted})"
    is_late = after_grace(policy, seconds)
    if is_late:
        said = f"{HANDED_IN} {duration(seconds)} late {details}: " + (f"\u2212{percent(fraction)}: {why}" if fraction
                                                                       else why)
    elif seconds > 0:
        said = (f"{HANDED_IN} {duration(seconds)} after the due date {details}, within the "
                f"{policy.grace_minutes:g}-minute grace period: on time")
    else:
        said = f"{HANDED_IN} on time {details}"
    late.update(due=due.isoformat(), extension_hours=extension.total_seconds() / 3600,
                seconds_late=max(0.0, seconds), counts_as_late=is_late, penalty=float(fraction),
                said=said)
    if fraction:
        late["reason"] = f"handed in {duration(seconds)} late: {why}"
    return late


def counts_as_late(result):
    """Whether `result` was handed in late: after its due date and grace period. A record that
    does not say (one the gradebook alone holds) is late when it was after its due date at all."""
    late = result["extra_data"].get("late", {})
    return late.get("counts_as_late", late.get("seconds_late", 0) > 0)


def tidy(number):
    """A score as JSON shows it best: 12 rather than 12.0, else two decimals."""
    number = round(exact(number), 2)
    return int(number) if number == int(number) else float(number)


def score_said(result):
    """The points of a scored `result` as its feedback gives them: '12/12 + 4 bonus', and after a
    late penalty its arithmetic and what is left, the result's `score`: '12/12 + 4 bonus, −20%
    (handed in 26 h late: 2 started days at 10%): 12.8'."""
    extra = result["extra_data"]
    late = extra.get("late", {})
    if not late.get("penalty"):
        return extra["summary"]
    return f"{extra['summary']}, \u2212{percent(late['penalty'])} ({late['reason']}): {tidy(result['score'])}"


def apply_late(result, late):
    """`result` with its lateness `late` applied: `score` is what the points earned are worth
    after the penalty, `extra_data` keeps the points earned (required and bonus) and the penalty
    in points apart, and the output's score line gives the points after the penalty, the line after it
    the time handed in. Applying again replaces them."""
    extra = result["extra_data"]
    earned = exact(extra.get("required", 0) + extra.get("bonus", 0))
    lost = round(earned * exact(late.get("penalty", 0)), 2)
    extra["late"], extra["penalty_points"] = late, tidy(lost)
    result["score"] = tidy(earned - lost)
    lines = [line for line in result["output"].splitlines() if not line.startswith((HANDED_IN, TO_CHECK))]
    if "summary" in extra:
        lines[:1] = [f"{SCORE}{score_said(result)}."]
    checks = [f"{TO_CHECK}: " + "; ".join(late["to_check"]) + "."] if late.get("to_check") else []
    result["output"] = "\n".join(lines[:1] + ([late["said"]] if "said" in late else []) + checks + lines[1:])
    return result
