"""Fixtures for the cache tests: a private cache directory, cells, module files on sys.path."""

from __future__ import annotations

import importlib
import os
import sys
import textwrap
import time

import pytest


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """GPUNB_CACHE_DIR in a fresh temporary folder, the cache on, a fresh default KernelCache."""
    from gpunb import cache

    folder = tmp_path / "gpunb-cache"
    monkeypatch.setenv("GPUNB_CACHE_DIR", str(folder))
    monkeypatch.delenv("GPUNB_CACHE", raising=False)
    monkeypatch.delenv("GPUNB_CACHE_MAX_BYTES", raising=False)
    monkeypatch.setattr(cache, "_default", [None])
    return folder


@pytest.fixture
def kernel_cache(cache_dir):
    from gpunb.cache import KernelCache

    return KernelCache(str(cache_dir))


@pytest.fixture
def cells():
    from cache_support import Cells, GpuFunction, jit

    return Cells(jit=jit, GpuFunction=GpuFunction)


@pytest.fixture
def modules(tmp_path, monkeypatch):
    """write(name, text) writes tmp_path/pkgs/<name>.py and returns the imported module;
    edit(name, text) rewrites it (with a newer mtime, so importlib and linecache see it)."""
    root = tmp_path / "pkgs"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    written: list[str] = []

    class Modules:
        path = root

        def write(self, name: str, text: str):
            (root / f"{name}.py").write_text(textwrap.dedent(text))
            written.append(name)
            importlib.invalidate_caches()
            return importlib.import_module(name)

        def edit(self, name: str, text: str) -> None:
            path = root / f"{name}.py"
            before = path.stat().st_mtime_ns
            path.write_text(textwrap.dedent(text))
            later = max(before + 2_000_000_000, time.time_ns())
            os.utime(path, ns=(later, later))

    yield Modules()
    for name in written:
        sys.modules.pop(name, None)
