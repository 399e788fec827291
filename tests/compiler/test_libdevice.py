"""cuda.libdevice and cuda.libdevicefuncs: the table read from libdevice's bitcode, every function
compiled to PTX that ptxas accepts, the host versions on the CPU target against numpy, and errors.

The value tests `test_sincos`, `test_frexp` and `test_sad` and the exec'd `pyfunc` template are
adapted from numba-cuda's numba_cuda/numba/cuda/tests/cudapy/test_libdevice.py
(Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES, BSD-2-Clause).
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from gpunb import CompileError, ToolchainError, cuda
from gpunb.cuda import libdevice
from gpunb.cuda.libdevicefuncs import create_signature, functions
from gpunb.foundation import types as t


def use_sincos(s, c, x):
    i = cuda.grid(1)
    if i < len(x):
        sr, cr = libdevice.sincos(x[i])
        s[i] = sr
        c[i] = cr


def use_frexp(frac, exp, x):
    i = cuda.grid(1)
    if i < len(x):
        fracr, expr = libdevice.frexp(x[i])
        frac[i] = fracr
        exp[i] = expr


def use_sad(r, x, y, z):
    i = cuda.grid(1)
    if i < len(x):
        r[i] = libdevice.sad(x[i], y[i], z[i])


# ---- numba-cuda's value tests: a tuple, a mixed tuple and a scalar return ------------------------


def test_sincos(target):
    arr = np.arange(100, dtype=np.float64)
    sres, cres = np.zeros_like(arr), np.zeros_like(arr)
    cuda.jit(use_sincos)[4, 32](sres, cres, arr)
    np.testing.assert_allclose(np.cos(arr), cres)
    np.testing.assert_allclose(np.sin(arr), sres)


def test_frexp(target):
    arr = np.linspace(start=1.0, stop=10.0, num=100, dtype=np.float64)
    fracres, expres = np.zeros_like(arr), np.zeros(shape=arr.shape, dtype=np.int32)
    cuda.jit(use_frexp)[4, 32](fracres, expres, arr)
    frac_expect, exp_expect = np.frexp(arr)
    np.testing.assert_array_equal(frac_expect, fracres)
    np.testing.assert_array_equal(exp_expect, expres)


def test_sad(target):
    x, y, z = np.arange(0, 200, 2), np.arange(50, 150), np.arange(15, 115)
    r = np.zeros_like(x)
    cuda.jit(use_sad)[4, 32](r, x, y, z)
    np.testing.assert_array_equal(np.abs(x - y) + z, r)


# ---- the table ---------------------------------------------------------------------------------


def test_table_has_libdevice_signatures():
    assert len(functions) > 300
    assert functions["__nv_sin"] == (t.float64, [("a", t.float64, False)])
    retty, args = functions["__nv_sincosf"]
    assert retty == t.void and [a.is_ptr for a in args] == [False, True, True]
    assert create_signature(retty, args) == t.Signature(t.Tuple((t.float32, t.float32)),
                                                        (t.float32,))
    assert create_signature(*functions["__nv_frexp"]) == t.Signature(
        t.Tuple((t.float64, t.int32)), (t.float64,))
    assert create_signature(*functions["__nv_float2half_rn"]) == t.Signature(t.int16,
                                                                              (t.float32,))
    assert create_signature(*functions["__nv_sad"]).return_type == t.int32
    assert "__nv_nan" not in functions and "__nv_norm" not in functions


def test_every_pointer_parameter_is_named():
    """Opaque pointers carry no pointee type: each function taking one must be listed, so a new
    libdevice with another one is noticed here rather than guessed."""
    import llvmlite.binding as llvm

    from gpunb.backends.cuda.toolchain import libdevice_path
    from gpunb.cuda import libdevicefuncs as ldf

    with open(libdevice_path(), "rb") as f:
        module = llvm.parse_bitcode(f.read())
    with_pointers = {fn.name for fn in module.functions if fn.name.startswith("__nv_") and
                     not fn.is_declaration and any(str(a.type) == "ptr" for a in fn.arguments)}
    assert with_pointers == set(ldf.OUTPUT_POINTERS) | set(ldf.INPUT_POINTERS)
    assert set(ldf.not_offered()) == set(ldf.INPUT_POINTERS)


def test_stubs_and_module_access():
    assert libdevice.sin is libdevice.sin  # one stub per name (cache keys name it)
    assert cuda.libdevice is libdevice
    assert "sincos" in dir(libdevice) and "nan" not in dir(libdevice)
    assert repr(libdevice.frexp) == \
        "<gpunb libdevice function frexp(a: float64) -> (float64, int32)>"
    with pytest.raises(RuntimeError, match="only be used inside a GPU function"):
        libdevice.sin(1.0)
    with pytest.raises(AttributeError, match="reads a C string"):
        libdevice.nanf  # noqa: B018
    with pytest.raises(AttributeError, match="libdevice has no function __nv_sine"):
        libdevice.sine  # noqa: B018


def test_import_parses_nothing():
    code = ("import sys, gpunb; from gpunb import cuda; from gpunb.cuda import libdevice; "
            "import gpunb.cuda.libdevicefuncs as f; "
            "assert 'llvmlite' not in sys.modules, 'llvmlite imported'; "
            "assert f._table.cache_info().currsize == 0; libdevice.sin; "
            "assert f._table.cache_info().currsize == 1")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_bitcode_is_a_toolchain_error(monkeypatch):
    from gpunb.backends.cuda import toolchain
    from gpunb.cuda import libdevicefuncs as ldf

    def missing():
        raise ToolchainError("libdevice was not found; pip install nvidia-nvvm")

    monkeypatch.setattr(toolchain, "libdevice_path", missing)
    ldf._table.cache_clear()
    try:
        with pytest.raises(ToolchainError, match="nvidia-nvvm"):
            ldf.declarations()
    finally:
        monkeypatch.undo()
        ldf._table.cache_clear()


# ---- every function compiles to PTX that ptxas accepts -------------------------------------------

_ARRAYS = {t.float64: "f64", t.float32: "f32", t.int64: "i64", t.int32: "i32", t.int16: "i16"}
BATCH = 60
NAMES = sorted(functions)


def batch_kernel(symbols: list):
    """One kernel calling every function of `symbols`, each reading its arguments from input
    arrays and storing every result, so that nothing is optimised away."""
    used = {k: 0 for k in _ARRAYS.values()}
    body = []

    def slot(ty: t.Type) -> str:
        kind = _ARRAYS[ty]
        used[kind] += 1
        return f"{kind}[{used[kind] - 1}]"

    for symbol in symbols:
        retty, args = functions[symbol]
        call = f"libdevice.{symbol[5:]}({', '.join(slot(a.ty) for a in args if not a.is_ptr)})"
        result = create_signature(retty, args).return_type
        items = result.items if isinstance(result, t.Tuple) else (result,)
        body.append(f"    r = {call}")
        for k, item in enumerate(items):
            index = "" if len(items) == 1 else f"[{k}]"
            body.append(f"    out_{slot(item)} = r{index}")
    params = ", ".join(f"out_{k}, {k}" for k in _ARRAYS.values())
    ns = {"libdevice": libdevice}
    exec(f"def batch({params}):\n" + "\n".join(body) + "\n", ns)
    sig = tuple(ty[::1] for ty in _ARRAYS for _ in (0, 1))
    return ns["batch"], sig


@pytest.fixture(scope="module")
def batch_results(ptxas):
    """PTX checks per batch of BATCH functions, made when a test of the batch first asks."""
    results: dict = {}

    def check(index: int):
        if index not in results:
            kernel, sig = batch_kernel(NAMES[index * BATCH:(index + 1) * BATCH])
            ptx, _ = cuda.compile_ptx(kernel, sig, cc=(9, 0))
            ptxas(ptx, "sm_90")
            results[index] = ptx
        return results[index]

    return check


@pytest.mark.parametrize("symbol", NAMES)
def test_compiles_to_ptx(symbol, batch_results):
    ptx = batch_results(NAMES.index(symbol) // BATCH)
    assert "ld.param" in ptx and "st.global" in ptx


# numba-cuda's generated test: the template exec'd, compiled with compile_ptx
FUNCTION_TEMPLATE = """\
from gpunb.cuda import libdevice

