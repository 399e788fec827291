"""`numba.cuda.cudadrv.driver`: the few names tests use as host API, mapped to gpunb's.

`Stream` is gpunb's stream class (tests patch its `synchronize` to see that consuming a CUDA
array interface syncs the producer's stream). Everything else is driver internals: Missing.
"""

from __future__ import annotations

from .missing import Missing, gpunb_attr

Stream = gpunb_attr("numba.cuda.cudadrv.driver.Stream", "gpunb.cuda.Stream")


def _have_nvjitlink() -> bool:
    """Asked by skip conditions: gpunb links nothing through nvJitLink."""
    return False


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return Missing(f"numba.cuda.cudadrv.driver.{name}")
