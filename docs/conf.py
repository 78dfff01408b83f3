"""Sphinx's settings for the course's documentation (built by tests/test_docs.py, warnings as errors).

Pages are MyST Markdown. Nothing is fetched while building: no intersphinx, the built-in alabaster
theme, and the one local extension (_ext/course_reference.py), which writes the tables that the
code knows better than prose: each lab's activities, the grader's commands and options, and the
course file's policy settings.
"""
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# The extension imports the grader and the lab model of this checkout, whatever is installed.
sys.path[:0] = [str(DOCS / "_ext"), str(ROOT), str(ROOT / "student")]

project = "Reverse-mode autodiff, from scratch"
author = "the course's instructors"
extensions = ["myst_parser", "course_reference"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
myst_heading_anchors = 3  # `page.md#a-heading` links, checked by the nitpicky build
html_theme = "alabaster"
html_theme_options = {"description": "an auto-graded lab course", "fixed_sidebar": True}
html_show_sourcelink = False
