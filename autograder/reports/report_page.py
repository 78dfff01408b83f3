"""The class report as one self-contained HTML page (`python -m autograder report`, and every
`grade` run writes `report.html` into its results folder): a course summary that links each lab's
section, and per lab the figures of autograder/reports/class_report.py. Plots are inline SVG drawn here by
hand, text kept as text, the same bytes for the same records; every plot has its numbers beside it
in a table (what a screen reader or a printout keeps); nothing is fetched when the page is opened.
Not matplotlib: importing and drawing with it cost 1.2-1.5 s of CPU on every grade run, most of the
fixed cost of grading one submission, for a few bar charts."""
import html
import math
import os
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from autograder.records.lateness import duration
from autograder.reports.class_report import class_report, course_rows, histogram, late_work, student_rows
from autograder.reports.similarity.classwide import CSV, CSV_FLOOR, class_similarity, marked_code
from autograder.reports.similarity.engine import THRESHOLD

TEMPLATES = Path(__file__).parent / "templates"
CHAR = 6.5  # px a character of the charts' 11 px text takes, near enough to make room for labels
WIDTH = 560  # px: near the 36rem the page gives a figure, so the text is drawn near its own size


def shown(value, digits=2):
    """A figure as the page prints it: None as a dash, whole numbers without decimals."""
    if value is None:
        return "—"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.{digits}f}"


def percent(value):
    return "—" if value is None else f"{100 * value:.1f}%"


def cost(standing):
    """What lateness took of a record's points: "−20% (3.20 points)"."""
    return f"−{shown(round(100 * standing.penalty, 2))}% ({shown(standing.penalty_points)} points)"


def step_for(top, most):
    """The least of 1, 2, 5, 10, 20, 50, ... that cuts 0..top into at most `most` steps."""
    step = 1
    while top / step > most:
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2
    return step


def text(x, y, words, anchor="middle", turn=False):
    rotate = f' transform="rotate(-90 {x:.1f} {y:.1f})"' if turn else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" dy=".35em"{rotate}>{html.escape(words)}</text>'


def bar_chart(bins, colour, label, width, height, names=(), counted="students"):
    """One chart's SVG elements in a width x height box. Without `names`, a histogram: a bar per bin
    (low, high, count), x labelled `label`, y `counted`. With them, one horizontal bar per name, the
    first at the top, its bin's count a percentage on a 0-100 axis labelled `label`."""
    across = 100 if names else max(count for _, _, count in bins)
    step = step_for(max(1, across), 5)
    top = max(1, math.ceil(across / step)) * step
    left = CHAR * max(map(len, names)) + 10 if names else 22 + CHAR * len(str(top))
    x0, x1, y0, y1 = left, width - 12, height - 36, 8  # the plot's area; y0 its bottom
    first, last = bins[0][0], bins[-1][1]

    def at(position, value):
        """(x, y) of a point `position` along the bins' axis and `value` along the counts'."""
        along, up = (position - first) / (last - first), value / top
        if names:
            return x0 + up * (x1 - x0), y1 + along * (y0 - y1)
        return x0 + along * (x1 - x0), y0 - up * (y0 - y1)

    parts = []
    for low, high, count in bins:
        if not count:
            continue
        if names:  # the activities are separate things, not bins of one scale: room between bars
            low, high = low + 0.15, high - 0.15
        (xa, ya), (xb, yb) = at(low, 0), at(high, count)
        parts.append(f'<rect x="{min(xa, xb):.1f}" y="{min(ya, yb):.1f}" width="{abs(xb - xa):.1f}" '
                     f'height="{abs(yb - ya):.1f}" fill="{colour}" stroke="#fff" stroke-width=".5"/>')
    # The axes over the bars, which a white edge keeps apart.
    parts.append(f'<path d="M{x0:.1f},{y1:.1f}V{y0:.1f}H{x1:.1f}" fill="none" stroke="currentColor"/>')
    for value in range(0, top + 1, step):
        x, y = at(last if names else first, value)
        parts.append(text(x, y + 12, str(value)) if names else text(x - 4, y, str(value), "end"))
    parts.append(text((x0 + x1) / 2, height - 10, label))
    if names:
        return parts + [text(x0 - 5, at(place + 0.5, 0)[1], name, "end") for place, name in enumerate(names)]
    edges = [low for low, _, _ in bins] + [last]
    # Every edge labelled would overlap on a narrow chart: every 1st, 2nd, 5th, ... that has room.
    every = step_for(len(edges) - 1, (x1 - x0) / (CHAR * len(str(last)) + 8))
    parts += [text(at(edge, 0)[0], y0 + 12, str(edge)) for edge in edges[::every]]
    return parts + [text(10, (y0 + y1) / 2, counted, turn=True)]


