"""On a GPU machine: a notebook on the real device; the explorer's occupancy is the driver's."""

from __future__ import annotations

import pytest
from nbhelpers import outputs_text

pytestmark = [pytest.mark.gpu, pytest.mark.slow]

CELLS = [
    "%load_ext gpunb\nimport numpy as np\n%gpuinfo",
    """%%gpukernel --target cuda --show ptx
def saxpy(out, x, y, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]

n = 1 << 20
x = np.arange(n, dtype=np.float32)
y = np.ones(n, dtype=np.float32)
out = np.zeros_like(x)
saxpy[n // 256, 256](out, x, y, np.float32(2.0))
print("max error:", float(np.abs(out - (2 * x + y)).max()))""",
    """from gpunb.notebook import launch_explorer
from gpunb.notebook.explorer import TABLE_BLOCKS
from gpunb.backends.cuda import occupancy
explorer = launch_explorer(saxpy, n)
spec = next(s for (t, _), s in saxpy.specializations.items() if t == "cuda")
for b in TABLE_BLOCKS:
    row = explorer.row(b)
    driver = occupancy.max_active_blocks_per_sm(spec.program.function, b, 0)
    rules = occupancy.occupancy(explorer.arch, b, saxpy.resource_usage()["registers"], 0)
    print("row", b, row.source, row.active_blocks, driver, rules.active_blocks_per_sm)
explorer""",
]


def test_notebook_on_the_device(execute_notebook, monkeypatch):
    monkeypatch.setenv("GPUNB_TARGET", "cuda")
    nb = execute_notebook(CELLS)
    info = outputs_text(nb.cells[0])
    assert "target in use: cuda" in info and "sm_" in info
    assert "max error: 0.0" in outputs_text(nb.cells[1])
    assert ".visible .entry saxpy" in outputs_text(nb.cells[1])
    rows = [line.split() for line in outputs_text(nb.cells[2]).splitlines()
            if line.startswith("row ")]
    assert rows, outputs_text(nb.cells[2])
    for _, block, source, shown, driver, rules in rows:
        assert source == "driver" and shown == driver, f"block {block}: {shown} vs {driver}"
        assert rules == driver, f"block {block}: occupancy rules {rules} != driver {driver}"


def test_failed_launches_and_the_diff_after_a_redefinition_on_the_device(execute_notebook,
                                                                         monkeypatch):
    """On the GPU: a launch the device refuses is a 'launch failed' row (target cuda) until a
    launch works; the SASS diff after the kernel's cell is edited compares with the previous
    definition (never inspected), for the GPU's own arch."""
    monkeypatch.setenv("GPUNB_TARGET", "cuda")
    kernel = ("%%gpukernel --target cuda\ndef scale(out, x, a):\n    i = cuda.grid(1)\n"
              "    if i < out.size:\n        out[i] = {body}\n")
    nb = execute_notebook([
        "%load_ext gpunb\nimport numpy as np\nimport gpunb\nx = np.arange(4096, dtype=np.float32)"
        "\nout = np.zeros_like(x)",
        kernel.format(body="x[i] * a"),
        "scale[1, 32](out, x, np.float32(2.0))\nscale[1, 32, 0, 1 << 30](out, x, np.float32(2.0))",
        "%gpucache status",
        "scale[16, 256](out, x, np.float32(2.0))\nprint('max error:', "
        "float(np.abs(out - 2 * x).max()))",
        "%gpucache status",
        kernel.format(body="x[i] * a + x[i] * x[i]"),
        "scale[16, 256](out, x, np.float32(2.0))\n"
        "print(gpunb.notebook.diff_view(scale, tab='sass').text())",
    ], allow_errors=True)
    failed = outputs_text(nb.cells[3])
    assert "launch failed" in failed and "LaunchError" in failed and "shared memory" in failed
    assert "cuda" in failed and "(Cell In[3], line 2)" in failed
    assert "max error: 0.0" in outputs_text(nb.cells[4])
    assert "launch failed" not in outputs_text(nb.cells[5])
    diff = outputs_text(nb.cells[7])
    assert "SASS of scale" in diff and "previous definition (Cell In[2], line 2) → now: +" in diff
    assert "FMUL" in diff or "FFMA" in diff
