"""Every lab in JupyterLab, in a real browser, as a student meets it: the student notebook opens,
Run All stops at the first activity's stub, the cells nbgrader locks refuse edits and deletion
while the answer cells take them, the solved notebook passes every check, and the last cell runs
the student's check on the saved notebook. Screenshots of
what the student sees go to test-artifacts/jupyterlab/ (the CI workflow uploads them)."""
import shutil
from types import SimpleNamespace

import pytest

from autodiff_check.cells import cell_name
from autodiff_check.execute import errors, stdout
from tests.helpers import LABS, lab_notebook, read
from tests.jupyterlab import RUN_ALL_MS, NotebookTab, chromium, jupyterlab_server

pytestmark = [pytest.mark.slow, pytest.mark.browser]
TYPED = "# typed in JupyterLab"


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory, release_dir, solved_dir):
    """One browser and one JupyterLab serving copies of the release and of the solved notebooks
    (a student's folder each: the notebook and its data)."""
    root = tmp_path_factory.mktemp("jupyterlab-root")
    shutil.copytree(release_dir, root / "release")
    shutil.copytree(solved_dir, root / "solved")
    with chromium() as browser, jupyterlab_server(root, tmp_path_factory.mktemp("jupyterlab-state")) as server:
        yield browser, server


def index_of(notebook, cell_id):
    return next(i for i, cell in enumerate(notebook["cells"]) if cell["id"] == cell_id)


def type_into(tab, index, text):
    """Click into the editor of cell `index`, go to its end and type a new line."""
    tab.show(index).locator(".cm-content").click()
    tab.page.keyboard.press("Control+End")
    tab.page.keyboard.press("Enter")
    tab.page.keyboard.type(text)
    tab.page.keyboard.press("Escape")


@pytest.fixture(scope="module")
def release_visit(lab, jupyterlab, release_dir):
    """A student's first session with the student notebook: open it, type into a locked check
    cell, a locked given cell and the first answer cell, press d d on the check cell, Run All,
    save. Returns the notebook as released, as saved, and the cells tried."""
    browser, server = jupyterlab
    released = read(lab_notebook(release_dir, lab))
    first = next(iter(lab.activities))
    tried = SimpleNamespace(check=index_of(released, f"{first}-check"), answer=index_of(released, f"{first}-answer"),
                            given=next(i for i, cell in enumerate(released.cells)
                                       if cell.cell_type == "code" and not cell.metadata["nbgrader"]["solution"]
                                       and not cell.metadata["nbgrader"]["grade"]))
    with NotebookTab(browser, server, f"release/{lab.name}/{lab.name}.ipynb", lab.name) as tab:
        tab.screenshot(f"{lab.name}-opened")
        for index in (tried.check, tried.given, tried.answer):
            type_into(tab, index, TYPED)
        tab.show(tried.check)
        tab.page.keyboard.press("d")
        tab.page.keyboard.press("d")  # JupyterLab's shortcut for deleting the selected cell
        tab.run_all()
        saved = tab.save()
        failed = [i for i, cell in enumerate(saved["cells"]) if errors(cell)]
        if failed:
            tab.show(failed[0], outputs=True)
            tab.screenshot(f"{lab.name}-failing-check")
    return SimpleNamespace(released=released, saved=saved, failed=failed, tried=tried)


def test_run_all_stops_at_the_stub_of_the_first_activity_naming_it(lab, release_visit):
    first = next(iter(lab.activities.values()))
    assert len(release_visit.failed) == 1, "Run All should stop at the first error"
    error = errors(release_visit.saved["cells"][release_visit.failed[0]])[0]
    assert error["ename"] == "NotImplementedError"
    assert error["evalue"] == f"Complete Activity {first.id}: {first.functions[0]}"
    ran = [cell for cell in release_visit.saved["cells"][:release_visit.failed[0]] if cell["cell_type"] == "code"]
    assert all(cell["execution_count"] for cell in ran), "every cell above the error ran"


