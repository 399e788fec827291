"""cuda.declare_device, link= / lto= on cuda.jit and cuda.CUSource & co.

Without a GPU: the declarations, CUDA C++ through NVRTC to PTX and LTO-IR, the kernel's PTX
linked with it by nvJitLink into a cubin (the same inputs the driver's linker gets on a GPU),
link errors, cache keys that read the linked code, and the CPU target's refusal. With a GPU
(`gpu` marker): kernels calling foreign functions run and give the right values.

Kernels and sources partly adapted from numba-cuda's tests/cudapy/test_device_func.py and
tests/doc_examples/test_ffi.py:
SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
SPDX-License-Identifier: BSD-2-Clause
"""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import CompileError, JitOptionError
from gpunb.foundation.types import float32, int32

TIMES2 = """
extern "C" __device__
int times2(int *out, int a)
{
  *out = a * 2;
  return 0;
}
"""
TIMES4 = """
extern "C" __device__
int times2(int *out, int a);

extern "C" __device__
int times4(int *out, int a)
{
  int tmp;
  times2(&tmp, a);
  *out = tmp * 2;
  return 0;
}
"""
TIMES2_CABI = 'extern "C" __device__ int times2(int a) { return a * 2; }'
ADD2_CABI = 'extern "C" __device__ int add2(int a, int b) { return a + b; }'
CONST42_CABI = 'extern "C" __device__ int const42() { return 42; }'


@pytest.fixture(autouse=True)
def _restore_target():
    yield
    gpunb.set_target(None)  # the gpu tests choose the CUDA target explicitly


def _nvrtc_or_skip():
    from gpunb.backends.cuda import nvrtc
    from gpunb.foundation.errors import ToolchainError

    try:
        nvrtc.version()
    except ToolchainError as exc:
        pytest.skip(f"NVRTC not installed here: {exc}")
    return nvrtc


def _kernel_calling(fn):
    @cuda.jit
    def kernel(r, x):
        i = cuda.grid(1)
        if i < len(r):
            r[i] = fn(x[i])

    return kernel


# ---- declarations --------------------------------------------------------------------------------

@pytest.mark.parametrize("sig", [int32(float32[:]), "int32(float32[:])"])
def test_declaration(sig):
    f1 = cuda.declare_device("f1", sig)
    assert f1.name == "f1"
    assert f1.sig.args == (float32[:],)
    assert f1.sig.return_type == int32


@pytest.mark.parametrize("sig", [(float32[:],), "(float32[:],)"])
def test_declaration_needs_return_type(sig):
    with pytest.raises(TypeError, match="Return type"):
        cuda.declare_device("f1", sig)


def test_declaration_errors(tmp_path):
    with pytest.raises(JitOptionError, match="Unsupported ABI"):
        cuda.declare_device("f1", "int32(int32)", abi="fortran")
    with pytest.raises(ValueError, match="Unknown extension"):
        cuda.declare_device("f1", "int32(int32)", link=str(tmp_path / "x.cpp"))
    with pytest.raises(FileNotFoundError, match="cannot read"):
        cuda.declare_device("f1", "int32(int32)", link=str(tmp_path / "missing.cu"))
    with pytest.raises(TypeError, match="cannot link"):
        cuda.declare_device("f1", "int32(int32)", link=[42])
    with pytest.raises(JitOptionError, match="link="):
        cuda.jit(link=[42])(lambda: None)


def test_linkable_kinds(tmp_path):
    from gpunb.foundation.linkable import LinkableCode, link_items

    for ext, cls in [(".cu", cuda.CUSource), (".ptx", cuda.PTXSource), (".cubin", cuda.Cubin),
                     (".fatbin", cuda.Fatbin), (".o", cuda.Object), (".a", cuda.Archive),
                     (".ltoir", cuda.LTOIR)]:
        path = tmp_path / f"code{ext}"
        path.write_bytes(b"x")
        item = LinkableCode.from_path(str(path))
        assert type(item) is cls and item.name == "code"
    a, b = cuda.CUSource(TIMES2), cuda.CUSource(TIMES4)
    # a set's order is not stable: the items are ordered by content, duplicates dropped
    assert link_items({a, b}) == link_items({b, a}) == link_items([b, a, b])[::-1] or \
        link_items({a, b}) == link_items({b, a})
    assert len(link_items([a, cuda.CUSource(TIMES2)])) == 1


