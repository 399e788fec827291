"""The epoch: a bump invalidates every watch list; module files: stat triggers, content decides."""

from __future__ import annotations

import importlib
import os

import pytest

from gpunb.cache import collect, epoch, invalidate, still_valid


def test_bump_and_watch_entry():
    before = epoch.current()
    entry = epoch.watch_entry()
    assert still_valid((entry,))
    assert invalidate() == before + 1 == epoch.current()
    assert not still_valid((entry,))
    assert still_valid((epoch.watch_entry(),))


def test_importing_the_cache_installs_nothing_global():
    import builtins

    assert importlib.reload is importlib.__dict__["reload"]
    assert builtins.__import__.__module__ == "builtins"


def test_edited_module_file_is_reported_once_and_bumps_the_epoch(modules):
    mod = modules.write("watched_mod", """
        from cache_support import jit

        @jit
        def kern(out):
            out[0] = 1
    """)
    collect(mod.kern)  # tracks watched_mod.py
    path = str(modules.path / "watched_mod.py")
    invalidate()
    assert path not in epoch.check_module_files()

    # touched, not edited: stat differs, content decides
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    invalidate()
    assert path not in epoch.check_module_files()

    modules.edit("watched_mod", """
        from cache_support import jit

        @jit
        def kern(out):
            out[0] = 2
    """)
    invalidate()
    before = epoch.current()
    with pytest.warns(epoch.StaleSourceWarning, match="importlib.reload"):
        assert path in epoch.check_module_files()
    assert epoch.current() == before + 1  # kernels re-check their dependencies
    assert path in epoch.check_module_files()  # same epoch: no second stat pass, no warning

    # after a reload the new code objects re-baseline the file
    mod = importlib.reload(mod)
    collect(mod.kern)
    invalidate()
    assert path not in epoch.check_module_files()


def test_check_runs_once_per_epoch(modules, monkeypatch):
    mod = modules.write("once_mod", """
        from cache_support import jit

        @jit
        def kern(out):
            out[0] = 1
    """)
    collect(mod.kern)
    calls = []
    real_stat = os.stat
    monkeypatch.setattr(epoch.os, "stat", lambda p, *a, **k: calls.append(p) or real_stat(p))
    invalidate()
    epoch.check_module_files()
    epoch.check_module_files()
    epoch.check_module_files()
    assert calls.count(str(modules.path / "once_mod.py")) == 1
