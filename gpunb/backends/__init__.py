"""The targets kernels run on, each one folder behind backends/base.py's interface.

`get("cuda")` and `get("cpu")` return the backend objects from an explicit table: nothing is
registered by importing anything, and a backend's module is imported on first use only.
"""

from __future__ import annotations

import importlib

from gpunb.backends.base import Backend

# name -> the module whose BACKEND is that backend
_TABLE = {"cuda": "gpunb.backends.cuda.backend", "cpu": "gpunb.backends.cpu.backend"}

NAMES = tuple(_TABLE)


def get(name: str) -> Backend:
    """The backend called `name` ("cuda" or "cpu")."""
    module = _TABLE.get(name)
    if module is None:
        raise ValueError(f"unknown backend {name!r}: expected one of {', '.join(_TABLE)}")
    return importlib.import_module(module).BACKEND


__all__ = ["NAMES", "Backend", "get"]
