"""numba.cuda.cudadrv.nvrtc under gpunb: the two answers numba-cuda's users (and its tests) ask of
it: which architecture code for a device is compiled for, and NVRTC's version."""

from __future__ import annotations


def find_closest_arch(cc: tuple) -> tuple:
    """The compute capability gpunb compiles for on a device of `cc`: `cc` itself when LLVM's
    NVPTX backend knows it, else the newest it knows below it."""
    from gpunb.backends.cuda.target import supported_arches

    known = [a for a in supported_arches() if a <= tuple(cc[:2])]
    if not known:
        raise ValueError(f"no architecture gpunb compiles for is at or below {tuple(cc)}")
    return max(known)


def _get_nvrtc_version() -> tuple:
    """NVRTC's (major, minor), (0, 0) when NVRTC cannot be loaded."""
    from gpunb.backends.cuda import nvrtc

    try:
        return tuple(nvrtc.version())
    except Exception:  # noqa: BLE001 - no NVRTC library here
        return (0, 0)


get_version = _get_nvrtc_version
