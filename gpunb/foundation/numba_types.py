"""numba's own type objects (`from numba import float32, types`) as gpunb types, so signatures,
dtypes and casts written with numba's names work unchanged: `cuda.jit((f8[:], i4))`,
`types.void(types.int32[::1])`, `cuda.local.array(4, numba.float32)`.

Read by duck typing (class name and attributes): numba itself is never imported here.
"""

from __future__ import annotations

import numpy as np

from gpunb.foundation import types as t


def is_numba_object(obj) -> bool:
    return type(obj).__module__.startswith("numba.")


def from_numba(obj):
    """The gpunb Type or Signature for a numba type / signature object; None when `obj` is not
    one of numba's, or names a type gpunb does not have."""
    if not is_numba_object(obj):
        return None
    kind = type(obj).__name__
    if kind == "Signature" and hasattr(obj, "args"):
        args = [from_numba(a) if is_numba_object(a) else a for a in obj.args]
        ret = obj.return_type
        ret = from_numba(ret) if is_numba_object(ret) else ret
        if ret is None or any(not isinstance(a, t.Type) for a in args):
            return None
        return t.Signature(ret, tuple(args))
    convert = _CONVERTERS.get(kind)
    return convert(obj) if convert is not None else _by_name(obj)


def _by_name(obj):
    name = str(obj)
    return t.boolean if name == "bool" else t.TYPE_NAMES.get(name)


def _array(obj):
    dtype = from_numba(obj.dtype)
    if dtype is None:
        return None
    return t.Array(dtype, int(obj.ndim), str(obj.layout), bool(getattr(obj, "readonly", False)),
                   bool(getattr(obj, "aligned", True)))


def _tuple(obj):
    items = [from_numba(i) for i in obj.types]
    return None if any(i is None for i in items) else t.Tuple(tuple(items))


def _named_tuple(obj):
    items = [from_numba(i) for i in obj.types]
    if any(i is None for i in items):
        return None
    return t.Tuple(tuple(items), tuple(obj.fields))


def _record(obj):
    dtype = getattr(obj, "dtype", None)
    return t.from_dtype(dtype) if isinstance(dtype, np.dtype) else None


def _pointer(obj):
    from gpunb.foundation.pointer_types import Pointer

    dtype = from_numba(obj.dtype)
    return None if dtype is None else Pointer(dtype)


def _raw_pointer(obj):
    from gpunb.foundation.pointer_types import voidptr

    return voidptr


_CONVERTERS = {
    "Array": _array, "UniTuple": _tuple, "Tuple": _tuple, "NamedUniTuple": _named_tuple,
    "NamedTuple": _named_tuple, "Record": _record, "NoneType": lambda obj: t.none,
    "Omitted": lambda obj: None, "CPointer": _pointer, "RawPointer": _raw_pointer,
}
