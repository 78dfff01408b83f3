#!/usr/bin/env bash
# Install a Debian package during set-up when the program it provides is missing:
#   bash tools/install-debian.sh PROGRAM PACKAGE "what happens without it"
# Needs root (or sudo) and apt-get; without them it says what is missing and still succeeds, so
# that set-up carries on (the grader runs unsandboxed without bubblewrap, the lab skips its
# Graphviz drawing without graphviz, and the tests that need either fail naming this step).
set -u
program=$1 package=$2 without=$3
command -v "$program" >/dev/null 2>&1 && exit 0
if [ "$(id -u)" -eq 0 ]; then as_root=(); elif command -v sudo >/dev/null 2>&1; then as_root=(sudo -n); else
  echo "install-debian: $package is missing and this user cannot install it; $without" >&2
  exit 0
fi
if command -v apt-get >/dev/null 2>&1; then
  "${as_root[@]}" apt-get update -qq && "${as_root[@]}" apt-get install -y -qq "$package" >/dev/null
fi
command -v "$program" >/dev/null 2>&1 || echo "install-debian: could not install $package; $without" >&2
exit 0
