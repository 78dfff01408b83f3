"""Write what grading found for one record (student, lab): its JSON and its HTML feedback page,
at the record's place (`results_store.record_path`), each file whole or not at all. The class's
tables are autograder/records/tables.py's."""
import html
import json
import re

from autograder.labs import course_labs
from autograder.records.lateness import NO_TIMESTAMP, SCORE, score_said
from autograder.records.results_store import atomic_write, record_key, record_path

INLINE_CODE = re.compile(r"`([^`]+)`")  # Markdown's inline code, as activity headings write function names


def write_json(out, result):
    return atomic_write(record_path(out, *record_key(result), ".json"),
                        json.dumps(result, indent=2, sort_keys=True) + "\n")


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Feedback: {plain_title}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 56rem; margin: 2rem auto; padding: 0 1rem; color: #1d2733; }}
table {{ border-collapse: collapse; width: 100%; }}
th, td {{ text-align: left; padding: .5rem; border-bottom: 1px solid #d5dde6; vertical-align: top; }}
td.points {{ white-space: nowrap; }}
td.state {{ white-space: nowrap; font-weight: bold; }}
code {{ font-size: .95em; }}
tr.passed td.state, tr.passed td.points {{ color: #1d6b35; }}
tr.failed td.state, tr.failed td.points {{ color: #a12a1c; }}
tr.not-attempted td.state, tr.not-attempted td.points {{ color: #5b6878; font-weight: normal; }}
pre {{ white-space: pre-wrap; margin: 0; font-size: .9rem; }}
</style></head><body>
<h1>{title}</h1>
<p><strong>{name}</strong>, {lab}: {summary_line}.</p>
{summary}
{table}
</body></html>
"""
TABLE = """<table><thead><tr><th>Activity</th><th>State</th><th>Points</th><th>What the grader found</th></tr></thead><tbody>
{rows}
</tbody></table>"""
# What the student can do about a notebook that was not graded, by its status.
NOT_GRADED = ("Nothing in this file was graded. Hand in the lab's notebook as Jupyter saved it: the .ipynb file "
              "you worked in, under its own name{names}.")
STATES = {"passed": "passed", "failed": "failed", "not-attempted": "not attempted"}


def title_html(text):
    """A title written in Markdown as HTML: its inline code in <code>, the rest escaped."""
    return INLINE_CODE.sub(r"<code>\1</code>", html.escape(text))


def title_text(text):
    """A title written in Markdown as plain text: its inline code without the backticks."""
    return INLINE_CODE.sub(r"\1", text)


def state(test, result):
    if test["status"] == "passed":
        return "passed"
    return "not-attempted" if test["name"] in result["extra_data"].get("not_attempted", ()) else "failed"


def write_html(out, result):
    student, lab = record_key(result)
    labs = course_labs()
    known = labs.get(lab)
    graded = result["status"] == "graded" or result["tests"]
    title = known.title if known is not None else "Your submission could not be graded"
    rows = []
    for test in result["tests"]:
        activity = known.activities.get(test["name"]) if known is not None else None
        optional = " (optional)" if "optional" in test.get("tags", []) else ""
        kind = state(test, result)
        rows.append(f'<tr class="{kind}"><td>{title_html(activity.name if activity else test["name"])}{optional}</td>'
                    f'<td class="state">{STATES[kind]}</td><td class="points">{test["score"]} / {test["max_score"]}</td>'
                    f'<td><pre>{html.escape(test["output"])}</pre></td></tr>')
    line = score_said(result) if "summary" in result["extra_data"] else None
    # The score leads the page; the rest of the output (lateness, notes on the student's cells) follows it.
    rest = "\n".join(part for part in result["output"].splitlines() if not part.startswith(SCORE))
    if not graded and result["status"] != NO_TIMESTAMP:  # a refusal for want of timestamp.txt says its own remedy
        names = f" ({', '.join(f'{name}.ipynb' for name in sorted(labs))})" if labs else ""
        rest = f"{rest}\n\n{NOT_GRADED.format(names=names)}".strip()
    page = PAGE.format(title=title_html(title), plain_title=html.escape(title_text(title)), name=html.escape(student),
                       lab=html.escape(lab or "no lab"),
                       summary_line=(f"{html.escape(line)} points" if line else "not graded") +
                       (f" (status: {html.escape(result['status'])})" if result["status"] != "graded" else ""),
                       summary=f"<pre>{html.escape(rest)}</pre>" if rest else "",
                       table=TABLE.format(rows="\n".join(rows)) if rows else "")
    return atomic_write(record_path(out, student, lab, ".html"), page)
