"""libdevice functions on the CPU target, value by value against numpy and Python's math.

Each case runs `libdevice.NAME` in a kernel (on every target under test: on a GPU machine the same
expectations check libdevice itself, so the host versions are held to libdevice's semantics).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpunb import cuda
from gpunb.compiler.builtins.libdevice_host import _RULES
from gpunb.cuda import libdevice
from gpunb.cuda.libdevicefuncs import functions
from gpunb.foundation import types as t

X64 = np.array([-3.5, -1.0, -0.0, 0.0, 0.25, 1.0, 2.5, 10.0])
POS64 = np.array([0.125, 0.5, 1.0, 2.5, 3.0, 10.0, 123.0, 1e-3])
UNIT64 = np.array([-0.9, -0.5, -0.0, 0.0, 0.1, 0.5, 0.75, 0.99])
X32 = X64.astype(np.float32)
POS32 = POS64.astype(np.float32)
I32 = np.array([0, 1, -1, 7, -8, 2**31 - 1, -(2**31), 12345], dtype=np.int32)
J32 = np.array([3, -1, 1, 8, 8, 2, 5, -54321], dtype=np.int32)
I64 = np.array([0, 1, -1, 7, -8, 2**63 - 1, -(2**63), 1 << 40], dtype=np.int64)
J64 = np.array([3, -1, 1, 8, 8, 2, 5, -(1 << 35)], dtype=np.int64)
SPECIAL32 = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.7, 3e9], dtype=np.float32)


def run(name: str, *inputs):
    """`libdevice.NAME(*inputs)` element by element in a kernel; a tuple for tuple results."""
    stub = getattr(libdevice, name)
    decl = stub.declaration
    inputs = [np.asarray(x, dtype=t.to_dtype(ty)) for x, ty in zip(inputs, decl.inputs,
                                                                     strict=True)]
    result = decl.returns
    items = result.items if isinstance(result, t.Tuple) else (result,)
    outs = ", ".join(f"o{k}" for k in range(len(items)))
    ins = ", ".join(f"x{k}" for k in range(len(inputs)))
    stores = "\n".join(f"        o{k}[i] = r{'' if len(items) == 1 else f'[{k}]'}"
                       for k in range(len(items)))
    ns = {"cuda": cuda, "F": stub}
    exec(f"def kernel({outs}, {ins}):\n    i = cuda.grid(1)\n    if i < x0.size:\n"
         f"        r = F({', '.join(f'x{k}[i]' for k in range(len(inputs)))})\n{stores}\n", ns)
    outputs = [np.zeros(inputs[0].shape, dtype=t.to_dtype(item)) for item in items]
    cuda.jit(ns["kernel"])[1, inputs[0].size](*outputs, *inputs)
    return tuple(outputs) if len(items) > 1 else outputs[0]


def _vec(fn, dtype):
    return lambda *xs: np.array([fn(*v) for v in zip(*xs, strict=True)], dtype=dtype)


def _round_half_away(x):
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


FLOAT_CASES = [
    ("sin", [X64], np.sin, 1e-15), ("cosf", [X32], np.cos, 1e-6), ("tan", [X64], np.tan, 1e-15),
    ("acos", [UNIT64], np.arccos, 1e-15), ("asinhf", [X32], np.arcsinh, 1e-6),
    ("atanh", [UNIT64], np.arctanh, 1e-15), ("exp", [X64], np.exp, 1e-15),
    ("exp2f", [X32], np.exp2, 1e-6), ("expm1", [X64], np.expm1, 1e-15),
    ("log", [POS64], np.log, 1e-15), ("log1pf", [POS32], np.log1p, 1e-6),
    ("log10", [POS64], np.log10, 1e-15), ("log2f", [POS32], np.log2, 1e-6),
    ("sqrt", [POS64], np.sqrt, 0), ("cbrtf", [X32], np.cbrt, 1e-6),
    ("erf", [X64], _vec(math.erf, np.float64), 1e-15),
    ("erfcf", [X32], _vec(math.erfc, np.float32), 1e-6),
    ("lgamma", [POS64], _vec(math.lgamma, np.float64), 1e-14),
    ("tgammaf", [POS32[:6]], _vec(math.gamma, np.float32), 1e-6),
    ("fabsf", [X32], np.abs, 0), ("floor", [X64], np.floor, 0), ("ceilf", [X32], np.ceil, 0),
    ("trunc", [X64], np.trunc, 0), ("rint", [X64], np.rint, 0), ("nearbyintf", [X32], np.rint, 0),
    ("round", [X64], _round_half_away, 0), ("fast_sinf", [X32], np.sin, 1e-6),
    ("atan2", [X64, POS64], np.arctan2, 1e-15), ("powf", [POS32, X32], np.power, 1e-6),
    ("hypot", [X64, POS64], np.hypot, 1e-15), ("fmod", [X64, POS64], np.fmod, 0),
    ("remainder", [X64, POS64], _vec(math.remainder, np.float64), 0),
    ("copysignf", [POS32, X32], np.copysign, 0), ("nextafter", [X64, POS64], np.nextafter, 0),
    ("fdim", [X64, POS64], lambda x, y: np.where(x > y, x - y, 0.0), 0),
    ("fmaxf", [X32, POS32], np.fmax, 0), ("fmin", [X64, POS64], np.fmin, 0),
    ("fma", [X64, POS64, X64], lambda a, b, c: a * b + c, 1e-15),
    ("ldexpf", [X32, np.arange(8) - 3], lambda x, n: np.ldexp(x, n.astype(np.int32)), 0),
    ("scalbn", [X64, np.arange(8) - 3], lambda x, n: np.ldexp(x, n.astype(np.int32)), 0),
    ("powi", [X64, np.arange(8) - 2], lambda x, n: x ** n.astype(np.float64), 1e-15),
    ("dadd_rn", [X64, POS64], np.add, 0), ("fsub_rn", [X32, POS32], np.subtract, 0),
    ("dmul_rn", [X64, POS64], np.multiply, 0), ("fdiv_rn", [X32, POS32], np.divide, 0),
    ("drcp_rn", [POS64], lambda x: 1.0 / x, 0), ("fsqrt_rn", [POS32], np.sqrt, 0),
    ("fast_fdividef", [X32, POS32], np.divide, 1e-6),
    ("saturatef", [np.array([np.nan, -1, 0.5, 2, -0.0, 1, 0.25, 9], np.float32)],
     lambda x: np.nan_to_num(np.clip(x, 0, 1), nan=0.0), 0),
]


@pytest.mark.parametrize("name,inputs,reference,rtol", FLOAT_CASES,
                         ids=[c[0] for c in FLOAT_CASES])
def test_float_functions(target, name, inputs, reference, rtol):
    got = run(name, *inputs)
    dtype = t.to_dtype(getattr(libdevice, name).declaration.result)
    expected = reference(*[np.asarray(x, dtype=got.dtype if x.dtype.kind == "f" else x.dtype)
                           for x in inputs]).astype(dtype)
    if rtol == 0:
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol)


def test_tuple_results(target):
    s, c = run("sincosf", X32)
    np.testing.assert_allclose(s, np.sin(X32), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(c, np.cos(X32), rtol=1e-6, atol=1e-7)
    mant, exp = run("frexpf", X32)
    expect_mant, expect_exp = np.frexp(X32)
    np.testing.assert_array_equal(mant, expect_mant)
    np.testing.assert_array_equal(exp, expect_exp)
    frac, whole = run("modf", X64)
    expect_frac, expect_whole = np.modf(X64)
    np.testing.assert_array_equal(frac, expect_frac)
    np.testing.assert_array_equal(whole, expect_whole)
    assert np.signbit(frac[2])  # modf(-0.0) keeps the sign


def test_predicates_and_bits(target):
    np.testing.assert_array_equal(run("isnanf", SPECIAL32), np.isnan(SPECIAL32))
    np.testing.assert_array_equal(run("isinfd", SPECIAL32), np.isinf(SPECIAL32))
    np.testing.assert_array_equal(run("finitef", SPECIAL32), np.isfinite(SPECIAL32))
    np.testing.assert_array_equal(run("signbitd", X64), np.signbit(X64))
    np.testing.assert_array_equal(run("float_as_int", X32), X32.view(np.int32))
    np.testing.assert_array_equal(run("int_as_float", I32), I32.view(np.float32))
    np.testing.assert_array_equal(run("double_as_longlong", X64), X64.view(np.int64))
    words = X64.view(np.int64)
    hi, lo = run("double2hiint", X64), run("double2loint", X64)
    np.testing.assert_array_equal(hi, (words >> 32).astype(np.int32))
    np.testing.assert_array_equal(lo, words.astype(np.int32))
    np.testing.assert_array_equal(run("hiloint2double", hi, lo), X64)


def test_conversions(target):
    # truncation that saturates, NaN -> 0 (PTX cvt.rzi)
    np.testing.assert_array_equal(run("float2int_rz", SPECIAL32),
                                  [0, 2**31 - 1, -(2**31), 0, 0, 1, -2, 2**31 - 1])
    np.testing.assert_array_equal(run("double2ll_rz", X64), np.trunc(X64).astype(np.int64))
    np.testing.assert_array_equal(run("int2float_rn", I32), I32.astype(np.float32))
    np.testing.assert_array_equal(run("ull2double_rn", I64), I64.view(np.uint64).astype(float))
    np.testing.assert_array_equal(run("double2float_rn", X64 / 3), (X64 / 3).astype(np.float32))
    halves = run("float2half_rn", X32 / 3)
    np.testing.assert_array_equal(halves, (X32 / 3).astype(np.float16).view(np.int16))
    np.testing.assert_array_equal(run("half2float", halves),
                                  halves.view(np.float16).astype(np.float32))


def _wide(a, b, signed: bool, bits: int):
    mask = (1 << bits) - 1
    out = []
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        if not signed:
            x, y = x & mask, y & mask
        out.append(((x * y) >> bits) & mask)
    return np.array(out, dtype=np.uint64 if bits == 64 else np.uint32).view(
        np.int64 if bits == 64 else np.int32)


def test_integer_intrinsics(target):
    np.testing.assert_array_equal(run("abs", I32), np.abs(I32))  # abs(INT_MIN) == INT_MIN
    np.testing.assert_array_equal(run("llmin", I64, J64), np.minimum(I64, J64))
    np.testing.assert_array_equal(run("umax", I32, J32),
                                  np.maximum(I32.view(np.uint32), J32.view(np.uint32)).view(
                                      np.int32))
    np.testing.assert_array_equal(run("popcll", I64),
                                  [bin(v & (2**64 - 1)).count("1") for v in I64.tolist()])
    reversed_bits = [int(f"{v & 0xFFFFFFFF:032b}"[::-1], 2) for v in I32.tolist()]
    np.testing.assert_array_equal(run("brev", I32),
                                  np.array(reversed_bits, dtype=np.uint32).view(np.int32))
    np.testing.assert_array_equal(run("clz", I32),
                                  [32 - (v & 0xFFFFFFFF).bit_length() for v in I32.tolist()])
    np.testing.assert_array_equal(run("ffsll", I64), [
        (v & -v).bit_length() for v in I64.tolist()])
    np.testing.assert_array_equal(run("mulhi", I32, J32), _wide(I32, J32, True, 32))
    np.testing.assert_array_equal(run("umulhi", I32, J32), _wide(I32, J32, False, 32))
    np.testing.assert_array_equal(run("mul64hi", I64, J64), _wide(I64, J64, True, 64))
    np.testing.assert_array_equal(run("umul64hi", I64, J64), _wide(I64, J64, False, 64))
    total = I32.astype(np.int64) + J32
    np.testing.assert_array_equal(run("hadd", I32, J32), total >> 1)
    np.testing.assert_array_equal(run("rhadd", I32, J32), (total + 1) >> 1)
    utotal = I32.view(np.uint32).astype(np.int64) + J32.view(np.uint32)
    np.testing.assert_array_equal(run("uhadd", I32, J32),
                                  (utotal >> 1).astype(np.uint32).view(np.int32))
    z = np.arange(8, dtype=np.int32)
    np.testing.assert_array_equal(run("sad", I32[:4], J32[:4], z[:4]),
                                  np.abs(I32[:4] - J32[:4]) + z[:4])
    np.testing.assert_array_equal(run("usad", np.array([1, -1], np.int32),
                                      np.array([2, 0], np.int32), np.array([5, 0], np.int32)),
                                  [6, -1])  # |0xFFFFFFFF - 0| as unsigned


def test_every_host_rule_names_a_libdevice_function():
    assert {"__nv_" + name for name in _RULES} <= set(functions)
