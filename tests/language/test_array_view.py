"""`a.view(dtype)` in kernels (numba's array.view, numba-cuda's test_reinterpret_array_type):
the same bytes as another type, numpy's view as the oracle; a last extent the new item size does
not divide is numba's ValueError; another item size needs a C-contiguous array."""

from __future__ import annotations

import numpy as np
import pytest

from gpunb import CompileError, cuda, float32


def test_byte_slices_read_as_int32(target):
    @cuda.jit
    def reinterpret(byte_arr, start, stop, output):
        output[0] = byte_arr[start:stop].view(np.int32)[0]

    byte_arr = np.arange(256, dtype=np.uint8)
    for start in range(0, 256, 4):
        out = np.zeros(1, np.int32)
        reinterpret[1, 1](byte_arr, start, start + 4, out)
        assert out[0] == byte_arr[start:start + 4].view(np.int32)[0]


@pytest.mark.parametrize("new", [np.uint32, np.int64, np.uint8, np.float64])
def test_two_dimensional_views_match_numpy(target, new):
    @cuda.jit
    def copy_view(a, out):
        v = a.view(NEW)
        for i in range(v.shape[0]):
            for j in range(v.shape[1]):
                out[i, j] = v[i, j]

    global NEW
    NEW = new
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    expected = a.view(new)
    out = np.zeros_like(expected)
    copy_view[1, 1](a, out)
    np.testing.assert_array_equal(out.view(np.uint8), expected.view(np.uint8))


NEW = None


def test_an_extent_the_new_size_does_not_divide_raises(target):
    @cuda.jit(debug=True, opt=False)
    def bad(a, out):
        out[0] = a.view(np.int64)[0]

    with pytest.raises(ValueError, match="new type not compatible with array"):
        bad[1, 1](np.zeros(3, np.float32), np.zeros(1, np.int64))


def test_other_item_sizes_need_a_contiguous_array():
    def strided(a):
        a[::2].view(np.int64)[0] = 1

    with pytest.raises(CompileError, match="needs a C-contiguous array"):
        cuda.compile_ptx(strided, (float32[:],))
