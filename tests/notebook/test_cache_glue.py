"""The notebook's glue to the cache layer, against a stand-in with the documented API.

The stand-in has exactly the public names issue 4 defines (`events()`, `explain(kernel)`,
`clear([kernel])`, `cache_dir()`, `epoch.bump()`), so these tests pin what the magics call.
"""

from __future__ import annotations

import dataclasses
import importlib.machinery
import sys
import types

import pytest
from nbhelpers import run_cell


@dataclasses.dataclass(frozen=True)
class Event:
    function: str
    signature: str
    kind: str
    where: str
    reason: str
    ms: float


@pytest.fixture
def fake_cache(monkeypatch, tmp_path):
    calls: dict = {"bump": 0, "clear": [], "explain": []}
    log = [Event("saxpy", "(float32[::1],)", "miss", "", "changed: scale (Cell In[4], line 2)",
                 12.5)]
    cache = types.ModuleType("gpunb.cache")
    cache.__spec__ = importlib.machinery.ModuleSpec("gpunb.cache", None, is_package=True)
    cache.__path__ = []
    epoch = types.ModuleType("gpunb.cache.epoch")
    epoch.__spec__ = importlib.machinery.ModuleSpec("gpunb.cache.epoch", None)
    epoch.bump = lambda: calls.__setitem__("bump", calls["bump"] + 1)
    cache.epoch = epoch
    cache.events = lambda: list(log)
    cache.cache_dir = lambda: str(tmp_path / "fake-cache")

    def explain(kernel):
        calls["explain"].append(kernel.__name__)
        return f"{kernel.__name__}: miss, changed: scale (Cell In[4], line 2)"

    def clear(kernel=None):
        calls["clear"].append(None if kernel is None else kernel.__name__)

    cache.explain, cache.clear = explain, clear
    monkeypatch.setitem(sys.modules, "gpunb.cache", cache)
    monkeypatch.setitem(sys.modules, "gpunb.cache.epoch", epoch)
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


def test_cache_events_reach_the_comm_and_the_status_table(shell, fake_cache):
    from gpunb.notebook import comm
    from gpunb.notebook.cache_panel import describe_event

    _, log = fake_cache
    before = len(comm.sent)
    run_cell(shell, "z = 3")
    log.append(Event("saxpy", "(float32[::1],)", "hit", "memory", "", 0.01))
    run_cell(shell, "z = 4")
    messages = [m for m in comm.sent[before:] if m["type"] == "cache_events"]
    assert messages[-1]["events"] == [{"function": "saxpy", "signature": "(float32[::1],)",
                                       "kind": "hit", "where": "memory", "reason": "",
                                       "ms": 0.01}]
    assert describe_event(log[0]) == ("miss", "changed: scale (Cell In[4], line 2)", "")
    assert describe_event(log[1])[0] == "hit(memory)"
