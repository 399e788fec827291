"""Differential testing against numba's njit: programs from diff_programs.Builder (a fixed list of
seeds) and the mismatches that builder found, each kept as a regression case. Every case runs as
a gpunb kernel on the CPU target (one thread, results stored into arrays) and as an
`@njit(error_model="numpy")` function; types and values must agree bit for bit (NaN equals NaN),
or both must refuse the code (numba_oracle_support.compare). The generated kernels are also
compiled to PTX for sm_80 and checked by ptxas, for lowering crashes only CUDA would meet.

A longer search: `PYTHONPATH=. python tests/compiler/diff_census.py 0 500` prints every mismatch
of 500 seeds.
"""

from __future__ import annotations

import cmath
import os
import textwrap

import numpy as np
import pytest

pytest.importorskip("numba")

from diff_programs import Builder  # noqa: E402 - after the numba check
from numba_oracle_support import HEADER, Case, compare, load  # noqa: E402

# Seeds whose programs cover the builder's forms (loops with break / continue / else, while,
# unpacking, local arrays, complex parts, numpy and math functions) and agree with numba;
# GPUNB_DIFF_SEEDS=0-499 (or 3,17,42) runs those instead (a search: every mismatch fails).
SEEDS = [400, 425, 437, 506, 579, 584, 603, 609]


def _case(body: str, **params) -> Case:
    results = tuple(dict.fromkeys(line.split("=", 1)[0].strip() for line in body.splitlines()
                                  if line.startswith("_r")))
    return Case(body, params, results)


