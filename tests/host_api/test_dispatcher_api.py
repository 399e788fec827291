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
from gpunb.foundation.types import boolean, float32, float64, int32, int64, void


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


def test_local_mem_per_thread_counts_local_arrays():
    """A local array indexed at run time lives in local memory: 64 float32 are 256 bytes per
    thread (ptxas's figure for the PTX, or the driver's on a GPU); a kernel without one has 0."""
    @cuda.jit
    def with_local(x, n):
        a = cuda.local.array(64, float32)
        for j in range(64):
            a[(j * n) % 64] = x[j] * j
        x[cuda.grid(1)] = a[x.size % 64 + n % 3]

    @cuda.jit
    def without_local(x, n):
        i = cuda.grid(1)
        if i < x.size:
            x[i] = x[i] * n

    sig = void(float32[::1], int64)
    with_local[1, 1](np.zeros(64, np.float32), 3)
    without_local[1, 1](np.zeros(64, np.float32), 3)
    assert with_local.get_local_mem_per_thread(sig) >= 256
    assert without_local.get_local_mem_per_thread(sig) == 0


def test_shared_mem_per_block():
    @cuda.jit(void(float32[::1]))
    def simple_smem(x):
        sm = cuda.shared.array(100, dtype=float32)
        i = cuda.threadIdx.x
        sm[i] = x[i]
        cuda.syncthreads()
        x[i] = sm[99 - i]

    assert simple_smem.get_shared_mem_per_block() == 400


def test_shared_mem_counts_arrays_llvm_sees_through():
    # each thread writes and reads back its own slots, no barrier: LLVM could forward every
    # store, but the block still reserves what the kernel declares (numba-cuda's figure)
    n = 10

    @cuda.jit
    def simple_smem(ary):
        sm = cuda.shared.array(n, dtype=ary.dtype)
        for j in range(n):
            sm[j] = j
        for j in range(n):
            ary[j] = sm[j]

    a32, a64 = np.zeros(n, np.float32), np.zeros(n, np.float64)
    simple_smem[1, 1](a32)
    simple_smem[1, 1](a64)
    assert list(a32) == list(range(n)) and list(a64) == list(range(n))
    assert simple_smem.get_shared_mem_per_block(void(float32[::1])) == n * 4
    assert simple_smem.get_shared_mem_per_block(void(float64[::1])) == n * 8
    everything = simple_smem.get_shared_mem_per_block()
    assert everything[(float64[::1],)] == n * 8


def test_const_mem_size_counts_const_arrays_and_print_formats():
    table = np.arange(32, dtype=np.int64)
    sig = void(int64[::1])

    @cuda.jit(sig)
    def const_array_use(x):
        c = cuda.const.array_like(table)
        i = cuda.grid(1)
        x[i] = c[i]

    @cuda.jit
    def const_fmt_string(val, to_print):
        if to_print:
            print(val)

    @cuda.jit
    def no_constants(x):
        x[0] = 1

    assert const_array_use.get_const_mem_size(sig) >= table.nbytes
    const_fmt_string[1, 1](1, False)
    assert const_fmt_string.get_const_mem_size(void(int64, boolean)) >= 6
    no_constants[1, 1](np.zeros(1))
    assert no_constants.get_const_mem_size(void(float64[::1])) == 0


def test_overload_cooperative_flag():
    @cuda.jit
    def syncs(a):
        cuda.cg.this_grid().sync()
        a[0] = 1

    @cuda.jit
    def plain(a):
        a[0] = 1

    @cuda.jit
    def grid_rank(a):  # this_grid() without sync: numba-cuda launches it cooperatively too
        g = cuda.cg.this_grid()
        a[g.thread_rank()] = 1

    a = np.zeros(1)
    syncs[1, 1](a)
    plain[1, 1](a)
    grid_rank[1, 1](a)
    assert all(o.cooperative for o in syncs.overloads.values())
    assert all(o.cooperative for o in grid_rank.overloads.values())
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


