"""Find instructor material in a student notebook before it ships."""
import re

from course.cells import defined_functions

# Prose wraps anywhere, so short markdown lines ("order.") are no evidence of a leak.
SHORTEST_PROSE = 25
# Lines a stub shares with its solution by necessity: signatures, returning a bare name,
# lone keywords and brackets.
TRIVIAL = re.compile(r"^(def \w+\(.*\):|return \w*|else:|try:|continue|break|pass|[()\[\]{},:]*)$")
MARKERS = re.compile(r"instructor (answer|reference|copy|note)", re.IGNORECASE)


def fold(line):
    return " ".join(line.split())


def telling_lines(cell):
    """The folded lines of a reference cell that would give something away."""
    lines = {fold(line) for line in cell.source.splitlines()}
    if cell.cell_type == "markdown":
        return {line for line in lines if len(line) >= SHORTEST_PROSE}
    return {line for line in lines if line and not TRIVIAL.match(line)}


def find_leaks(lab, notebook):
    """Messages naming each leak of `lab`'s instructor material into `notebook`."""
    secrets = {}
    for cell in lab.cells:
        if cell.role == "reference":
            for line in telling_lines(cell):
                secrets.setdefault(line, cell)
    solved_names = {name: activity.id for activity in lab.activities.values()
                    for name in activity.functions}
    leaks = []
    for index, cell in enumerate(notebook.cells):
        where = f"release cell {index} ({cell.get('id', '?')})"
        text = "\n".join(fold(line) for line in cell.source.splitlines())
        for line, origin in secrets.items():
            if line in text:
                leaks.append(f"{where} contains {line!r} from {origin.label}")
        if MARKERS.search(cell.source):
            leaks.append(f"{where} contains instructor-only text: {MARKERS.search(cell.source).group(0)!r}")
        if cell.cell_type != "code":
            continue
        if cell.get("outputs") or cell.get("execution_count") is not None:
            leaks.append(f"{where} has saved outputs")
        if not cell.metadata.get("nbgrader", {}).get("grade_id", "").endswith("-answer"):
            for name in sorted(defined_functions(cell.source, where) & set(solved_names)):
                leaks.append(f"{where} defines {name}, which students write in activity "
                             f"{solved_names[name]}: is it a reference cell without its tag?")
    return leaks

