"""Host-side bits of bfloat16 and fp8 values, rounded exactly as gpunb's GPU code rounds them.

Constants frozen into kernels and scalars passed to kernels go through these, so that a value
means the same on the host, on the CPU target and on a GPU: bfloat16 is CUDA's __float2bfloat16
(round to nearest even, correctly rounded from float64 too: ml_dtypes rounds a float64 through
float32, which can differ in the last bit), fp8 is CUDA's __nv_fp8_* constructors (round to
nearest even, saturating to the largest finite value; e8m0 rounds up).
"""

from __future__ import annotations

import math
import struct

# (exponent bits, mantissa bits, bias, largest finite value, its code, NaN code)
FP8_LAYOUT = {"e5m2": (5, 2, 15, 57344.0, 0x7B, 0x7F), "e4m3": (4, 3, 7, 448.0, 0x7E, 0x7F)}


def _f32_bits(x: float) -> int:
    """float32 bits of x rounded to nearest even (inf when it overflows)."""
    try:
        return struct.unpack("<I", struct.pack("<f", x))[0]
    except OverflowError:
        return 0x7F800000 | (0x80000000 if x < 0 else 0)


def _f32_value(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def f32_round_to_odd(x: float) -> int:
    """float32 bits of x rounded to odd: rounding those bits again to fewer than 22 mantissa bits
    gives the correctly rounded result (no double-rounding error)."""
    bits = _f32_bits(x)
    back = _f32_value(bits)
    if math.isnan(x) or back == x or bits & 1:
        return bits
    return bits + (1 if abs(x) > abs(back) else -1)


def bfloat16_bits_from_f32(bits: int, mode: str = "rn") -> int:
    """bfloat16 bits of a float32 (given as bits) in rounding mode rn, rz, rd or ru; any NaN
    gives 0x7fff, as PTX's cvt does."""
    if (bits & 0x7FFFFFFF) > 0x7F800000:
        return 0x7FFF
    high, low, negative = bits >> 16, bits & 0xFFFF, bool(bits & 0x80000000)
    if mode == "rn":
        return (bits + 0x7FFF + (high & 1)) >> 16
    if mode == "rz":
        return high
    bump = low != 0 and (negative if mode == "rd" else not negative)
    return high + bump


def bfloat16_bits(x: float, mode: str = "rn") -> int:
    """bfloat16 bits of a Python number, correctly rounded."""
    return bfloat16_bits_from_f32(f32_round_to_odd(float(x)), mode)


def fp8_bits(kind: str, x: float) -> int:
    """fp8 bits of a Python number as CUDA's __nv_fp8_<kind>(x) makes them."""
    x = float(x)
    if kind == "e8m0":
        return e8m0_bits_from_f32(f32_round_to_odd(x))
    _, mbits, bias, largest, largest_code, nan_code = FP8_LAYOUT[kind]
    if math.isnan(x):
        return nan_code
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    a = _f32_value(f32_round_to_odd(abs(x)))
    if a > largest:
        return sign | largest_code
    if a < 2.0 ** (1 - bias):
        return sign | round(a * 2.0 ** (bias - 1 + mbits))  # round() is half to even
    bits = _f32_bits(a)
    shift = 23 - mbits
    rounded = (bits + (1 << (shift - 1)) - 1 + ((bits >> shift) & 1)) >> shift
    return sign | (rounded - ((127 - bias) << mbits))


def e8m0_bits_from_f32(bits: int, mode: str = "ru", satfinite: bool = True) -> int:
    """e8m0 (a power of two, 2**(code - 127); 0xff is NaN) of a float32's magnitude."""
    magnitude = bits & 0x7FFFFFFF
    if magnitude > 0x7F800000:
        return 0xFF
    exponent, mantissa = magnitude >> 23, magnitude & 0x7FFFFF
    if exponent == 0:  # zero and float32 subnormals: 2**-127 is the smallest e8m0
        code = 1 if mode == "ru" and mantissa > 0x400000 else 0
    else:
        code = exponent + (1 if mode == "ru" and mantissa else 0)
    if code >= 0xFF:
        return 0xFE if satfinite else 0xFF
    return code
