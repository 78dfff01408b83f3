"""The class report as one self-contained HTML page (`python -m autograder report`, and every
`grade` run writes `report.html` into its results folder): a course summary that links each lab's
section, and per lab the figures of autograder/class_report.py. Plots are matplotlib's SVG,
inline, and every plot has its numbers beside it in a table (what a screen reader or a printout
keeps); nothing is fetched when the page is opened."""
import io
from datetime import datetime, timezone
from pathlib import Path

import jinja2

from autograder.class_report import class_report, course_rows, histogram

TEMPLATES = Path(__file__).parent / "templates"


def shown(value, digits=2):
    """A figure as the page prints it: None as a dash, whole numbers without decimals."""
    if value is None:
        return "—"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.{digits}f}"


def percent(value):
    return "—" if value is None else f"{100 * value:.1f}%"


def svg(figure):
    """The figure as inline SVG: text kept as text, no date, ids the same on every run."""
    handle = io.StringIO()
    figure.savefig(handle, format="svg", metadata={"Date": None}, bbox_inches="tight")
    text = handle.getvalue()
    return text[text.index("<svg"):]


def new_figure(width=6.0, height=2.6):
    from matplotlib import rcParams
    from matplotlib.figure import Figure  # no pyplot: no global state, no display

    rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "class-report", "font.size": 9})
    return Figure(figsize=(width, height))


def bars(axes, bins, colour, label):
    axes.bar([low for low, _, _ in bins], [count for _, _, count in bins],
             width=[high - low for low, high, _ in bins], align="edge", color=colour, edgecolor="white")
    axes.set_xlabel(label)
    axes.set_ylabel("students")
    axes.spines[["top", "right"]].set_visible(False)


def score_plot(report, required_bins, bonus_bins):
    figure = new_figure()
    left, right = figure.subplots(1, 2, width_ratios=[3, 1] if report.max_bonus else [1, 0.0001])
    bars(left, required_bins, "#3a6ea5", f"required points (of {shown(report.max_required)})")
    if report.max_bonus:
        bars(right, bonus_bins, "#c07a20", f"bonus points (of {shown(report.max_bonus)})")
    else:
        right.set_visible(False)
    return svg(figure)


def activity_plot(report):
    figure = new_figure(height=0.4 + 0.32 * max(1, len(report.activities)))
    axes = figure.subplots()
    names = [f"{a.id}{' (optional)' if a.optional else ''}" for a in report.activities][::-1]
    rates = [100 * (a.pass_rate or 0) for a in report.activities][::-1]
    axes.barh(names, rates, color="#3a6ea5")
    axes.set_xlim(0, 100)
    axes.set_xlabel("students who passed (%)")
    axes.spines[["top", "right"]].set_visible(False)
    return svg(figure)


def time_plot(bins):
    figure = new_figure(height=2.2)
    bars(figure.subplots(), bins, "#6b7785", "grading time (seconds)")
    return svg(figure)


def lab_view(report):
    """What the template needs of one lab, plots drawn."""
    required_bins = histogram(report.required, report.max_required)
    bonus_bins = histogram(report.bonus, report.max_bonus)
    time_bins = histogram(report.seconds, max(report.seconds, default=0.0))
    return {"report": report, "required_bins": required_bins, "bonus_bins": bonus_bins, "time_bins": time_bins,
            "score_svg": score_plot(report, required_bins, bonus_bins) if report.scored else "",
            "activity_svg": activity_plot(report) if report.scored else "",
            "time_svg": time_plot(time_bins) if report.seconds else ""}


def render(records, out=None, source="", page_folder=None):
    """The page's HTML for the class's records (see class_report), its links to feedback pages
    relative to `page_folder` (default: the results folder `out`)."""
    reports = class_report(records, out, page_folder)
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                                     undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    environment.filters.update(shown=shown, percent=percent)
    return environment.get_template("class_report.html").render(
        labs=[lab_view(report) for report in reports.values()], course=course_rows(reports),
        records=len(records), source=source,
        made=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
