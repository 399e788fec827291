"""`numba.cuda.config` / `numba.cuda.core.config`: numba's settings, seen by the tests only.

Tests read and override these (ENABLE_CUDASIM, CUDA_LOW_OCCUPANCY_WARNINGS, ...). gpunb has its
own configuration (gpunb/foundation/config.py) and reads none of them, except where gpunb has the
same setting under its own name (SETTINGS): setting the numba name sets gpunb's, as a user who
ported their code would set gpunb's. A test that expects another numba setting to change
gpunb's behaviour fails, which is the honest answer. ENABLE_CUDASIM is 0: gpunb's CPU
target is not numba's simulator, so simulator-only tests skip and the others run.
"""

from __future__ import annotations

import os
import sys
import types

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

# numba's setting -> gpunb's environment variable of the same meaning
SETTINGS = {"CUDA_LOW_OCCUPANCY_WARNINGS": "GPUNB_LOW_OCCUPANCY_WARNINGS",
            # header directories for NVRTC, a path list in both ("a:b")
            "CUDA_NVRTC_EXTRA_SEARCH_PATHS": "GPUNB_NVRTC_INCLUDE"}
_FLAGS = {"CUDA_LOW_OCCUPANCY_WARNINGS"}  # settings that are on/off (others pass as text)


class _Config(types.ModuleType):
    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if name in _FLAGS:
            os.environ[SETTINGS[name]] = "1" if value else "0"
        elif name in SETTINGS:
            os.environ[SETTINGS[name]] = str(value or "")


sys.modules[__name__].__class__ = _Config
os.environ[SETTINGS["CUDA_LOW_OCCUPANCY_WARNINGS"]] = "1"  # numba's default
