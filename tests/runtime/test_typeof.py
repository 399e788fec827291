"""typeof gives kernel types of launch arguments; type_key is fast and determines typeof."""

from __future__ import annotations

import numpy as np
import pytest

from gpunb.foundation import types as t
from gpunb.runtime.devicearray import HostDeviceArray
from gpunb.runtime.typeof import type_key, typeof

RECORD = np.dtype([("x", np.float32), ("n", np.int32)])


class FakeCupy:
    """Anything exporting __cuda_array_interface__ (CuPy, PyTorch, numba)."""

    def __init__(self, shape, typestr, strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "strides": strides,
                                         "data": (0x10000, False), "version": 3, "stream": None}


CASES = [
    (True, t.boolean), (3, t.int64), (2.5, t.float64), (1 + 2j, t.complex128),
    (np.float32(1), t.float32), (np.int8(1), t.int8), (np.uint16(1), t.uint16),
    (np.bool_(True), t.boolean), (np.complex64(1), t.complex64), (np.float16(1), t.float16),
    (np.zeros(4, np.float32), t.float32[::1]),
    (np.zeros((3, 4), np.float64), t.float64[:, ::1]),
    (np.zeros((3, 4), np.float64, order="F"), t.float64[::1, :]),
    (np.zeros((3, 4), np.int32)[:, ::2], t.Array(t.int32, 2, "A")),
    (np.zeros(8, np.int32)[::2], t.Array(t.int32, 1, "A")),
    (np.zeros((1, 4), np.float32)[:, :1], t.Array(t.float32, 2, "C")),  # both C and F: C
    (np.zeros((), np.float64), t.Array(t.float64, 0, "C")),
    (np.zeros((5, 1, 3), np.uint8).transpose(2, 1, 0), t.Array(t.uint8, 3, "F")),
    (np.zeros(3, RECORD), t.Array(t.from_dtype(RECORD), 1, "C")),
    (np.zeros(3, RECORD)[0], t.from_dtype(RECORD)),
    ((1, 2.0), t.Tuple((t.int64, t.float64))),
    ((np.float32(1), (True, np.zeros(2, np.int16))),
     t.Tuple((t.float32, t.Tuple((t.boolean, t.int16[::1]))))),
    (HostDeviceArray(np.zeros((2, 3), np.float32)), t.float32[:, ::1]),
    (HostDeviceArray(np.zeros((2, 3), np.float32))[:, 1], t.Array(t.float32, 1, "A")),
    (FakeCupy((4, 5), "<f4"), t.float32[:, ::1]),
    (FakeCupy((4, 5), "<f8", strides=(8, 32)), t.float64[::1, :]),
    (FakeCupy((4, 5), "<i2", strides=(20, 4)), t.Array(t.int16, 2, "A")),
]


@pytest.mark.parametrize("value,expected", CASES, ids=[repr(c[1]) for c in CASES])
def test_typeof(value, expected):
    assert typeof(value) == expected


def test_type_key_determines_typeof():
    """Equal keys imply equal types, and every case's key is hashable."""
    seen = {}
    for value, expected in CASES:
        key = type_key(value)
        hash(key)
        if key in seen:
            assert seen[key] == expected, (value, key)
        seen[key] = expected
    # values of one type share a key where it matters for the fast path
    assert type_key(np.zeros(4, np.float32)) == type_key(np.ones(9, np.float32))
    assert type_key(1) == type_key(2**40)
    assert type_key(np.zeros(4, np.float32)) != type_key(np.zeros(4, np.float64))
    assert type_key(np.zeros((2, 2))) != type_key(np.zeros((2, 2), order="F"))
    assert type_key(np.zeros((2, 3))[:, ::2]) != type_key(np.zeros((2, 3)))


def test_dlpack_objects_are_typed_through_numpy():
    class CpuTensor:  # a torch CPU tensor, as far as DLPack goes
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    assert typeof(CpuTensor(np.zeros((2, 3), np.int32))) == t.int32[:, ::1]
    assert typeof(CpuTensor(np.zeros((4, 3), np.int32)[::2])) == t.Array(t.int32, 2, "A")


def test_unsupported_values_raise_type_error():
    with pytest.raises(TypeError, match="cannot pass a str"):
        typeof("text")
    with pytest.raises(TypeError, match="byte order"):
        typeof(np.zeros(3, ">f4"))
    with pytest.raises(TypeError):
        typeof(np.zeros(3, np.longdouble))


def test_python_ints_past_int64_are_uint64_as_in_numba():
    """numba types 2**63 .. 2**64 - 1 as uint64 (typeof once said int64, and the launch wrapped
    2**64 - 1 to -1); past 64 bits is refused. type_key tells them apart from small ints."""
    import numba

    for value in (2**63 - 1, -2**63, 2**63, 2**64 - 1):
        assert str(typeof(value)) == str(numba.typeof(value))
    assert type_key(2**63) != type_key(1) and type_key(2**63) == type_key(2**64 - 1)
    assert type_key((2**63, 1)) != type_key((1, 1))
    for value in (2**64, -2**63 - 1):
        with pytest.raises(TypeError, match="does not fit in 64 bits"):
            typeof(value)


def test_a_large_int_argument_reaches_the_kernel_unwrapped():
    import gpunb
    from gpunb import cuda
    from gpunb.foundation.errors import LaunchError

    gpunb.set_target("cpu")
    try:
        @cuda.jit
        def store(out, v):
            out[0] = v

        out = np.zeros(1)
        for value in (1, 2, 2**64 - 1, 3, 2**63, 2**63):  # fast path bound for int64 in between
            store[1, 1](out, value)
            assert out[0] == float(value)
        with pytest.raises(LaunchError, match="does not fit in 64 bits"):
            store[1, 1](out, 2**64)
    finally:
        gpunb.set_target("auto")
