"""`numba.cuda.config` / `numba.cuda.core.config`: numba's settings, seen by the tests only.

Tests read and override these (ENABLE_CUDASIM, CUDA_LOW_OCCUPANCY_WARNINGS, ...). gpunb has its
own configuration (gpunb/config.py) and reads none of them: a test that expects a numba setting
to change gpunb's behaviour fails, which is the honest answer. ENABLE_CUDASIM is 0: gpunb's CPU
target is not numba's simulator, so simulator-only tests skip and the others run.
"""

from __future__ import annotations

from numba.core import config as _numba_config

for _name in dir(_numba_config):
    if not _name.startswith("__"):
        globals()[_name] = getattr(_numba_config, _name)

ENABLE_CUDASIM = 0
CUDA_ENABLE_NRT = 0
CUDA_MEMORY_MANAGER = "default"
CUDA_LOW_OCCUPANCY_WARNINGS = 1
CUDA_WARN_ON_IMPLICIT_COPY = 1
CUDA_ARRAY_INTERFACE_SYNC = 1
CUDA_DEBUGINFO_DEFAULT = 0
CUDA_ENABLE_PYNVJITLINK = 0
CUDA_DEBUG_POLY = 0
CUDA_DEBUG_POLY_USE_TYPED_CONST = 0
