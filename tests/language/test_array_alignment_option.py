"""`alignment=` of cuda.shared.array / cuda.local.array (numba-cuda's checks and messages) and
`arr.ctypes.data` (the address) in kernels; the addresses honour the alignment on each target."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda


def _addresses(kind: str, alignment: int) -> list:
    if kind == "local":
        @cuda.jit
        def f(out):
            a = cuda.local.array(5, dtype=np.uint8, alignment=alignment)
            b = cuda.local.array(3, dtype=np.uint64, alignment=alignment)
            a[0] = 1
            b[0] = 2
            out[0] = a.ctypes.data
            out[1] = b.ctypes.data
    else:
        @cuda.jit
        def f(out):
            a = cuda.shared.array(5, dtype=np.uint8, alignment=alignment)
            b = cuda.shared.array(3, dtype=np.uint64, alignment=alignment)
            a[0] = 1
            b[0] = 2
            out[0] = a.ctypes.data
            out[1] = b.ctypes.data

    out = np.zeros(2, np.uint64)
    f[1, 1](out)
    return [int(x) for x in out]


@pytest.mark.parametrize("kind", ["local", "shared"])
@pytest.mark.parametrize("alignment", [8, 16, 64, 256])
def test_addresses_are_aligned(target, kind, alignment):
    addresses = _addresses(kind, alignment)
    assert all(a and a % alignment == 0 for a in addresses)
    assert addresses[0] != addresses[1]


@pytest.mark.parametrize("alignment, message", [(-1, "positive"), (0, "positive"),
                                                (3, "power of 2"), (4, "multiple of 8")])
def test_bad_alignments_are_value_errors(alignment, message):
    @cuda.jit
    def f(out):
        a = cuda.shared.array(4, dtype=np.uint8, alignment=alignment)
        out[0] = a.ctypes.data

    with pytest.raises(ValueError, match=f"Alignment must be (a )?{message}"):
        f[1, 1](np.zeros(1, np.uint64))


@pytest.mark.parametrize("alignment", [1.0, "16"])
def test_an_alignment_that_is_no_integer_is_a_typing_error(alignment):
    @cuda.jit
    def f(out):
        a = cuda.local.array(4, dtype=np.uint8, alignment=alignment)
        out[0] = a.ctypes.data

    with pytest.raises(gpunb.CompileError,
                       match="RequireLiteralValue: alignment must be a constant integer"):
        f[1, 1](np.zeros(1, np.uint64))


@cuda.jit("void(int64[::1], int32, uint8)")
def store_wrapped(out, a, b):
    out[0] = a
    out[1] = b


def test_python_ints_wrap_into_declared_integer_parameters_as_numba(target):
    out = np.zeros(2, np.int64)
    store_wrapped[1, 1](out, 0xFFFFFFFF, 0x1FF)
    assert out.tolist() == [-1, 255]
