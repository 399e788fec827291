"""numba.cuda.types under gpunb: the kernel types by numba's names, for signatures and dtypes
(`from gpunb.cuda.types import float32, void, UniTuple`)."""

from __future__ import annotations

from gpunb.foundation import types as _types


def __getattr__(name: str):
    if name.startswith("_"):
        raise AttributeError(name)
    try:
        return getattr(_types, name)
    except AttributeError:
        raise AttributeError(f"module 'gpunb.cuda.types' has no attribute {name!r}") from None


def __dir__() -> list:
    return sorted(n for n in dir(_types) if not n.startswith("_"))
