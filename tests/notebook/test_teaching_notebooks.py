"""Every teaching notebook in notebooks/ runs headless on the CPU target, start to finish.

Cells tagged `raises-exception` may fail (they show errors on purpose); any other error fails
the test with the cell's traceback.
"""

from __future__ import annotations

import pytest
from nbhelpers import REPO, cache_layer_present

pytestmark = pytest.mark.slow

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, cpu_env):
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(cpu_env)}})
    try:
        client.execute()
    except CellExecutionError:
        if not cache_layer_present() and _failed_in_redefinition(nb):
            pytest.xfail("a redefined helper is noticed through the cache epoch "
                         "(gpunb.cache.epoch), which is not in this build")
        raise
    expected = [c for c in nb.cells if "raises-exception" in c.get("metadata", {}).get("tags", [])]
    for cell in expected:
        errors = [o for o in cell.get("outputs", []) if o["output_type"] == "error"]
        assert errors, "a cell tagged raises-exception did not fail"
        assert any("Cell In[" in line for line in errors[0]["traceback"])


def _failed_in_redefinition(nb) -> bool:
    """The first failing cell is the one that redefines a helper (tagged `redefinition`)."""
    for cell in nb.cells:
        if any(o["output_type"] == "error" for o in cell.get("outputs", [])):
            return "redefinition" in cell.get("metadata", {}).get("tags", [])
    return False
