"""Write what grading found: one JSON and one HTML page per submission (named by `file_stem`),
and grades.csv, each file whole or not at all."""
import csv
import html
import io
import json
from pathlib import Path

from autograder.results_store import atomic_write, file_stem

# What a spreadsheet reads as the start of a formula (or, for tab and carriage return, of one
# hidden behind blank space) in a cell of text.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value):
    """`value` for a CSV cell: text that a spreadsheet would run as a formula gets a leading
    quote, which shows it as text; numbers stay numbers."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def write_json(out, name, result):
    return atomic_write(Path(out) / f"{file_stem(name)}.json", json.dumps(result, indent=2, sort_keys=True) + "\n")


def write_csv(out, named_results):
    activities = []
    for _, result in named_results:
        for test in result["tests"]:
            if test["name"] not in activities:
                activities.append(test["name"])
    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    # score is the required points only; bonus points have their own column.
    writer.writerow(["submission", "lab", "status", "score", "max_score", "bonus", *activities])
    for name, result in sorted(named_results):
        scores = {test["name"]: test["score"] for test in result["tests"]}
        extra = result["extra_data"]
        writer.writerow(map(spreadsheet_safe, [name, extra["lab"] or "", result["status"], extra.get("required", 0),
                                               result["max_score"], extra.get("bonus", 0),
                                               *(scores.get(a, "") for a in activities)]))
    return atomic_write(Path(out) / "grades.csv", handle.getvalue())


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Feedback: {title}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 56rem; margin: 2rem auto; padding: 0 1rem; color: #1d2733; }}
table {{ border-collapse: collapse; width: 100%; }}
th, td {{ text-align: left; padding: .5rem; border-bottom: 1px solid #d5dde6; vertical-align: top; }}
td.points {{ white-space: nowrap; }}
tr.passed td.points {{ color: #1d6b35; }}
tr.failed td.points {{ color: #a12a1c; font-weight: bold; }}
pre {{ white-space: pre-wrap; margin: 0; font-size: .9rem; }}
</style></head><body>
<h1>{title}</h1>
<p>Submission <strong>{name}</strong>: {summary_line}. Status: {status}.</p>
{summary}
<table><thead><tr><th>Activity</th><th>Points</th><th>What the grader found</th></tr></thead><tbody>
{rows}
</tbody></table>
</body></html>
"""


def write_html(out, name, result, title):
    rows = []
    for test in result["tests"]:
        optional = " (optional)" if "optional" in test.get("tags", []) else ""
        rows.append(f'<tr class="{test["status"]}"><td>{html.escape(test["name"])}{optional}</td>'
                    f'<td class="points">{test["score"]} / {test["max_score"]}</td>'
                    f'<td><pre>{html.escape(test["output"])}</pre></td></tr>')
    line = result["extra_data"].get("summary")
    page = PAGE.format(title=html.escape(title), name=html.escape(name),
                       summary_line=f"{html.escape(line)} points" if line else "not graded",
                       status=html.escape(result["status"]),
                       summary=f"<pre>{html.escape(result['output'])}</pre>" if result["output"] else "",
                       rows="\n".join(rows))
    return atomic_write(Path(out) / f"{file_stem(name)}.html", page)
