"""The cell scenarios through a real IPython shell with `%load_ext gpunb` (cells, epoch hook)."""

from __future__ import annotations

import pytest

pytest.importorskip("IPython")


@pytest.fixture
def shell(cache_dir, monkeypatch):
    from cache_support import MiniDispatcher, jit
    from IPython.core.interactiveshell import InteractiveShell

    from gpunb.cache import KernelCache

    monkeypatch.setenv("GPUNB_TARGET", "cpu")
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "gpunb")
    kc = KernelCache(str(cache_dir))
    ip.user_ns.update(jit=jit, kernel=lambda f: MiniDispatcher(f, kc))
    yield ip
    ip.run_line_magic("unload_ext", "gpunb")
    InteractiveShell.clear_instance()


def run(ip, code: str):
    result = ip.run_cell(code, store_history=True)
    result.raise_error()
    return result


def test_cells_in_a_real_shell(shell):
    from gpunb.cache import epoch

    ns = shell.user_ns
    run(shell, "OFFSET = 1.0\nUNREAD = 0")
    helper_cell = run(shell, "@jit\ndef helper(v):\n    return v + OFFSET").execution_count
    run(shell, "def saxpy(out, x):\n    out[0] = helper(x[0])\nk = kernel(saxpy)\nk.launch()")
    k = ns["k"]
    assert k.compiles == 1 and k.event.reason == "new"
    assert k.event.defined_at.startswith("Cell In[")

    before = epoch.current()
    run(shell, "k.launch()")
    assert epoch.current() > before  # the notebook's post_run_cell hook bumped the epoch
    assert k.compiles == 1

    cell = run(shell, "@jit\ndef helper(v):\n    return v + 2 * OFFSET").execution_count
    assert cell != helper_cell
    run(shell, "k.launch()")
    assert k.compiles == 2
    assert k.event.why == f"changed: device function `helper` defined at Cell In[{cell}], line 1"

    run(shell, "# reformatted\n@jit\ndef helper(v):   # same\n\n    return (v + 2 * OFFSET)")
    run(shell, "UNREAD = 1")
    run(shell, "k.launch()")
    assert k.compiles == 2

    run(shell, "OFFSET = 3.0")
    run(shell, "k.launch()")
    assert k.compiles == 3
    assert k.event.why == "changed: global `OFFSET` defined at module __main__ (read via " \
                             "helper): 1.0 -> 3.0"


def test_an_in_place_write_in_one_cell_is_seen_by_launches_in_later_cells(shell):
    """A global array is frozen when a kernel compiles (numba's meaning); the epoch that every
    cell ends re-reads it, so the next cell's launch recompiles with the new values."""
    import numpy as np

    import gpunb
    from gpunb import cuda

    shell.user_ns.update(np=np, cuda=cuda)
    gpunb.set_target("cpu")
    try:
        run(shell, "TABLE = np.array([1.0, 2.0], dtype=np.float32)\n"
                   "@cuda.jit\ndef look(out):\n    out[cuda.threadIdx.x] = TABLE[1]\n"
                   "out = np.zeros(2, np.float32)\nlook[1, 2](out)")
        assert shell.user_ns["out"].tolist() == [2.0, 2.0]
        run(shell, "look[1, 2](out)\nTABLE[1] = 7.0\nlook[1, 2](out)")  # one cell: frozen
        assert shell.user_ns["out"].tolist() == [2.0, 2.0]
        run(shell, "look[1, 2](out)")
        assert shell.user_ns["out"].tolist() == [7.0, 7.0]
        (info,) = shell.user_ns["look"].cache_info()
        assert info["event"].why == ("changed: global `TABLE` defined at module __main__: "
                                        "array float32 [1.0, 2.0] -> array float32 [1.0, 7.0]")
    finally:
        gpunb.set_target(None)
