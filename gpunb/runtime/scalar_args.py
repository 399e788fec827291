"""How a scalar kernel argument becomes the value of its parameter slot: numba's casts of
Python ints into declared integer types, the bits of bfloat16 and fp8 values, the count of units
of a datetime64/timedelta64 (runtime/packing.py packs them)."""

from __future__ import annotations

import numpy as np

from gpunb.foundation import types as t


def convert(value, dtype: np.dtype):
    """`value` as a Python number of `dtype`, converted as numba converts an argument."""
    if type(value) is int and dtype.kind in "iu" and -(1 << 63) <= value < (1 << 64):
        # numba types a Python int as int64 (uint64 past it) and casts it to the declared
        # integer type, wrapping: 0xFFFFFFFF passed as int32 is -1
        bits = dtype.itemsize * 8
        value &= (1 << bits) - 1
        if dtype.kind == "i" and value >= 1 << (bits - 1):
            value -= 1 << bits
        return value
    if isinstance(value, (bool, int, float, complex)):
        converted = np.array(value, dtype=dtype)  # Python ints out of range raise here
    else:
        converted = np.asarray(value).astype(dtype)  # numpy scalars wrap, as numpy's astype does
    return converted.item()


def low_precision_bits(value, ty: t.Type) -> int:
    """The bits of a bfloat16 or fp8 argument: an ml_dtypes scalar of that type as it is, any
    other number rounded as the kernel's own conversion rounds it (CUDA's)."""
    from gpunb.foundation import lowprecision

    dtype = getattr(value, "dtype", None)
    if dtype is not None and dtype == t.to_dtype(ty):
        return int(np.asarray(value).view(np.uint16 if dtype.itemsize == 2 else np.uint8))
    if isinstance(ty, t.BFloat16):
        return lowprecision.bfloat16_bits(float(value))
    return lowprecision.fp8_bits(ty.kind, float(value))


def datetime_count(value, ty: t.DateTime) -> int:
    """A datetime64/timedelta64 argument as the int64 count of `ty`'s unit (NaT: the least)."""
    return int(np.asarray(value).astype(t.to_dtype(ty)).view(np.int64))