def test_cache_key_reads_linked_code():
    from gpunb.cache.encode import encode

    first = cuda.declare_device("times2", "int32(int32)", link=cuda.CUSource(TIMES2))
    same = cuda.declare_device("times2", "int32(int32)", link=cuda.CUSource(TIMES2))
    edited = cuda.declare_device("times2", "int32(int32)",
                                 link=cuda.CUSource(TIMES2.replace("a * 2", "a * 3")))
    token = encode(first, gpu=str)
    assert token == encode(same, gpu=str)
    assert token != encode(edited, gpu=str)


# ---- without a GPU: NVRTC, PTX and an offline link ---------------------------------------------

def test_nvrtc_compiles_cuda_cpp():
    nvrtc = _nvrtc_or_skip()
    kind, ptx = nvrtc.compile_source("#include <cuda_fp16.h>\n" + TIMES2, "times2.cu", (9, 0))
    assert kind == "ptx"
    assert ".visible .func" in ptx and "times2" in ptx
    kind, ltoir = nvrtc.compile_source(TIMES2, "times2.cu", (9, 0), lto=True)
    assert kind == "ltoir" and len(ltoir) > 100
    with pytest.raises(CompileError, match=r"(?s)NVRTC could not compile bad.cu.*expected"):
        nvrtc.compile_source("int x = ;", "bad.cu", (9, 0))


def test_kernel_ptx_calls_the_declared_symbol():
    times2 = cuda.declare_device("times2", "int32(int32)", link=cuda.CUSource(TIMES2))
    ptx, _ = cuda.compile_ptx(_kernel_calling(times2), "void(int32[::1], int32[::1])")
    assert ".extern .func  (.param .b32 func_retval0) times2" in ptx
    assert "call.uni (retval0), times2, (param0, param1);" in ptx  # numba ABI: &out, a
    cabi = cuda.declare_device("times2", "int32(int32)", link=cuda.CUSource(TIMES2_CABI),
                               abi="c")
    ptx, _ = cuda.compile_ptx(_kernel_calling(cabi), "void(int32[::1], int32[::1])")
    assert "call.uni (retval0), times2, (param0);" in ptx  # C ABI: a only


@pytest.mark.parametrize("lto", [False, True])
def test_offline_link_resolves_the_call(lto):
    _nvrtc_or_skip()
    from gpunb.backends.cuda import linker

    times4 = cuda.declare_device("times4", "int32(int32)",
                                 link=[cuda.CUSource(TIMES2), cuda.CUSource(TIMES4)])
    ptx, _ = cuda.compile_ptx(_kernel_calling(times4), "void(int32[::1], int32[::1])",
                              cc=(9, 0))
    inputs = linker.prepare_inputs(times4.link, (9, 0), lto)
    assert [kind for kind, _, _ in inputs] == (["ltoir"] * 2 if lto else ["ptx"] * 2)
    cubin, _ = linker.link_offline(ptx, inputs, (9, 0), lto=lto)
    assert cubin[:4] == b"\x7fELF"
    with pytest.raises(linker.ForeignLinkError, match="times4"):
        linker.link_offline(ptx, inputs[:1], (9, 0), lto=lto)  # times4's code left out


