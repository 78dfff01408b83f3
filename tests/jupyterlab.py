"""JupyterLab as students use it: a real server on 127.0.0.1 and Debian's chromium driven by
Playwright. Every wait polls for a condition (the kernel idle, no cell queued, the file saved)
with a limit that only guards against a hang, so a loaded machine makes the tests slower,
never red."""
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers import ROOT
from tests.services import stop, unused_port, wait_for

INSTALL_STEP = "bash tools/install-browser.sh (the set-up: `make test` and .ci/run run it)"
ARTIFACTS = ROOT / "test-artifacts" / "jupyterlab"
# Debian's /usr/bin/chromium is a shell wrapper; the binary behind it takes Playwright's flags as given.
CHROMIUM_CANDIDATES = ("/usr/lib/chromium/chromium", "chromium", "chromium-browser")
HANG_MS = 600_000
SHOW_MS = 60_000  # drawing a cell that is already in the page
MOVE_SECONDS = 10  # the status bar following one arrow key; a press still unseen by then is pressed again
RUN_ALL_MS = 1_800_000  # a whole solved notebook on a busy machine; only a hang should reach it
# JupyterLab asks on first start whether to fetch Jupyter's news (a popup over the notebook,
# and a request to a website); students answer once, the tests answer here.
SETTINGS = {"@jupyterlab/apputils-extension/notification.jupyterlab-settings":
            {"fetchNews": "false", "checkForUpdates": False}}


def chromium_executable():
    """The system browser's path (AUTOGRADER_CHROMIUM overrides), or fail naming the set-up step."""
    for candidate in filter(None, (os.environ.get("AUTOGRADER_CHROMIUM"), *CHROMIUM_CANDIDATES)):
        found = candidate if Path(candidate).is_file() else shutil.which(candidate)
        if found and os.access(found, os.X_OK):
            return found
    pytest.fail(f"Debian's chromium is not installed, and the browser tests need it: run {INSTALL_STEP}")


@contextmanager
def jupyterlab_server(root, state):
    """`jupyter lab` serving `root`, with its configuration, settings and runtime files in
    `state` (nothing of the user's own Jupyter set-up applies). Yields .url, .token and
    .api(path, method), a call of its REST API."""
    for name, values in SETTINGS.items():
        (state / "settings" / name).parent.mkdir(parents=True, exist_ok=True)
        (state / "settings" / name).write_text(json.dumps(values))
    port, token = unused_port(), secrets.token_hex(16)
    environment = {**os.environ, "JUPYTER_CONFIG_DIR": str(state / "config"), "JUPYTER_DATA_DIR": str(state / "data"),
                   "JUPYTER_RUNTIME_DIR": str(state / "runtime"), "IPYTHONDIR": str(state / "ipython")}
    url = f"http://127.0.0.1:{port}"

    def api(path, method="GET"):
        request = urllib.request.Request(f"{url}{path}", method=method, headers={"Authorization": f"token {token}"})
        with urllib.request.urlopen(request, timeout=60) as response:
            body = response.read()
        return json.loads(body) if body else None

    def answers():
        try:
            return api("/api/status") is not None
        except OSError:  # not listening yet
            return False

    with open(state / "jupyterlab.log", "w") as log:
        # --allow-root: CI runs as root, and Jupyter refuses that unless told.
        server = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
                                   "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
                                   "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
                                   f"--ServerApp.root_dir={root}", f"--LabApp.user_settings_dir={state / 'settings'}",
                                   f"--LabApp.workspaces_dir={state / 'workspaces'}"],
                                  cwd=root, env=environment, stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_for(answers, "JupyterLab's start", server)
            yield SimpleNamespace(url=url, token=token, api=api)
        finally:
            stop(server)


