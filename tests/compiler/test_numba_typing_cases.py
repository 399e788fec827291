"""Issue 13, "typing exactly as numba does": one tiny kernel per rule, run by gpunb (CPU target) and
by numba's own JIT (numba_oracle_support), with numba's answer written down so that a change in
numba shows up as such. `xfail(strict=True)` marks the rules gpunb breaks today; the reason names
numba's rule. The property test in test_numba_oracle.py searches for more of them.
"""

from __future__ import annotations

import cmath
import itertools
import math
import textwrap

import numpy as np
import pytest

pytest.importorskip("numba")

from numba_oracle_support import Case, compare, load, run_numba  # noqa: E402

import gpunb  # noqa: E402
from gpunb import cuda  # noqa: E402

F32_MAX = np.float32(3.4028235e38)
I64_MIN = np.int64(-(2**63))
U64_MAX = np.uint64(2**64 - 1)
REFUSED = "refused"

# A rule: name, body (assigns _r0, _r1, ...), arguments, numba's answer per result ((type,
# value), or REFUSED for the whole body) and, where gpunb is still wrong, why (the xfail reason).
RULES = [
    # ---- one type per definition (numba's SSA: numba/core/ssa.py, typeinfer phi = Propagate)
    ("ssa_float32_product_before_redefinition",
     "v = a\nw = v * b\n_r0 = w\nv = np.float64(v) * 3.0\n_r1 = v",
     {"a": np.float32(1.1), "b": np.float32(3.3)},
     [("float32", 3.630000114440918), ("float64", 3.3000000715255737)]),
    ("ssa_int_before_float_redefinition", "v = n\n_r0 = v\nv = 2.5\n_r1 = v", {"n": 3},
     [("int64", 3), ("float64", 2.5)]),
    ("ssa_shift_before_true_division", "_r0 = a >> 1\na = a / 2\n_r1 = a", {"a": 7},
     [("int64", 3), ("float64", 3.5)]),
    ("ssa_use_before_join", "v = np.float32(1.1)\n_r0 = v * v\nif c:\n    v = 2\n_r1 = v",
     {"c": True}, [("float32", 1.2100000381469727), ("float64", 2.0)]),
    ("ssa_float_literal_redefinition", "v = x\nv = 2.5\n_r0 = v * x", {"x": np.float32(1.1)},
     [("float64", 2.7500000596046448)]),
    # ---- integer literals at joins: Literal[int] unifies as its type (int64, or uint64 above
    # 2**63-1) by np.promote_types (Number.unify in numba/core/types/abstract.py)
    ("literal_join_with_uint32_not_taken",
     "v = 4611686018427387904\nif c:\n    v = np.uint32(255)\n_r0 = v", {"c": False},
     [("int64", 4611686018427387904)]),
    ("literal_join_negative_with_uint32", "v = -3\nif c > 5:\n    v = u\n_r0 = v",
     {"c": 1, "u": np.uint32(7)}, [("int64", -3)]),
    ("literal_join_with_int8", "v = 300\nif c:\n    v = x\n_r0 = v",
     {"c": False, "x": np.int8(1)}, [("int64", 300)]),
    ("literal_join_with_uint64", "v = 0\nif c:\n    v = x\n_r0 = v",
     {"c": True, "x": U64_MAX}, [("float64", 1.8446744073709552e19)]),
    ("loop_literal_zero_xor_uint64", "s = 0\nfor i in range(n):\n    s ^= x\n_r0 = s",
     {"n": 3, "x": np.uint64(2**64 - 5)}, [("int64", -5)]),
    ("loop_literal_zero_plus_uint64", "s = 0\nfor i in range(n):\n    s += x\n_r0 = s",
     {"n": 3, "x": np.uint64(2**64 - 5)}, [("int64", -15)]),
    ("loop_literal_zero_plus_float32", "s = 0\nfor i in range(n):\n    s += x\n_r0 = s",
     {"n": 3, "x": np.float32(1.1)}, [("float64", 3.3000000715255737)], None),
    # ---- float literal at joins: float64, never weak there
    ("float_literal_join_with_float32", "v = x\nif c:\n    v = 2.5\n_r0 = v",
     {"c": False, "x": np.float32(1.1)}, [("float64", 1.100000023841858)]),
    # ---- joins of mixed integer types: np.promote_types, not the arithmetic rule
    ("join_int8_uint8_is_int16", "v = x\nif c:\n    v = y\n_r0 = v",
     {"c": False, "x": np.int8(-3), "y": np.uint8(250)}, [("int16", -3)]),
    ("join_int16_uint8_then_negate", "v = x\nif c:\n    v = y\n_r0 = -v",
     {"c": False, "x": np.int16(-32768), "y": np.uint8(1)}, [("int64", -32768)]),
    ("max_int8_uint8_is_int16", "_r0 = max(x, y)", {"x": np.int8(-3), "y": np.uint8(250)},
     [("int16", 250)]),
    ("and_int8_uint8_is_int16", "_r0 = x and y", {"x": np.int8(3), "y": np.uint8(200)},
     [("int16", 200)]),
    ("min_uint64_bool", "_r0 = min(x, y)", {"x": np.uint64(5), "y": True}, [("uint64", 1)]),
    # a nested or/and pruned to one constant is that constant (numba prunes the branch, then
    # the outer one): found by the oracle's property test
    ("or_of_a_pruned_constant_or", "v = x / x\n_r0 = ((4294967296 * True) or x) or (v or x)",
     {"x": np.int64(3)}, [("int64", 4294967296)]),
    ("or_of_pruned_falsy_constants", "v = x / x\n_r0 = ((0 or 0.0) or x) or v",
     {"x": np.int64(3)}, [("float64", 3.0)]),
    # ---- uint64 with a signed integer: choose_result_int gives int64 (numba/core/typing/
    # builtins.py integer_binop_cases)
    ("uint64_max_plus_one", "_r0 = np.uint64(2**64-1) + 1", {}, [("int64", 0)]),
    ("uint64_minus_int64", "_r0 = x - y", {"x": np.uint64(3), "y": np.int64(5)},
     [("int64", -2)]),
    ("uint64_floordiv_int64", "_r0 = x // y", {"x": U64_MAX, "y": np.int64(2)},
     [("int64", -1)]),
    ("uint64_and_int64", "_r0 = x & y", {"x": U64_MAX, "y": np.int64(-2)}, [("int64", -2)]),
    ("int64_pow_uint64", "_r0 = x ** y", {"x": np.int64(3), "y": np.uint64(40)},
     [("int64", -6289078614652622815)]),
    ("index_with_uint64_mod_literal", "_r0 = arr[np.uint64(3) % 2]",
     {"arr": np.array([1.5, -2.0, 7.0])}, [("float64", -2.0)]),
    ("uint64_equals_int64_compares_as_float64", "_r0 = x == y",
     {"x": np.uint64(2**63), "y": np.int64(2**63 - 1)}, [("bool", True)], None),
    ("divmod_int64_uint64_is_float64", "_r0 = divmod(x, y)[0]",
     {"x": np.int64(7), "y": np.uint64(2)}, [("float64", 3.0)]),
    # ---- float32 with an integer: (float32, float32) only where the conversion is safe
    # (numba/core/typeconv/rules.py: uint16 -> float32 is not)
    ("float32_plus_uint16_is_float64", "_r0 = x + y", {"x": np.float32(1.5), "y": np.uint16(3)},
     [("float64", 4.5)]),
    ("float32_plus_int16_is_float32", "_r0 = x + y", {"x": np.float32(1.5), "y": np.int16(3)},
     [("float32", 4.5)], None),
    ("bool_pow_int32_is_float32", "_r0 = x ** y", {"x": True, "y": np.int32(3)},
     [("float32", 1.0)]),
    # ---- unary - and ~: computed in the operand's width, then widened (UnaryOp cases are
    # signature(choose_result_int(op), op); numba/cpython/numbers.py negates before casting)
    ("negate_int8_min", "_r0 = -x", {"x": np.int8(-128)}, [("int64", -128)]),
    ("negate_int32_min", "_r0 = -x", {"x": np.int32(-(2**31))}, [("int64", -(2**31))]),
    ("negate_uint32", "_r0 = -np.uint32(1)", {}, [("uint64", 4294967295)]),
    ("negate_uint8", "_r0 = -x", {"x": np.uint8(1)}, [("uint64", 255)]),
    ("invert_uint32", "_r0 = ~np.uint32(1)", {}, [("uint64", 4294967294)]),
    ("invert_uint16", "_r0 = ~x", {"x": np.uint16(1)}, [("uint64", 65534)]),
    # ---- constant expressions: numba reads bytecode, where CPython has folded them
    # (Python/ast_opt.c; no folding where the result would exceed 128 bits)
    ("fold_shift_floordiv", "_r0 = (1 << 63) // 3", {}, [("int64", 3074457345618258602)]),
    ("fold_rshift_uint64_max", "_r0 = (2**64-1) >> 60", {}, [("int64", 15)]),
    ("fold_mod", "_r0 = 2**63 % 10", {}, [("int64", 8)]),
    ("fold_too_large_sum", "_r0 = 2**64 + 5", {}, REFUSED),
    ("fold_too_large_shift", "_r0 = 1 << 64", {}, REFUSED),
    ("fold_too_large_negative", "_r0 = -(2**63) - 1", {}, REFUSED),
    ("fold_too_large_power", "_r0 = 3 ** 41", {}, REFUSED),
    ("fold_negative_power_is_float", "_r0 = 2 ** -1", {}, [("float64", 0.5)]),
    ("fold_invert_true", "_r0 = ~True", {}, [("int64", -2)]),
    ("fold_uint64_literal_plus_zero", "_r0 = 18446744073709551615 + 0", {},
     [("uint64", 18446744073709551615)]),
    ("fold_max_of_literals", "_r0 = max(1, 2**63)", {}, [("float64", 9.223372036854776e18)]),
    ("fold_too_large_in_constructor", "_r0 = np.uint64(2**64)", {}, REFUSED),
    ("no_fold_above_128_bits", "_r0 = 2 ** 100 % 7", {}, [("int64", 0)], None),
    # ---- constant conditions: numba prunes the dead branch before typing
    # (numba/core/analysis.py dead_branch_prune)
    ("prune_constant_if", "if 2 > 1:\n    v = 1\nelse:\n    v = 2.5\n_r0 = v", {},
     [("int64", 1)]),
    ("prune_if_true", "if True:\n    v = 1\nelse:\n    v = 2.5\n_r0 = v", {},
     [("int64", 1)]),
    ("prune_constant_ifexp", "_r0 = 1 if 2 > 1 else 2.5", {}, [("int64", 1)]),
    # ---- conversions and builtins (numba/core/typing/builtins.py Float, Complex, Abs, Round;
    # numba/cpython/builtins.py ol_int)
    ("float_of_float32", "_r0 = float(x)", {"x": np.float32(1.1)},
     [("float32", 1.100000023841858)]),
    ("float_of_bool_refused", "_r0 = float(x)", {"x": True}, REFUSED),
    ("complex_of_float32", "_r0 = complex(x)", {"x": np.float32(1.5)}, [("complex64", 1.5)]),
    ("complex_of_bool_refused", "_r0 = complex(x)", {"x": True}, REFUSED),
    ("int_of_int8_keeps_type", "_r0 = int(x)", {"x": np.int8(-7)}, [("int8", -7)]),
    ("int_of_uint64_keeps_type", "_r0 = int(x)", {"x": U64_MAX},
     [("uint64", 18446744073709551615)]),
    ("abs_of_bool_is_int8", "_r0 = abs(x)", {"x": True}, [("int8", 1)]),
    ("round_int16_ndigits_is_float32", "_r0 = round(x, 1)", {"x": np.int16(3)},
     [("float32", 3.0)]),
    ("copysign_int8_is_float32", "_r0 = math.copysign(x, y)",
     {"x": np.int8(3), "y": np.int8(-1)}, [("float32", -3.0)]),
    ("atan2_uint8_float32_is_float32", "_r0 = math.atan2(x, y)",
     {"x": np.uint8(3), "y": np.float32(4.0)}, [("float32", 0.6435011029243469)]),
    ("hypot_int8_float32_is_float32", "_r0 = math.hypot(x, y)",
     {"x": np.int8(3), "y": np.float32(4.0)}, [("float32", 5.0)]),
    ("np_abs_int32_is_int32", "_r0 = np.abs(x)", {"x": np.int32(-3)}, [("int32", 3)]),
    ("real_of_bool_refused", "_r0 = x.real", {"x": True}, REFUSED),
    ("conjugate_of_float", "_r0 = x.conjugate()", {"x": 2.5}, [("float64", 2.5)]),
    # ---- round(x, n): numba/cpython/builtins.py round_impl_binary
    ("round_float32_max_300_digits", "_r0 = round(x, 300)", {"x": F32_MAX},
     [("float32", 3.4028234663852886e38)]),
    ("round_400_digits", "_r0 = round(x, 400)", {"x": 1.5}, [("float64", 1.5)]),
    ("round_subnormal_310_digits", "_r0 = round(x, 310)", {"x": 1e-310},
     [("float64", 1e-310)]),
    ("round_minus_300_digits", "_r0 = round(x, -300)", {"x": 1e300},
     [("float64", 1.0000000000000006e300)]),
    ("round_float32_max_minus_38", "_r0 = round(x, -38)", {"x": F32_MAX},
     [("float32", 3.0000000054977558e38)]),
    # ---- ** and // semantics (numba/cpython/numbers.py int_power_impl, static_power_impl,
    # int_divmod_signed)
    ("float_pow_int_variable_squares", "_r0 = x ** y", {"x": 1.1, "y": 37},
     [("float64", 34.003948586157826)]),
    ("float32_pow_int_variable_squares", "_r0 = x ** y", {"x": np.float32(1.1), "y": 37},
     [("float32", 34.00397872924805)]),
    ("float_pow_literal_4_squares", "_r0 = x ** 4", {"x": 1.1},
     [("float64", 1.4641000000000004)]),
    ("int_zero_pow_negative", "_r0 = x ** y", {"x": 0, "y": -1}, [("int64", -(2**63))]),
    ("int64_min_floordiv_minus_one", "_r0 = x // y", {"x": I64_MIN, "y": -1}, [("int64", 0)]),
    ("int64_min_divmod_minus_one", "_r0 = divmod(x, y)[0]", {"x": I64_MIN, "y": -1},
     [("int64", 0)]),
    ("complex_keeps_negative_zero_imag", "_r0 = complex(a, b)", {"a": 1.5, "b": -0.0},
     [("complex128", complex(1.5, -0.0))]),
    # ---- range() loop variables: Range cases are int32, int64 and uint64
    ("range_uint32_loop_var_is_uint64", "for i in range(np.uint32(3)):\n    _r0 = i", {},
     [("uint64", 2)]),
    ("range_int8_loop_var_is_int32", "for i in range(np.int8(3)):\n    _r0 = i", {},
     [("int32", 2)]),
    # ---- a bare float literal next to a float32 (outside arithmetic, which is documented)
]


