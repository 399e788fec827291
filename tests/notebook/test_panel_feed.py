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


def test_failed_launches_and_compiles_are_records_until_they_are_gone():
    """The side panel lists a kernel whose launch failed (before compiling: no signature; the
    error and its line as `why`) and whose compile failed (with the types); once a launch
    works the failure's record is replaced by the compiled one, or marked gone."""
    from gpunb.foundation.errors import CompileError, LaunchError

    ns = {"cuda": cuda}
    exec(compile("@cuda.jit\ndef put(v, i):\n    v[i] = undefined_helper(1.0)\n",  # noqa: S102
                 "/tmp/ipykernel_panel_feed/cell9.py", "exec"), ns)
    put = ns["put"]
    v = np.zeros(4, np.float32)
    try:
        put[1, 1](v, "0")  # an argument with no kernel type: fails before compiling
    except LaunchError:
        pass
    (record,) = panel_feed.new_kernel_records(ns)
    assert record["name"] == "put" and record["cache"] == "launch failed"
    assert record["signature"] == "(launch failed before compiling)"
    assert record["why"].startswith("LaunchError: cannot pass argument 2 ('i') to 'put'")
    assert record["problem"] == record["why"] and record["registers"] is None
    assert panel_feed.new_kernel_records(ns) == []  # sent once
    try:
        put[1, 1](v, 0)
    except CompileError:
        pass
    records = {r["cache"]: r for r in panel_feed.new_kernel_records(ns)}
    # the compile failure (with the launch's types) arrives; the launch failure is not gone:
    # no launch worked yet
    assert set(records) == {"compile failed"}
    assert records["compile failed"]["signature"] == "void(float32[::1], int64)"
    assert "undefined_helper" in records["compile failed"]["why"]
    ns["undefined_helper"] = cuda.jit(device=True)(lambda x: x)
    put[1, 1](v, 0)
    records = panel_feed.new_kernel_records(ns)
    by_id = {r["id"]: r for r in records}
    compiled = [r for r in records if r["registers"] is not None]
    assert len(compiled) == 1 and compiled[0]["cache"].startswith("miss")
    # the compiled record takes the compile failure's place (same id); the launch failure: gone
    assert compiled[0]["id"] == [i for i in by_id if "float32" in i][0]
    (gone,) = [r for r in records if r["cache"] == "failure gone"]
    assert gone["signature"] == "(launch failed before compiling)"