# Each: (what a user saw, the case). One test per class of mismatch.
REGRESSIONS = {
    # np.abs of an 8/16/64-bit integer computed fabs in float64 and stored the double's bits
    # (an internal compiler error for an int8 result; 4617315517961601024 for |-5| in int64)
    "np_abs_keeps_integer_type": _case(
        "_r0 = np.abs(p0)\n_r1 = np.absolute(p1)\n_r2 = np.abs(p2)\n_r3 = np.abs(p3)\n"
        "_r4 = np.abs(p4)", p0=np.int8(-128), p1=np.int16(-7), p2=np.uint8(200),
        p3=np.int64(-5), p4=np.int32(-9)),
    # np.abs of a bool is numpy's '?->?' loop (bool); np.fabs has no integer loop (a float)
    "np_abs_bool_and_fabs_of_int": _case(
        "_r0 = np.abs(p0)\n_r1 = np.fabs(p1)\n_r2 = np.fabs(p2)", p0=True, p1=np.int16(-3),
        p2=np.uint8(7)),
    # np.floor/ceil/trunc of an integer or bool computed in a float (numpy >= 2.3 has
    # integer and bool loops, 'l->l': numba gives the integer back, in its type)
    "np_floor_of_integer_keeps_type": _case(
        "_r0 = np.floor(p0)\n_r1 = np.ceil(p1)\n_r2 = np.trunc(p2)\n_r3 = np.floor(p3)\n"
        "_r4 = np.rint(p0)\n_r5 = np.floor(p4)", p0=np.int64(-3), p1=np.uint8(200), p2=True,
        p3=np.int16(-7), p4=np.float32(-2.5)),
    # np.remainder computed C99's remainder (np.remainder(5.0, 3.0) was -1.0, numpy's is 2.0)
    # and, like np.power, gave a float for integers (numpy's 'll->l' loops: numba's int64)
    "np_remainder_and_power_of_integers": _case(
        "_r0 = np.remainder(p0, p1)\n_r1 = np.remainder(p2, p3)\n_r2 = np.remainder(p4, p5)\n"
        "_r3 = np.power(p2, p3)\n_r4 = np.power(p4, p5)\n_r5 = np.remainder(p0, p3)\n"
        "_r6 = np.power(p6, p3)", p0=np.float64(5.0), p1=np.float64(-3.0), p2=np.int64(-5),
        p3=np.int64(3), p4=np.int8(-7), p5=np.int8(2), p6=np.uint16(3)),
    # np.isnan/isinf/isfinite of a complex number was refused (numpy's 'D->?' loops)
    "np_isnan_of_complex": _case(
        "_r0 = np.isnan(p0)\n_r1 = np.isinf(p0)\n_r2 = np.isfinite(p0)\n_r3 = np.isnan(p1)\n"
        "_r4 = np.isinf(p1)\n_r5 = np.isfinite(p1)\n_r6 = np.isfinite(p2)\n_r7 = np.isnan(p3)",
        p0=np.complex128(complex(1.5, np.nan)), p1=np.complex64(complex(-np.inf, 2.0)),
        p2=np.complex128(3 - 4j), p3=np.int16(5)),
    # np.real / np.imag were "cannot call real from GPU code" (numba: x.real, x.imag)
    "np_real_imag_of_numbers": _case(
        "_r0 = np.real(p0)\n_r1 = np.imag(p0)\n_r2 = np.real(p1)\n_r3 = np.imag(p1)\n"
        "_r4 = np.imag(p2)\n_r5 = np.real(p3)", p0=np.complex64(1 + 2j), p1=np.float32(3),
        p2=np.int16(5), p3=np.complex128(-0.0 - 7j)),
    # np.sign of a complex number was refused (numpy 2 and numba: z / |z|, 0 for 0)
    "np_sign_of_complex": _case(
        "_r0 = np.sign(p0)\n_r1 = np.sign(p1)\n_r2 = np.sign(p2)\n_r3 = np.sign(p3)",
        p0=np.complex128(-3 + 4j), p1=np.complex64(0j), p2=np.complex64(1e-30 + 2e-30j),
        p3=np.complex128(complex(np.inf, 1))),
    # np.reciprocal of an integer was refused (numpy's and numba's integer loops: 1 / x)
    "np_reciprocal_of_integers": _case(
        "_r0 = np.reciprocal(p0)\n_r1 = np.reciprocal(p1)\n_r2 = np.reciprocal(p2)\n"
        "_r3 = np.reciprocal(p3)\n_r4 = np.reciprocal(p4)\n_r5 = np.reciprocal(p5)\n"
        "_r6 = np.reciprocal(p6)", p0=np.int8(-1), p1=np.int64(0), p2=np.int32(0),
        p3=np.int16(0), p4=np.uint8(1), p5=np.int64(7), p6=np.uint32(0)),
    # np.positive of a complex number was an internal compiler error (KeyError: 'positive')
    "np_positive_of_complex": _case(
        "_r0 = np.positive(p0)\n_r1 = np.positive(p1)\n_r2 = np.conjugate(p0)\n"
        "_r3 = np.positive(p2)", p0=np.complex64(1 - 2j), p1=np.complex128(3 + 4j),
        p2=np.int8(-5)),
    # np.minimum / np.maximum of scalars were Python's min / max: a NaN second argument was
    # dropped (np.minimum(127, nan) gave 127; numpy and numba: nan) and np.minimum(int64,
    # float32) was float64 (numba: numpy's 'ff->f' loop, float32)
    "np_minimum_propagates_nan": _case(
        "_r0 = np.minimum(p0, p1)\n_r1 = np.maximum(p0, p1)\n_r2 = np.minimum(p1, p0)\n"
        "_r3 = np.fmin(p0, p1)\n_r4 = np.minimum(p2, p3)\n_r5 = np.maximum(p3, p2)\n"
        "_r6 = np.minimum(p2, p4)\n_r7 = np.maximum(p5, p2)",
        p0=np.float64(127), p1=np.float64(np.nan), p2=np.int64(127), p3=np.float32(np.nan),
        p4=np.uint8(3), p5=True),
    # cmath: numba converts bool and 8/16-bit integers to complex64 (gpunb gave complex128);
    # log10, tanh and acosh give complex128 for complex64 (numba's parts are float64)
    "cmath_converts_as_numba": _case(
        "_r0 = cmath.exp(p0)\n_r1 = cmath.sqrt(p1)\n_r2 = cmath.isnan(p2)\n"
        "_r3 = cmath.exp(p3)\n_r4 = cmath.log(p0, p3)\n_r5 = cmath.log10(p4)\n"
        "_r6 = cmath.tanh(p4)\n_r7 = cmath.acosh(p4)\n_r8 = cmath.phase(p4)\n"
        "_r9 = cmath.polar(p4)[1]\n_r10 = cmath.exp(p5)",
        p0=np.int8(2), p1=True, p2=np.uint64(7), p3=np.uint16(3),
        p4=np.complex128(0.5 - 2j), p5=np.int32(-1)),
    # numba has no cmath.phase/polar/log10/sinh/cosh/tanh/acosh of a real number, and rect
    # takes floats only: gpunb accepted them all
    **{f"cmath_{fn}_of_real_refused": _case(f"_r0 = cmath.{fn}(p0)", p0=np.float64(0.5))
       for fn in ("phase", "log10", "sinh", "cosh", "tanh", "acosh")},
    "cmath_polar_of_int_refused": _case("_r0 = cmath.polar(p0)[0]", p0=np.int32(3)),
    "cmath_rect_of_int_refused": _case("_r0 = cmath.rect(p0, p1)", p0=np.int16(1),
                                       p1=np.float64(0.5)),
}


