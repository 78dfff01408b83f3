"""Grading: one submission (grade.py), a batch in a local pool (batch.py) or on a Dask cluster
(distributed.py), what a run is given and each submission's identity, (student, lab) from the
course root's layout (roster.py, submission.py), the course secret and a submission's seed
(secret.py), and the versions a result records (versions.py).

It imports the isolation, labs and diagnosis below it; nothing of records/ or above.
"""
