"""A user's session on a real ipykernel (nbclient, CPU target): a launch that fails before
compiling is named by `%gpucache status`, and a kernel cell edited and run again diffs against
its previous definition, which was never inspected."""

from __future__ import annotations

import pytest
from nbhelpers import html_text, outputs_text

pytestmark = pytest.mark.slow

KERNEL = """%%gpukernel
def saxpy(out, x, y, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = {body}
"""


def test_failed_launch_status_and_diff_after_redefinition(execute_notebook):
    nb = execute_notebook([
        "%load_ext gpunb\nimport numpy as np\nimport gpunb\n"
        "x = np.arange(256, dtype=np.float32)\nout = np.zeros_like(x)",
        KERNEL.format(body="x[i] * a + y[i]"),
        "saxpy[1, 256](out, x, 2.0)",  # one argument short: fails before compiling
        "%gpucache status",
        "saxpy[1, 256](out, x, x, np.float32(2.0))\nprint(out[:3].tolist())",
        "%gpucache status",
        KERNEL.format(body="x[i] * x[i] * a - y[i]"),  # the cell, edited and run again
        "saxpy[1, 256](out, x, x, np.float32(2.0))\nprint(out[:3].tolist())",
        "view = gpunb.notebook.diff_view(saxpy)\nview",
        "print(view.text())",
    ], allow_errors=True)
    errors = [o for o in nb.cells[2].outputs if o["output_type"] == "error"]
    assert len(errors) == 1 and errors[0]["ename"] == "LaunchError"
    failed = html_text(outputs_text(nb.cells[3]))
    assert "launch failed" in failed and "LaunchError: kernel 'saxpy' takes 4 arguments" in failed
    assert "(Cell In[3], line 1)" in failed and "never launched" not in failed
    assert "[0.0, 3.0, 6.0]" in outputs_text(nb.cells[4])
    after = html_text(outputs_text(nb.cells[5]))
    assert "launch failed" not in after and "void(float32[::1], float32[::1], float32[::1], " \
        "float32)" in after
    assert "[0.0, 1.0, 6.0]" in outputs_text(nb.cells[7])  # x*x*2 - x: the new definition
    for i in (8, 9):
        assert not [o for o in nb.cells[i].outputs if o["output_type"] == "error"], \
            outputs_text(nb.cells[i])
    shown = html_text(outputs_text(nb.cells[8]))
    assert "previous definition (Cell In[2], line 2) → now" in shown
    text = outputs_text(nb.cells[9])
    assert text.startswith("PTX of saxpy void(float32[::1], float32[::1], float32[::1], "
                           "float32), previous definition (Cell In[2], line 2) → now: +")
    assert "\n-" in text and "\n+" in text and "fma.rn.f32" in text
