"""cuda_fp8.h's raw conversions (cuda.fp8.cvt_*; numba-cuda binds them in
numba.cuda._internal.cuda_fp8). ml_dtypes is the oracle for round-to-nearest fp8: NOSAT is its
plain cast (e5m2 overflows to infinity, e4m3fn to NaN), SATFINITE its cast of the value clipped
to the largest finite one."""

from __future__ import annotations

import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes")

import gpunb  # noqa: E402
from gpunb import cuda  # noqa: E402
from gpunb.cuda.fp8 import (  # noqa: E402
    cvt_bfloat16raw_to_e8m0,
    cvt_bfloat16raw_to_fp8,
    cvt_double_to_fp8,
    cvt_e8m0_to_bf16raw,
    cvt_float_to_e8m0,
    cvt_float_to_fp8,
    cvt_fp8_to_halfraw,
    fp8_interpretation_t,
    saturation_t,
)

NOSAT, SAT = saturation_t.NOSAT, saturation_t.SATFINITE
E4M3, E5M2 = fp8_interpretation_t.E4M3, fp8_interpretation_t.E5M2


@cuda.jit
def float_to_fp8(out, x):
    i = cuda.grid(1)
    if i < x.size:
        out[i, 0] = cvt_float_to_fp8(x[i], NOSAT, E5M2)
        out[i, 1] = cvt_float_to_fp8(x[i], SAT, E5M2)
        out[i, 2] = cvt_float_to_fp8(x[i], NOSAT, E4M3)
        out[i, 3] = cvt_float_to_fp8(x[i], SAT, E4M3)
        out[i, 4] = cvt_double_to_fp8(np.float64(x[i]), NOSAT, E4M3)


def _values() -> np.ndarray:
    rng = np.random.default_rng(7)
    special = [0.0, -0.0, 1.0, -1.5, 448.0, 464.0, 465.0, 57344.0, 61439.0, 61440.0, 1e20,
               -1e20, np.inf, -np.inf, 2.0**-9, 2.0**-17, 3e-8]
    return np.concatenate([special, rng.normal(0, 100, 200), rng.normal(0, 1e-3, 50)]).astype(
        np.float32)


def _bits(values, dtype) -> np.ndarray:
    return np.asarray(values, np.float32).astype(dtype).view(np.uint8)


def test_float_to_fp8_rounds_and_saturates_as_cuda(target):
    x = _values()
    out = np.zeros((x.size, 5), np.uint8)
    float_to_fp8[(x.size + 63) // 64, 64](out, x)
    e5, e4 = ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fn
    np.testing.assert_array_equal(out[:, 0], _bits(x, e5))
    np.testing.assert_array_equal(out[:, 1], _bits(np.clip(x, -57344, 57344), e5))
    e4_nosat = _bits(x, e4)
    e4_nosat[np.isnan(x) | (np.abs(x) > 464)] |= 0x7F  # e4m3fn: NaN is S.1111.111
    np.testing.assert_array_equal(out[:, 2], e4_nosat)
    np.testing.assert_array_equal(out[:, 3], _bits(np.clip(x, -448, 448), e4))
    np.testing.assert_array_equal(out[:, 4], out[:, 2])


@cuda.jit
def e8m0_paths(out, codes, x):
    i = cuda.grid(1)
    if i < codes.size:
        raw = cvt_e8m0_to_bf16raw(codes[i])
        out[i, 0] = raw.x
        out[i, 1] = cvt_bfloat16raw_to_e8m0(raw, NOSAT, 1)  # cudaRoundZero
        out[i, 2] = cvt_bfloat16raw_to_fp8(raw, SAT, E4M3)
        out[i, 3] = cvt_float_to_e8m0(x[i], NOSAT, 2)  # cudaRoundPosInf
        out[i, 4] = cvt_float_to_e8m0(x[i], SAT, 2)
        out[i, 5] = cvt_fp8_to_halfraw(codes[i], E5M2).x


def test_e8m0_and_raw_values(target):
    codes = np.array([0, 1, 100, 126, 127, 128, 254, 255], np.uint8)
    x = np.array([0.75, 1.0, 1.5, 2.0**-126, 3.0, np.nextafter(np.float32(2.0**127), np.inf),
                  np.inf, np.nan], np.float32)
    out = np.zeros((codes.size, 6), np.uint32)
    e8m0_paths[1, 8](out, codes, x)
    bf16 = ml_dtypes.bfloat16
    expected_raw = [np.float32(2.0 ** (int(c) - 127)).astype(bf16).view(np.uint16)
                    if c != 255 else 0x7FFF for c in codes]
    assert out[:, 0].tolist() == [int(v) for v in expected_raw]
    assert out[:, 1].tolist()[:7] == codes.tolist()[:7]
    assert out[:, 3].tolist() == [127, 127, 128, 1, 129, 255, 255, 255]
    assert out[:, 4].tolist() == [127, 127, 128, 1, 129, 254, 254, 255]
    # e5m2 is a half's top byte: CUDA shifts the bits (NaN payloads too); values as ml_dtypes
    assert out[:, 5].tolist() == [int(c) << 8 for c in codes]
    values = np.array(codes).view(ml_dtypes.float8_e5m2).astype(np.float32)
    finite = ~np.isnan(values)
    np.testing.assert_array_equal(out[finite, 5].astype(np.uint16).view(np.float16),
                                  values[finite].astype(np.float16))


def test_modes_must_be_constants():
    @cuda.jit
    def kernel(out, x, mode):
        out[0] = cvt_float_to_fp8(x[0], mode, E4M3)

    with pytest.raises(gpunb.CompileError, match="compile-time constant"):
        kernel[1, 1](np.zeros(1, np.uint8), np.ones(1, np.float32), 0)