def _results(body: str) -> tuple:
    return tuple(sorted({ln.strip().split(" = ")[0] for ln in body.splitlines()
                         if ln.strip().startswith("_r")}))


def _cases():
    for name, body, params, answer, *bug in RULES:
        bug = bug[0] if bug else None
        marks = [pytest.mark.xfail(strict=True, reason=bug)] if bug else []
        yield pytest.param(Case(body, params, _results(body)), answer, id=name, marks=marks)


_NUMBA_OUTCOMES: dict = {}


def _numba_outcome(case: Case):
    """numba's outcome for a rule, computed once for both tests of the rule."""
    key = (case.body, tuple((k, repr(v)) for k, v in case.params.items()))
    if key not in _NUMBA_OUTCOMES:
        _NUMBA_OUTCOMES[key] = run_numba(load(case.source()), case)
    return _NUMBA_OUTCOMES[key]


def _numba_answer(case: Case):
    outcome = _numba_outcome(case)
    assert outcome.crashed is None, outcome.crashed
    if outcome.refused is not None:
        return REFUSED
    return list(zip(outcome.types, outcome.values, strict=True))


def _same(got, want) -> bool:
    if got == REFUSED or want == REFUSED:
        return got == want
    return all(gt == wt and _same_value(gv, wv)
               for (gt, gv), (wt, wv) in zip(got, want, strict=True))


