"""notebooks/dask_cluster.ipynb runs top to bottom on a local Dask cluster (CPU target, processes).

The cluster's workers inherit this test's fresh cache directory, so the kernel is new to all of
them: exactly one worker compiles it and every other worker loads that worker's entry from disk.
"""

from __future__ import annotations

import re

import pytest
from nbhelpers import REPO, outputs_text

pytestmark = pytest.mark.slow

NOTEBOOK = REPO / "notebooks" / "dask_cluster.ipynb"


def test_dask_notebook_compiles_the_kernel_once_for_all_workers(cpu_env):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(cpu_env)}}).execute()
    text = "\n".join(outputs_text(c) for c in nb.cells if c.cell_type == "code")
    assert "processes on the CPU target" in text
    assert len(re.findall(r"^tcp://\S+: CPU target$", text, flags=re.M)) >= 2
    assert f"cache directories of the workers: ['{cpu_env / 'cache'}']" in text
    workers = re.findall(r"^worker pid \d+: (.*)$", text, flags=re.M)
    assert len(workers) >= 2
    assert f"8 partitions on {len(workers)} workers: the result matches numpy" in text
    assert sorted(w.split(" (")[0] for w in workers) == ["hit"] * (len(workers) - 1) + ["miss"]
    assert "miss (new)" in text and not re.search(r"hit \((?!disk)", text)
    assert f"1 compile(s) and {len(workers) - 1} disk hit(s) across {len(workers)} workers" in text
