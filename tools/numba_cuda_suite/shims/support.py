"""`numba.cuda.tests.support`: numba's own test helpers (numba.tests.support), except that
override_config patches the config the tests see (shims.config), not real numba's."""

from __future__ import annotations

import contextlib
import unittest

import numpy as np
from numba.tests.support import (  # noqa: F401 - re-exported for the upstream tests
    CheckWarningsMixin,
    MemoryLeakMixin,
    TestCase,
    captured_stderr,
    captured_stdout,
    ignore_internal_warnings,
    import_dynamic,
    linux_only,
    run_in_subprocess,
    skip_unless_cffi,
    temp_directory,
    windows_only,
)

from . import config

# numba-cuda's support module's numpy facts (cudadrv/test_cuda_ndarray imports them)
IS_NUMPY_2 = tuple(int(p) for p in np.__version__.split(".")[:2]) >= (2, 0)
skip_if_numpy_2 = unittest.skipIf(IS_NUMPY_2, "Not supported on numpy 2.0+")


@contextlib.contextmanager
def override_config(name: str, value):
    """Set `numba.cuda.config.<name>` for the block; gpunb itself reads none of these."""
    missing = object()
    old = getattr(config, name, missing)
    setattr(config, name, value)
    try:
        yield
    finally:
        if old is missing:
            delattr(config, name)
        else:
            setattr(config, name, old)