def _same_value(a, b) -> bool:
    if isinstance(a, (bool, int, np.integer)) and isinstance(b, (bool, int, np.integer)):
        return int(a) == int(b)
    return _same_complex(a, b)


@pytest.mark.parametrize("case,answer", [pytest.param(*p.values, id=p.id) for p in _cases()])
def test_numba_gives_the_recorded_answer(case, answer):
    """The reference itself: numba 0.68's type and value for each rule."""
    assert _same(_numba_answer(case), answer)


@pytest.mark.parametrize("case,answer", list(_cases()))
def test_gpunb_types_each_rule_like_numba(case, answer):
    verdict, report = compare(case, _numba_outcome(case))
    assert verdict in ("match", "both refuse"), report


# ---- rules outside the one-kernel oracle --------------------------------------------------------

INF, NAN = math.inf, math.nan
_SPECIAL = [complex(a, b) for a, b in itertools.product([INF, -INF, NAN, 0.0, -0.0, 1.5, -2.0],
                                                          repeat=2)]


def _same_complex(a, b) -> bool:
    def part(x, y):
        return (math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x) ==
                                                     math.copysign(1, y))
    a, b = complex(a), complex(b)
    return part(a.real, b.real) and part(a.imag, b.imag)


_CMATH = ["exp", "log", "log10", "sqrt", "cos", "sin", "tan", "cosh", "sinh", "tanh", "acos",
          "asin", "atan", "acosh", "asinh", "atanh", "rect"]


