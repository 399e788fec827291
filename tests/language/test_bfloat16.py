"""bfloat16 in kernels: conversions, arithmetic, comparisons, math and cuda.bf16's functions
against exact or ml_dtypes references, arrays and scalars in and out, numba-cuda's typing of
mixed operations, located errors, and the PTX (native bf16 instructions) that ptxas accepts."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from gpunb import CompileError, cuda
from gpunb.cuda import bf16
from gpunb.foundation import types as t

md = pytest.importorskip("ml_dtypes")
BF = md.bfloat16
f32 = t.float32


def exact_bf16(value, mode: str = "rn") -> int:
    """bfloat16 bits of a real number (int, float or Fraction), rounded once: an independent
    reference (Python's exact rationals) for gpunb's round-to-odd conversions."""
    if isinstance(value, float) and math.isnan(value):
        return 0x7FFF
    if isinstance(value, float) and math.isinf(value):
        return 0x7F80 | (0x8000 if value < 0 else 0)
    x = Fraction(value)
    sign = 0x8000 if x < 0 or (isinstance(value, float) and math.copysign(1, value) < 0) else 0
    a = abs(x)
    if a == 0:
        return sign
    e = math.floor(math.log2(a))
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    e = max(e, -126)  # subnormals share the smallest exponent
    ulp = Fraction(2) ** (e - 7)
    q, r = divmod(a, ulp)
    q = int(q)
    if r:
        up = {"rn": r > ulp / 2 or (r == ulp / 2 and q & 1), "rz": False,
              "rd": sign != 0, "ru": sign == 0}[mode]
        q += bool(up)
    value_out = q * ulp
    if value_out >= Fraction(2) ** 128:  # past the largest finite: inf, or the largest (rz)
        return sign | (0x7F7F if mode == "rz" or (mode == "rd" and not sign) or
                       (mode == "ru" and sign) else 0x7F80)
    bits_exp = e + 127 if q >= 128 else 0
    if q >= 256:  # carried into the next binade
        q //= 2
        bits_exp += 1
    if bits_exp == 0 and q >= 128:
        bits_exp = 1
    return sign | (bits_exp << 7) | (q & 0x7F)


def as_bits(a) -> np.ndarray:
    return np.asarray(a).view(np.uint16).astype(np.int64)


def same_bits(got, want_bits):
    """Bit equality, except that any NaN matches any NaN."""
    got = as_bits(got)
    want = np.asarray(want_bits, dtype=np.int64)
    nan = lambda b: ((b & 0x7FFF) > 0x7F80)  # noqa: E731
    bad = (got != want) & ~(nan(got) & nan(want))
    assert not bad.any(), f"{bad.sum()} differ, first at {np.argmax(bad)}: " \
        f"{hex(got[bad][0])} != {hex(want[bad][0])}"


def test_exact_reference_agrees_with_ml_dtypes_on_float32():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(2000).astype(np.float32) * np.float32(1e3)
    same_bits(x.astype(BF), [exact_bf16(float(v)) for v in x])


@cuda.jit
def to_bf16(out, f4, f8, i4, i8, u8, f2, flag):
    i = cuda.grid(1)
    if i < f4.size:
        out[i, 0] = bf16.bfloat16(f4[i])
        out[i, 1] = bf16.bfloat16(f8[i])
        out[i, 2] = bf16.bfloat16(i4[i])
        out[i, 3] = bf16.bfloat16(i8[i])
        out[i, 4] = bf16.bfloat16(u8[i])
        out[i, 5] = bf16.bfloat16(f2[i])
        out[i, 6] = bf16.bfloat16(flag[i])


def test_conversions_to_bfloat16_round_once(target):
    rng = np.random.default_rng(7)
    n = 512
    f4 = (rng.standard_normal(n) * 10.0 ** rng.integers(-38, 38, n)).astype(np.float32)
    f4[:6] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 3.4e38]
    f8 = f4.astype(np.float64) * (1 + rng.standard_normal(n) * 1e-4)
    f8[6] = 1.0 + 2.0**-8 + 2.0**-30  # through float32 (ml_dtypes) this rounds twice, to 1.0
    i4 = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int32)
    i4[0] = 16842753  # 2**24 + 2**16 + 1: likewise
    i8 = rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64)
    i8[:3] = [-2**63, 2**63 - 1, (1 << 62) + (1 << 54) + 1]
    u8 = rng.integers(0, 2**64 - 1, n, dtype=np.uint64)
    u8[0] = 2**64 - 1
    f2 = rng.standard_normal(n).astype(np.float16)
    flag = rng.integers(0, 2, n).astype(np.bool_)
    out = np.zeros((n, 7), BF)
    to_bf16[4, 128](out, f4, f8, i4, i8, u8, f2, flag)
    same_bits(out[:, 0], f4.astype(BF).view(np.uint16))  # float32: ml_dtypes is exact
    same_bits(out[:, 1], [exact_bf16(float(v)) for v in f8])
    assert as_bits(out[6, 1]) == 0x3F81 and as_bits(np.float64(f8[6]).astype(BF)) == 0x3F80
    same_bits(out[:, 2], [exact_bf16(int(v)) for v in i4])
    same_bits(out[:, 3], [exact_bf16(int(v)) for v in i8])
    same_bits(out[:, 4], [exact_bf16(int(v)) for v in u8])
    same_bits(out[:, 5], f2.astype(BF).view(np.uint16))
    same_bits(out[:, 6], flag.astype(BF).view(np.uint16))


@cuda.jit
def directed(out, x):
    i = cuda.grid(1)
    if i < x.size:
        out[i, 0] = bf16.float32_to_bfloat16_rn(x[i])
        out[i, 1] = bf16.float32_to_bfloat16_rz(x[i])
        out[i, 2] = bf16.float32_to_bfloat16_rd(x[i])
        out[i, 3] = bf16.float32_to_bfloat16_ru(x[i])
        out[i, 4] = bf16.float32_to_bfloat16(x[i])


def test_rounding_modes_from_float32(target):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(300) * 100).astype(np.float32)
    x[:4] = [3.4028235e38, -3.4028235e38, 1e-45, -1e-45]
    out = np.zeros((300, 5), BF)
    directed[3, 100](out, x)
    for k, mode in enumerate(("rn", "rz", "rd", "ru", "rn")):
        same_bits(out[:, k], [exact_bf16(float(v), mode) for v in x])


@cuda.jit
def to_ints(i2, i4, u4, i8, i1, u1, x):
    i = cuda.grid(1)
    if i < x.size:
        a = x[i]
        i2[i, 0] = bf16.bfloat16_to_int16_rn(a)
        i2[i, 1] = bf16.bfloat16_to_int16_rz(a)
        i2[i, 2] = bf16.bfloat16_to_int16_rd(a)
        i2[i, 3] = bf16.bfloat16_to_int16_ru(a)
        i4[i, 0] = bf16.bfloat16_to_int32_rn(a)
        i4[i, 1] = bf16.bfloat16_to_int32_rz(a)
        i4[i, 2] = bf16.bfloat16_to_int32_rd(a)
        i4[i, 3] = bf16.bfloat16_to_int32_ru(a)
        u4[i, 0] = bf16.bfloat16_to_uint32_rn(a)
        u4[i, 1] = bf16.bfloat16_to_uint32_ru(a)
        i8[i, 0] = bf16.bfloat16_to_int64_rd(a)
        i8[i, 1] = cuda.int64(a)  # the plain conversion truncates and saturates too
        i1[i] = bf16.bfloat16_to_int8_rz(a)
        u1[i] = bf16.bfloat16_to_uint8_rz(a)


def test_conversions_from_bfloat16_round_and_saturate(target):
    x = np.array([1.5, 2.5, -2.5, -0.5, 0.5, 300.0, -300.0, 1e20, -1e20, np.nan, np.inf, -np.inf,
                  127.0, -129.0], BF)
    n = x.size
    i2, i4 = np.zeros((n, 4), np.int16), np.zeros((n, 4), np.int32)
    u4, i8 = np.zeros((n, 2), np.uint32), np.zeros((n, 2), np.int64)
    i1, u1 = np.zeros(n, np.int8), np.zeros(n, np.uint8)
    to_ints[1, n](i2, i4, u4, i8, i1, u1, x)
    v = x.astype(np.float64)

    def expect(rounded, dtype):  # saturated, NaN -> 0
        info = np.iinfo(dtype)
        return np.array([0 if math.isnan(r) else max(info.min, min(info.max, r)) if
                         math.isinf(r) else int(max(info.min, min(info.max, r)))
                         for r in rounded], dtype)

    for k, fn in enumerate((np.rint, np.trunc, np.floor, np.ceil)):
        np.testing.assert_array_equal(i2[:, k], expect(fn(v), np.int16))
        np.testing.assert_array_equal(i4[:, k], expect(fn(v), np.int32))
    np.testing.assert_array_equal(u4[:, 0], expect(np.rint(v), np.uint32))
    np.testing.assert_array_equal(u4[:, 1], expect(np.ceil(v), np.uint32))
    np.testing.assert_array_equal(i8[:, 0], expect(np.floor(v), np.int64))
    np.testing.assert_array_equal(i8[:, 1], expect(np.trunc(v), np.int64))
    np.testing.assert_array_equal(i1, expect(np.trunc(v), np.int8))
    np.testing.assert_array_equal(u1, expect(np.trunc(v), np.uint8))


@cuda.jit
def arithmetic(out, a, b):
    i = cuda.grid(1)
    if i < a.size:
        x, y = a[i], b[i]
        out[i, 0] = x + y
        out[i, 1] = x - y
        out[i, 2] = x * y
        out[i, 3] = x / y
        out[i, 4] = -x
        out[i, 5] = bf16.hadd(x, y)
        out[i, 6] = bf16.hmul_rn(x, y)
        out[i, 7] = x * bf16.bfloat16(3) + y  # two roundings, as written


def _operands(n: int, seed: int):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(n) * 10.0 ** rng.integers(-20, 20, n)).astype(BF)
    b = (rng.standard_normal(n) * 10.0 ** rng.integers(-20, 20, n)).astype(BF)
    a[:5] = np.array([np.inf, np.nan, 0.0, 3e38, 1e-40], BF)
    b[:5] = np.array([-np.inf, 1.0, 0.0, 3e38, 1e-40], BF)
    return a, b


def test_arithmetic_matches_ml_dtypes(target):
    a, b = _operands(1024, 5)
    out = np.zeros((1024, 8), BF)
    with np.errstate(all="ignore"):
        arithmetic[8, 128](out, a, b)
        want = [a + b, a - b, a * b, a / b, -a, a + b, a * b, a * BF(3) + b]
    for k, w in enumerate(want):
        same_bits(out[:, k], w.view(np.uint16))


@cuda.jit
def fused(out, a, b, c):
    i = cuda.grid(1)
    if i < a.size:
        out[i, 0] = bf16.hfma(a[i], b[i], c[i])
        out[i, 1] = bf16.hfma_sat(a[i], b[i], c[i])
        out[i, 2] = bf16.hfma_relu(a[i], b[i], c[i])
        out[i, 3] = bf16.hadd_sat(a[i], c[i])
        out[i, 4] = bf16.hsub_sat(a[i], c[i])
        out[i, 5] = bf16.hmul_sat(a[i], b[i])


def test_fma_rounds_once_and_saturating_forms(target):
    rng = np.random.default_rng(11)
    n = 512
    a, b, c = (rng.standard_normal((3, n)) * 3).astype(BF)
    c[0] = -(a[0].astype(np.float64) * b[0].astype(np.float64))  # exact cancellation
    out = np.zeros((n, 6), BF)
    fused[4, 128](out, a, b, c)
    exact = [Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
             for x, y, z in zip(a, b, c, strict=True)]
    same_bits(out[:, 0], [exact_bf16(e) for e in exact])
    f = out[:, 0].astype(np.float64)
    np.testing.assert_array_equal(out[:, 1].astype(np.float64), np.clip(f, 0, 1))
    np.testing.assert_array_equal(out[:, 2].astype(np.float64), np.maximum(f, 0))
    with np.errstate(all="ignore"):
        for k, w in ((3, a + c), (4, a - c), (5, a * b)):
            np.testing.assert_array_equal(out[:, k].astype(np.float64),
                                          np.clip(w.astype(np.float64), 0, 1))


@cuda.jit
def comparisons(out, a, b):
    i = cuda.grid(1)
    if i < a.size:
        x, y = a[i], b[i]
        out[i, 0] = x < y
        out[i, 1] = x == y
        out[i, 2] = x != y
        out[i, 3] = bf16.hge(x, y)
        out[i, 4] = bf16.hne(x, y)  # ordered: false with a NaN
        out[i, 5] = bf16.hltu(x, y)  # unordered: true with a NaN
        out[i, 6] = bf16.hisnan(x)
        out[i, 7] = x > 1  # against an integer: compared as float32 (numba-cuda)


def test_comparisons(target):
    a, b = _operands(256, 9)
    b[10:20] = a[10:20]
    out = np.zeros((256, 8), np.bool_)
    comparisons[2, 128](out, a, b)
    x, y = a.astype(np.float32), b.astype(np.float32)
    with np.errstate(invalid="ignore"):
        want = [x < y, x == y, x != y, x >= y, (x != y) & ~np.isnan(x) & ~np.isnan(y),
                ~(x >= y), np.isnan(x), x > 1]
    for k, w in enumerate(want):
        np.testing.assert_array_equal(out[:, k], w, err_msg=f"column {k}")


@cuda.jit
def extremes(out, a, b):
    i = cuda.grid(1)
    if i < a.size:
        out[i, 0] = bf16.hmax(a[i], b[i])
        out[i, 1] = bf16.hmin(a[i], b[i])
        out[i, 2] = bf16.hmax_nan(a[i], b[i])
        out[i, 3] = bf16.hmin_nan(a[i], b[i])
        out[i, 4] = bf16.habs(a[i])
        out[i, 5] = bf16.hneg(a[i])
        out[i, 6] = max(a[i], b[i])


def test_max_min_abs(target):
    a = np.array([1, np.nan, 2, np.nan, 0.0, -0.0, -3], BF)
    b = np.array([2, 5, np.nan, np.nan, -0.0, 0.0, 1], BF)
    out = np.zeros((7, 7), BF)
    extremes[1, 7](out, a, b)
    x, y = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_array_equal(out[:, 0].astype(np.float64), np.fmax(x, y))
    np.testing.assert_array_equal(out[:, 1].astype(np.float64), np.fmin(x, y))
    np.testing.assert_array_equal(out[:, 2].astype(np.float64), np.maximum(x, y))
    np.testing.assert_array_equal(out[:, 3].astype(np.float64), np.minimum(x, y))
    assert np.signbit(out[4, 0].astype(np.float64)) == 0 and np.signbit(out[4, 1].astype(
        np.float64)) == 1  # max(+0, -0) is +0, min is -0
    same_bits(out[:, 4], np.abs(a).view(np.uint16))
    same_bits(out[:, 5], (-a).view(np.uint16))


MATH = [("hsqrt", np.sqrt), ("hexp", np.exp), ("hexp2", np.exp2), ("hlog", np.log),
        ("hlog2", np.log2), ("hlog10", np.log10), ("hsin", np.sin), ("hcos", np.cos),
        ("htanh", np.tanh), ("htrunc", np.trunc), ("hceil", np.ceil), ("hfloor", np.floor),
        ("hrint", np.rint), ("hrcp", lambda v: np.float32(1) / v),
        ("hrsqrt", lambda v: np.float32(1) / np.sqrt(v)),
        ("hexp10", lambda v: np.power(np.float32(10), v))]


EXACT = {"hsqrt", "htrunc", "hceil", "hfloor", "hrint", "hrcp"}


def _math_kernel(fn):
    @cuda.jit
    def kernel(out, x):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = fn(x[i])

    return kernel


@pytest.mark.parametrize("name,reference", MATH, ids=[m[0] for m in MATH])
def test_math_functions(target, name, reference):
    x = np.linspace(0.01, 9.0, 257).astype(BF)
    out = np.zeros(x.size, BF)
    _math_kernel(getattr(bf16, name))[3, 100](out, x)
    want = reference(x.astype(np.float32)).astype(np.float32).astype(BF)
    if name in EXACT:  # correctly rounded in float32, so in bfloat16: what ml_dtypes computes
        same_bits(out, want.view(np.uint16))
    else:  # libm's, libdevice's and numpy's float32 functions differ in the last float32 bit
        assert (np.abs(as_bits(out) - as_bits(want)) <= 1).all()


@pytest.mark.parametrize("fn", [math.sqrt, math.exp, math.log, math.sin, math.cos, math.tanh,
                                math.floor, math.ceil, math.trunc, math.log10])
def test_math_module_on_bfloat16_stays_bfloat16(fn):
    def f(x):
        return fn(x)

    _, result = cuda.compile_ptx(f, "(bfloat16,)", device=True)
    assert result == t.bfloat16


def _function(source: str):
    """def f(a, b): return <source>, with its text in linecache (gpunb compiles source)."""
    import linecache

    text = f"def f(a, b):\n    return {source}\n"
    filename = f"<bfloat16 test {abs(hash(text))}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace = {"math": math, "cuda": cuda}
    exec(compile(text, filename, "exec"), namespace)  # noqa: S102 - test-only source
    return namespace["f"]


def _result_type(source: str, *types):
    try:
        return cuda.compile_ptx(_function(source), types, device=True)[1]
    except CompileError:
        return None


B = t.bfloat16


@pytest.mark.parametrize("other,expected", [
    (B, B), (t.float16, f32), (f32, f32), (t.float64, t.float64), (t.int8, B), (t.uint8, B),
    (t.int16, f32), (t.uint16, t.float64), (t.int32, t.float64), (t.int64, t.float64),
    (t.uint64, t.float64), (t.boolean, f32)])
def test_typing_of_mixed_arithmetic_follows_numba_cuda(other, expected):
    # read off numba-cuda 0.30 (its compile_ptx's return types): + - * / with bfloat16
    for op in "+-*/":
        assert _result_type(f"a {op} b", B, other) == expected, op
        assert _result_type(f"b {op} a", B, other) == expected, op
    assert _result_type("a < b", B, other) == t.boolean


def test_typing_of_other_operators_follows_numba_cuda():
    assert _result_type("a // b", B, B) == f32
    assert _result_type("a % b", B, t.int64) == t.float64
    assert _result_type("a ** b", B, t.int32) == f32
    assert _result_type("-a", B, B) == B
    assert _result_type("+a", B, B) == B
    assert _result_type("abs(a)", B, B) == f32
    assert _result_type("min(a, b)", B, B) == B
    assert _result_type("a * 2", B, B) == t.float64  # an int literal is int64, as in numba
    assert _result_type("math.log2(a)", B, B) == f32
    # gpunb's weak float literals: numba-cuda gives float64 here
    assert _result_type("a * 2.0", B, B) == B


@pytest.mark.parametrize("source,message", [
    ("a & b", "bit operations"), ("a + 1j", "unsupported operand"),
    ("cuda.bf16.hadd(a, 1j)", "takes"), ("cuda.bf16.bfloat16(1j)", "cannot convert"),
    ("cuda.bf16.hadd(a)", "takes"), ("a << 1", "bit operations"), ("~a", "~ needs an integer")])
def test_bad_bfloat16_code_is_a_located_error(source, message):
    with pytest.raises(CompileError, match=message) as info:
        cuda.compile_ptx(_function(source), (B, B), device=True)
    assert info.value.loc is not None and info.value.loc.line == 2


@cuda.jit("void(bfloat16[:], bfloat16, float64)")
def scale_add(x, s, c):
    i = cuda.grid(1)
    if i < x.size:
        x[i] = x[i] * s + c


def test_scalars_and_declared_signature(target):
    x = np.arange(8).astype(BF)
    scale_add[1, 8](x, BF(1.5), 0.25)
    with np.errstate(all="ignore"):
        want = x.copy()
    np.testing.assert_array_equal(x.astype(np.float32),
                                  (np.arange(8, dtype=np.float32) * 1.5 + 0.25).astype(BF)
                                  .astype(np.float32))
    del want
    y = np.ones(3, BF)
    scale_add[1, 3](y, 1.0 + 2.0**-8 + 2.0**-30, 0.0)  # a Python float rounds once, as in code
    assert (as_bits(y) == 0x3F81).all()


def test_device_arrays_round_trip(target):
    @cuda.jit
    def double(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] = x[i] * bf16.bfloat16(2)

    host = np.linspace(-3, 3, 64).astype(BF)
    d = cuda.to_device(host)
    double[1, 64](d)
    back = d.copy_to_host()
    assert back.dtype == BF
    np.testing.assert_array_equal(back, host * BF(2))


def test_bit_casts_and_host_values(target):
    @cuda.jit
    def casts(i2, u2, out):
        v = bf16.int16_as_bfloat16(i2[0])
        out[0] = v
        i2[1] = bf16.bfloat16_as_int16(v)
        u2[1] = bf16.bfloat16_as_uint16(bf16.uint16_as_bfloat16(u2[0]))

    i2, u2 = np.array([0x3FC0, 0], np.int16), np.array([0xBF80, 0], np.uint16)
    out = np.zeros(1, BF)
    casts[1, 1](i2, u2, out)
    assert out[0] == BF(1.5) and i2[1] == 0x3FC0 and u2[1] == 0xBF80
    assert t.bfloat16(1.5) == BF(1.5) and type(t.bfloat16(1.5)) is BF  # a host-side cast
    assert t.from_dtype(BF) == t.bfloat16 and t.to_dtype(t.bfloat16) == np.dtype(BF)
    assert str(t.parse_signature("void(bfloat16[:, ::1], nv_bfloat16)")) == \
        "void(bfloat16[:, ::1], bfloat16)"


def test_supported_queries_on_the_cpu_target():
    import gpunb

    gpunb.set_target("cpu")
    try:
        assert cuda.is_bfloat16_supported() and cuda.is_fp8_supported()
        assert cuda.is_fp16_supported()
    finally:
        gpunb.set_target(None)


def test_from_numba_style_import():
    from gpunb.cuda.bf16 import bfloat16, hadd  # noqa: F401 - the import itself is the test

    assert bfloat16 is t.bfloat16


@pytest.mark.parametrize("cc", [(8, 0), (9, 0)])
def test_ptx_uses_bf16_instructions_and_ptxas_accepts_it(ptxas, cc):
    def kernel(out, a, b, c, d):
        i = cuda.grid(1)
        if i < out.size:
            x = a[i] * b[i] + c[i]
            out[i] = bf16.hfma(x, b[i], c[i]) + bf16.bfloat16(d[i])
            d[i] = x

    ptx, _ = cuda.compile_ptx(kernel, "void(bfloat16[:], bfloat16[:], bfloat16[:], bfloat16[:], "
                                      "float32[:])", cc=cc)
    ptxas(ptx, f"sm_{cc[0]}{cc[1]}")
    assert "fma.rn.bf16" in ptx and "cvt.rn.bf16.f32" in ptx
    if cc >= (9, 0):
        assert "mul.rn.bf16" in ptx and "add.rn.bf16" in ptx


def test_conversions_in_ptx_are_accepted_by_ptxas(ptxas):
    ptx, _ = cuda.compile_ptx(to_bf16, "void(bfloat16[:, :], float32[:], float64[:], int32[:], "
                                       "int64[:], uint64[:], float16[:], boolean[:])", cc=(8, 0))
    ptxas(ptx, "sm_80")
    ptx, _ = cuda.compile_ptx(to_ints, "void(int16[:, :], int32[:, :], uint32[:, :], "
                                       "int64[:, :], int8[:], uint8[:], bfloat16[:])", cc=(9, 0))
    ptxas(ptx, "sm_90")


@pytest.mark.gpu
def test_gpu_device_arrays_and_arithmetic():
    import gpunb

    gpunb.set_target("cuda")
    try:
        test_device_arrays_round_trip("cuda")
        test_arithmetic_matches_ml_dtypes("cuda")
    finally:
        gpunb.set_target(None)
