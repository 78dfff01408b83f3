"""What a grading run's zygote imports before it forks workers: the modules the labs' code
imports, read from the instructor notebooks' text with `ast` alone, since the course's notebook
tools are themselves slow to import and the zygote should start first."""
import ast

from course.folder import course_root
from course.syntax import parse

ALWAYS = ("IPython.core.interactiveshell", "numpy")  # what worker.py needs


def lab_imports(source=None):
    source = source or course_root() / "source"
    found = set(ALWAYS)
    for path in sorted(source.glob("*/*.py")):
        if path.stem != path.parent.name:
            continue
        try:
            tree = parse(path.read_text(encoding="utf-8"))  # a zygote may start in a grading thread
        except (OSError, SyntaxError, ValueError):
            continue  # the lab's own check reports it
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
    return sorted(found)