def _cmath_module(name: str):
    """numba's njit `reference(z)` and a gpunb CPU `kernel(out, zs)` applying cmath.<name>."""
    call = "cmath.rect(z.real, z.imag)" if name == "rect" else f"cmath.{name}(z)"
    return load(textwrap.dedent(f"""\
        import cmath

        import numba

        from gpunb import cuda


        @numba.njit
        def reference(z):
            return {call}


        @cuda.jit(target="cpu")
        def kernel(out, zs):
            for i in range(zs.size):
                z = zs[i]
                out[i] = {call}
        """))


@pytest.mark.parametrize("name", _CMATH)
def test_cmath_special_values_like_numba(name):
    module = _cmath_module(name)
    zs = np.array(_SPECIAL, np.complex128)
    out = np.zeros(len(zs), np.complex128)
    module.kernel[1, 1](out, zs)
    wrong = [(z, module.reference(z), g) for z, g in zip(_SPECIAL, out.tolist(), strict=True)
             if not _same_complex(module.reference(z), g)]
    assert not wrong, f"cmath.{name}: (z, numba, gpunb): {wrong[:8]}"


@pytest.mark.parametrize("name", ["tanh", "tan"])
def test_cmath_tanh_past_the_overflow_threshold_like_numba(name):
    # |x| > log(max / 4) takes CPython's large-x branch, which must not hide a NaN from y = inf
    parts = [(a, b) for a in (1e300, -800.0, 710.0) for b in (INF, -INF, NAN, 1.0)]
    zs = [complex(a, b) if name == "tanh" else complex(b, a) for a, b in parts]
    module = _cmath_module(name)
    out = np.zeros(len(zs), np.complex128)
    module.kernel[1, 1](out, np.array(zs))
    wrong = [(z, module.reference(z), g) for z, g in zip(zs, out.tolist(), strict=True)
             if not _same_complex(module.reference(z), g)]
    assert not wrong, f"cmath.{name}: (z, numba, gpunb): {wrong[:8]}"


