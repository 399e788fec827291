"""The notebook's glue to the cache layer, against a stand-in with the documented API.

The stand-in has exactly the public names the notebook uses (`events()`, `explain(kernel)`,
`clear([kernel])`, `cache_dir()`, `invalidate()`, `enabled()`, `set_enabled(on)`) and real,
typed CacheEvents, so these tests pin what the magics call and read.
"""

from __future__ import annotations

import copy
import importlib.machinery
import re
import sys
import types

import pytest
from nbhelpers import run_cell

from gpunb.foundation.events import CacheChange, CacheEvent

CHANGED = CacheChange("changed", "scale", "changed: device function `scale` defined at "
                      "Cell In[4], line 2", "gpu function", "Cell In[4], line 2")


@pytest.fixture
def fake_cache(monkeypatch, tmp_path):
    # the jit layer imports gpunb.cache's submodules (fingerprint, ...): load them while the
    # real package is in place, so that this file passes alone too (not only after others)
    import gpunb.jit.dispatcher  # noqa: F401
    import gpunb.jit.slow_path  # noqa: F401

    calls: dict = {"bump": 0, "clear": [], "explain": [], "enabled": True}
    log = [CacheEvent("saxpy", "void(float32[::1])", "cpu", "miss", None, "changed", (CHANGED,),
                      compile_ms=12.5, entry_bytes=2048)]
    cache = types.ModuleType("gpunb.cache")
    cache.__spec__ = importlib.machinery.ModuleSpec("gpunb.cache", None, is_package=True)
    cache.__path__ = []
    cache.invalidate = lambda: calls.__setitem__("bump", calls["bump"] + 1)
    cache.events = lambda: list(log)
    cache.cache_dir = lambda: str(tmp_path / "fake-cache")
    cache.enabled = lambda: calls["enabled"]
    cache.set_enabled = lambda on: calls.__setitem__("enabled", on)

    def explain(kernel):
        calls["explain"].append(kernel.__name__)
        return f"{kernel.__name__}: miss, changed: scale (Cell In[4], line 2)"

    def clear(kernel=None):
        calls["clear"].append(None if kernel is None else kernel.__name__)

    cache.explain, cache.clear = explain, clear
    monkeypatch.setitem(sys.modules, "gpunb.cache", cache)
    monkeypatch.setattr(sys.modules["gpunb"], "cache", cache, raising=False)
    return calls, log


def test_every_cell_bumps_the_epoch(shell, fake_cache):
    calls, _ = fake_cache
    before = calls["bump"]
    run_cell(shell, "x = 1")
    run_cell(shell, "y = 2")
    assert calls["bump"] == before + 2


def test_explain_clear_and_dir_call_the_cache(shell, fake_cache, capsys):
    calls, _ = fake_cache
    run_cell(shell, "%%gpukernel\ndef saxpy(v):\n    v[0] = 1.0\n")
    run_cell(shell, "%gpucache explain saxpy")
    assert "changed: scale (Cell In[4], line 2)" in capsys.readouterr().out
    assert calls["explain"] == ["saxpy"]
    run_cell(shell, "%gpucache clear saxpy")
    run_cell(shell, "%gpucache clear")
    assert calls["clear"] == ["saxpy", None]
    run_cell(shell, "%gpucache dir")
    assert capsys.readouterr().out.strip().endswith("fake-cache")


def test_explain_and_clear_take_a_modules_kernel_by_its_dotted_name(shell, fake_cache):
    """Kernels imported as `import kernels` are named `kernels.saxpy`: the magic once looked the
    whole text up as one name and said it was not a GPU function."""
    calls, _ = fake_cache
    run_cell(shell, "%%gpukernel\ndef saxpy(v):\n    v[0] = 1.0\n")
    run_cell(shell, "import types\nkernels = types.SimpleNamespace(saxpy=saxpy, n=3)")
    assert run_cell(shell, "%gpucache explain kernels.saxpy").success
    assert run_cell(shell, "%gpucache clear kernels.saxpy").success
    assert calls["explain"] == ["saxpy"] and calls["clear"] == ["saxpy"]
    for wrong in ("kernels.n", "kernels.nothing", "nothing.saxpy"):
        result = run_cell(shell, f"%gpucache explain {wrong}")
        assert "is not a GPU function" in str(result.error_in_exec), wrong


def test_cache_events_reach_the_comm_and_the_status_table(shell, fake_cache):
    from gpunb.notebook import comm
    from gpunb.notebook.cache_panel import describe_event

    _, log = fake_cache
    before = len(comm.sent)
    run_cell(shell, "z = 3")
    log.append(CacheEvent("saxpy", "void(float32[::1])", "cpu", "hit", "memory", None,
                          time_ms=0.01))
    run_cell(shell, "z = 4")
    messages = [m for m in comm.sent[before:] if m["type"] == "cache_events"]
    (record,) = messages[-1]["events"]
    assert record == log[1].to_json() and record["outcome"] == "hit (memory)"
    assert describe_event(log[0]) == ("miss (changed: scale)", CHANGED.text, "2.0 KiB")
    assert describe_event(log[1]) == ("hit (memory)", "", "0 B")


