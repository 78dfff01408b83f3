# The README's two commands: `make release` and `make test`. Both set up .venv first; `make docs` builds the manual.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SETUP := $(VENV)/.installed

SUBMITTED ?= submitted
GRADED ?= graded

.PHONY: release test test-fast docs instructor grade new-lab dask-scheduler dask-worker

$(SETUP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@# The grader itself, editable (the `autograder` command in .venv/bin runs this checkout's code);
	@# requirements.txt holds every dependency and the build backend, so nothing more is fetched.
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	bash tools/install-debian.sh bwrap bubblewrap "grading will be unsandboxed"
	bash tools/install-debian.sh dot graphviz "tensor_engine's Optional F will not draw its graph"
	@# The JupyterLab tests drive Debian's chromium; without it they fail, naming this script.
	bash tools/install-browser.sh
	@# The PostgreSQL gradebook tests need the server's programs; without root they fail saying how.
	-bash tools/postgres.sh install
	touch $@

# Write release/<lab>/ for every lab in source/.
release: $(SETUP)
	$(PY) build_student.py

# The whole suite, notebook execution and grading included, in TEST_PROCESSES processes: much of
# grading waits (on time limits, and on workers that may not run side by side: autograder/isolation/rooms.py),
# and the last long tests would leave a core idle. A fresh clone's run in three processes kept both
# cores of a 2-core machine 99.7% busy (/proc/stat). tests/conftest.py keeps tests that share a fixture together.
TEST_PROCESSES ?= 3
test: $(SETUP)
	$(PY) -m pytest -n $(TEST_PROCESSES) --dist loadscope --durations=25

# The quick loop: everything but the tests that execute whole notebooks.
test-fast: $(SETUP)
	$(PY) -m pytest -n $(TEST_PROCESSES) --dist loadscope -m "not slow"

# The documentation site under docs/, warnings as errors (tests/test_docs.py builds it the same way).
docs: $(SETUP)
	$(PY) -m sphinx -W --keep-going -n -b html docs docs/_build/html

# After editing source/<lab>/<lab>.py: `make instructor LAB=<lab>` regenerates and executes its
# paired .ipynb (every lab when LAB is not given).
instructor: $(SETUP)
	$(PY) -m authoring.instructor $(LAB)

# Grade every notebook under submitted/ (nbgrader's submitted/<student>/<lab>/ layout) into graded/.
# The GitHub workflow runs exactly this.
grade: $(SETUP)
	$(PY) -m autograder grade $(SUBMITTED) --out $(GRADED)

# Start a new lab from a small complete example: source/<lab>/, autograder/labs/<lab>/, executed
# and released. Then edit it and run `make instructor LAB=<lab>`, `make release`, `make test`.
new-lab: $(SETUP)
	@test -n "$(NAME)" || { echo "usage: make new-lab NAME=<lab>  (a lower-case Python identifier, e.g. pt04_jacobians)" >&2; exit 2; }
	$(PY) -m authoring.new_lab "$(NAME)"

# A Dask cluster for `autograder grade ... --scheduler tcp://HOST:PORT` (see docs/operators.md): `make dask-scheduler`
# on one machine, `make dask-worker SCHEDULER=tcp://HOST:PORT` on each grading node; the worker grades the
# course of this checkout (or $AUTOGRADER_COURSE) with the grader that make's set-up installed in .venv.
# The scheduler takes connections from this machine alone unless HOST says otherwise (0.0.0.0, or one
# interface's address, for workers elsewhere). HOST and PORT are set on make's command line only: some shells
# and platforms export variables of those names. The web pages of each process have no login and no TLS (the
# scheduler's show every task's errors, logs and call stacks), so they stay on 127.0.0.1, the scheduler's at
# DASHBOARD. Grading bounds each submission's memory itself; Dask's watch would see only the worker process.
HOST = 127.0.0.1
PORT = 8786
DASHBOARD = 127.0.0.1:8787
THREADS ?= $(shell nproc 2>/dev/null || echo 1)
dask-scheduler: $(SETUP)
	$(PY) -m distributed.cli.dask_scheduler --host $(HOST) --port $(PORT) --dashboard-address $(DASHBOARD)

dask-worker: $(SETUP)
	@test -n "$(SCHEDULER)" || { echo "usage: make dask-worker SCHEDULER=tcp://HOST:PORT [THREADS=N]" >&2; exit 2; }
	$(PY) -m distributed.cli.dask_worker "$(SCHEDULER)" --nthreads $(THREADS) --memory-limit 0 \
		--dashboard-address 127.0.0.1:0
