"""A notebook opened alone (Colab, or a notebook downloaded without its folder) fetches its data
itself: once, checked against its SHA-256, a bad copy deleted. The notebook's own loader runs in
a real kernel, fetching from a server on 127.0.0.1 (COURSE_DATA_URL), never the internet."""
import hashlib
import shutil
import threading
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import nbformat
import pytest

from autodiff_check.execute import errors, execute
from tests.helpers import LABS, ROOT, lab_notebook, read

URL_VARIABLE = "COURSE_DATA_URL"
WITH_DATA = [lab for lab in LABS if lab.data_files]


def test_every_lab_with_data_lets_the_download_address_be_replaced(lab):
    for name in lab.data_files:
        assert URL_VARIABLE in lab.path.read_text(), f"{lab.name} downloads {name} from a fixed address"


@contextmanager
def data_server(folder):
    """An HTTP server on 127.0.0.1 serving `folder`; yields (its URL, the paths asked for)."""
    asked = []

    class Handler(SimpleHTTPRequestHandler):
        def do_GET(self):
            asked.append(self.path)
            super().do_GET()

        def log_message(self, *args):  # keep pytest's output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", asked
    finally:
        server.shutdown()
        server.server_close()


def up_to_the_data(lab, notebook):
    """The notebook's cells up to and including the last one that checks a data file's SHA-256."""
    digests = [hashlib.sha256((ROOT / "data" / name).read_bytes()).hexdigest() for name in lab.data_files]
    last = max(i for i, cell in enumerate(notebook.cells) if any(digest in cell.source for digest in digests))
    shortened = nbformat.v4.new_notebook(metadata=notebook.metadata)
    shortened.cells = notebook.cells[:last + 1]
    return shortened


def run_alone(lab, solved_dir, folder):
    """The solved notebook, up to its data cell, run in `folder` with nothing else there (nor two
    folders up, where the course keeps data/); returns the data cell as run."""
    folder.mkdir(parents=True, exist_ok=True)
    notebook = up_to_the_data(lab, read(lab_notebook(solved_dir, lab)))
    return execute(notebook, folder, timeout=600, allow_errors=True).cells[-1]


@pytest.mark.slow
@pytest.mark.parametrize("lab", WITH_DATA, ids=[lab.name for lab in WITH_DATA])
def test_alone_it_downloads_its_data_once_and_checks_it(lab, solved_dir, tmp_path, monkeypatch):
    with data_server(ROOT / "data") as (url, asked):
        monkeypatch.setenv(URL_VARIABLE, url)
        alone = tmp_path / "a" / "b" / "colab"
        for _ in range(2):  # the second run finds the kept copy
            cell = run_alone(lab, solved_dir, alone)
            assert not errors(cell), errors(cell)
        assert sorted(asked) == sorted(f"/{name}" for name in lab.data_files)
    for name in lab.data_files:
        assert (alone / "data" / name).read_bytes() == (ROOT / "data" / name).read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("lab", WITH_DATA, ids=[lab.name for lab in WITH_DATA])
def test_a_wrong_checksum_stops_with_a_clear_message_and_deletes_the_file(lab, solved_dir, tmp_path, monkeypatch):
    corrupted = tmp_path / "corrupted"
    shutil.copytree(ROOT / "data", corrupted)
    for name in lab.data_files:
        damaged = bytearray((corrupted / name).read_bytes())
        damaged[len(damaged) // 2] ^= 0x01  # one bit: the size stays, the digest changes
        (corrupted / name).write_bytes(bytes(damaged))
    with data_server(corrupted) as (url, _):
        monkeypatch.setenv(URL_VARIABLE, url)
        alone = tmp_path / "a" / "b" / "colab"
        cell = run_alone(lab, solved_dir, alone)
    (error,) = errors(cell)
    assert "SHA-256" in error["evalue"] and "deleted" in error["evalue"], error["evalue"]
    assert not [name for name in lab.data_files if (alone / "data" / name).exists()]
