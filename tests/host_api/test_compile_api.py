# Parts adapted from numba-cuda's numba_cuda/numba/cuda/tests/cudapy/test_compiler.py
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
"""numba.cuda's ahead-of-time compile functions (compile, compile_all, compile_for_current_device,
compile_ptx with abi/abi_info/launch_bounds/cc 'a'), launch bounds at run time, and declared
return types of device functions."""

from __future__ import annotations

import re

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import LaunchError
from gpunb.foundation.types import float32, int32, int64, uint32


def f_module(a, b):
    return a + b


def empty():
    pass


def test_compile_defaults_to_c_abi_and_declared_return():
    ptx, resty = cuda.compile(f_module, int32(int32, int32))
    assert resty == int32  # int32 + int32 is int64 in numba's typing; the signature says int32
    assert re.search(r"\.visible\s+\.func\s+\(\.param\s+\.b32\s+func_retval0\)\s+f_module\(",
                     ptx)
    code_list, resty = cuda.compile_all(f_module, int32(int32, int32), output="ptx")
    assert len(code_list) == 1 and ".visible .func" in code_list[0] and resty == int32


def test_abi_name():
    ptx, _ = cuda.compile(f_module, int32(int32, int32), abi_info={"abi_name": "renamed"})
    assert re.search(r"\.func\s+\(\.param\s+\.b32\s+func_retval0\)\s+renamed\(", ptx)


def test_bad_requests_raise_numbas_errors():
    with pytest.raises(NotImplementedError, match="The C ABI is not supported for kernels"):
        cuda.compile_ptx(f_module, (int32, int32), abi="c")
    with pytest.raises(NotImplementedError, match="Unsupported ABI: fastcall"):
        cuda.compile_ptx(f_module, (int32, int32), abi="fastcall")
    with pytest.raises(NotImplementedError, match="Unsupported output type: illegal"):
        cuda.compile(f_module, int32(int32, int32), output="illegal")

    def returns(x, y):
        return x[0] + y[0]

    with pytest.raises(TypeError, match="must have void return type"):
        cuda.compile_ptx(returns, (uint32[::1], uint32[::1]))


def test_for_current_device_uses_its_cc(monkeypatch):
    monkeypatch.setenv("GPUNB_ARCH", "sm_80")
    gpunb.set_target("cpu")
    try:
        ptx, resty = cuda.compile_for_current_device(f_module, (float32, float32))
        assert ".target sm_80" in ptx and resty == float32
        ptx, _ = cuda.compile_ptx_for_current_device(f_module, (float32, float32), device=True)
        assert ".target sm_80" in ptx
    finally:
        gpunb.set_target("auto")


def test_arch_specific_cc():
    assert ".target sm_90a" in cuda.compile_ptx(empty, (), cc=(9, 0, "a"))[0]
    assert ".target sm_100f" in cuda.compile_ptx(empty, (), cc=(10, 0, "f"))[0]


