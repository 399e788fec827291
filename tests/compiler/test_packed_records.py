"""Packed records (numpy dtypes without align=True) in kernels: a misaligned field is read and
written with the alignment the layout guarantees (byte loads in PTX), where numba-cuda refuses
it ('type float64 is not aligned'); the parity runner counts that test as a numba limitation."""

from __future__ import annotations

import numpy as np

from gpunb import cuda
from gpunb.cuda.np.numpy_support import from_dtype

PACKED = np.dtype([("a", "int32"), ("b", "float64")])  # b at offset 4


def _copy_b_to_a(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i].a = a[i].b


def test_misaligned_fields_compute():
    arr = np.zeros(4, PACKED)
    arr["b"] = [1.5, 2.5, -3.5, 4.5]
    cuda.jit((from_dtype(PACKED)[:],))(_copy_b_to_a)[1, 4](arr)
    np.testing.assert_array_equal(arr["a"], [1, 2, -3, 4])


def test_misaligned_fields_load_bytewise_in_ptx():
    sig = (from_dtype(PACKED)[:],)
    ptx = cuda.jit(sig)(_copy_b_to_a).inspect_asm(sig)
    loads = [line.split()[0] for line in ptx.splitlines() if line.strip().startswith("ld.global")]
    assert loads and all(op == "ld.global.b8" for op in loads)  # never a misaligned ld.f64
