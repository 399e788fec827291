"""fp8 in kernels (fp8_e5m2, fp8_e4m3, fp8_e8m0): constructors from every number type (CUDA's:
round to nearest even, saturate to the largest finite value; e8m0 rounds up to a power of two),
exact conversions back, ml_dtypes arrays in and out, located errors, PTX ptxas accepts."""

from __future__ import annotations

import numpy as np
import pytest

from gpunb import CompileError, cuda
from gpunb.cuda.fp8 import fp8_e4m3, fp8_e5m2, fp8_e8m0
from gpunb.foundation import types as t
from gpunb.foundation.lowprecision import fp8_bits

md = pytest.importorskip("ml_dtypes")
ML = {"e5m2": md.float8_e5m2, "e4m3": md.float8_e4m3fn, "e8m0": md.float8_e8m0fnu}
LARGEST = {"e5m2": 57344.0, "e4m3": 448.0}


@cuda.jit
def construct(o5, o4, o8, f4, f8, i4):
    i = cuda.grid(1)
    if i < f4.size:
        o5[i, 0] = fp8_e5m2(f4[i])
        o4[i, 0] = fp8_e4m3(f4[i])
        o5[i, 1] = fp8_e5m2(f8[i])
        o4[i, 1] = fp8_e4m3(f8[i])
        o4[i, 2] = fp8_e4m3(i4[i])
        o8[i] = fp8_e8m0(f4[i])


def test_constructors_round_and_saturate(target):
    rng = np.random.default_rng(2)
    n = 1024
    f4 = (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 6, n)).astype(np.float32)
    f4[:5] = [np.nan, np.inf, -np.inf, 1e9, -0.0]
    f8 = f4.astype(np.float64) * (1 + rng.standard_normal(n) * 1e-9)
    i4 = rng.integers(-1000, 1000, n, dtype=np.int32)
    o5, o4, o8 = np.zeros((n, 2), ML["e5m2"]), np.zeros((n, 3), ML["e4m3"]), \
        np.zeros(n, ML["e8m0"])
    construct[8, 128](o5, o4, o8, f4, f8, i4)
    out = np.concatenate([o5.view(np.uint8)[:, :1], o4.view(np.uint8)[:, :1],
                          o5.view(np.uint8)[:, 1:], o4.view(np.uint8)[:, 1:],
                          o8.view(np.uint8)[:, None]], axis=1)
    for k, (kind, src) in enumerate([("e5m2", f4), ("e4m3", f4), ("e5m2", f8), ("e4m3", f8),
                                     ("e4m3", i4), ("e8m0", f4)]):
        want = np.array([fp8_bits(kind, v) for v in src], np.uint8)
        np.testing.assert_array_equal(out[:, k], want, err_msg=f"column {k} ({kind})")
    # in range, CUDA's rounding is ml_dtypes' rounding (ml_dtypes overflows instead of saturating)
    for k, kind in enumerate(("e5m2", "e4m3")):
        inside = np.abs(f4) <= LARGEST[kind]
        ref = f4[inside].astype(ML[kind]).view(np.uint8)
        got = out[inside, k]
        nan = np.isnan(f4[inside])
        np.testing.assert_array_equal(got[~nan], ref[~nan])
    assert out[1, 0] == 0x7B and out[1, 1] == 0x7E and out[2, 1] == 0xFE  # +-inf saturate
    assert out[0, 0] == 0x7F and out[0, 1] == 0x7F and out[0, 5] == 0xFF  # NaN


@cuda.jit
def decode(f, i, b, codes5, codes4, codes8):
    k = cuda.grid(1)
    if k < codes5.size:
        f[k, 0] = cuda.float32(codes5[k])
        f[k, 1] = cuda.float32(codes4[k])
        f[k, 2] = cuda.float32(codes8[k])
        i[k, 0] = cuda.int64(codes4[k])
        i[k, 1] = cuda.int32(codes5[k])
        b[k] = cuda.bf16.bfloat16(codes4[k])


