"""The documentation site under docs/ builds with every warning an error, links and
cross-references checked and nothing fetched; its pictures are the browser tests' own; its page on
the course file names the keys the code reads; and the README stays a front page."""
import ast
import re
import subprocess
import sys

import pytest

from autograder.records.lateness import _course
from tests.helpers import LABS, ROOT

DOCS = ROOT / "docs"
PAGES = sorted(path for path in DOCS.rglob("*.md") if "_build" not in path.parts)
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
# Where the browser tests put their screenshots (under test-artifacts/), and the files that write them.
SCREENSHOT_WRITERS = {"jupyterlab": ("tests/jupyterlab.py", "tests/test_jupyterlab.py"),
                      "class-report": ("tests/test_class_report.py",)}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html",
                            str(DOCS), str(out)], capture_output=True, text=True, cwd=ROOT)
    assert build.returncode == 0, build.stderr
    return out


def test_the_site_builds_with_warnings_as_errors_and_holds_every_page(site):
    for page in PAGES:
        built = site / page.relative_to(DOCS).with_suffix(".html")
        assert built.is_file(), f"{page.relative_to(ROOT)} was not built"


def test_the_command_reference_and_the_lab_pages_are_read_from_the_code(site):
    commands = (site / "reference" / "commands.html").read_text()
    for command in ("grade", "report", "similarity", "gradescope", "check", "mutants", "fingerprints", "mistakes"):
        assert f"{command}: " in commands, command
    for lab in LABS:
        page = (site / "labs" / f"{lab.name}.html").read_text()
        for activity in lab.activities.values():
            for function in activity.functions:
                assert function in page, (lab.name, function)


def test_no_page_gives_a_web_address():
    """Indexes and hosts are named by what they are: a page that fetched or linked an address would
    tie the manual to a host that course machines may not reach."""
    for page in PAGES + [ROOT / "README.md"]:
        found = re.findall(r"https?://\S+", page.read_text())
        assert not found, f"{page.relative_to(ROOT)} gives {found}"


def screenshot_names(folder):
    """A regular expression per name the browser tests give a screenshot in test-artifacts/<folder>/,
    with each placeholder a lab's name or a string the writing test itself holds."""
    names = []
    for writer in SCREENSHOT_WRITERS[folder]:
        text = (ROOT / writer).read_text()
        strings = {node.value for node in ast.walk(ast.parse(text))
                   if isinstance(node, ast.Constant) and isinstance(node.value, str)}
        fillers = "|".join(re.escape(value) for value in sorted({lab.name for lab in LABS} | strings) if value)
        for template in re.findall(r'screenshot\((?:path=ARTIFACTS / )?f"([^"]+?)(?:\.png)?"\)', text):
            names.append(re.compile(re.sub(r"\\\{[^}]*\\\}", f"(?:{fillers})", re.escape(template)) + r"\.png"))
    return names


def test_every_picture_a_page_shows_is_one_the_browser_tests_take():
    shown = set()
    for page in PAGES:
        for target in IMAGE.findall(page.read_text()):
            image = (page.parent / target).resolve()
            where = image.relative_to(DOCS / "screenshots").parts
            assert len(where) == 2 and where[0] in SCREENSHOT_WRITERS, f"{page.name} shows {target}"
            assert any(name.fullmatch(where[1]) for name in screenshot_names(where[0])), \
                f"{page.name} shows {target}, which no browser test writes to test-artifacts/{where[0]}/"
            shown.add(image)
    kept = {path.resolve() for path in (DOCS / "screenshots").rglob("*.png")}
    assert kept == shown, f"screenshots no page shows: {sorted(map(str, kept - shown))}"


class Reading(dict):
    """A table of the course file that notes every key the code reads from it."""

    def __init__(self, values, read):
        super().__init__(values)
        self.read = read

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)


def documented_keys(heading):
    """The keys in the first column of the table under `heading` on the course file's page."""
    page = (DOCS / "reference" / "course-toml.md").read_text()
    start = page.index(f"\n{heading}\n")
    section = page[start:page.find("\n## ", start + 1) % (len(page) + 1)]
    return set(re.findall(r"^\| `([^`]+)` \|", section, re.MULTILINE))


def test_the_course_file_page_documents_every_key_the_code_reads_and_no_other():
    lab = LABS[0].name
    top, in_lab = set(), set()
    _course(Reading({"labs": {lab: Reading({}, in_lab)}}, top), {lab})
    assert documented_keys("## The top level") == top
    assert documented_keys("## `[labs.<lab>]`") == in_lab
    # The policy's settings ([late]) are read from the code by the page itself (course-file-policy).


def test_the_readme_is_a_front_page_whose_links_open():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme):
        assert (ROOT / target).exists(), f"the README links {target}, which is not there"