def test_an_extension_wraps_bare_arrays_with_cuda_args_wrap_arg():
    """numba-cuda's `numba.cuda.args.wrap_arg(value, default=cuda.In)`: an extension that makes
    every bare array copy-in-only; an array already hinted keeps its own hint."""
    from gpunb.cuda.args import ArgHint, In, InOut, wrap_arg

    class DefaultIn:
        def prepare_args(self, ty, val, **kwargs):
            return ty, wrap_arg(val, default=cuda.In)

    @cuda.jit(extensions=[DefaultIn()])
    def set_three(arr):
        arr[0] = 3

    host = np.zeros(1, np.int64)
    set_three[1, 1](host)
    assert host[0] == 0  # copied in, not back
    set_three[1, 1](cuda.InOut(host))
    assert host[0] == 3  # the caller's own hint is kept
    wrapped = wrap_arg(host)
    assert isinstance(wrapped, InOut) and wrapped.value is host  # numba's default: InOut
    hinted = In(host)
    assert wrap_arg(hinted) is hinted and isinstance(hinted, ArgHint)
    assert cuda.args.wrap_arg is wrap_arg


def test_a_kernel_signature_with_a_return_type_is_refused_when_declared():
    """numba-cuda's decorator: "CUDA kernel must have void return type", even when the body
    returns nothing (here it would otherwise compile as void and hide the mistake)."""
    from gpunb.foundation.errors import KernelReturnError

    def store(out, x):
        out[0] = x[0]

    with pytest.raises(TypeError, match="must have void return type") as info:
        cuda.jit("float32(float32[:], float32[:])")(store)
    assert isinstance(info.value, KernelReturnError)
    assert info.value.loc is not None and info.value.loc.line > 0
    with pytest.raises(KernelReturnError, match="void return type"):
        cuda.jit(store).compile(int32(float32[:], float32[:]))
    for fine in ("void(float32[:], float32[:])", "(float32[:], float32[:])",
                 "none(float32[:], float32[:])"):
        assert len(cuda.jit(fine)(store).signatures) == 1
    assert cuda.jit("float32(float32)", device=True)(lambda v: v).device


def test_a_kernel_with_star_args_is_refused_at_its_def_whatever_the_argument_count():
    """With more arguments than named parameters, a kernel `k(out, *args)` once got "takes 2
    arguments (out, args) but 3 were given"; the error is the one inference gives (kernels take
    no *args), at the def, for any count."""
    @cuda.jit
    def star(out, *args):
        out[0] = args[0]

    @cuda.jit
    def keywords(out, **kw):
        out[0] = 1

    out = np.zeros(1)
    for kernel, args in ((star, (out, 1.0, 2.0)), (star, (out, 1.0)), (keywords, (out,))):
        with pytest.raises(CompileError, match=r"kernels no \*args") as info:
            kernel[1, 1](*args)
        assert info.value.loc.source_line().lstrip().startswith("def ")


RECOMPILE_SCALE = 2


@cuda.jit
def _scaled(out, x):
    out[0] = x * RECOMPILE_SCALE


def test_recompile_makes_every_compiled_signature_again_as_numba():
    """numba's Dispatcher.recompile(): the compiled signatures are compiled again, from the
    globals as they are now, and launches (also through a configuration made before) use the
    new code."""
    global RECOMPILE_SCALE
    out = np.zeros(1, np.float64)
    launch = _scaled[1, 1]
    launch(out, 3)
    launch(out, 1.5)
    before = set(_scaled.overloads)
    old = dict(_scaled.specializations)
    try:
        RECOMPILE_SCALE = 10
        _scaled.recompile()
        assert set(_scaled.overloads) == before  # the same signatures, nothing else
        assert all(_scaled.specializations[k] is not old[k] for k in old)  # made again
        launch(out, 3)
        assert out[0] == 30
        _scaled[1, 1](out, 1.5)
        assert out[0] == 15
    finally:
        RECOMPILE_SCALE = 2
        _scaled.recompile()
    launch(out, 3)
    assert out[0] == 6
