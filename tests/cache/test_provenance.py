"""Provenance: events, explain(), the public API surface and its import cost."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cache_support import MiniDispatcher, jit

from gpunb import cache
from gpunb.cache.provenance import CacheEvent, events, last_event, record

REPO = Path(__file__).resolve().parents[2]


def test_event_log_filters_and_is_bounded():
    for i in range(3000):
        record(CacheEvent("bounded_fn", "()", "cpu", "miss", None, "new", timestamp=float(i)))
    mine = events("bounded_fn")
    assert 0 < len(mine) <= 2048 and mine[-1].timestamp == 2999.0
    assert last_event("bounded_fn") is mine[-1]
    assert last_event("never_seen_function") is None
    record(CacheEvent("outer.<locals>.inner", "()", "cpu", "hit", "memory", ""))
    assert last_event("inner").function == "outer.<locals>.inner"


def test_event_describe():
    hit = CacheEvent("k", "()", "cpu", "hit", "disk", "", time_ms=1.234)
    miss = CacheEvent("k", "()", "cpu", "miss", None, "changed: global `N`", compile_ms=50.0)
    assert hit.describe() == "hit (disk) in 1.23 ms"
    assert miss.describe() == "miss (changed: global `N`), compiled in 50.0 ms"


def test_explain_tells_the_whole_story(cells, cache_dir, monkeypatch):
    kc = cache.default_cache()
    cells.ns["N"] = 4
    cells.run("def scale(v):\n    return v * N\n")
    scale_cell = cells.last_label
    cells.ns["scale"] = jit(cells.ns["scale"])
    cells.run("def saxpy(out, x, a=2.0):\n    out[0] = scale(x[0]) * a\n")
    k = MiniDispatcher(cells.ns["saxpy"], kc)
    k.launch()
    text = cache.explain(k)
    assert text.startswith(f"saxpy: defined at {cells.last_label}, line 1")
    assert "last event: miss (new)" in text
    assert "key parts:" in text and "argument types   (float32[::1], float32)" in text
    assert f"gpu function scale  [{scale_cell}, line 1]" in text
    assert "- global N = 4  [module __main__]" in text
    assert "- default a = 2.0" in text

    cells.run("def scale(v):\n    return v * N + 1\n")
    cells.ns["scale"] = jit(cells.ns["scale"])
    text = cache.explain(k)  # not launched yet: the pending change is named
    assert "changed since the last compile" in text
    assert f"changed: device function `scale` defined at {cells.last_label}, line 1" in text
    k.launch()
    text = cache.explain(k)
    assert "last event: miss (changed: device function `scale`" in text
    assert "changed since the last compile" not in text


def test_explain_before_any_event_and_by_name(cells, cache_dir):
    cells.run("def lonely(out):\n    out[0] = 1\n")
    text = cache.explain(jit(cells.ns["lonely"]))
    assert "no cache event yet" in text and "depends on:" in text
    assert cache.explain("no_such_kernel").startswith("no_such_kernel:")


def test_public_api(cells, cache_dir):
    assert cache.cache_dir() == str(cache_dir)
    kc = cache.default_cache()
    assert kc is cache.default_cache() and kc.directory == str(cache_dir)
    cells.run("def clearme(out):\n    out[0] = 1\n")
    k = MiniDispatcher(cells.ns["clearme"], kc)
    k.launch()
    assert any(e.function == "clearme" for e in cache.events())
    assert cache.clear(k) == 1  # by the GPU function object, as %gpucache clear NAME passes it
    assert not [e for e in kc.disk.entries() if e.function == "clearme"]
    before = cache.epoch.current()
    assert cache.invalidate() == before + 1
    assert cache.prune() == 0


def test_import_is_cheap():
    code = ("import sys, gpunb.cache, gpunb.cache.epoch, gpunb.cache.fingerprint\n"
            "heavy = [m for m in ('numpy', 'llvmlite', 'llvmlite.binding', 'gpunb.compiler.infer')"
            " if m in sys.modules]\n"
            "print(heavy)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(REPO)), check=True).stdout
    assert out.strip() == "[]"
