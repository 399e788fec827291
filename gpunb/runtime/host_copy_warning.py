"""The performance warning for host arrays a kernel launch copies to the GPU and back (the
packer's copies, runtime/packing.py), pointing at the user's line."""

from __future__ import annotations

import sys
import warnings

from gpunb.foundation.errors import PerformanceWarning


def warn_host_copy(kernel: str | None) -> None:
    """numba-cuda's NumbaPerformanceWarning text first (users grep for it), then gpunb's
    advice; the packer shows it once per kernel (numba-cuda warns at every launch)."""
    from gpunb.foundation import config

    if not config.notices_enabled():
        return
    name = f"'{kernel}'" if kernel else "a kernel"
    warnings.warn(
        "Host array used in CUDA kernel will incur copy overhead to/from device: host numpy "
        f"arrays passed to {name} are copied to the GPU and back on every launch; move them "
        "once with cuda.to_device(ary) and copy results back with .copy_to_host() (shown once "
        "per kernel)", PerformanceWarning, stacklevel=_user_stacklevel())


def _user_stacklevel() -> int:
    """The stacklevel of the first frame outside gpunb, so the warning points at user code."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("gpunb"):
        frame = frame.f_back
        level += 1
    return level
