"""cuda.compile_ptx and the inspection API without a GPU: return types, device functions, arch
targets, line info, fastmath, libdevice linking, address spaces, resources, SASS; every PTX
checked by ptxas for sm_90 and sm_80 (kernels of the other test modules are checked there)."""

import math
import re

import numpy as np
import pytest

from gpunb import cuda, float32, float64, int32, types


@cuda.jit
def saxpy(out, x, y, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


@cuda.jit
def uses_math(out, x):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = math.sin(x[i]) + math.exp(x[i]) / math.sqrt(x[i])


@cuda.jit(device=True)
def scale(x):
    return x * 2.0


@cuda.jit(device=True)
def divmod_pair(a, b):
    return a // b, a % b


@cuda.jit
def smem_kernel(out, x):
    s = cuda.shared.array(32, float32)
    s[cuda.threadIdx.x] = x[cuda.grid(1)]
    cuda.syncthreads()
    out[cuda.grid(1)] = s[31 - cuda.threadIdx.x]


def test_compile_ptx_kernel_returns_void(ptxas):
    ptx, rt = cuda.compile_ptx(saxpy, "void(float32[::1], float32[::1], float32[::1], float32)")
    assert rt == types.void
    assert ".visible .entry" in ptx
    ptxas(ptx, "sm_90")


def test_compile_ptx_accepts_python_function_and_tuple_signature(ptxas):
    ptx, rt = cuda.compile_ptx(saxpy.py_func, (float32[::1], float32[::1], float32[::1], float32))
    assert rt == types.none
    ptxas(ptx, "sm_90")


@pytest.mark.parametrize("sig,expected", [("float32(float32)", float32),
                                          ("(float64,)", float64), ("(int32,)", float64)])
def test_compile_ptx_device_function_return_type(ptxas, sig, expected):
    ptx, rt = cuda.compile_ptx(scale, sig, device=True)
    assert rt == expected
    assert ".visible .func" in ptx and ".entry" not in ptx
    ptxas(ptx, "sm_90")


def test_compile_ptx_device_function_tuple_return(ptxas):
    ptx, rt = cuda.compile_ptx(divmod_pair, (int32, int32), device=True)
    assert rt == types.Tuple((types.int64, types.int64))
    ptxas(ptx, "sm_90")


@pytest.mark.parametrize("cc", [(8, 0), (8, 6), (9, 0)])
def test_compile_ptx_arch(ptxas, cc):
    ptx, _ = cuda.compile_ptx(saxpy, "void(float32[::1], float32[::1], float32[::1], float32)",
                              cc=cc)
    arch = f"sm_{cc[0]}{cc[1]}"
    assert re.search(rf"^\.target {arch}\s*$", ptx, re.MULTILINE)
    ptxas(ptx, arch)


def test_ptx_is_release_grade_by_default(ptxas):
    # `.target sm_90, debug` makes ptxas generate debug-grade code; only .loc lines are wanted
    ptx, _ = cuda.compile_ptx(smem_kernel, "void(float32[::1], float32[::1])")
    assert ", debug" not in ptx
    log = ptxas(ptx, "sm_90")
    assert "warning" not in log


def test_lineinfo_maps_source_lines(ptxas):
    ptx, _ = cuda.compile_ptx(saxpy, "void(float32[::1], float32[::1], float32[::1], float32)",
                              lineinfo=True)
    first = saxpy.py_func.__code__.co_firstlineno
    locs = {int(m.group(1)) for m in re.finditer(r"^\s*\.loc\s+\d+\s+(\d+)", ptx, re.MULTILINE)}
    assert {first + 2, first + 4} <= locs  # `i = cuda.grid(1)` and the store
    assert ", debug" not in ptx
    ptxas(ptx, "sm_90")


def test_fastmath_uses_approximate_instructions(ptxas):
    sig = "void(float32[::1], float32[::1])"
    precise, _ = cuda.compile_ptx(uses_math, sig)
    fast, _ = cuda.compile_ptx(uses_math, sig, fastmath=True)
    assert "approx" in fast
    assert "sin.approx" not in precise
    ptxas(fast, "sm_90")
    ptxas(precise, "sm_90")


def test_fastmath_flushes_denormals_as_numba_does(ptxas):
    # numba-cuda's test_compiler.test_fastmath: contraction always, ftz and approximate division
    # and square root with fastmath (also inside libdevice: nvvm-reflect-ftz)
    def f(x, y, z, d):
        return math.sqrt((x * y + z) / d)

    sig = (float32, float32, float32, float32)
    precise, _ = cuda.compile_ptx(f, sig, device=True)
    fast, _ = cuda.compile_ptx(f, sig, device=True, fastmath=True)
    for instruction in ("fma.rn.f32", "div.rn.f32", "sqrt.rn.f32"):
        assert instruction in precise
    for instruction in ("fma.rn.ftz.f32", "div.approx.ftz.f32", "sqrt.approx.ftz.f32"):
        assert instruction in fast
    ptxas(fast, "sm_90")
    with_libdevice, _ = cuda.compile_ptx(uses_math, "void(float32[::1], float32[::1])",
                                         fastmath=True)
    ptxas(with_libdevice, "sm_90")


def test_flush_denormals_marks_every_definition_and_the_module():
    from gpunb.backends.cuda.target import flush_denormals

    text = ('define void @"k"(ptr addrspace(1) %".1", float %".2") !dbg !6\n{\nret void\n}\n'
            'define internal float @"g"(float %".1")\n{\nret float %".1"\n}\n'
            '!llvm.module.flags = !{ !0, !1 }\n!0 = !{ i32 2, !"Debug Info Version", i32 3 }\n'
            '!1 = !{ i32 2, !"Dwarf Version", i32 4 }\n!6 = !{  }\n')
    out = flush_denormals(text)
    assert out.count('"denormal-fp-math-f32"="preserve-sign,preserve-sign"') == 2
    assert 'float %".2") "denormal-fp-math-f32"' in out  # after the nested parentheses
    assert "!llvm.module.flags = !{ !0, !1, !7 }" in out
    assert '!7 = !{ i32 4, !"nvvm-reflect-ftz", i32 1 }' in out
    bare = flush_denormals('define void @"k"()\n{\nret void\n}\n')
    assert "!llvm.module.flags = !{ !0 }" in bare


def test_libdevice_linked_only_when_used(monkeypatch):
    from gpunb.backends.cuda import libdevice_subset

    loads = []
    real = libdevice_subset._libdevice_bytes

    def counting():
        loads.append(1)
        return real()

    monkeypatch.setattr(libdevice_subset, "_libdevice_bytes", counting)
    # an earlier test's compile may have kept the subset uses_math needs: start without it
    monkeypatch.setattr(libdevice_subset, "_subsets", {})
    saxpy_ptx, _ = cuda.compile_ptx(saxpy, "void(float32[::1], float32[::1], float32[::1], "
                                           "float32)")
    assert loads == []  # no math: libdevice is not even read
    math_ptx, _ = cuda.compile_ptx(uses_math, "void(float32[::1], float32[::1])")
    assert loads == [1]
    assert "__nv_" not in saxpy_ptx and "__nv_" not in math_ptx  # inlined, nothing left over


def test_address_spaces(ptxas):
    ptx, _ = cuda.compile_ptx(smem_kernel, "void(float32[::1], float32[::1])")
    assert ".shared .align" in ptx and "st.shared" in ptx and "ld.global" in ptx
    assert "bar.sync" in ptx or "barrier.sync" in ptx
    ptxas(ptx, "sm_90")


def test_weak_literal_keeps_float32_in_ptx():
    ptx, _ = cuda.compile_ptx(scale, "float32(float32)", device=True)
    assert ".f64" not in ptx
    ptx64, _ = cuda.compile_ptx(scale, "float64(float64)", device=True)
    assert ".f64" in ptx64


def test_inspection_api_on_cpu_target(target):
    x = np.arange(32, dtype=np.float32)
    out = np.zeros_like(x)
    smem_kernel[1, 32](out, x)
    np.testing.assert_array_equal(out, x[::-1])
    ptx = smem_kernel.inspect_ptx()
    assert ".entry" in ptx
    sig = smem_kernel.signatures[0]
    assert sig == (float32[::1], float32[::1])
    assert isinstance(smem_kernel.inspect_llvm(), dict)
    asm = smem_kernel.inspect_asm(sig)
    assert isinstance(asm, str) and asm
    types_text = smem_kernel.inspect_types()
    assert "s: float32[::1]" in types_text
    lines = smem_kernel.line_map()
    first = smem_kernel.py_func.__code__.co_firstlineno
    assert any(first < line <= first + 5 for line in lines)


def test_resource_usage_and_sass(target):
    from gpunb.backends.cuda.toolchain import find_tool

    x = np.arange(32, dtype=np.float32)
    smem_kernel[1, 32](np.zeros_like(x), x)
    usage = smem_kernel.resource_usage()
    assert usage["shared_bytes"] == 32 * 4
    if find_tool("ptxas") is not None:
        assert usage["registers"] > 0
    if find_tool("nvdisasm") is None:
        pytest.skip("nvdisasm not found: pip install nvidia-cuda-nvdisasm")
    sass = smem_kernel.inspect_sass()
    assert "BAR.SYNC" in sass and "STS" in sass


def test_declared_signature_compiles_eagerly_for_inspection():
    @cuda.jit("void(float64[::1], float64)")
    def fill(out, v):
        out[cuda.grid(1)] = v

    ptx = fill.inspect_ptx()
    assert "st.global.b64" in ptx or "st.global.f64" in ptx or "st.global.u64" in ptx


def test_annotation_signature():
    @cuda.jit
    def fill(out: float64[::1], v: float64):
        out[cuda.grid(1)] = v

    assert [str(s) for s in fill.declared_signatures] == ["?(float64[::1], float64)"]
    ptx = fill.inspect_ptx()
    assert ".entry" in ptx
