"""Execute a notebook the way Jupyter does: in a fresh kernel, from the notebook's own folder."""
from pathlib import Path

from nbclient import NotebookClient


def execute(notebook, folder, *, timeout=600, allow_errors=False):
    """Run every cell of `notebook` (modified in place) with `folder` as the working directory.

    With allow_errors=False the first failing cell raises nbclient's CellExecutionError.
    """
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3", allow_errors=allow_errors,
                            record_timing=False,
                            resources={"metadata": {"path": str(Path(folder))}})
    client.execute()
    return notebook


def errors(cell):
    """The error outputs of an executed code cell."""
    return [out for out in cell.get("outputs", []) if out.get("output_type") == "error"]


def stdout(cell):
    return "".join(out.get("text", "") for out in cell.get("outputs", [])
                   if out.get("output_type") == "stream" and out.get("name") == "stdout")
