"""The grader's house by job (autograder/__init__.py): imports run only downward through its
layers, and nothing of the grader but isolation/ reaches a sandbox."""
import ast
from pathlib import Path

import pytest

from autograder.isolation import sandbox
from course.folder import PACKAGES

# Lowest first. A module may import its own layer and the ones below it, never one above.
LAYERS = ("autodiff_check", "course", "autograder.isolation", "autograder.labs", "autograder.diagnosis",
          "autograder.grading", "autograder.records", "autograder.reports", "autograder.measuring",
          "autograder.gradescope", "autograder.cli", "autograder", "build_student", "authoring")
OURS = {layer.split(".")[0] for layer in LAYERS}
STUDENT = PACKAGES / "student"


def layer(module):
    """The index in LAYERS of the longest layer `module` lies in."""
    return max((i for i, name in enumerate(LAYERS) if module == name or module.startswith(name + ".")),
               key=lambda i: len(LAYERS[i]))


def modules():
    """{dotted name: path} of every module of the course's packages."""
    found = {"build_student": PACKAGES / "build_student.py"}
    for folder, top in ((PACKAGES, "autograder"), (PACKAGES, "course"), (PACKAGES, "authoring"),
                        (STUDENT, "autodiff_check")):
        for path in (folder / top).rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(module, path):
    """(line, dotted name) of every import of our packages in `path`, at any depth (a function's
    own imports count: they climb as surely when they run)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        yield from ((node.lineno, name) for name in names if name.split(".")[0] in OURS)


MODULES = modules()


def test_every_module_of_the_course_lies_in_a_layer():
    assert all(name.split(".")[0] in OURS for name in MODULES)
    assert {LAYERS[layer(name)] for name in MODULES} == set(LAYERS), "a layer with no module: remove it from LAYERS"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_run_only_downward(module):
    climbing = [f"line {line}: {name} ({LAYERS[layer(name)]}) is above {LAYERS[layer(module)]}"
                for line, name in imported(module, MODULES[module]) if layer(name) > layer(module)]
    assert not climbing, f"{MODULES[module]} imports upward:\n" + "\n".join(climbing)


@pytest.mark.parametrize("module", ["autograder.isolation.worker", "autograder.isolation.zygote"])
def test_the_code_that_runs_beside_a_submission_imports_nothing_of_the_course(module):
    assert not list(imported(module, MODULES[module])), "it runs where the submission's code can reach it"


def test_nothing_of_the_grader_but_isolation_is_mounted_into_a_sandbox(tmp_path):
    """Of the files a sandbox mounts, those of the course's packages are isolation/'s alone
    (worker.py, and what a hidden package's place holds); the packages themselves are hidden
    wherever they lie on the worker's path."""
    (tmp_path / "data.txt").write_text("a submission's file")
    command = sandbox.bwrap_command(tmp_path, [], hidden=("torch",))
    sources = [Path(command[i + 1]) for i, word in enumerate(command) if word == "--ro-bind"]
    ours = [PACKAGES / name for name in ("autograder", "course", "authoring", "build_student.py")] + [STUDENT]
    grader = [path for path in sources if any(path.resolve().is_relative_to(folder) for folder in ours)]
    assert grader and all(path.resolve().is_relative_to(PACKAGES / "autograder" / "isolation") for path in grader), grader
    assert set(sandbox.GRADER_PACKAGES) >= {name.split(".")[0] for name in MODULES} - {"autodiff_check"}