def _same_up_to_float32_rounding(a, b) -> bool:
    def part(x, y):
        if math.isfinite(x) and math.isfinite(y) and x != 0:
            return math.copysign(1, x) == math.copysign(1, y) and abs(x - y) <= 4e-7 * abs(x)
        return _same_complex(x, y)
    a, b = complex(a), complex(b)
    return part(a.real, b.real) and part(a.imag, b.imag)


@pytest.mark.parametrize("name", _CMATH)
def test_cmath_complex64_special_values_like_numba_in_float32(name):
    # numba widens some complex64 steps to float64 (its constants are doubles), so finite parts
    # may differ in the last float32 bits; infinities, NaNs and signed zeros are numba's
    module = _cmath_module(name)
    zs = np.array(_SPECIAL, np.complex64)
    out = np.zeros(len(zs), np.complex64)
    module.kernel[1, 1](out, zs)
    wrong = [(z, module.reference(z), g) for z, g in zip(zs.tolist(), out.tolist(), strict=True)
             if not _same_up_to_float32_rounding(module.reference(np.complex64(z)), g)]
    assert not wrong, f"cmath.{name}: (z, numba, gpunb): {wrong[:8]}"
    llvm_ir = module.kernel.inspect_host_llvm("void(complex64[::1], complex64[::1])")
    assert "double" not in llvm_ir, "complex64 cmath widened to float64"


