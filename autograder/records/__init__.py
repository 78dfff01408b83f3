"""What a run keeps: which results are current and writing them whole (results_store.py), the
gradebook (gradebook.py), due dates and the late policy (lateness.py), a record's JSON and
feedback page (report.py), and the class's CSV tables (tables.py). It imports grading and below.
"""
