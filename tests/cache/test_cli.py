"""`python -m gpunb.cache status|clear|prune|dir`, run as a user would, in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cache_support import MiniDispatcher

from gpunb.cache import KernelCache

REPO = Path(__file__).resolve().parents[2]


def cli(cache_dir, *args) -> str:
    env = dict(os.environ, GPUNB_CACHE_DIR=str(cache_dir), PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "gpunb.cache", *args], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _fill(cells, cache_dir) -> None:
    kc = KernelCache(str(cache_dir))
    for name, body in (("alpha", "x[0]"), ("beta", "x[1]"), ("gamma", "x[2]")):
        cells.run(f"def {name}(out, x):\n    out[0] = {body}\n")
        MiniDispatcher(cells.ns[name], kc).launch()


def test_dir(cache_dir):
    assert cli(cache_dir, "dir").strip() == str(cache_dir)


def test_status_clear_and_prune(cells, cache_dir):
    assert "(no entries)" in cli(cache_dir, "status")
    _fill(cells, cache_dir)
    text = cli(cache_dir, "status")
    header = text.splitlines()[1].split()
    assert header == ["function", "signature", "target", "size", "last", "used", "defined", "at"]
    rows = {line.split()[0]: line for line in text.splitlines()[2:-1]}
    assert set(rows) == {"alpha", "beta", "gamma"}
    assert "(float32[::1], float32)" in rows["alpha"] and "Cell In[" in rows["alpha"]
    assert text.splitlines()[-1].startswith("3 entries")

    assert cli(cache_dir, "clear", "beta").strip() == "removed 1 entry of beta"
    assert "beta" not in cli(cache_dir, "status")
    assert cli(cache_dir, "prune").strip() == "pruned 0 entries"
    assert cli(cache_dir, "prune", "--max-bytes", "1").strip() == "pruned 2 entries"
    _fill(cells, cache_dir)
    assert cli(cache_dir, "clear").strip() == "removed 3 entries"
    assert "(no entries)" in cli(cache_dir, "status")


def test_status_flags_corrupt_entries(cells, cache_dir):
    _fill(cells, cache_dir)
    victim = next(p for p in cache_dir.iterdir() if p.suffix == ".json")
    victim.write_text("{")
    assert "CORRUPT" in cli(cache_dir, "status")


def test_settings_that_make_no_sense_are_refused_not_acted_on(cells, cache_dir, monkeypatch):
    """prune(-1) (or --max-bytes -1) removed every entry; set_enabled("no") turned the cache on;
    explain(None) answered with an AttributeError's text as if it were an account."""
    from gpunb import cache

    monkeypatch.setattr(cache, "_default", [None])
    _fill(cells, cache_dir)
    for wrong in (-1, 1.5, True):
        with pytest.raises(ValueError, match="max_bytes must be a size in bytes"):
            cache.prune(wrong)
    env = dict(os.environ, GPUNB_CACHE_DIR=str(cache_dir), PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "gpunb.cache", "prune", "--max-bytes", "-1"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "0 or more" in proc.stderr
    assert cli(cache_dir, "status").splitlines()[-1].startswith("3 entries")
    with pytest.raises(TypeError, match="True, False or None"):
        cache.set_enabled("no")
    with pytest.raises(TypeError, match="a GPU function or its name"):
        cache.explain(None)
