"""The lab model: a lab's instructor notebook read as cells and activities (cells.py, labs.py),
its syntax (syntax.py), what may never reach a release (leaks.py), the course folder (folder.py)
and the check cell every release ends with (check_cell.py). The grader reads labs through it; it
imports nothing of the grader, only the student's package below it.

Importing this package first keeps every process of the course lean (see autodiff_check's own
first lines: the student's package does the same before nbformat is imported)."""
import autodiff_check  # noqa: F401