def test_gpucache_on_and_off_call_the_cache(shell, fake_cache, capsys):
    calls, _ = fake_cache
    run_cell(shell, "%gpucache off")
    assert calls["enabled"] is False
    run_cell(shell, "%gpucache status")
    assert "cache off" in capsys.readouterr().out
    run_cell(shell, "%gpucache on")
    assert calls["enabled"] is True


@pytest.mark.parametrize(("line", "message"), [
    ("stauts", "%gpucache stauts: unknown command"),
    ("status --lve", "%gpucache status: status takes only --live; got --lve"),
    ("dir /tmp/elsewhere", "%gpucache dir: dir takes no arguments; got /tmp/elsewhere"),
    ("off now", "%gpucache off: off takes no arguments; got now"),
    ("on please", "%gpucache on: on takes no arguments"),
    ("explain", "which kernel? e.g. %gpucache explain saxpy"),
    ("explain saxpy extra", "explain takes one kernel name; got saxpy extra"),
    ("clear saxpy --all", "clear takes one kernel name"),
    ("clear nosuch", "'nosuch' is not a GPU function in this notebook"),
])
def test_a_mistyped_gpucache_line_is_one_usage_error_and_does_nothing(shell, fake_cache, line,
                                                                      message):
    """A typo'd option or a stray word was ignored: `%gpucache clear saxpy --all` cleared one
    kernel, `%gpucache status --lve` showed the static table, `off now` switched it off."""
    from IPython.core.error import UsageError

    calls, _ = fake_cache
    run_cell(shell, "%%gpukernel\ndef saxpy(v):\n    v[0] = 1.0\n")
    before = copy.deepcopy(calls)
    with pytest.raises(UsageError, match=re.escape(message)) as info:
        shell.run_line_magic("gpucache", line)
    assert "usage: %gpucache status [--live]" in str(info.value)
    assert calls == before  # nothing was cleared, explained or switched


def test_explain_of_a_device_function_names_the_kernels_it_is_compiled_into(shell, capsys):
    """A device function has no cache event of its own: explain said only "not launched or
    compiled", although `%gpucache status` showed it compiled into saxpy."""
    run_cell(shell, "import numpy as np")
    run_cell(shell, "%%gpukernel\ndef scale(x):\n    return x * 2\n\n"
                    "def saxpy(out):\n    out[0] = scale(out[0])\n")
    assert run_cell(shell, "out = np.ones(1)\nsaxpy[1, 1](out)").success
    capsys.readouterr()
    assert run_cell(shell, "%gpucache explain scale").success
    text = capsys.readouterr().out
    assert "a device function has none of its own" in text
    assert "compiled into: saxpy (%gpucache explain saxpy shows its cache events)" in text


def test_explain_of_a_device_function_shows_no_event_of_a_kernel_of_its_name():
    """A kernel `scale` compiled earlier (another cell, another test) leaves events under that
    name; a device function `scale` has none of its own and must not be shown them."""
    import numpy as np

    import gpunb
    from gpunb import cuda

    def scale(out):
        out[0] = 1.0

    cuda.jit(scale)[1, 1](np.zeros(1))  # a kernel named scale, compiled and launched

    def scale(x):  # noqa: F811 - the same name, now a function kernels call
        return x * 2

    def caller_of(helper):
        def caller(out):
            out[0] = helper(out[0])
        return cuda.jit(caller)

    for helper in (cuda.jit(device=True)(scale), cuda.jit(scale)):  # %%gpukernel's: the latter
        caller_of(helper)[1, 1](np.ones(1))
        text = gpunb.cache.explain(helper)
        assert "last event" not in text and "a device function has none of its own" in text


def test_ufuncs_reductions_and_fused_functions_show_in_gpucache(shell, capsys):
    """cuda.vectorize, cuda.reduce and gpunb.fuse compile kernels through the cache, yet
    `%gpucache status` said 'no GPU functions in this namespace yet' and `%gpucache explain
    addc` 'is not a GPU function in this notebook': each now shows the kernels it compiled."""
    run_cell(shell, "import numpy as np\nC = 1.0")
    run_cell(shell, "@cuda.vectorize(['float64(float64)'])\ndef addc(x):\n    return x + C")
    run_cell(shell, "red = cuda.reduce(lambda a, b: a + b)")
    capsys.readouterr()
    assert not run_cell(shell, "%gpucache explain addc").success  # nothing compiled yet
    assert "has compiled no kernel yet: call it" in capsys.readouterr().err
    assert run_cell(shell, "print(addc(np.ones(2)), red(np.ones(8)))").success
    assert run_cell(shell, "@gpunb.fuse\ndef twice(x):\n    return x * 2\n"
                           "print(twice(np.ones(2)))").success
    capsys.readouterr()
    assert run_cell(shell, "%gpucache status").success
    status = capsys.readouterr().out
    for row in ("addc: vectorized_addc", "red: reduce__lambda__float64", "twice: twice"):
        assert row in status, status
    run_cell(shell, "C = 2.0")
    assert run_cell(shell, "print(addc(np.ones(2)))").success
    capsys.readouterr()
    assert run_cell(shell, "%gpucache explain addc").success
    text = capsys.readouterr().out
    assert text.startswith("addc: vectorized_addc: defined at")
    assert "why: changed: global `C` defined at module __main__ (read via __core__): " \
           "1.0 -> 2.0" in text
    assert run_cell(shell, "%gpucache clear red").success
    assert "cleared the cache entries of red" in capsys.readouterr().out