@cuda.jit(target="cpu")
def _modf(out, x):
    frac, whole = math.modf(x)
    out[0] = frac
    out[1] = whole


@pytest.mark.parametrize("x", [INF, -INF, -0.0, -2.5, NAN])
def test_modf_special_values_as_c99(x):
    # numba's CPU target has no math.modf; numba.cuda lowers it to libdevice modf (C99)
    out = np.zeros(2)
    _modf[1, 1](out, x)
    frac, whole = math.modf(x)
    assert _same_complex(out[0], frac) and _same_complex(out[1], whole), (out, (frac, whole))


@cuda.jit(["(int64, int64)", "(float64, float64)"], device=True)
def _add_declared(a, b):
    return a + b


@cuda.jit(target="cpu")
def _call_add_declared(out):
    out[0] = _add_declared(1.5, 2.25)


def test_declared_signatures_pick_the_best_match():
    out = np.zeros(1)
    _call_add_declared[1, 1](out)
    assert out[0] == 3.75  # (float64, float64): exact; (int64, int64) truncates to 3


def _add(a, b):
    return a + b


def test_compile_ptx_reports_the_declared_return_type():
    """a declared return type is the compiled function's return type (numba casts to it)"""
    from gpunb.cuda import int32

    _, return_type = cuda.compile_ptx(_add, int32(int32, int32), device=True)
    assert str(return_type) == "int32"


def test_device_array_like_keeps_fortran_like_strides():
    """numba-cuda's device_array_like keeps the stride order of a non-contiguous array"""
    view = np.asfortranarray(np.arange(60.0).reshape(3, 4, 5))[:, ::2, :]
    assert view.strides == (8, 48, 96) and not view.flags.f_contiguous
    assert cuda.device_array_like(view).strides == (8, 24, 48)
    assert cuda.pinned_array_like(view).strides == (8, 24, 48)
    turned = np.arange(60.0).reshape(3, 4, 5)[:, ::2, :].transpose(2, 0, 1)
    assert turned.strides == (8, 160, 80)
    assert cuda.device_array_like(turned).strides == (8, 80, 40) == np.empty_like(turned).strides


