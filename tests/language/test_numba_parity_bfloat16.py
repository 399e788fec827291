"""numba-cuda's bfloat16 and fp8 tests (numba_cuda/numba/cuda/tests/cudapy/test_bfloat16.py,
test_fp8_bindings.py, test_cupy_bfloat16_interop.py), ported: imports mapped to gpunb, unittest
classes to pytest functions run on every available target. The fp8 tests of numba-cuda's raw
storage intrinsics (cvt_float_to_fp8 with saturation_t, cvt_e8m0_to_bf16raw, ...) are not ported:
gpunb does not have those internal bindings. `float("nan")` in kernels is written `math.nan`
(gpunb does not yet type float() of a string constant).

Adapted from numba-cuda, Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES, under the
BSD-2-Clause license: Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met: 1. Redistributions
of source code must retain the above copyright notice, this list of conditions and the following
disclaimer. 2. Redistributions in binary form must reproduce the above copyright notice, this
list of conditions and the following disclaimer in the documentation and/or other materials
provided with the distribution. THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND
CONTRIBUTORS "AS IS" AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO
EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL,
SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF
SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER
CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING
NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF
THE POSSIBILITY OF SUCH DAMAGE.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpunb import cuda
from gpunb.cuda import (
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from gpunb.cuda.bf16 import (
    bfloat16,
    bfloat16_as_int16,
    bfloat16_as_uint16,
    bfloat16_to_float32,
    bfloat16_to_int8_rz,
    bfloat16_to_int16_rd,
    bfloat16_to_int16_rn,
    bfloat16_to_int16_ru,
    bfloat16_to_int16_rz,
    bfloat16_to_int32_rd,
    bfloat16_to_int32_rn,
    bfloat16_to_int32_ru,
    bfloat16_to_int32_rz,
    bfloat16_to_uint8_rz,
    float32_to_bfloat16,
    float32_to_bfloat16_rd,
    float32_to_bfloat16_rn,
    float32_to_bfloat16_ru,
    float32_to_bfloat16_rz,
    float64_to_bfloat16,
    habs,
    hadd,
    hadd_rn,
    hadd_sat,
    hdiv,
    heq,
    hfma,
    hfma_relu,
    hfma_sat,
    hge,
    hgt,
    hisinf,
    hisnan,
    hle,
    hlt,
    hmax,
    hmax_nan,
    hmin,
    hmin_nan,
    hmul,
    hmul_rn,
    hmul_sat,
    hne,
    hneg,
    hsub,
    hsub_rn,
    hsub_sat,
    int16_as_bfloat16,
    int16_to_bfloat16_rd,
    int16_to_bfloat16_rn,
    int16_to_bfloat16_ru,
    int16_to_bfloat16_rz,
    int32_to_bfloat16_rn,
    int64_to_bfloat16_ru,
    uint16_as_bfloat16,
    uint32_to_bfloat16_rd,
    uint64_to_bfloat16_rz,
)
from gpunb.cuda.fp8 import fp8_e4m3, fp8_e5m2, fp8_e8m0

md = pytest.importorskip("ml_dtypes")
FE8_TYPES = [fp8_e5m2, fp8_e4m3, fp8_e8m0]


def _bf16_ulp_distance(a_bits, b_bits):
    def rank(bits):
        u = np.asarray(bits).view(np.uint16).astype(np.int32)
        return np.where(u >> 15 == 0, u + 0x8000, 0x8000 - (u & 0x7FFF))
    return np.abs(rank(a_bits) - rank(b_bits))


def test_use_type_in_kernel(target):
    """numba-cuda's test only calls bfloat16() in a kernel; here the value it made is checked
    too: 3.14 rounds to the nearest bfloat16, 3.140625."""
    @cuda.jit
    def kernel(out):
        out[0] = float32(bfloat16(3.14))

    out = np.zeros(1, np.float32)
    kernel[1, 1](out)
    assert out[0] == np.float32(md.bfloat16(3.14)) == 3.140625


@pytest.mark.parametrize("f", [math.trunc, math.ceil, math.floor, math.sqrt, math.log,
                               math.log10, math.cos, math.sin, math.tanh, math.exp, math.exp2])
def test_math_bindings(target, f):
    @cuda.jit
    def kernel(arr):
        x = bfloat16(3.14)
        y = f(x)
        arr[0] = float32(y)

    arr = cuda.device_array((1,), dtype="float32")
    kernel[1, 1](arr)
    delta = 1e-1 if f in (math.exp, math.exp2) else 1e-2
    assert abs(arr[0] - f(3.14)) <= delta


def test_arithmetic_intrinsics_basic(target):
    @cuda.jit
    def kernel(out):
        a = bfloat16(1.25)
        b = bfloat16(-2.5)
        out[0] = float32(habs(b))
        out[1] = float32(hadd(a, b))
        out[2] = float32(hsub(a, b))
        out[3] = float32(hmul(a, b))
        out[4] = float32(hdiv(b, a))
        out[5] = float32(hneg(a))
        out[6] = float32(hfma(a, b, b))
        out[7] = float32(hadd_rn(a, b))
        out[8] = float32(hsub_rn(a, b))
        out[9] = float32(hmul_rn(a, b))

    out = cuda.device_array((10,), dtype="float32")
    kernel[1, 1](out)
    a, b = 1.25, -2.5
    expected = [abs(b), a + b, a - b, a * b, b / a, -a, a * b + b, a + b, a - b, a * b]
    for i, exp in enumerate(expected):
        assert abs(out[i] - exp) <= 1e-2


def test_arithmetic_intrinsics_saturating(target):
    @cuda.jit
    def kernel(out):
        a = bfloat16(1.5)
        b = bfloat16(0.75)
        out[0] = float32(hadd_sat(a, b))
        out[1] = float32(hsub_sat(b, a))
        out[2] = float32(hmul_sat(a, b))
        out[3] = float32(hfma_sat(a, b, a))

    out = cuda.device_array((4,), dtype="float32")
    kernel[1, 1](out)
    np.testing.assert_allclose(out.copy_to_host(), [1.0, 0.0, 1.0, 1.0], atol=1e-3)


def test_fma_relu_intrinsic(target):
    @cuda.jit
    def kernel(out):
        a = bfloat16(-1.5)
        b = bfloat16(2.0)
        c = bfloat16(0.0)
        out[0] = float32(hfma_relu(a, b, c))

    out = cuda.device_array((1,), dtype="float32")
    kernel[1, 1](out)
    assert abs(out[0]) <= 1e-3


@pytest.mark.parametrize("cmpfn,op", [
    (heq, lambda x, y: x == y), (hne, lambda x, y: x != y), (hge, lambda x, y: x >= y),
    (hgt, lambda x, y: x > y), (hle, lambda x, y: x <= y), (hlt, lambda x, y: x < y)])
def test_comparison_intrinsics(target, cmpfn, op):
    @cuda.jit
    def kernel(out, a, b):
        a_bf16 = bfloat16(a)
        b_bf16 = bfloat16(b)
        out[0] = cmpfn(a_bf16, b_bf16)

    out = cuda.device_array((1,), dtype="bool")
    for a, b in ((3.0, 3.0), (3.0, 4.0), (4.0, 3.0)):
        kernel[1, 1](out, a, b)
        assert bool(out[0]) == op(a, b)


def test_hmax_hmin_intrinsics(target):
    @cuda.jit
    def kernel(out):
        a = bfloat16(3.0)
        b = bfloat16(4.0)
        out[0] = float32(hmax(a, b))
        out[1] = float32(hmin(a, b))

    out = cuda.device_array((2,), dtype="float32")
    kernel[1, 1](out)
    np.testing.assert_allclose(out.copy_to_host(), [4.0, 3.0], atol=1e-3)


def test_nan_and_inf_intrinsics(target):
    @cuda.jit
    def kernel(out_bool, out_int):
        nanv = bfloat16(math.nan)
        infv = bfloat16(math.inf)
        out_bool[0] = hisnan(nanv)
        out_int[0] = hisinf(infv)

    out_bool = cuda.device_array((1,), dtype="bool")
    out_int = cuda.device_array((1,), dtype="int32")
    kernel[1, 1](out_bool, out_int)
    assert bool(out_bool[0]) and int(out_int[0]) != 0


def test_hmax_nan_hmin_nan_intrinsics(target):
    @cuda.jit
    def kernel(out):
        a = bfloat16(math.nan)
        b = bfloat16(2.0)
        out[0] = float32(hmax_nan(a, b))
        out[1] = float32(hmin_nan(a, b))
        out[2] = float32(hmax(a, b))
        out[3] = float32(hmin(a, b))

    out = cuda.device_array((4,), dtype="float32")
    kernel[1, 1](out)
    assert math.isnan(out[0]) and math.isnan(out[1])
    assert abs(out[2] - 2.0) <= 1e-3 and abs(out[3] - 2.0) <= 1e-3


def test_bfloat16_as_bitcast(target):
    @cuda.jit
    def roundtrip_kernel(test_val, i2, u2):
        i2[0] = int16_as_bfloat16(bfloat16_as_int16(test_val))
        u2[0] = uint16_as_bfloat16(bfloat16_as_uint16(test_val))

    test_val = np.int16(0x3FC0)  # 1.5 in bfloat16
    i2 = cuda.device_array((1,), dtype="int16")
    u2 = cuda.device_array((1,), dtype="uint16")
    roundtrip_kernel[1, 1](test_val, i2, u2)
    assert i2[0] == test_val and u2[0] == test_val


def test_to_integer_conversions(target):
    @cuda.jit
    def kernel(test_val, i1, i2, i3, u1):
        a = int16_as_bfloat16(test_val)
        i1[0] = bfloat16_to_int8_rz(a)
        u1[0] = bfloat16_to_uint8_rz(a)
        i2[0] = bfloat16_to_int16_rn(a)
        i2[1] = bfloat16_to_int16_rz(a)
        i2[2] = bfloat16_to_int16_rd(a)
        i2[3] = bfloat16_to_int16_ru(a)
        i3[0] = bfloat16_to_int32_rn(a)
        i3[1] = bfloat16_to_int32_rz(a)
        i3[2] = bfloat16_to_int32_rd(a)
        i3[3] = bfloat16_to_int32_ru(a)

    i1, u1 = cuda.device_array((1,), dtype="int8"), cuda.device_array((1,), dtype="uint8")
    i2, i3 = cuda.device_array((4,), dtype="int16"), cuda.device_array((4,), dtype="int32")
    kernel[1, 1](np.int16(0x3FC0), i1, i2, i3, u1)  # 1.5
    assert i1[0] == 1 and u1[0] == 1
    np.testing.assert_equal(i2.copy_to_host(), np.array([2, 1, 1, 2], "int16"))
    np.testing.assert_equal(i3.copy_to_host(), np.array([2, 1, 1, 2], "int32"))


def test_from_integer_conversions(target):
    test_val = 789

    @cuda.jit
    def kernel(out):
        i2 = int16(test_val)
        out[0] = bfloat16_as_int16(int16_to_bfloat16_rn(i2))
        out[1] = bfloat16_as_int16(int16_to_bfloat16_rz(i2))
        out[2] = bfloat16_as_int16(int16_to_bfloat16_rd(i2))
        out[3] = bfloat16_as_int16(int16_to_bfloat16_ru(i2))
        out[4] = bfloat16_as_int16(int32_to_bfloat16_rn(int32(test_val)))
        out[5] = bfloat16_as_int16(uint32_to_bfloat16_rd(uint32(test_val)))
        out[6] = bfloat16_as_int16(int64_to_bfloat16_ru(int64(test_val)))
        out[7] = bfloat16_as_int16(uint64_to_bfloat16_rz(uint64(test_val)))

    out = cuda.device_array((8,), dtype="int16")
    kernel[1, 1](out)
    want = np.array([np.int16(789).astype(md.bfloat16).view("int16")] * 8)
    assert (_bf16_ulp_distance(out.copy_to_host(), want) < 2).all()


def test_to_float_conversions(target):
    @cuda.jit
    def kernel(out):
        a = bfloat16(1.5)
        out[0] = bfloat16_to_float32(a)

    out = cuda.device_array((1,), dtype="float32")
    kernel[1, 1](out)
    assert out[0] == 1.5


def test_from_float_conversions(target):
    test_val = 1.5

    @cuda.jit
    def kernel(out):
        f4 = float32(test_val)
        f8 = float64(test_val)
        out[0] = bfloat16_as_int16(float32_to_bfloat16_rn(f4))
        out[1] = bfloat16_as_int16(float32_to_bfloat16_rz(f4))
        out[2] = bfloat16_as_int16(float32_to_bfloat16_rd(f4))
        out[3] = bfloat16_as_int16(float32_to_bfloat16_ru(f4))
        out[4] = bfloat16_as_int16(float32_to_bfloat16(f4))
        out[5] = bfloat16_as_int16(float64_to_bfloat16(f8))

    out = cuda.device_array((6,), dtype="int16")
    kernel[1, 1](out)
    want = np.array([test_val] * 6, "float32").astype(md.bfloat16).view("int16")
    assert (_bf16_ulp_distance(out.copy_to_host(), want) < 2).all()


# ---- test_fp8_bindings.py: constructors and conversion operators -------------------------------


@pytest.mark.parametrize("fp8_type", FE8_TYPES)
def test_fp8_constructors(target, fp8_type):
    one, two = (2.0, 4) if fp8_type is fp8_e8m0 else (1.0, 2)

    @cuda.jit
    def kernel(result):
        result[0] = float32(fp8_type(float16(one)))
        result[1] = float32(fp8_type(float32(one)))
        result[2] = float32(fp8_type(float64(one)))
        result[3] = float32(fp8_type(bfloat16(one)))
        result[4] = float32(fp8_type(int8(two)))
        result[5] = float32(fp8_type(int16(two)))
        result[6] = float32(fp8_type(int32(two)))
        result[7] = float32(fp8_type(int64(two)))
        result[8] = float32(fp8_type(uint8(two)))
        result[9] = float32(fp8_type(uint16(two)))
        result[10] = float32(fp8_type(uint32(two)))
        result[11] = float32(fp8_type(uint64(two)))

    result = np.zeros(12, dtype=np.float32)
    kernel[1, 1](result)
    assert (result[:4] == one).all() and (result[4:] == two).all()


def test_fp8_nan_constructors(target):
    @cuda.jit
    def kernel(result):
        nan = float32(math.nan)
        result[0] = float32(fp8_e5m2(nan))
        result[1] = float32(fp8_e4m3(nan))
        result[2] = float32(fp8_e8m0(nan))

    result = np.zeros(3, dtype=np.float32)
    kernel[1, 1](result)
    assert np.isnan(result).all()


@pytest.mark.parametrize("fp8_type,value", [(fp8_e5m2, 1.5), (fp8_e4m3, 2.5), (fp8_e8m0, 8.0)])
def test_fp8_to_float_types(target, fp8_type, value):
    @cuda.jit
    def kernel(result):
        fp8_val = fp8_type(float32(value))
        result[0] = float32(float16(fp8_val))
        result[1] = float32(fp8_val)
        result[2] = float32(float64(fp8_val))
        result[3] = float32(bfloat16(fp8_val))

    result = np.zeros(4, dtype=np.float32)
    kernel[1, 1](result)
    assert (result == value).all()


@pytest.mark.parametrize("fp8_type,value", [(fp8_e5m2, 10.0), (fp8_e4m3, 12.0), (fp8_e8m0, 16.0)])
def test_fp8_to_unsigned_integers(target, fp8_type, value):
    @cuda.jit
    def kernel(result):
        fp8_val = fp8_type(float32(value))
        result[0] = uint64(uint8(fp8_val))
        result[1] = uint64(uint16(fp8_val))
        result[2] = uint64(uint32(fp8_val))
        result[3] = uint64(fp8_val)

    result = np.zeros(4, dtype=np.uint64)
    kernel[1, 1](result)
    assert (result == int(value)).all()


@pytest.mark.parametrize("fp8_type,pos,neg", [(fp8_e5m2, 16.0, -8.0), (fp8_e4m3, 20.0, -6.0),
                                              (fp8_e8m0, 32.0, 16.0)])
def test_fp8_to_signed_integers(target, fp8_type, pos, neg):
    @cuda.jit
    def kernel(result):
        fp8_pos = fp8_type(float32(pos))
        fp8_neg = fp8_type(float32(neg))
        result[0] = int64(int8(fp8_pos))
        result[1] = int64(int16(fp8_pos))
        result[2] = int64(int32(fp8_pos))
        result[3] = int64(fp8_pos)
        result[4] = int64(int8(fp8_neg))
        result[5] = int64(int16(fp8_neg))
        result[6] = int64(int32(fp8_neg))
        result[7] = int64(fp8_neg)

    result = np.zeros(8, dtype=np.int64)
    kernel[1, 1](result)
    np.testing.assert_array_equal(result, [int(pos)] * 4 + [int(neg)] * 4)


@pytest.mark.parametrize("fp8_type", FE8_TYPES)
def test_fp8_conversion_zero_and_roundtrip(target, fp8_type):
    @cuda.jit
    def kernel(result, back):
        zero = fp8_type(float32(0.0))
        result[0] = float32(zero)
        result[1] = int64(zero)
        back[0] = float32(fp8_type(float32(4.0)))

    result, back = np.zeros(2, dtype=np.int64), np.zeros(1, dtype=np.float32)
    kernel[1, 1](result, back)
    np.testing.assert_array_equal(result, [0, 0])
    np.testing.assert_array_equal(back, [4.0])


@pytest.mark.parametrize("fp8_type,value", [(fp8_e5m2, -3.0), (fp8_e4m3, -4.0)])
def test_fp8_conversion_negative_values(target, fp8_type, value):
    @cuda.jit
    def kernel(result_float, result_int):
        fp8_neg = fp8_type(float32(value))
        result_float[0] = float32(fp8_neg)
        result_int[0] = int64(int32(fp8_neg))

    result_float, result_int = np.zeros(1, dtype=np.float32), np.zeros(1, dtype=np.int64)
    kernel[1, 1](result_float, result_int)
    assert result_float[0] == value and result_int[0] == int(value)


def test_fp8_nan_conversions(target):
    @cuda.jit
    def kernel(result):
        nan = float32(math.nan)
        nan_e5m2, nan_e4m3, nan_e8m0 = fp8_e5m2(nan), fp8_e4m3(nan), fp8_e8m0(nan)
        result[0] = float32(float16(nan_e5m2))
        result[1] = float32(nan_e5m2)
        result[2] = float32(float64(nan_e5m2))
        result[3] = float32(float16(nan_e4m3))
        result[4] = float32(nan_e4m3)
        result[5] = float32(float64(nan_e4m3))
        result[6] = float32(float16(nan_e8m0))
        result[7] = float32(nan_e8m0)
        result[8] = float32(float64(nan_e8m0))

    result = np.zeros(9, dtype=np.float32)
    kernel[1, 1](result)
    assert np.isnan(result).all()


# ---- test_cupy_bfloat16_interop.py -------------------------------------------------------------


@pytest.mark.gpu
def test_cupy_bfloat16_kernel_interop():
    cp = pytest.importorskip("cupy", minversion="14.0.0")
    import gpunb

    gpunb.set_target("cuda")
    try:
        arr_h = np.asarray([1, 2, 3, 4, 5], dtype=md.bfloat16)
        arr_d = cp.asarray(arr_h)
        arr_2_d = cp.arange(5)
        arr_out_d = cp.empty(arr_d.size, dtype=md.bfloat16)

        @cuda.jit
        def my_ker(arr_in, arr_in2, arr_out):
            tid = cuda.grid(1)
            if tid < arr_in.size:
                arr_out[tid] = 2 * arr_in[tid] + 4 * arr_in2[tid] + md.bfloat16(3.0)

        my_ker[1, 128](arr_d, arr_2_d, arr_out_d)
        assert (arr_out_d == 2 * arr_d + 4 * arr_2_d + 3.0).all()
    finally:
        gpunb.set_target(None)
