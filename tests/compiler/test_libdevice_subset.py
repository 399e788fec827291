"""A kernel links only the libdevice functions it calls (backends/cuda/libdevice_subset.py):
fewer functions for LLVM to optimise, the same PTX as linking the whole library."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from gpunb import cuda
from gpunb.backends.cuda import libdevice_subset
from gpunb.backends.cuda import target as cuda_target


def many_math(out, x):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        out[i] = (math.sin(v) + math.cos(v) * math.tan(v) + math.erf(v) + math.lgamma(v)
                  + math.atan2(v, 2.0) + math.pow(v, 1.5) + math.hypot(v, 3.0)
                  + math.log1p(v) + math.gamma(v))


def one_exp(out, x):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = math.exp(x[i])


def _declaring(*names: str):
    llvm = cuda_target._llvm()
    decls = "\n".join(f"declare float @{n}(float)" for n in names)
    calls = "\n".join(f"  %r{k} = call float @{n}(float %x)" for k, n in enumerate(names))
    text = (f'target triple = "{cuda_target.TRIPLE}"\n{decls}\n'
            f"define float @k(float %x) {{\n{calls}\n  ret float %x\n}}\n")
    return llvm.parse_assembly(text)


def _defined(mod) -> set:
    return {fn.name for fn in mod.functions if not fn.is_declaration}


def test_only_the_called_functions_and_their_callees_are_linked(monkeypatch):
    monkeypatch.setattr(libdevice_subset, "_subsets", {})
    tm = cuda_target.target_machine((8, 0))
    mod = _declaring("__nv_expf", "__nv_sinf")
    assert libdevice_subset.called_names(mod) == {"__nv_expf", "__nv_sinf"}
    libdevice_subset.link_libdevice(mod, tm)
    defined = _defined(mod)
    assert {"k", "__nv_expf", "__nv_sinf"} <= defined
    # the whole library holds ~350 functions; sinf's range reduction calls a few helpers
    assert len(defined) < 12, sorted(defined)
    assert mod.get_function("__nv_expf").linkage == cuda_target._llvm().Linkage.external


def test_subset_is_made_once_per_set_of_names(monkeypatch):
    monkeypatch.setattr(libdevice_subset, "_subsets", {})
    reads = []
    real = libdevice_subset._libdevice_bytes
    monkeypatch.setattr(libdevice_subset, "_libdevice_bytes", lambda: reads.append(1) or real())
    tm = cuda_target.target_machine((8, 0))
    for _ in range(2):
        libdevice_subset.link_libdevice(_declaring("__nv_expf"), tm)
    assert reads == [1]
    libdevice_subset.link_libdevice(_declaring("__nv_expf", "__nv_logf"), tm)
    assert reads == [1, 1]
    libdevice_subset.link_libdevice(_declaring(), tm)  # no libdevice call: nothing read
    assert reads == [1, 1]


def _ptx_linking_everything(monkeypatch, fn, sig: str, **options) -> str:
    """compile_ptx as before the subset: the whole of libdevice linked into the module."""
    llvm = cuda_target._llvm()

    def link_all(mod, tm):
        lib = llvm.parse_bitcode(libdevice_subset._libdevice_bytes())
        lib.triple = cuda_target.TRIPLE
        lib.data_layout = mod.data_layout
        mod.link_in(lib)

    with monkeypatch.context() as m:
        m.setattr(libdevice_subset, "link_libdevice", link_all)
        return cuda.compile_ptx(fn, sig, **options)[0]


def _without_call_numbers(ptx: str) -> str:
    """NVPTX numbers its call sites in comments (`{ // callseq 6, 0`) with a counter that runs
    on across the compiles of a process: the same kernel compiled later gets other numbers."""
    return re.sub(r"// callseq \d+", "// callseq", ptx)


def test_ptx_is_the_same_as_with_the_whole_library(monkeypatch, ptxas):
    for fn, sig in ((many_math, "void(float32[::1], float32[::1])"),
                    (many_math, "void(float64[::1], float64[::1])"),
                    (one_exp, "void(float32[::1], float32[::1])")):
        for fastmath in (False, True):
            subset = cuda.compile_ptx(fn, sig, cc=(9, 0), fastmath=fastmath)[0]
            whole = _ptx_linking_everything(monkeypatch, fn, sig, cc=(9, 0), fastmath=fastmath)
            assert _without_call_numbers(subset) == _without_call_numbers(whole), \
                (fn.__name__, sig, fastmath)
    ptxas(subset, "sm_90")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_math_kernels_run_on_the_gpu_with_the_subset(dtype):
    """Kernels linked with the subset load and compute what numpy does (a math function per
    term; each one's libdevice code and its helpers must all be there)."""
    import gpunb

    x = np.linspace(0.1, 3.0, 1000).astype(dtype)
    expected = (np.sin(x) + np.cos(x) * np.tan(x) + np.vectorize(math.erf)(x)
                + np.vectorize(math.lgamma)(x) + np.arctan2(x, 2.0) + x ** 1.5
                + np.hypot(x, 3.0) + np.log1p(x) + np.vectorize(math.gamma)(x))
    gpunb.set_target("cuda")
    try:
        kernel = cuda.jit(many_math)
        out = np.zeros_like(x)
        kernel[(x.size + 127) // 128, 128](out, x)
        cuda.synchronize()
    finally:
        gpunb.set_target(None)
    rtol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, expected.astype(dtype), rtol=rtol)