def svg(title, width, height, *charts):
    """The `charts` ([(x offset, elements)]) side by side as one inline SVG named by `title`."""
    groups = "".join(f'<g transform="translate({x:.1f},0)">{"".join(parts)}</g>' for x, parts in charts)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-size="11"><title>{html.escape(title)}</title>{groups}</svg>')


def score_plot(report, required_bins, bonus_bins):
    required = f"required points (of {shown(report.max_required)})"
    if not report.max_bonus:
        return svg(f"Histogram of {required}; the table beside gives the counts", WIDTH, 200,
                   (0, bar_chart(required_bins, "#3a6ea5", required, WIDTH, 200)))
    bonus = f"bonus points (of {shown(report.max_bonus)})"
    split = WIDTH * 3 // 4
    return svg(f"Histograms of {required} and of {bonus}; the tables beside give the counts", WIDTH, 200,
               (0, bar_chart(required_bins, "#3a6ea5", required, split, 200)),
               (split, bar_chart(bonus_bins, "#c07a20", bonus, WIDTH - split, 200)))


def activity_plot(report):
    names = [f"{a.id}{' (optional)' if a.optional else ''}" for a in report.activities]
    height = 48 + 22 * len(names)
    bins = [(place, place + 1, 100 * (a.pass_rate or 0)) for place, a in enumerate(report.activities)]
    return svg("Bars of each activity's pass rate, the hardest first; the table beside gives every figure",
               WIDTH, height, (0, bar_chart(bins, "#3a6ea5", "students who passed (%)", WIDTH, height, names)))


def time_plot(bins):
    return svg("Histogram of grading time per submission; the tables beside give the counts", WIDTH, 180,
               (0, bar_chart(bins, "#6b7785", "grading time (seconds)", WIDTH, 180)))


def similarity_view(similarity, csv_link):
    """What the template's similar work needs of one lab (a classwide.LabSimilarity), its histogram
    drawn; `csv_link` reaches the class's similarity.csv from the page ("" when it is not written)."""
    bins = similarity.histogram()
    plot = svg("Histogram of pairs of students by their best similarity score; the table beside gives the counts",
               WIDTH, 180, (0, bar_chart(bins, "#8a5a9e", "best score over the activities (%)", WIDTH, 180,
                                         counted="pairs")))
    return {"similarity": similarity, "bins": bins, "svg": plot if similarity.pairs else "", "csv": CSV,
            "csv_link": csv_link, "floor": CSV_FLOOR}


def lab_view(report):
    """What the template needs of one lab, plots drawn."""
    required_bins = histogram(report.required, report.max_required)
    bonus_bins = histogram(report.bonus, report.max_bonus)
    time_bins = histogram(report.seconds, max(report.seconds, default=0.0))
    return {"report": report, "required_bins": required_bins, "bonus_bins": bonus_bins, "time_bins": time_bins,
            "score_svg": score_plot(report, required_bins, bonus_bins) if report.scored else "",
            "activity_svg": activity_plot(report) if report.scored else "",
            "time_svg": time_plot(time_bins) if report.seconds else ""}


def render(records, out=None, source="", page_folder=None, similar=None):
    """The page's HTML for the class's records (see class_report), its links to feedback pages
    and to similarity.csv relative to `page_folder` (default: the results folder `out`). `similar`
    is the class's similar work when it was already found ({lab: classwide.LabSimilarity})."""
    reports = class_report(records, out, page_folder)
    similar = class_similarity(records) if similar is None else similar
    sheet = "" if out is None or not (Path(out) / CSV).is_file() else \
        quote(Path(os.path.relpath(Path(out) / CSV, page_folder or out)).as_posix())
    return environment().get_template("class_report.html").render(
        labs=[{**lab_view(report), "similar": similarity_view(similar[name], sheet)}
              for name, report in reports.items()],
        course=course_rows(reports),
        students=student_rows(reports), late_work=late_work(reports),
        records=len(records), source=source,
        made=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))


def environment():
    """The templates' environment: text escaped, a name the template lacks an error."""
    found = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                               undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    found.filters.update(shown=shown, percent=percent, cost=cost, duration=duration,
                         marked=lambda lines: Markup(marked_code(lines)))
    found.globals.update(threshold=THRESHOLD)
    return found


def render_similarity(found, source=""):
    """The page of `autograder similarity`: {lab: classwide.LabSimilarity}, each lab's similar work."""
    return environment().get_template("similarity.html").render(
        labs=[(name, similarity_view(similarity, CSV)) for name, similarity in sorted(found.items())],
        source=source, made=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