def test_cmath_of_complex64_types_as_numba():
    """numba's types; the values up to float32 rounding: numba computes complex64 log10/tanh/
    acosh with float64 parts, gpunb in complex64 (float64 is slow on a GPU), widened at the
    end."""
    from numba_oracle_support import load, run_gpunb, run_numba

    case = _case("_r0 = cmath.log10(p0)\n_r1 = cmath.tanh(p0)\n_r2 = cmath.acosh(p0)\n"
                 "_r3 = cmath.sinh(p0)\n_r4 = cmath.phase(p0)", p0=np.complex64(1.5 + 0.5j))
    module = load(case.source())
    ref = run_numba(module, case)
    got = run_gpunb(module, case, [np.dtype(ty) for ty in ref.types])
    assert ref.types == ["complex128", "complex128", "complex128", "complex64", "float32"]
    assert got.types == ref.types
    np.testing.assert_allclose(np.array(got.values, np.complex128),
                               np.array(ref.values, np.complex128), rtol=1e-6)


def test_np_fmod_of_integers_types_as_numba_computes_as_numpy():
    """np.fmod of integers gave a float; numba's type is the integer's (numpy's 'll->l' loop)
    but its value is an unsigned remainder (numba's np_int_fmod_impl is np_int_urem_impl:
    fmod(-5, 3) is 2 there); gpunb computes numpy's value, C's % (-2), 0 for a zero divisor
    (README: Typing)."""
    from numba_oracle_support import load, run_gpunb, run_numba

    values = [(-5, 3), (5, -3), (7, 0), (-128, -1), (100, 7)]
    for dtype in (np.int8, np.int64, np.uint32):
        for x, y in values:
            x, y = (x % 256, y % 256) if dtype is np.uint32 else (x, y)
            case = _case("_r0 = np.fmod(p0, p1)", p0=dtype(x), p1=dtype(y))
            module = load(case.source())
            ref = run_numba(module, case)
            got = run_gpunb(module, case, [np.dtype(dtype)])
            assert got.types == ref.types == [np.dtype(dtype).name], (x, y, got, ref)
            with np.errstate(all="ignore"):
                assert got.values[0] == np.fmod(dtype(x), dtype(y)), (dtype, x, y, got)


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression_agrees_with_numba(name):
    verdict, report = compare(REGRESSIONS[name])
    assert verdict in ("match", "both refuse"), report


def _seeds() -> list:
    spec = os.environ.get("GPUNB_DIFF_SEEDS", "")
    if "-" in spec:
        first, last = (int(x) for x in spec.split("-"))
        return list(range(first, last + 1))
    return [int(x) for x in spec.split(",")] if spec else SEEDS


@pytest.mark.parametrize("seed", _seeds())
def test_generated_program_agrees_with_numba(seed):
    """'numba crashed': a run-time exception in numba (complex division by zero) that a GPU
    thread cannot raise; nothing to compare."""
    verdict, report = compare(Builder(seed).program())
    assert verdict in ("match", "both refuse", "numba crashed"), f"seed {seed}: {report}"


def _batch_source(cases: list) -> tuple:
    """One module: each program a device function, one kernel calling them all; and the
    kernel's signature (each program's outputs as arrays of numba's result types)."""
    import numba

    parts, kernel_params, kernel_calls, sig = [HEADER], [], [], []
    for k, (case, types) in enumerate(cases):
        outs = [f"out{i}" for i in range(len(case.results))]
        names = outs + list(case.params)
        body = textwrap.indent(textwrap.dedent(case.body).strip("\n"), "    ")
        body = body.replace("local_array(", "cuda.local.array(")
        stores = "".join(f"\n    out{i}[0] = {r}" for i, r in enumerate(case.results))
        parts.append(f"\n\n@cuda.jit(device=True)\ndef p{k}({', '.join(names)}):\n"
                     f"{body}{stores}\n")
        kernel_params += [f"a{k}_{n}" for n in names]
        kernel_calls.append(f"    p{k}({', '.join(f'a{k}_{n}' for n in names)})")
        sig += [f"{'bool_' if ty == 'bool' else ty}[::1]" for ty in types]
        sig += [str(numba.typeof(v)).replace("bool", "boolean") for v in case.params.values()]
    parts.append(f"\n\ndef batch({', '.join(kernel_params)}):\n" + "\n".join(kernel_calls))
    return "".join(parts) + "\n", f"void({', '.join(sig)})"


