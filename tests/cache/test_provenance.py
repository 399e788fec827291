"""Provenance: events, explain(), the public API surface and its import cost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cache_support import MiniDispatcher, jit

from gpunb import cache
from gpunb.cache.provenance import events, last_event, record
from gpunb.foundation import events as gpunb_events
from gpunb.foundation.events import CacheChange, CacheEvent, CacheKind, CacheReason, CacheSource

REPO = Path(__file__).resolve().parents[2]


def test_event_log_filters_and_is_bounded():
    for i in range(3000):
        record(CacheEvent("bounded_fn", "()", "cpu", "miss", None, "new", timestamp=float(i)))
    mine = events("bounded_fn")
    assert 0 < len(mine) <= 2048 and mine[-1].timestamp == 2999.0
    assert last_event("bounded_fn") is mine[-1]
    assert last_event("never_seen_function") is None
    record(CacheEvent("outer.<locals>.inner", "()", "cpu", "hit", "memory", None))
    assert last_event("inner").function == "outer.<locals>.inner"


def test_event_spelling_and_structure():
    """One spelling per provenance kind: `hit (disk)`, `miss (changed: N)`; enums compare as the
    words users type, and the reason's sentence and subject travel with the event."""
    hit = CacheEvent("k", "void(float32[::1])", "cpu", "hit", "disk", None, time_ms=2.91)
    change = CacheChange("changed", "N", "changed: global `N` defined at module m: 1 -> 2",
                         "global", "module m", "1", "2")
    miss = CacheEvent("k", "void(float32[::1])", "cpu", "miss", None, "changed", (change,),
                      compile_ms=50.0)
    kept = CacheEvent("k", "()", "cpu", "hit", "memory", CacheReason.RECHECKED)
    assert hit.kind is CacheKind.HIT and hit.source is CacheSource.DISK and hit.reason is None
    assert miss.kind == "miss" and miss.reason is CacheReason.CHANGED
    assert (hit.outcome, miss.outcome, kept.outcome) == (
        "hit (disk)", "miss (changed: N)", "hit (memory, re-checked)")
    assert repr(hit) == "hit (disk) k void(float32[::1]) 2.9 ms"
    assert str(miss) == "miss (changed: N) k void(float32[::1]) 50.0 ms"
    assert miss.why == miss.detail == change.text and miss.changes[0].after == "2"
    record = miss.to_json()
    assert record["outcome"] == "miss (changed: N)" and record["reason"] == "changed"
    assert json.loads(json.dumps(record)) == record


def test_every_decision_is_published_to_subscribers(cells, cache_dir):
    seen = []
    with gpunb_events.subscribe(gpunb_events.EventKind.CACHE, seen.append):
        cells.run("def published(out):\n    out[0] = 1\n")
        MiniDispatcher(cells.ns["published"], cache.default_cache()).launch()
    cells.run("def published(out):\n    out[0] = 2\n")
    MiniDispatcher(cells.ns["published"], cache.default_cache()).launch()  # not subscribed
    mine = [e for e in seen if e.function == "published"]
    assert [e.outcome for e in mine] == ["miss (new)"]
    assert last_event("published").outcome == "miss (changed: published)"  # logged all the same


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
    assert "last event: miss (changed: scale), compiled in" in text
    assert f"why: changed: device function `scale` defined at {cells.last_label}" in text
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
