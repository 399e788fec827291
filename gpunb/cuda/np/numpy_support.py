"""numba.cuda.np.numpy_support under gpunb: numpy dtypes <-> kernel types.

`from_dtype(np.dtype)` gives the type a kernel sees for that dtype (records included), usable in
signatures and as the dtype of shared/local arrays; `as_dtype(type)` goes back.
"""

from __future__ import annotations

import numpy as np

from gpunb.foundation.types import Type, from_dtype, to_dtype

numpy_version = tuple(int(part) for part in np.__version__.split(".")[:2])


def as_dtype(nbtype: Type) -> np.dtype:
    """The numpy dtype of a kernel type (numba's as_dtype); a TypeError names a type that has
    none (void, tuples)."""
    try:
        return to_dtype(nbtype)
    except (KeyError, TypeError, ValueError):
        raise TypeError(f"{nbtype} cannot be represented as a NumPy dtype") from None


__all__ = ["as_dtype", "from_dtype", "numpy_version"]
