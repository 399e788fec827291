"""`numba.cuda.testing`: CUDATestCase and the skip decorators, answered for gpunb.

Facts the decorators ask about come from gpunb, not numba: ENABLE_CUDASIM is 0 (the CPU target is
not numba's simulator), the compute capability is the GPU's or, on the CPU target, the arch gpunb
compiles for (GPUNB_ARCH, sm_90 by default). gpunb links no cudadevrt or nvJitLink, so the
decorators that skip when those are missing never skip: whatever the test needs must work.
"""

from __future__ import annotations

import os
import platform
import unittest  # noqa: F401 - tests import unittest from here
from pathlib import Path

import numpy as np

from . import config
from .missing import NotProvidedByGpunb
from .support import TestCase

test_data_dir = Path(os.environ.get("NUMBA_CUDA_SUITE_TESTS", ".")) / "data"


def _compute_capability() -> tuple:
    import gpunb.cuda

    if gpunb.cuda.is_available():
        return tuple(gpunb.cuda.get_current_device().compute_capability)
    arch = os.environ.get("GPUNB_ARCH", "sm_90").removeprefix("sm_").rstrip("a")
    return (int(arch[:-1]), int(arch[-1]))


class CUDATestCase(TestCase):
    """numba-cuda's base test case: disables numba's occupancy and implicit-copy warnings
    for the test (settings gpunb does not read); FileCheck of numba's IR is not provided."""

    FLOAT16_RTOL = np.finfo(np.float16).eps
    _dump_failed_filechecks = False

    def setUp(self):
        self._low_occupancy_warnings = config.CUDA_LOW_OCCUPANCY_WARNINGS
        self._warn_on_implicit_copy = config.CUDA_WARN_ON_IMPLICIT_COPY
        config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
        config.CUDA_WARN_ON_IMPLICIT_COPY = 0

    def tearDown(self):
        config.CUDA_LOW_OCCUPANCY_WARNINGS = self._low_occupancy_warnings
        config.CUDA_WARN_ON_IMPLICIT_COPY = self._warn_on_implicit_copy

    def _filecheck(self, *args, **kwargs):
        raise NotProvidedByGpunb("FileCheck of numba-cuda's generated LLVM/PTX text is "
                                 "numba-cuda internals, not provided by gpunb")

    assertFileCheckAsm = _filecheck
    assertFileCheckLLVM = _filecheck
    assertFileCheckMatches = _filecheck


def skip_on_cudasim(reason: str):
    return unittest.skipIf(config.ENABLE_CUDASIM, reason)


def skip_unless_cudasim(reason: str):
    return unittest.skipUnless(config.ENABLE_CUDASIM, reason)


def skip_on_standalone_numba_cuda(fn):
    """Never skips: numba is installed beside gpunb (HAS_NUMBA is True)."""
    return fn


def _never(reason: str):
    return unittest.skipIf(False, reason)


skip_unless_conda_cudatoolkit = _never
skip_if_external_memmgr = _never
skip_if_nvjitlink_missing = _never
skip_on_nvjitlink_13_1_sm_120 = _never


def skip_under_cuda_memcheck(reason: str):
    return unittest.skipIf(os.environ.get("CUDA_MEMCHECK") is not None, reason)


def _nvdisasm_found() -> bool:
    try:
        from cuda import pathfinder

        return pathfinder.find_nvidia_binary_utility("nvdisasm") is not None
    except Exception:
        return False


def skip_without_nvdisasm(reason: str):
    return unittest.skipIf(not _nvdisasm_found(), reason)


def skip_with_nvdisasm(reason: str):
    return unittest.skipIf(_nvdisasm_found(), reason)


def skip_on_arm(reason: str):
    return unittest.skipIf(platform.processor().startswith(("arm", "aarch")), reason)


def skip_on_wsl2(reason: str):
    return unittest.skipIf("wsl2" in platform.release().lower(), reason)


def skip_if_cuda_includes_missing(fn):
    return fn


def skip_if_curand_kernel_missing(fn):
    return fn


def cc_X_or_above(major: int, minor: int) -> bool:  # noqa: N802 - numba's name
    return _compute_capability() >= (major, minor)


def _skip_unless_cc(major: int, minor: int):
    def decorate(fn):
        return unittest.skipUnless(cc_X_or_above(major, minor),
                                   f"requires cc >= {major}.{minor}")(fn)

    return decorate


skip_unless_cc_50 = _skip_unless_cc(5, 0)
skip_unless_cc_53 = _skip_unless_cc(5, 3)
skip_unless_cc_60 = _skip_unless_cc(6, 0)
skip_unless_cc_75 = _skip_unless_cc(7, 5)
skip_unless_cc_90 = _skip_unless_cc(9, 0)


def xfail_unless_cudasim(fn):
    return fn if config.ENABLE_CUDASIM else unittest.expectedFailure(fn)


def cudadevrt_missing() -> bool:
    return False


def skip_if_cudadevrt_missing(fn):
    return fn


class ForeignArray:
    """An array from "another library": only the CUDA array interface of a device array."""

    def __init__(self, arr):
        self._arr = arr
        self.__cuda_array_interface__ = arr.__cuda_array_interface__
