"""CUDA's built-in vector types (numba-cuda's cuda.float32x4 & co and C's aliases): made from
numbers and smaller vectors of the same base type, read through x, y, z, w."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.cuda.vector_types import vector_types


@cuda.jit("void(float64[:])")
def basic(arr):
    v1 = cuda.float64x4(1.0, 3.0, 5.0, 7.0)
    v2 = cuda.short2(10, 11)
    arr[0] = v1.x
    arr[1] = v1.y
    arr[2] = v1.z
    arr[3] = v1.w
    arr[4] = v2.x
    arr[5] = v2.y


def test_basic(target):
    res = np.zeros(6)
    basic[1, 1](res)
    assert res.tolist() == [1.0, 3.0, 5.0, 7.0, 10.0, 11.0]


@cuda.jit
def composed(out, a):
    one = cuda.int3(a, a + 1, a + 2)
    two = cuda.int4(cuda.int2(one.z, one.y), one.x, cuda.int1(7))
    widened = cuda.float4(cuda.float2(0.5, a), cuda.float1(a), 2.5)
    out[0] = two.x
    out[1] = two.y
    out[2] = two.z
    out[3] = two.w
    out[4] = widened.y
    out[5] = widened.w


def test_vectors_from_smaller_vectors(target):
    out = np.zeros(6)
    composed[1, 1](out, 3)
    assert out.tolist() == [5, 4, 3, 7, 3.0, 2.5]


def test_the_table_and_aliases():
    assert len(vector_types) == 40
    f4 = vector_types["float32x4"]
    assert f4.num_elements == 4 and str(f4.base_type) == "float32"
    assert f4.user_facing_object is cuda.float4 and "float4" in f4.aliases
    assert cuda.double2 is cuda.float64x2 and cuda.uchar3 is cuda.uint8x3


@cuda.jit
def wrong_count(out):
    v = cuda.float32x3(1.0, 2.0)
    out[0] = v.x


@cuda.jit
def wrong_base(out):
    v = cuda.float32x2(cuda.int2(1, 2))
    out[0] = v.x


@pytest.mark.parametrize("kernel, message", [(wrong_count, "needs 3 elements, got 2"),
                                             (wrong_base, "takes numbers and float32 vectors")])
def test_bad_constructions_are_compile_errors(kernel, message):
    with pytest.raises(gpunb.CompileError, match=message):
        kernel[1, 1](np.zeros(1))