def test_declared_return_type_casts_the_returned_value():
    from gpunb.cuda import float32, float64, int32

    dev = cuda.jit(int32(float64, float64), device=True)(_add)

    def kernel(out, a, b):
        out[0] = dev(a, b)

    out = np.zeros(1)
    cuda.jit(kernel, target="cpu")[1, 1](out, 1.7, 2.6)
    assert out[0] == 4.0  # numba: 4.3 cast to the declared int32
    _, return_type = cuda.compile_ptx(_add, float32(int32, int32), device=True)
    assert str(return_type) == "float32"


def _returns_array(a):
    return a


def test_declared_return_type_refuses_what_does_not_convert():
    from gpunb.cuda import float32, int32

    with pytest.raises(gpunb.CompileError, match="return"):
        cuda.compile_ptx(_returns_array, int32(float32[:]), device=True)


def _returns_value(out, c):
    if c:
        return
    out[0] = 1
    return 5


def test_kernel_returning_a_value_points_at_that_return():
    with pytest.raises(gpunb.CompileError) as info:
        cuda.jit(_returns_value, target="cpu")[1, 1](np.zeros(1), 1)
    assert info.value.args and "return 5" in str(info.value)


def test_cpython_reference_values_hold():
    """The C99 values the modf and cmath tests rely on, as CPython computes them."""
    assert math.copysign(1, math.modf(-math.inf)[0]) == -1
    assert cmath.exp(complex(INF, 0.0)) == complex(INF, 0.0)


# ---- where numba.cuda types differently from numba's CPU JIT, the kernel dialect follows
# numba.cuda (numba_cuda/numba/cuda/cudamath.py, cudaimpl.py round_to_impl)

@cuda.jit
def _cuda_dialect(out, x32, u32, y32):
    out[0] = math.floor(x32)  # Math_unary_with_fp16: (float32) -> float32
    out[1] = math.floor(u32)  # (uint64) -> float64
    out[2] = round(y32, 3)  # round_to_impl scales in float64: 0.3425f -> 0.343


def test_math_and_round_follow_numba_cuda():
    out = np.zeros(3, np.float64)
    _cuda_dialect[1, 1](out, np.float32(2.75), np.uint32(3), np.float32(0.3425))
    assert out[0] == 2.0 and out[1] == 3.0
    assert out[2] == float(np.float32(0.343))  # numba-cuda's test_round_to_f4_halfway
    typed = _cuda_dialect.inspect_types()
    assert "float32" in typed
    assert _floor_type(np.float32(2.75)) == "float32"
    assert _floor_type(np.uint32(3)) == "float64"


def _floor_type(value) -> str:
    from gpunb.compiler.pipeline import infer_kernel
    from gpunb.runtime.typeof import typeof

    def floor_of(x):
        return math.floor(x)

    return str(infer_kernel(floor_of, (typeof(value),), {}, device=True).return_type)


# ---- gpunb's one documented difference (README "Weak float literals"): a Python float literal
# takes the width of the float it meets in arithmetic, comparisons, min/max, math functions and
# conditional expressions, where numba makes it float64. These pin both sides of it.

@cuda.jit
def _weak(out, x, c):
    out[0] = x if c else 2.5  # numba: float64 1.100000023841858
    out[1] = x > 0.1  # numba compares in float64: True for float32(0.1)
    out[2] = min(x, 0.1)  # numba: float64
    out[3] = x * 0.1  # numba: float64 multiply


def test_weak_float_literals_are_the_documented_difference():
    out = np.zeros(4, np.float64)
    x = np.float32(0.1)
    _weak[1, 1](out, x, True)
    assert out[0] == float(x)
    assert out[1] == 0.0  # float32(0.1) > float32(0.1) is False
    assert out[2] == float(x)
    assert out[3] == float(np.float32(x * np.float32(0.1)))
    numba = pytest.importorskip("numba")

    @numba.njit
    def reference(x):
        return x > 0.1, min(x, 0.1), x * 0.1

    greater, least, product = reference(x)
    assert greater and least == 0.1 and product == float(x) * 0.1  # numba's float64 answers
