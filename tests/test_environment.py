"""The set-up files agree with each other and the bundled data is the published file."""
import hashlib

import pytest
import yaml

from tests.helpers import ROOT, pip_pins

CONDA_NAMES = {"pytorch-cpu": "torch", "dask-core": "dask", "psycopg-c": "psycopg-binary",
               "python-graphviz": "graphviz"}
PENGUINS_SHA256 = "f204db2c753b0937caac3cb35258562c14f073e4bbc76be24b4c51ce22767a93"


def conda_pins():
    spec = yaml.safe_load((ROOT / "environment.yml").read_text())
    pins = {}
    for entry in spec["dependencies"]:
        name, version = entry.split("=", 1)
        pins[CONDA_NAMES.get(name, name)] = version
    pins.pop("python")
    return pins


def test_requirements_and_environment_list_the_same_packages():
    assert pip_pins() == conda_pins()


def test_torch_is_pinned_exactly():
    assert pip_pins()["torch"] == "2.13.0"


def test_bundled_penguins_is_the_published_file():
    assert hashlib.sha256((ROOT / "data/penguins.csv").read_bytes()).hexdigest() == PENGUINS_SHA256


def test_every_data_file_a_lab_reads_is_bundled_and_its_hash_is_in_the_notebook(lab):
    """Opened alone (Colab), a notebook downloads its data and checks this hash."""
    for name in lab.data_files:
        digest = hashlib.sha256((ROOT / "data" / name).read_bytes()).hexdigest()
        assert digest in lab.path.read_text(), f"{lab.name} reads {name} without checking its SHA-256"


def test_without_chromium_the_browser_tests_fail_naming_the_set_up_step(monkeypatch):
    """Never a silent skip: a machine without the browser says how to install it."""
    import tests.jupyterlab as jupyterlab

    monkeypatch.delenv("AUTOGRADER_CHROMIUM", raising=False)
    monkeypatch.setattr(jupyterlab, "CHROMIUM_CANDIDATES", ("/nonexistent/chromium",))
    with pytest.raises(pytest.fail.Exception) as failure:
        jupyterlab.chromium_executable()
    assert "tools/install-browser.sh" in str(failure.value)