def pyfunc(%(pyargs)s):
    ret = libdevice.%(func)s(%(funcargs)s)
    %(retvars)s = ret
"""


@pytest.mark.parametrize("libname", ["__nv_sincos", "__nv_frexpf", "__nv_sad", "__nv_remquof",
                                     "__nv_float2half_rn", "__nv_brevll"])
def test_numba_template_compiles(libname, ptxas):
    retty, args = functions[libname]
    sig = create_signature(retty, args)
    funcargs = ", ".join(f"a{i}" for i, arg in enumerate(args) if not arg.is_ptr)
    returns = sig.return_type.items if isinstance(sig.return_type, t.Tuple) else None
    if returns:
        pyargs = ", ".join(f"r{i}" for i in range(len(returns))) + ", " + funcargs
        retvars = ", ".join(f"r{i}[0]" for i in range(len(returns)))
    else:
        pyargs, retvars = "r0, " + funcargs, "r0[0]"
    code = FUNCTION_TEMPLATE % {"func": libname[5:], "pyargs": pyargs, "funcargs": funcargs,
                                "retvars": retvars}
    namespace: dict = {}
    exec(code, globals(), namespace)
    pyargs = [arg.ty for arg in args if not arg.is_ptr]
    outputs = [r[::1] for r in returns] if returns else [sig.return_type[::1]]
    ptx, resty = cuda.compile_ptx(namespace["pyfunc"], tuple(outputs + pyargs))
    assert resty == t.void
    assert "ld.param" in ptx and "st.global" in ptx
    ptxas(ptx, "sm_90")


# ---- errors --------------------------------------------------------------------------------------


def rsqrt_kernel(r, x):
    r[0] = libdevice.rsqrt(x[0])


def test_cuda_only_function_on_cpu_is_a_located_error(ptxas):
    gpunb_cpu = cuda.jit(rsqrt_kernel, target="cpu")
    with pytest.raises(CompileError) as info:
        gpunb_cpu[1, 1](np.zeros(1), np.ones(1))
    text = str(info.value)
    assert "libdevice.rsqrt exists only on the CUDA target" in text
    assert "test_libdevice.py" in text and "r[0] = libdevice.rsqrt(x[0])" in text
    ptx, _ = cuda.compile_ptx(rsqrt_kernel, (t.float64[::1], t.float64[::1]))
    ptxas(ptx, "sm_90")  # the same kernel is fine for the GPU


def wrong_count(r, x):
    r[0] = libdevice.sin(x[0], x[1])


def complex_argument(r, x):
    r[0] = libdevice.sin(x[0] * 1j)


def keyword_argument(r, x):
    r[0] = libdevice.sin(x=x[0])


@pytest.mark.parametrize("kernel,message", [
    (wrong_count, r"libdevice.sin\(\) takes 1 argument\(s\), got 2"),
    (complex_argument, r"libdevice.sin\(\) cannot take complex128 as a \(float64\)"),
    (keyword_argument, r"libdevice.sin\(\) takes positional arguments only"),
])
def test_typing_errors(kernel, message):
    with pytest.raises(CompileError, match=message) as info:
        cuda.compile_ptx(kernel, (t.float64[::1], t.float64[::1]))
    assert "libdevice.sin(a: float64) -> float64" in str(info.value)


def conversions(r, x):
    r[0] = libdevice.sinf(x[0])  # float64 -> float32, as numba's unsafe conversion
    r[1] = libdevice.abs(x[1])  # float64 -> int32 (truncates)
    r[2] = libdevice.sin(True)


def test_arguments_convert_to_the_declared_types(target):
    r = np.zeros(3)
    cuda.jit(conversions)[1, 1](r, np.array([0.5, -7.9]))
    assert r[0] == float(np.float32(r[0])) and r[0] == pytest.approx(math.sin(0.5), rel=1e-6)
    assert r[1] == 7.0 and r[2] == math.sin(1.0)
