#!/usr/bin/env bash
# Gradescope runs this once, as root, in /autograder/source, when it builds the autograder's image.
# It installs Python 3.11 or newer, bubblewrap (the sandbox; where the container cannot create
# namespaces the grader runs each submission as the user nobody instead, and its log says which)
# and, into /autograder/venv where run_autograder looks, the grader from this bundle with its
# `grade` extra: what grading needs, and none of the instructor's or the tests' tools.
set -euo pipefail
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq bubblewrap >/dev/null || echo "setup.sh: no bubblewrap; submissions will run unsandboxed" >&2
recent() { command -v "$1" >/dev/null 2>&1 && "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; }
python=""
for candidate in python3.11 python3; do
  apt-get install -y -qq "$candidate" "$candidate-venv" >/dev/null 2>&1 || true  # venv: Debian splits it off
  if recent "$candidate"; then python=$candidate; break; fi
done
[ -n "$python" ] || { echo "setup.sh: needs Python 3.11 or newer: choose a newer Ubuntu base image" >&2; exit 1; }
"$python" -m venv /autograder/venv
venv=/autograder/venv/bin/python
"$venv" -m pip install --quiet --disable-pip-version-check uv==0.13.9
# The public index's torch==2.13.0 for Linux is the CUDA build, gigabytes of NVIDIA libraries that
# grading never uses: uv's --torch-backend takes the CPU build from PyTorch's own index instead.
# No cache, so that no copy of the bundle's hidden checks outlives the build.
"$venv" -m uv pip install --quiet --no-cache --python "$venv" --torch-backend cpu ".[grade]"
