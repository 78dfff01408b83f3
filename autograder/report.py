"""Write what grading found for one record (student, lab): its JSON and its HTML feedback page,
at the record's place (`results_store.record_path`), each file whole or not at all. The class's
tables are autograder/tables.py's."""
import html
import json

from autograder.labs import course_labs
from autograder.results_store import atomic_write, record_key, record_path


def write_json(out, result):
    return atomic_write(record_path(out, *record_key(result), ".json"),
                        json.dumps(result, indent=2, sort_keys=True) + "\n")


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
<p><strong>{name}</strong>, {lab}: {summary_line}. Status: {status}.</p>
{summary}
<table><thead><tr><th>Activity</th><th>Points</th><th>What the grader found</th></tr></thead><tbody>
{rows}
</tbody></table>
</body></html>
"""


def write_html(out, result):
    student, lab = record_key(result)
    known = course_labs().get(lab)
    title = known.title if known is not None else "Submission"
    rows = []
    for test in result["tests"]:
        optional = " (optional)" if "optional" in test.get("tags", []) else ""
        rows.append(f'<tr class="{test["status"]}"><td>{html.escape(test["name"])}{optional}</td>'
                    f'<td class="points">{test["score"]} / {test["max_score"]}</td>'
                    f'<td><pre>{html.escape(test["output"])}</pre></td></tr>')
    line = result["extra_data"].get("summary")
    page = PAGE.format(title=html.escape(title), name=html.escape(student), lab=html.escape(lab or "no lab"),
                       summary_line=f"{html.escape(line)} points" if line else "not graded",
                       status=html.escape(result["status"]),
                       summary=f"<pre>{html.escape(result['output'])}</pre>" if result["output"] else "",
                       rows="\n".join(rows))
    return atomic_write(record_path(out, student, lab, ".html"), page)
