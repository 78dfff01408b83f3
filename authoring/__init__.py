"""The instructor's tools, above the grader: regenerating and executing a lab's instructor
notebook (instructor.py, ``make instructor``) and starting a new lab (new_lab.py, ``make
new-lab``). ``make release`` is build_student.py at the course root. Nothing of the grader
imports this package.
"""
import course  # noqa: F401  (first, so that reading notebooks stays cheap: see course/__init__.py)
