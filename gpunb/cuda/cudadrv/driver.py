"""numba.cuda.cudadrv.driver under gpunb: streams, events and the driver's error class by numba's
names. The driver binding itself (numba's `driver` object) is gpunb's runtime and not exposed."""

from __future__ import annotations

from gpunb.backends.cuda.driver import CudaDriverError
from gpunb.runtime.streams import Event, Stream  # noqa: F401 - numba's classes

CudaAPIError = CudaDriverError  # a failing driver call, with its CUresult in `.code`


def _have_nvjitlink() -> bool:
    """Whether nvJitLink (LTO-IR linking) can be loaded; numba-cuda's tests ask before
    testing LTO."""
    try:
        from cuda.bindings import nvjitlink

        nvjitlink.version()
    except Exception:  # noqa: BLE001 - not installed, or its library does not load
        return False
    return True