def test_every_known_arch_gets_ptx_without_aborting_the_process(ptxas):
    """LLVM aborts the whole process ("LLVM ERROR: PTX version 8.7 does not support target
    'sm_121'") when asked for an arch with too old a PTX ISA: sm_121 (DGX Spark) once did. Each
    arch of the table, and its a/f variants, is emitted in a child process (an abort must not
    take the test run with it) and checked by ptxas where ptxas knows the arch."""
    import subprocess
    import sys

    from gpunb.backends.cuda.target import supported_arches

    arches = [cc for cc in supported_arches()]
    arches += [(*cc, "a") for cc in arches if cc >= (9, 0) and cc != (8, 8)]
    arches += [(*cc, "f") for cc in supported_arches() if cc >= (10, 0)]
    script = ("import sys\nfrom gpunb import cuda\ndef empty():\n    pass\n"
              f"for cc in {arches!r}:\n"
              "    ptx = cuda.compile_ptx(empty, (), cc=cc)[0]\n"
              "    print(cc, [l for l in ptx.splitlines() if l.startswith('.target')][0])\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "not a recognized processor" not in proc.stderr
    assert len(proc.stdout.splitlines()) == len(arches)
    assert ".target sm_121" in cuda.compile_ptx(empty, (), cc=(12, 1))[0]
    ptxas(cuda.compile_ptx(empty, (), cc=(12, 1))[0], "sm_121")
    ptxas(cuda.compile_ptx(empty, (), cc=(11, 0))[0], "sm_110")


def test_a_gpu_newer_than_gpunb_gets_the_newest_ptx_before_it(monkeypatch):
    """A device (or GPUNB_ARCH) newer than every arch gpunb's LLVM knows compiles PTX for the
    newest one before it, which the driver JIT-compiles; asked by name, cc= is refused."""
    from gpunb.foundation.errors import JitOptionError

    monkeypatch.setenv("GPUNB_ARCH", "sm_130")
    gpunb.set_target("cpu")
    try:
        ptx, _ = cuda.compile_ptx_for_current_device(empty, ())
        assert ".target sm_121" in ptx
    finally:
        gpunb.set_target("auto")
    for cc in ((13, 0), (99, 9), (7, 3)):
        with pytest.raises(JitOptionError, match="not an architecture gpunb's LLVM writes PTX"):
            cuda.compile_ptx(empty, (), cc=cc)


@pytest.mark.parametrize("bounds, directives", [
    (128, [r".maxntid\s+128,\s+1,\s+1\s*\n"]),
    ((128,), [r".maxntid\s+128,\s+1,\s+1\s*\n"]),
    ((128, 2), [r".maxntid\s+128", r".minnctapersm\s+2"]),
    ((128, 2, 4), [r".maxntid\s+128", r".minnctapersm\s+2", r".maxclusterrank\s+4"]),
])
def test_launch_bounds_ptx(bounds, directives):
    ptx, resty = cuda.compile_ptx(empty, "void()", launch_bounds=bounds, cc=(9, 0))
    for directive in directives:
        assert re.search(directive, ptx)
    if not isinstance(bounds, tuple) or len(bounds) < 2:
        assert ".minnctapersm" not in ptx
    with pytest.raises(ValueError, match="Got 4 launch bounds:"):
        cuda.compile_ptx(empty, "void()", launch_bounds=(128, 2, 4, 8))


def test_launch_bounds_limit_blocks_on_the_cpu_target():
    @cuda.jit(launch_bounds=64, target="cpu")
    def fill(x):
        x[cuda.grid(1)] = 1

    x = np.zeros(64)
    fill[1, 64](x)
    assert x.sum() == 64
    with pytest.raises(LaunchError, match="at most 64"):
        fill[1, 65](np.zeros(65))


def test_declared_return_type_converts_in_kernels():
    @cuda.jit("int32(int64, int64)", device=True)
    def add(a, b):
        return a + b

    @cuda.jit(target="cpu")
    def k(out):
        out[0] = add(2**31 - 1, 1)  # wraps to int32, as numba's int32 return does

    out = np.zeros(1, np.int64)
    k[1, 1](out)
    assert out[0] == -2**31
    assert cuda.compile(add, int32(int64, int64))[1] == int32
    assert cuda.compile(add, int64(int64, int64))[1] == int64


def test_numba_abi_device_functions_return_a_status_and_store_the_result(ptxas):
    """compile_ptx(device=True)'s default abi='numba': `int f(Ret *out, args...)`, as numba-cuda
    exports them; abi='c' returns the value."""
    from gpunb.foundation.types import float16, float32

    def native_cast(x):
        return float(x)

    numba_abi, _ = cuda.compile_ptx(native_cast, (float16,), device=True)
    assert "st.b16" in numba_abi and "[func_retval0], 0;" in numba_abi
    c_abi, _ = cuda.compile_ptx(native_cast, (float32,), device=True, abi="c")
    assert "[func_retval0], %r" in c_abi
    ptxas(numba_abi)
