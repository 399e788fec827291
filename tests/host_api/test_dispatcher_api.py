# Parts adapted from numba-cuda's numba_cuda/numba/cuda/tests/cudapy/test_dispatcher.py
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
"""numba-cuda's Dispatcher introspection on gpunb: overloads, specialize(), specialized,
get_regs_per_thread() and siblings, extensions, and signatures compiled at decoration."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import CompileError
from gpunb.foundation.types import float32, float64, int32, int64, void


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target("auto")


def test_no_double_specialize():
    @cuda.jit("void(float32[::1])")
    def f(x):
        pass

    with pytest.raises(RuntimeError, match="Dispatcher already specialized"):
        f.specialize(float32[::1])

    @cuda.jit
    def g(x):
        pass

    with pytest.raises(RuntimeError, match="Dispatcher already specialized"):
        g.specialize(int32[::1]).specialize(float32[::1])


def test_specialize_cache_same_with_ordering():
    @cuda.jit
    def f(x, y):
        pass

    assert len(f.specializations) == 0
    a = f.specialize(float32[:], float32[:])
    assert len(f.specializations) == 1
    c = f.specialize(float32[::1], float32[::1])
    assert len(f.specializations) == 2
    assert a is not c
    assert f.specialize(float32[::1], float32[::1]) is c
    assert c.specialized and not f.specialized


def test_specialize_from_values_runs():
    @cuda.jit
    def add_one(x):
        x[cuda.grid(1)] += 1

    x = np.zeros(8, np.float32)
    k = add_one.specialize(x)
    k[1, 8](x)
    np.testing.assert_array_equal(x, 1)


def test_kernel_properties():
    @cuda.jit
    def pi_sin_array(x, n):
        i = cuda.grid(1)
        if i < n:
            x[i] = 3.14 * math.sin(x[i])

    n = 10
    pi_sin_array[1, n](np.zeros(n, np.float32), n)
    pi_sin_array[1, n](np.zeros(n, np.float64), n)
    sig_f32 = void(float32[::1], int64)
    sig_f64 = void(float64[::1], int64)
    regs_f32 = pi_sin_array.get_regs_per_thread(sig_f32)
    regs_f64 = pi_sin_array.get_regs_per_thread(sig_f64)
    assert isinstance(regs_f32, int) and regs_f32 > 0 and regs_f64 > 0
    everything = pi_sin_array.get_regs_per_thread()
    assert everything[sig_f32.args] == regs_f32 and everything[sig_f64.args] == regs_f64
    assert set(pi_sin_array.overloads) == {sig_f32.args, sig_f64.args}
    assert pi_sin_array.get_max_threads_per_block(sig_f32) > 0
    assert pi_sin_array.get_local_mem_per_thread(sig_f32) >= 0


def test_shared_mem_per_block():
    @cuda.jit(void(float32[::1]))
    def simple_smem(x):
        sm = cuda.shared.array(100, dtype=float32)
        i = cuda.threadIdx.x
        sm[i] = x[i]
        cuda.syncthreads()
        x[i] = sm[99 - i]

    assert simple_smem.get_shared_mem_per_block() == 400


def test_overload_cooperative_flag():
    @cuda.jit
    def syncs(a):
        cuda.cg.this_grid().sync()
        a[0] = 1

    @cuda.jit
    def plain(a):
        a[0] = 1

    a = np.zeros(1)
    syncs[1, 1](a)
    plain[1, 1](a)
    assert all(o.cooperative for o in syncs.overloads.values())
    assert not any(o.cooperative for o in plain.overloads.values())


def test_declared_signature_compiles_at_decoration():
    with pytest.raises(CompileError):
        @cuda.jit("void(int32[::1])")
        def bad(x):
            x[0] = undefined_name  # noqa: F821

    with pytest.raises(CompileError):
        @cuda.jit("int32(int32)", device=True)
        def bad_device(x):
            return x.no_such_attribute

    @cuda.jit("void(int32[::1])")
    def good(x):
        x[0] = 7

    assert len(good.overloads) == 1  # compiled already, before any launch


def test_inspect_dicts_keyed_by_argument_types():
    @cuda.jit
    def f(x):
        x[0] = 1

    f[1, 1](np.zeros(1, np.int32))
    assert (int32[::1],) in f.inspect_llvm() and (int32[::1],) in f.inspect_asm()


def test_extensions_prepare_arguments():
    calls = []

    class Doubler:
        def prepare_args(self, ty, val, stream=None, retr=None):
            retr.append(lambda: calls.append("after"))
            return ty, val * 2 if isinstance(val, int) else val

    @cuda.jit(extensions=[Doubler()])
    def store(out, v):
        out[0] = v

    out = np.zeros(1, np.int64)
    store[1, 1](out, 21)
    assert out[0] == 42 and calls == ["after", "after"]
