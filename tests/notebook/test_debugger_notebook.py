"""The debugger in a real Jupyter kernel (nbclient): a --break cell stops and shows the widget
while the cell returns, the open session is driven from the next cells, running the cell again
abandons it (nothing hangs), --trace shows the viewer, %gpudebug replays a failure, and bad
requests are clear errors."""

from __future__ import annotations

import json

import pytest
from nbhelpers import outputs_text

pytestmark = pytest.mark.slow

KERNEL_CELL = """%%gpukernel --break 5 --thread 3
def k(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = i * 2

a = np.zeros(8, np.int64)
k[1, 8](a)
print('after the launch line', a.tolist())"""

CELLS = [
    "%load_ext gpunb\nimport numpy as np\nimport gpunb",
    KERNEL_CELL,
    "s = gpunb.debug_session()\nprint(s.view().headline())\n"
    "print([v.describe() for v in s.view().variables() if v.name == 'i'])\n"
    "s.next()\nprint('after next:', s.stop.reason)",
    KERNEL_CELL,  # run again while the first session is open
    "print('first:', s.state, '-', s.ended_by)\n"
    "t = gpunb.debug_session()\nprint('second:', t.state, t.stop.thread)\nt.run_to_end()\n"
    "print('result', a.tolist())",
    "%%gpukernel --trace --threads 0-1\ndef tr(a):\n    i = cuda.grid(1)\n    x = i * 3\n"
    "    a[i] = x\n\ntr[1, 4](a)",
    "%%gpukernel\ndef bad(a):\n    i = cuda.grid(1)\n    a[i + 1] = i\n\nbad[1, 8](a)",
    "%gpudebug",
    "u = gpunb.debug_session()\nprint('post-mortem:', u.stop.reason, u.stop.thread)\n"
    "u.run_to_end()",
    "%%gpukernel --break 99\ndef k2(a):\n    a[0] = 1\n\nk2[1, 1](a)",
    "%%gpukernel --break 3 --target cuda\ndef k3(a):\n    a[0] = 1",
]


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    import os

    import nbformat
    from nbclient import NotebookClient
    from nbhelpers import REPO

    tmp = tmp_path_factory.mktemp("debugger")
    env = {"GPUNB_TARGET": "cpu", "GPUNB_CACHE_DIR": str(tmp / "cache"), "GPUNB_NOTICES": "0",
           "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", ""))
                                         if p)}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
        NotebookClient(nb, timeout=240, kernel_name="python3", allow_errors=True,
                       store_widget_state=True, resources={"metadata": {"path": str(tmp)}}
                       ).execute()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return nb


def _errors(cell) -> list:
    return [o for o in cell.outputs if o["output_type"] == "error"]


def test_a_break_cell_stops_shows_the_widget_and_returns(executed):
    cell = executed.cells[1]
    assert not _errors(cell), outputs_text(cell)
    kinds = [o.get("data", {}) for o in cell.outputs if o["output_type"] == "display_data"]
    assert any("application/vnd.jupyter.widget-view+json" in d for d in kinds)
    text = outputs_text(cell)
    assert "after the launch line [0, 2, 4, 0, 0, 0, 0, 0]" in text  # paused at thread 3
    state = json.dumps(executed.metadata["widgets"])
    assert "gpunb-debugger" in state and "gpunb-dbg-next" in state


def test_the_open_session_is_driven_from_the_next_cell(executed):
    text = outputs_text(executed.cells[2])
    assert "'k' stopped at a breakpoint: thread (3, 0, 0) of block (0, 0, 0), line 5" in text
    assert "['i: int64 = 3']" in text and "after next: exit" in text


def test_running_the_cell_again_abandons_the_open_session(executed):
    assert not _errors(executed.cells[3]), outputs_text(executed.cells[3])
    text = outputs_text(executed.cells[4])
    assert "first: aborted - a new debug launch began" in text
    assert "second: stopped (3, 0, 0)" in text
    assert "result [0, 2, 4, 6, 8, 10, 12, 14]" in text


def test_a_trace_cell_shows_the_viewer(executed):
    cell = executed.cells[5]
    assert not _errors(cell), outputs_text(cell)
    text = outputs_text(cell)
    assert "<gpunb trace of 'tr':" in text and "step <b>1</b> of" in text
    assert "gpunb-trace" in json.dumps(executed.metadata["widgets"])


def test_gpudebug_replays_the_failed_launch(executed):
    assert _errors(executed.cells[6])  # the off-by-one fails
    cell = executed.cells[7]
    assert not _errors(cell), outputs_text(cell)
    # the static copy shows the state the session was left in: run to its end by the next cell
    assert "failed: KernelIndexError" in outputs_text(cell)
    assert "post-mortem: error (7, 0, 0)" in outputs_text(executed.cells[8])


def test_bad_requests_are_clear_errors(executed):
    error, = _errors(executed.cells[9])
    assert error["ename"] == "DebuggerError"
    assert "line 99 of Cell In[" in error["evalue"] and "is past its end" in error["evalue"]
    assert "lines with code: 3" in "\n".join(error["traceback"])
    text = outputs_text(executed.cells[10])  # IPython prints a UsageError, no traceback
    assert "UsageError" in text and "drop --target cuda" in text
