"""Kernel records for the side panel: resources, occupancy, cache state, where it was defined."""

import linecache

import numpy as np

from gpunb import cuda
from gpunb.foundation.sources import register_cell
from gpunb.notebook import panel_feed

CELL = """\
@cuda.jit
def scale_rows(out, x, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] * a
"""


def test_kernel_records_describe_new_specialisations_once():
    filename = "/tmp/ipykernel_panel_feed/cell7.py"
    linecache.cache[filename] = (len(CELL), None, CELL.splitlines(keepends=True), filename)
    register_cell(filename, 7)
    panel_feed.note_cell(filename, 7, {"metadata": {"cellId": "cell-abc"}})
    ns = {"cuda": cuda}
    exec(compile(CELL, filename, "exec"), ns)  # noqa: S102 - a notebook cell, as IPython runs it
    kernel = ns["scale_rows"]
    x = np.arange(32, dtype=np.float32)
    kernel[1, 32](np.zeros_like(x), x, np.float32(2.0))
    records = panel_feed.new_kernel_records(ns)
    assert len(records) == 1
    record = records[0]
    assert record["name"] == "scale_rows" and "float32[::1]" in record["signature"]
    assert record["defined_at"] == "Cell In[7], line 1" and record["cell"] == 7
    assert record["cell_id"] == "cell-abc"
    assert record["registers"] > 0 and record["local_bytes"] == 0
    assert 0 < record["occupancy"] <= 1 and record["limiter"]
    assert record["cache"].startswith(("miss", "hit"))
    assert "problem" not in record
    assert panel_feed.new_kernel_records(ns) == []  # described once
    kernel[1, 32](np.zeros(32), np.arange(32.0), 2.0)  # a new specialisation
    again = panel_feed.new_kernel_records(ns)
    assert [r["signature"] for r in again] == ["void(float64[::1], float64[::1], float64)"]