def test_every_code_converts_back_exactly(target):
    codes = np.arange(256, dtype=np.uint8)
    f = np.zeros((256, 3), np.float32)
    i = np.zeros((256, 2), np.int64)
    b = np.zeros(256, md.bfloat16)
    decode[2, 128](f, i, b, codes.view(ML["e5m2"]), codes.view(ML["e4m3"]),
                   codes.view(ML["e8m0"]))
    for k, kind in enumerate(("e5m2", "e4m3", "e8m0")):
        np.testing.assert_array_equal(f[:, k], codes.view(ML[kind]).astype(np.float32))
    e4 = codes.view(ML["e4m3"]).astype(np.float64)
    np.testing.assert_array_equal(i[:, 0], np.where(np.isnan(e4), 0, np.trunc(e4)))
    e5 = codes.view(ML["e5m2"]).astype(np.float64)
    sat = np.clip(np.nan_to_num(np.trunc(e5), nan=0, posinf=2**31 - 1, neginf=-2**31),
                  -2**31, 2**31 - 1)
    np.testing.assert_array_equal(i[:, 1], sat)
    np.testing.assert_array_equal(b.astype(np.float32), e4.astype(np.float32))


def test_fp8_arrays_and_scalars_in_and_out(target):
    @cuda.jit
    def twice(out, x, s):
        k = cuda.grid(1)
        if k < x.size:
            out[k] = fp8_e4m3(cuda.float32(x[k]) * cuda.float32(s))

    x = np.array([0.5, -1.5, 3, 100, 0.015625], ML["e4m3"])
    out = np.zeros(5, ML["e4m3"])
    twice[1, 5](out, x, ML["e4m3"](2.0))
    np.testing.assert_array_equal(out, (x.astype(np.float32) * 2).astype(ML["e4m3"]))
    d = cuda.to_device(x)
    twice[1, 5](d, d, 1.0)
    np.testing.assert_array_equal(d.copy_to_host(), x)


def test_types_and_signatures():
    assert t.from_dtype(ML["e4m3"]) == fp8_e4m3 and t.to_dtype(fp8_e8m0) == np.dtype(ML["e8m0"])
    assert str(t.parse_signature("void(fp8_e5m2[:], fp8_e4m3)")) == "void(fp8_e5m2[:], fp8_e4m3)"
    assert fp8_e4m3(1.5) == ML["e4m3"](1.5)  # a host-side cast


@pytest.mark.parametrize("source,message", [
    ("fp8_e4m3(a) + fp8_e4m3(b)", "unsupported operand"),
    ("-fp8_e5m2(a)", "unsupported operand"),
    ("math.sqrt(fp8_e4m3(a))", "needs real numbers"),
    ("fp8_e4m3(1j)", "cannot convert")])
def test_fp8_has_no_arithmetic(source, message):
    import linecache
    import math

    text = f"def f(a, b):\n    return {source}\n"
    filename = f"<fp8 test {abs(hash(text))}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace = {"math": math, "fp8_e4m3": fp8_e4m3, "fp8_e5m2": fp8_e5m2}
    exec(compile(text, filename, "exec"), namespace)  # noqa: S102 - test-only source
    with pytest.raises(CompileError, match=message) as info:
        cuda.compile_ptx(namespace["f"], (t.float32, t.float32), device=True)
    assert info.value.loc is not None and info.value.loc.line == 2


@pytest.mark.parametrize("cc", [(8, 0), (9, 0)])
def test_ptxas_accepts_fp8_conversions(ptxas, cc):
    ptx, _ = cuda.compile_ptx(construct, "void(fp8_e5m2[:, :], fp8_e4m3[:, :], fp8_e8m0[:], "
                                         "float32[:], float64[:], int32[:])", cc=cc)
    ptxas(ptx, f"sm_{cc[0]}{cc[1]}")
    ptx, _ = cuda.compile_ptx(decode, "void(float32[:, :], int64[:, :], bfloat16[:], "
                                      "fp8_e5m2[:], fp8_e4m3[:], fp8_e8m0[:])", cc=cc)
    ptxas(ptx, f"sm_{cc[0]}{cc[1]}")


def test_types_have_class_names():
    # numba-cuda's fp8 types are classes: code (and numba-cuda's tests) read their __name__
    assert [ty.__name__ for ty in (fp8_e5m2, fp8_e4m3, fp8_e8m0)] == [
        "fp8_e5m2", "fp8_e4m3", "fp8_e8m0"]