@contextmanager
def chromium():
    """A headless Chromium of Debian's, launched by its path through Playwright."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Playwright for Python is missing: pip install -r requirements.txt (make's set-up does)")
    executable = chromium_executable()
    with sync_playwright() as playwright:
        # As root Chromium refuses its own sandbox; the page is our own server's.
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


class NotebookTab:
    """One notebook open in JupyterLab, driven through its menus and keys as a student would.
    Use it in a `with` block: if a step fails, a picture of the window is kept as
    test-artifacts/jupyterlab/<name>-at-failure.png before the tab closes."""

    def __init__(self, browser, server, path, name):
        self.browser, self.server, self.path, self.name = browser, server, path, name

    def __enter__(self):
        self.context = self.browser.new_context(viewport={"width": 1400, "height": 900})
        self.page = self.context.new_page()
        self.page.set_default_timeout(HANG_MS)
        try:
            # A workspace of its own: JupyterLab would otherwise reopen the notebooks of earlier tabs.
            self.page.goto(f"{self.server.url}/lab/workspaces/{self.name}/tree/{self.path}?token={self.server.token}")
            self.cell_count = len(self.server.api(f"/api/contents/{self.path}")["content"]["cells"])
            self.wait_until_idle()
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, kind, error, trace):
        """Close the page and shut its kernel down, so that the next notebook has the cores."""
        if kind is not None:
            try:
                self.screenshot(f"{self.name}-at-failure")
            except Exception:  # a page that cannot draw any more: the error that got here says more
                pass
        self.context.close()
        for session in self.server.api("/api/sessions"):
            if session["path"] == self.path:
                self.server.api(f"/api/sessions/{session['id']}", method="DELETE")

    def cell(self, index):
        return self.page.locator(f'.jp-Notebook .jp-Notebook-cell[data-windowed-list-index="{index}"]')

    def wait_until_idle(self, timeout=HANG_MS):
        """The notebook is shown, its kernel is started and idle, and no cell is queued or running.
        Cells are read through textContent: offscreen cells are in the page but not laid out."""
        self.page.wait_for_function("""() => {
            const cells = document.querySelectorAll('.jp-Notebook .jp-Notebook-cell');
            const status = document.querySelector('.jp-Notebook-ExecutionIndicator');
            const kernel = document.querySelector('.jp-Toolbar-kernelName');
            const prompts = [...document.querySelectorAll('.jp-Notebook .jp-InputPrompt')].map(p => p.textContent);
            return cells.length > 0 && status && status.dataset.status === 'idle'
                && kernel && !/No Kernel/.test(kernel.textContent) && !prompts.some(p => p.includes('*'));
        }""", timeout=timeout, polling=500)

    def run_all(self):
        """Run > Run All Cells, then wait until every queued cell has run or been cancelled."""
        self.page.get_by_role("menuitem", name="Run", exact=True).click()
        self.page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        self.page.wait_for_function(
            "() => [...document.querySelectorAll('.jp-Notebook .jp-InputPrompt')].some(p => /\\[\\d+\\]/.test(p.textContent))",
            timeout=RUN_ALL_MS, polling=500)
        self.wait_until_idle(RUN_ALL_MS)

    def save(self):
        """Save with the keyboard and return the notebook as the server stored it: outputs are read
        from the file, since the page lays out only the cells on screen."""
        self.page.keyboard.press("Escape")
        self.page.keyboard.press("Control+s")
        self.page.wait_for_function("() => !document.querySelector('.lm-TabBar-tab.jp-mod-current.jp-mod-dirty')",
                                    polling=500)
        return self.server.api(f"/api/contents/{self.path}")["content"]

    def active(self):
        """The index of the selected cell, read where the student reads it: "Cell 13/49" in the
        status bar (a cell scrolled out of the window may keep a stale highlight in the page)."""
        # Looked for among the status bar's items: a search of the whole page's text took tens of
        # milliseconds of the browser's CPU at each of the hundreds of reads of a walk through a notebook.
        text = self.page.locator(".jp-StatusBar-TextItem").filter(has_text=re.compile(r"^Cell \d+/\d+$")).inner_text()
        return int(re.fullmatch(r"Cell (\d+)/\d+", text.strip()).group(1)) - 1

    def show(self, index, outputs=False):
        """Select cell `index` with the arrow keys, as a student moves through a notebook (JupyterLab
        lays out only the cells near the screen, and brings the selected one in), then scroll its
        top to the top of the window, or with `outputs`, the end of its outputs to the bottom."""
        self.page.keyboard.press("Escape")
        # Each press waits for the status bar to leave the cell it was read on: read too soon, it
        # still named that cell, the next press overshot, and the presses ran out on a busy machine.
        for _ in range(2 * self.cell_count):
            now = self.active()
            if now == index:
                break
            self.page.keyboard.press("ArrowDown" if now < index else "ArrowUp")
            moved_by = time.monotonic() + MOVE_SECONDS
            while self.active() == now and time.monotonic() < moved_by:  # else the press was lost: press again
                self.page.wait_for_timeout(50)
        assert self.active() == index, f"the arrow keys did not reach cell {index} of {self.path}"
        cell = self.cell(index)
        target = cell.locator(".jp-OutputArea").first if outputs else cell
        target.evaluate(f"element => element.scrollIntoView({{block: '{'end' if outputs else 'start'}'}})")
        target.wait_for(state="visible", timeout=SHOW_MS)
        return cell

    def screenshot(self, name):
        """A picture of the window as it is now, under test-artifacts/ (uploaded by the CI workflow)."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=ARTIFACTS / f"{name}.png")
        return ARTIFACTS / f"{name}.png"
