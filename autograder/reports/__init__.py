"""The class report: its figures (class_report.py), its page (report_page.py, templates/), and
similar work across a class (similarity/). It reads records and below.
"""
