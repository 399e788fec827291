"""numba.cuda.cudadrv.runtime under gpunb: the CUDA version, as numba-cuda's runtime reports it."""

from __future__ import annotations


def get_version() -> tuple:
    """(major, minor) of the CUDA driver API in use ((0, 0) without a driver)."""
    from gpunb.backends.cuda import driver

    try:
        return tuple(driver.driver_version())[:2]
    except Exception:  # noqa: BLE001 - no CUDA driver here
        return (0, 0)
