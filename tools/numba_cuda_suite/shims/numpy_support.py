"""`numba.cuda.np.numpy_support`: dtype ↔ type conversions and carray/farray, from gpunb."""

from __future__ import annotations

from .missing import gpunb_attr

_HERE = "numba.cuda.np.numpy_support"
from_dtype = gpunb_attr(f"{_HERE}.from_dtype", "gpunb.cuda.from_dtype", "gpunb.types.from_dtype")
as_dtype = gpunb_attr(f"{_HERE}.as_dtype", "gpunb.cuda.as_dtype", "gpunb.types.to_dtype")
carray = gpunb_attr(f"{_HERE}.carray", "gpunb.cuda.carray")
farray = gpunb_attr(f"{_HERE}.farray", "gpunb.cuda.farray")

# numpy's own version, which upstream tests read to pick numpy-version-dependent expectations
import numpy as _np  # noqa: E402

numpy_version = tuple(int(part) for part in _np.__version__.split(".")[:2])