def test_locked_cells_refuse_edits_and_deletion_while_answer_cells_take_them(release_visit):
    released, saved, tried = release_visit.released, release_visit.saved, release_visit.tried
    assert [cell["id"] for cell in saved["cells"]] == [cell.id for cell in released.cells], "a cell was deleted"
    for index in (tried.check, tried.given):
        assert saved["cells"][index]["source"] == released.cells[index].source, saved["cells"][index]["id"]
    assert saved["cells"][tried.answer]["source"] != released.cells[tried.answer].source
    assert TYPED in saved["cells"][tried.answer]["source"]


@pytest.fixture(scope="module")
def solved_visit(lab, jupyterlab):
    """The solved notebook opened, run with Run All and saved; a picture of its first check, the
    one that fails in the release."""
    browser, server = jupyterlab
    with NotebookTab(browser, server, f"solved/{lab.name}/{lab.name}.ipynb", f"{lab.name}-solved") as tab:
        tab.run_all()
        saved = tab.save()
        first_check = min(i for i, cell in enumerate(saved["cells"]) if cell["metadata"]["nbgrader"]["grade"])
        tab.show(first_check, outputs=True)
        tab.screenshot(f"{lab.name}-solved-check")
    return saved


def test_the_solved_notebook_passes_every_check_in_the_ui(lab, solved_visit):
    code = [cell for cell in solved_visit["cells"] if cell["cell_type"] == "code"]
    assert not [cell["id"] for cell in code if errors(cell)]
    assert all(cell["execution_count"] for cell in code), "Run All ran every code cell"
    checks = [cell for cell in code if cell["metadata"]["nbgrader"]["grade"]]
    assert len(checks) == sum(len(activity.checks) for activity in lab.activities.values())
    for activity in lab.activities:
        theirs = [stdout(cell) for cell in checks if cell["id"].partition("-check")[0] == activity]
        assert theirs and all(f"Activity {activity} passed" in text for text in theirs), activity


# The last cell is the same code in every lab, and tests/test_check.py runs the check itself on
# every lab's notebooks; what only JupyterLab shows is that the cell, run in the notebook's own
# kernel beside its saved file, streams the check's report into its output. One lab shows that.
CHECKED = LABS[0]


def test_the_last_cell_runs_the_check_on_the_saved_notebook(jupyterlab, release_dir):
    browser, server = jupyterlab
    released = read(lab_notebook(release_dir, CHECKED))
    closing = "no activity passes its visible checks yet; the grader also runs hidden checks on other inputs"
    with NotebookTab(browser, server, f"release/{CHECKED.name}/{CHECKED.name}.ipynb", f"{CHECKED.name}-check") as tab:
        tab.save()
        last = tab.cell_count - 1
        tab.show(last)
        tab.page.keyboard.press("Control+Enter")  # run the selected cell
        output = tab.cell(last).locator(".jp-OutputArea")
        output.filter(has_text=closing).wait_for(timeout=RUN_ALL_MS)  # the check's last line, however long it took
        tab.wait_until_idle()
        tab.show(last, outputs=True)
        tab.screenshot(f"{CHECKED.name}-check-cell")
        report = output.inner_text().splitlines()
    checks = [cell.id for cell in released.cells if cell.metadata["nbgrader"]["grade"]]
    first = next(iter(CHECKED.activities.values()))
    ids = [cell.get("id") for cell in released.cells]
    named = {cell_id: cell_name(released.cells, ids.index(cell_id)) for cell_id in checks}
    shown = {cell_id: [line for line in report if named[cell_id] in line and line.startswith("  ")
                       and not line.startswith("  !")] for cell_id in checks}  # a check's line, not a note on it
    assert all(len(lines) == 1 for lines in shown.values()), shown
    assert "failed" in shown[f"{first.id}-check"][0]
    assert f"NotImplementedError: Complete Activity {first.id}: {first.functions[0]}" in shown[f"{first.id}-check"][0]
    assert report[0].startswith(f"{CHECKED.name}.ipynb: lab {CHECKED.name} ")
    assert report[-1].strip() == closing