@pytest.mark.parametrize("lto", [False, True])
def test_offline_link_of_a_kernel_for_sm_90a(lto):
    """A kernel whose PTX needs the architecture-specific target (wgmma: `.target sm_90a`)
    links for sm_90a: nvJitLink refuses such PTX for plain sm_90."""
    _nvrtc_or_skip()
    from gpunb.backends.cuda import linker

    times2 = cuda.declare_device("times2", "int32(int32)", link=cuda.CUSource(TIMES2))

    def kernel(out, a):
        cuda.wgmma.fence()
        out[0] = times2(a[0])

    ptx, _ = cuda.compile_ptx(kernel, "void(int32[::1], int32[::1])", cc=(9, 0))
    assert ".target sm_90a" in ptx
    cubin, log = linker.link_offline(ptx, linker.prepare_inputs(times2.link, (9, 0), lto),
                                     (9, 0), lto=lto, verbose=True)
    assert cubin[:4] == b"\x7fELF" and "sm_90a" in log


def test_linked_cubin_holds_the_foreign_code(tmp_path):
    """nvdisasm reads the linked cubin: the kernel and the foreign function are in it."""
    _nvrtc_or_skip()
    import subprocess

    from gpunb.backends.cuda import linker
    from gpunb.backends.cuda.toolchain import find_tool

    nvdisasm = find_tool("nvdisasm")
    if nvdisasm is None:
        pytest.skip("nvdisasm not found: pip install nvidia-cuda-nvdisasm")
    times2 = cuda.declare_device("times2", "int32(int32)", link=cuda.CUSource(TIMES2))
    ptx, _ = cuda.compile_ptx(_kernel_calling(times2), "void(int32[::1], int32[::1])",
                              cc=(9, 0))
    cubin, _ = linker.link_offline(ptx, linker.prepare_inputs(times2.link, (9, 0), False),
                                   (9, 0))
    path = tmp_path / "linked.cubin"
    path.write_bytes(cubin)
    text = subprocess.run([nvdisasm, str(path)], capture_output=True, text=True,
                          check=True).stdout
    assert ".text.times2" in text and "kernel" in text
    assert "IMAD.SHL" in text or "SHF.L" in text or "IADD" in text  # a * 2 in times2's body


# ---- the CPU target ------------------------------------------------------------------------------

def test_cpu_target_refuses_foreign_code():
    times2 = cuda.declare_device("times2", "int32(int32)", link=cuda.CUSource(TIMES2))
    kernel = _kernel_calling(times2)
    x = np.arange(10, dtype=np.int32)
    gpunb.set_target("cpu")
    try:
        with pytest.raises(CompileError) as info:
            kernel[1, 32](np.empty_like(x), x)
    finally:
        gpunb.set_target(None)
    text = str(info.value)
    assert "'times2' is foreign code" in text and "CPU target cannot run" in text
    assert "r[i] = fn(x[i])" in text  # the caret points at the call
    assert "@cuda.jit(device=True)" in text


def test_unsupported_argument_types():
    f = cuda.declare_device("f1", "int32(float32[:])")

    @cuda.jit
    def kernel(r, x):
        r[0] = f(x)

    with pytest.raises(CompileError, match="cannot pass float32"):
        cuda.compile_ptx(kernel, "void(int32[::1], float32[::1])")


# ---- on a GPU ------------------------------------------------------------------------------------

def _run(kernel, x):
    r = np.zeros_like(x)
    kernel[1, 32](r, x)
    return r


@pytest.mark.gpu
def test_gpu_link_cu_source():
    gpunb.set_target("cuda")
    times2 = cuda.declare_device("times2", "int32(int32)", link=cuda.CUSource(TIMES2))
    x = np.arange(10, dtype=np.int32)
    np.testing.assert_equal(_run(_kernel_calling(times2), x), x * 2)


@pytest.mark.gpu
@pytest.mark.parametrize("container", [list, tuple, set])
def test_gpu_link_multiple_sources(container):
    gpunb.set_target("cuda")
    link = container([cuda.CUSource(TIMES2), cuda.CUSource(TIMES4)])
    times4 = cuda.declare_device("times4", "int32(int32)", link=link)
    x = np.arange(10, dtype=np.int32)
    np.testing.assert_equal(_run(_kernel_calling(times4), x), x * 4)


