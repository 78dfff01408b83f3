"""Execute a notebook the way Jupyter does: in a fresh kernel, from the notebook's own folder."""
import os
import tempfile
from pathlib import Path

from jupyter_client.manager import KernelManager
from nbclient import NotebookClient


def execute(notebook, folder, *, timeout=600, allow_errors=False, timing=False):
    """Run every cell of `notebook` (modified in place) with `folder` as the working directory.

    With allow_errors=False the first failing cell raises nbclient's CellExecutionError; with
    `timing`, each cell's metadata keeps when it started and ended (nbclient's "execution").
    """
    # The kernel talks over Unix sockets in a folder of its own rather than over TCP: nothing else on
    # the machine can reach it, and it has no unencrypted TCP port to warn about at every start.
    with tempfile.TemporaryDirectory(prefix="kernel-") as sockets:
        manager = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "kernel"))
        client = NotebookClient(notebook, km=manager, timeout=timeout, allow_errors=allow_errors, record_timing=timing,
                                resources={"metadata": {"path": str(Path(folder))}})
        try:
            client.execute()
        finally:
            if manager.has_kernel:  # a client given its manager leaves the kernel running
                manager.shutdown_kernel(now=True)
    return notebook


def errors(cell):
    """The error outputs of an executed code cell."""
    return [out for out in cell.get("outputs", []) if out.get("output_type") == "error"]


def stdout(cell):
    return "".join(out.get("text", "") for out in cell.get("outputs", [])
                   if out.get("output_type") == "stream" and out.get("name") == "stdout")
