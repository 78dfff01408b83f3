#!/usr/bin/env bash
# Install Debian's chromium, the browser the JupyterLab tests drive through Playwright.
# `playwright install` downloads its own browser builds, which a course machine cannot fetch, so
# the tests launch this system browser by its path instead. Needs root (or sudo); without it the
# browser tests fail and name this script.
set -u
for found in chromium chromium-browser; do command -v "$found" >/dev/null 2>&1 && exit 0; done
if [ "$(id -u)" -eq 0 ]; then as_root=(); elif command -v sudo >/dev/null 2>&1; then as_root=(sudo -n); else
  echo "install-browser: chromium is missing and this user cannot install it; the browser tests will fail" >&2
  exit 0
fi
if command -v apt-get >/dev/null 2>&1; then
  "${as_root[@]}" apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
command -v chromium >/dev/null 2>&1 || echo "install-browser: could not install chromium; the browser tests will fail" >&2
exit 0
