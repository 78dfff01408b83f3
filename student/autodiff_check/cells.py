"""How every message names a notebook cell: the way JupyterLab's status bar counts it ("Cell
13/50", its place among all cells from 1), with the cell's first line, so that a student who
has added or moved cells still finds it."""
SHOWN = 60  # characters of the first line; enough to tell cells apart, short enough for one line


def source_of(cell):
    """A cell's text, whether read by nbformat (a string) or straight from JSON (a list of lines)."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def first_line(source):
    for line in source.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= SHOWN else line[:SHOWN - 1] + "…"
    return ""


def cell_name(cells, index):
    """`cells[index]` named for a student: "cell 13 (it begins 'def add(a, b):')"."""
    line = first_line(source_of(cells[index]))
    return f"cell {index + 1} " + (f"(it begins {line!r})" if line else "(empty)")