def test_generated_programs_compile_to_ptx_for_sm80(ptxas):
    """The programs of the seed list, one kernel, through NVPTX and ptxas (sm_80): lowering
    crashes and PTX the assembler rejects show up here without a GPU."""
    from numba_oracle_support import run_numba

    from gpunb import cuda

    cases = []
    for seed in _seeds():
        case = Builder(seed).program()
        ref = run_numba(load(case.source()), case)
        if ref.refused is None and ref.crashed is None:
            cases.append((case, ref.types))
    if not cases:
        pytest.skip("no seeds")
    source, sig = _batch_source(cases)
    module = load(source)
    ptx, _ = cuda.compile_ptx(module.batch, sig, cc=(8, 0))
    ptxas(ptx, "sm_80")


def _fixed_functions(out_i, out_f, out_b, out_c, flags, zs, i8, i32, u16, f64, c64, c128):
    out_i[0] = np.abs(i8)
    out_i[1] = np.fmod(i32, i8)
    out_i[2] = np.power(u16, u16)
    out_i[3] = np.floor(i32)
    out_i[4] = np.remainder(i32, i8) + np.reciprocal(i8)
    out_f[0] = np.remainder(f64, 3.0)
    out_f[1] = np.fabs(i8) + np.minimum(f64, np.float64(np.nan))
    out_b[0] = np.isnan(c64)
    out_b[1] = np.isinf(c128)
    out_b[2] = np.isfinite(c64)
    np.isnan(zs, flags)
    out_c[0] = cmath.exp(i8)
    out_c[1] = cmath.log10(c64)
    out_c[2] = cmath.tanh(c64) + cmath.acosh(c128) + np.real(c64) + np.imag(zs)[0] + \
        np.sign(c128) + np.positive(c64)


def test_fixed_functions_compile_to_ptx(ptxas):
    """The lowering of every fix above, for sm_80 through ptxas."""
    from gpunb import cuda

    sig = ("void(int64[::1], float64[::1], boolean[::1], complex128[::1], boolean[::1], "
           "complex64[::1], int8, int32, uint16, float64, complex64, complex128)")
    ptx, _ = cuda.compile_ptx(_fixed_functions, sig, cc=(8, 0))
    ptxas(ptx, "sm_80")


def _run_fixed_functions(target: str) -> list:
    from gpunb import cuda

    kernel = cuda.jit(target=target)(_fixed_functions)
    outs = [np.zeros(5, np.int64), np.zeros(2), np.zeros(3, np.bool_), np.zeros(3, np.complex128),
            np.zeros(3, np.bool_)]
    zs = np.array([1 + 1j, complex(np.nan, 0), complex(0, np.inf)], np.complex64)
    kernel[1, 1](*outs, zs, np.int8(-7), np.int32(-20), np.uint16(3), np.float64(-5.5),
                 np.complex64(1 + 2j), np.complex128(complex(np.inf, 1)))
    return outs


def test_fixed_functions_values_on_the_cpu_target():
    ints, floats, flags, zs, nan_flags = _run_fixed_functions("cpu")
    assert ints.tolist() == [7, np.fmod(-20, -7), 27, -20, np.remainder(-20, -7)]
    assert floats[0] == np.remainder(-5.5, 3.0) and np.isnan(floats[1])  # minimum(x, nan)
    assert flags.tolist() == [False, True, True] and nan_flags.tolist() == [False, True, False]
    np.testing.assert_allclose(zs[:2], [cmath.exp(-7), cmath.log10(1 + 2j)], rtol=1e-6)


@pytest.mark.gpu
def test_fixed_functions_agree_on_the_gpu():
    """The same kernel on CUDA: integers and flags exactly, math up to libdevice's rounding."""
    cpu, gpu = _run_fixed_functions("cpu"), _run_fixed_functions("cuda")
    for k in (0, 2, 4):
        assert gpu[k].tolist() == cpu[k].tolist()
    np.testing.assert_allclose(gpu[1], cpu[1], rtol=1e-12)
    np.testing.assert_allclose(gpu[3], cpu[3], rtol=1e-6)


def _real_imag_views(z, out):
    for i in range(z.size):
        out[i] = np.imag(z)[i] - np.real(z)[i]
    np.real(z)[0] = 5.0  # numba's views write through


def test_np_real_imag_of_arrays_are_views():
    from gpunb import cuda

    z = np.array([1 + 2j, -3 + 0.5j], np.complex64)
    out = np.zeros(2, np.float32)
    cuda.jit(target="cpu")(_real_imag_views)[1, 1](z, out)
    assert out.tolist() == [1.0, 3.5] and z[0] == 5 + 2j
