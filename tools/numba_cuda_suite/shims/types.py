"""`numba.cuda.types`: gpunb's kernel types (`gpunb.types`), under numba's names.

A name gpunb does not define is a Missing: the test module imports, and a test that builds a
numba type gpunb lacks (UniTuple, CPointer, Optional, ...) fails with MissingInGpunb naming it.
"""

from __future__ import annotations

import gpunb

from .. import whatif
from .missing import missing_in_gpunb


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return getattr(gpunb.types, name)
    except AttributeError:
        if whatif.enabled() and name in whatif.extra_types():
            return whatif.extra_types()[name]
        return missing_in_gpunb(f"numba.cuda.types.{name}", f"gpunb.types.{name}")
