# The README's two commands: `make release` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SETUP := $(VENV)/.installed

SUBMITTED ?= submitted
GRADED ?= graded

.PHONY: release test test-fast instructor grade

$(SETUP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	bash tools/install-sandbox.sh
	touch $@

# Write release/<lab>/ for every lab in source/.
release: $(SETUP)
	$(PY) build_student.py

# The whole suite, notebook execution and grading included.
test: $(SETUP)
	$(PY) -m pytest

# The quick loop: everything but the tests that execute whole notebooks.
test-fast: $(SETUP)
	$(PY) -m pytest -m "not slow"

# After editing source/<lab>/<lab>.py: regenerate and execute the paired .ipynb.
instructor: $(SETUP)
	$(PY) -m course.instructor

# Grade every notebook under submitted/ (nbgrader's submitted/<student>/<lab>/ layout) into graded/.
# The GitHub workflow runs exactly this.
grade: $(SETUP)
	$(PY) -m autograder grade $(SUBMITTED) --out $(GRADED)