@pytest.mark.gpu
def test_gpu_declared_in_device_function_and_parent():
    gpunb.set_target("cuda")
    times2 = cuda.declare_device("times2", "int32(int32)", link=cuda.CUSource(TIMES2))

    @cuda.jit
    def device_func(x):
        return times2(x)

    @cuda.jit
    def kernel(r, x):
        i = cuda.grid(1)
        if i < len(r):
            r[i] = device_func(x[i]) + times2(x[i] + i)

    x = np.arange(10, dtype=np.int32)
    np.testing.assert_equal(_run(kernel, x), x * 2 + (x + np.arange(10)) * 2)


@pytest.mark.gpu
def test_gpu_c_abi():
    gpunb.set_target("cuda")
    times2 = cuda.declare_device("times2", "int32(int32)", link=cuda.CUSource(TIMES2_CABI),
                                 abi="c")
    add2 = cuda.declare_device("add2", "int32(int32, int32)", link=cuda.CUSource(ADD2_CABI),
                               abi="c")
    const42 = cuda.declare_device("const42", "int32()", link=cuda.CUSource(CONST42_CABI),
                                  abi="c")

    @cuda.jit
    def kernel(r, x):
        i = cuda.grid(1)
        if i < len(r):
            r[i] = times2(x[i]) + add2(x[i], i) + const42()

    x = np.arange(10, dtype=np.int32)
    np.testing.assert_equal(_run(kernel, x), x * 2 + x + np.arange(10) + 42)


@pytest.mark.gpu
def test_gpu_file_with_include_and_lto(tmp_path):
    gpunb.set_target("cuda")
    (tmp_path / "mul.cuh").write_text("__device__ inline float mul(float a, float b) "
                                      "{ return a * b; }\n")
    source = tmp_path / "functions.cu"
    source.write_text('#include "mul.cuh"\nextern "C" __device__ int mul_f32_f32('
                      "float *out, float a, float b) { *out = mul(a, b); return 0; }\n")
    mul = cuda.declare_device("mul_f32_f32", "float32(float32, float32)", link=str(source))
    for lto in (False, True):
        @cuda.jit(lto=lto)
        def multiply_vectors(r, x, y):
            i = cuda.grid(1)
            if i < len(r):
                r[i] = mul(x[i], y[i])

        x = np.random.rand(32).astype(np.float32)
        y = np.random.rand(32).astype(np.float32)
        r = np.zeros_like(x)
        multiply_vectors[1, 32](r, x, y)
        np.testing.assert_array_equal(r, x * y)


@pytest.mark.gpu
def test_gpu_link_option_on_jit_with_ptx():
    gpunb.set_target("cuda")
    nvrtc = _nvrtc_or_skip()
    arch = cuda.get_current_device().compute_capability  # CUDA 13's NVRTC has no sm_70
    _, ptx = nvrtc.compile_source(TIMES2, "times2.cu", arch)
    times2 = cuda.declare_device("times2", "int32(int32)")  # the code comes from link= below

    @cuda.jit(link=[cuda.PTXSource(ptx)])
    def kernel(r, x):
        i = cuda.grid(1)
        if i < len(r):
            r[i] = times2(x[i])

    x = np.arange(10, dtype=np.int32)
    np.testing.assert_equal(_run(kernel, x), x * 2)


def test_use_cooperative_makes_a_cooperative_kernel():
    from gpunb import backends
    from gpunb.backends.pipeline import compile
    from gpunb.foundation.events import Stage

    sync = cuda.declare_device("grid_barrier", "int32(int32)", use_cooperative=True)
    kernel = _kernel_calling(sync)
    artifact = compile(kernel.py_func, (int32[::1], int32[::1]), {}, backends.get("cuda"),
                       stop_after=Stage.PTX, arch=(9, 0)).artifact
    assert artifact.cooperative
    assert not compile(_kernel_calling(cuda.declare_device("g", "int32(int32)")).py_func,
                       (int32[::1], int32[::1]), {}, backends.get("cuda"),
                       stop_after=Stage.PTX, arch=(9, 0)).artifact.cooperative
