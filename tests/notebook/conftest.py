"""Fixtures for the notebook layer: a terminal IPython shell and an nbclient notebook runner.

Both run kernels on the CPU target (GPUNB_TARGET=cpu) with the disk cache in a temporary folder,
so the tests behave the same on a laptop, in CI and on a GPU machine.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def cpu_env(tmp_path, monkeypatch):
    """CPU target, a private cache folder, notices off; inherited by kernels started here."""
    monkeypatch.setenv("GPUNB_TARGET", "cpu")
    monkeypatch.setenv("GPUNB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GPUNB_NOTICES", "0")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
    return tmp_path


@pytest.fixture
def shell(cpu_env):
    """A terminal-style InteractiveShell with `%load_ext gpunb` done; cleaned up afterwards."""
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "gpunb")
    yield ip
    ip.run_line_magic("unload_ext", "gpunb")
    ip.user_ns.pop("cuda", None)
    InteractiveShell.clear_instance()


@pytest.fixture
def execute_notebook(cpu_env):
    """execute_notebook(cells, allow_errors=False) -> the executed nbformat notebook."""
    import nbformat
    from nbclient import NotebookClient

    def run(cells: list[str], allow_errors: bool = False, timeout: int = 240):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                allow_errors=allow_errors, store_widget_state=True,
                                resources={"metadata": {"path": str(cpu_env)}})
        client.execute()
        return nb

    return run
