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
    grace_minutes = 10                # this late still counts as on time

    [labs.pt03_autodiff]
    due = 2026-12-01T23:59:00         # a TOML date-time, or a string such as "2026-12-01 23:59"
    late = { per = "hour", penalty = 0.01 }    # this lab's own policy, over [late]

    [extensions.s03]                  # per student: hours added to a lab's due date
    pt03_autodiff = 48

The time a submission was handed in is nbgrader's `timestamp.txt` beside the notebook in its
`submitted/<student>/<lab>/` folder; without one (or outside that layout) it is the notebook
file's modification time, and the result says so. The penalty is a fraction of the points the
submission earned, required and bonus alike; it is applied when results are written, never by
grading, so a changed due date, policy or extension takes effect on the next run without grading
anything again.
"""
import math
import os
import stat
import tomllib
from dataclasses import dataclass, field, fields
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from course.labs import ROOT

COURSE_FILE = ROOT / "course.toml"
TIMESTAMP = "timestamp.txt"
TIMESTAMP_BYTES = 200  # nbgrader writes one line of about 30 characters
UNITS = {"day": 86400, "hour": 3600}
HANDED_IN = "Handed in"  # the start of the line a result's output gives to lateness


class CourseFileError(ValueError):
    pass


@dataclass(frozen=True)
class Policy:
    per: str = "day"  # "day", "hour" or "none"
    penalty: float = 0.0
    max_penalty: float = 1.0
    zero_after_hours: float = None
    grace_minutes: float = 0.0


@dataclass(frozen=True)
class Course:
    due: dict = field(default_factory=dict)  # lab -> aware datetime
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
    due, policies = {}, {}
    for lab, settings in table.get("labs", {}).items():
        where = f"[labs.{lab}]"
        if lab not in labs:
            raise CourseFileError(f"{where}: the course has no lab {lab} (its labs: {', '.join(sorted(labs))})")
        if not isinstance(settings, dict) or set(settings) - {"due", "late"}:
            raise CourseFileError(f"{where} takes due and late only")
        if "due" in settings:
            due[lab] = _moment(settings["due"], zone, f"{where} due")
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
    return Course(due, policies, default, extensions)


def parse_timestamp(text):
    """nbgrader's timestamp.txt ("2026-12-01 23:59:07.123456 UTC", or an ISO 8601 time) as an
    aware datetime; a time without a zone is UTC, as nbgrader reads it."""
    text = text.strip()
    moment, _, zone_name = text.rpartition(" ")
    zone = None
    if moment and zone_name[:1] in ("+", "-"):  # a numeric offset, "+0100" or "-05:00"
        return datetime.fromisoformat(f"{moment}{zone_name}")
    if moment and zone_name and not zone_name[0].isdigit():
        try:
            zone = timezone.utc if zone_name.upper() in ("UTC", "Z", "GMT") else ZoneInfo(zone_name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {zone_name!r}") from None
        text = moment
    value = datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=zone or timezone.utc)
    return value


def handed_in(path, nbgrader):
    """(aware datetime, where it was read from) for the notebook at `path`; `nbgrader` where it is
    a record's notebook in nbgrader's layout, whose lab folder holds the time it was handed in."""
    note = ""
    if nbgrader:
        stamp = Path(path).parent / TIMESTAMP
        try:
            if stat.S_ISREG(os.lstat(stamp).st_mode):  # never a link, a pipe or a device
                with open(stamp, "rb") as handle:
                    return parse_timestamp(handle.read(TIMESTAMP_BYTES).decode("utf-8")), TIMESTAMP
            note = f"; {TIMESTAMP} is not a regular file"
        except FileNotFoundError:
            note = f"; no {TIMESTAMP} beside it"
        except (OSError, ValueError) as error:
            note = f"; {TIMESTAMP} could not be read ({error})"
    try:
        moment = datetime.fromtimestamp(os.lstat(path).st_mtime, timezone.utc)
    except OSError:
        return None, "nowhere: the file is gone"
    return moment, "the notebook file's modification time" + note


def shown(moment):
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def duration(seconds):
    """'26 h 5 min', '3 min'."""
    minutes = math.ceil(seconds / 60)
    hours, minutes = divmod(minutes, 60)
    return " ".join(filter(None, [f"{hours} h" if hours else "", f"{minutes} min" if minutes or not hours else ""]))


def penalty(policy, seconds):
    """(fraction lost, why) for a submission `seconds` after its due date."""
    if seconds <= policy.grace_minutes * 60:
        return 0.0, ""
    if policy.zero_after_hours is not None and seconds > policy.zero_after_hours * 3600:
        return 1.0, f"\u2212100%: later than the cutoff of {policy.zero_after_hours:g} h after the due date"
    if policy.per == "none" or not policy.penalty:
        return 0.0, "the late policy costs nothing"
    started = math.ceil(seconds / UNITS[policy.per])
    fraction = round(min(policy.penalty * started, policy.max_penalty), 6)  # 3 x 0.05 is 0.15, not 0.150...02
    capped = " (the most it can cost)" if fraction < policy.penalty * started else ""
    return fraction, (f"\u2212{fraction:.0%}{capped}: {started} started {policy.per}{'s' if started > 1 else ''} at "
                      f"{policy.penalty:.0%}")


def lateness(course, submission):
    """What the result of the roster's `submission` records of its time: when it was handed in
    and from where that was read, and where the lab has a due date, how late it was and the
    fraction of its points that costs (`penalty`), with a sentence for people."""
    student, lab = submission.key
    moment, source = handed_in(submission.path, submission.nbgrader)
    late = {"submitted": moment.isoformat() if moment else None, "source": source}
    due = course.due.get(lab)
    if due is None or moment is None:  # nothing to say in the feedback
        return late
    extension = course.extensions.get((student, lab), timedelta(0))
    seconds = (moment - (due + extension)).total_seconds()
    fraction, why = penalty(course.policy(lab), seconds)
    granted = f" with an extension of {extension.total_seconds() / 3600:g} h" if extension else ""
    when = (f"{duration(seconds)} late" if seconds > 0 else "on time") + f" ({shown(moment)}, from {source}; " \
           f"due {shown(due)}{granted})"
    late.update(due=due.isoformat(), extension_hours=extension.total_seconds() / 3600,
                seconds_late=max(0.0, seconds), penalty=fraction,
                said=f"{HANDED_IN} {when}" + (f": {why}" if why else ""))
    return late


def tidy(number):
    """A score as JSON shows it best: 12 rather than 12.0, else two decimals."""
    number = round(number, 2)
    return int(number) if number == int(number) else number


def apply_late(result, late):
    """`result` with its lateness `late` applied: `score` is what the points earned are worth
    after the penalty, `extra_data` keeps the points earned (required and bonus) and the penalty
    in points apart, and the output's line on lateness says it. Applying again replaces it."""
    extra = result["extra_data"]
    earned = extra.get("required", 0) + extra.get("bonus", 0)
    fraction = late.get("penalty", 0.0)
    extra["late"], extra["penalty_points"] = late, tidy(earned * fraction)
    result["score"] = tidy(earned - earned * fraction)
    lines = [line for line in result["output"].splitlines() if not line.startswith(HANDED_IN)]
    result["output"] = "\n".join(lines[:1] + ([late["said"]] if "said" in late else []) + lines[1:])
    return result
