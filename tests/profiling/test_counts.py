"""Bytes and flops counted from the compiled kernel (no GPU needed)."""

from __future__ import annotations

import numpy as np
import pytest
from profiling_kernels import add_in_place, matmul, saxpy

from gpunb.profiling.counts import argument_meta, count_llvm, counts_for


@pytest.fixture(autouse=True)
def _cpu():
    import gpunb

    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def _spec(kernel):
    return next(iter(kernel.specializations.values()))


def test_saxpy_moves_12_bytes_and_2_flops_per_element():
    n = 1000
    x = np.ones(n, np.float32)
    out = np.zeros_like(x)
    saxpy[4, 256](out, x, x, np.float32(2.0))
    counts = counts_for(saxpy, _spec(saxpy))
    meta = argument_meta((out, x, x, np.float32(2.0)))
    assert meta == ((4, n), (4, n), (4, n), None)
    assert counts.bytes_for(meta) == 12 * n
    assert counts.flops_for(meta, 4 * 256) == 2 * n  # threads past n take the guard
    assert not counts.has_loops


def test_read_write_array_counts_twice_and_an_untouched_one_not_at_all():
    x = np.zeros(100, np.float64)
    unused = np.zeros(7, np.float64)
    add_in_place[1, 128](x, unused)
    counts = counts_for(add_in_place, _spec(add_in_place))
    assert [(a.reads, a.writes) for a in counts.accesses] == [(True, True), (False, False)]
    assert counts.bytes_for(argument_meta((x, unused))) == 2 * 8 * 100


def test_a_kernel_with_loops_has_bytes_but_no_static_flops():
    a = np.ones((32, 32), np.float32)
    c = np.zeros_like(a)
    matmul[(2, 2), (16, 16)](a, a, c)
    counts = counts_for(matmul, _spec(matmul))
    assert counts.has_loops and counts.flops_for(argument_meta((a, a, c)), 1024) is None
    assert [(a.reads, a.writes) for a in counts.accesses] == \
        [(True, False), (True, False), (False, True)]


def test_count_llvm_reads_memory_attributes_and_fma():
    ir = """
define void @k(ptr readonly %a, i64 %n, i64 %s, ptr writeonly %b, i64 %m, i64 %t) {
entry:
  %x = load float, ptr %a
  %y = call float @llvm.fma.f32(float %x, float %x, float %x)
  %z = fmul contract float %y, %x
  store float %z, ptr %b
  ret void
}
declare float @llvm.fma.f32(float, float, float)
"""
    from gpunb.foundation import types as t

    arr = t.Array(t.float32, 1, "C")
    counts = count_llvm(ir, (arr, arr))
    assert counts.flops_per_thread == 3
    assert [(a.reads, a.writes) for a in counts.accesses] == [(True, False), (False, True)]


def test_counts_do_not_keep_a_specialisation_alive():
    """Counted once per specialisation, for as long as it lives: a redefined kernel's old
    specialisations are freed with it (a notebook redefines kernels all day)."""
    import gc
    import weakref

    from gpunb import cuda

    kernel = cuda.jit(saxpy.py_func)
    x = np.ones(256, np.float32)
    kernel[1, 256](np.zeros_like(x), x, x, np.float32(1.0))
    spec = _spec(kernel)
    first = counts_for(kernel, spec)
    assert first is not None and counts_for(kernel, spec) is first  # once
    gone = weakref.ref(spec)
    del kernel, spec
    gc.collect()
    assert gone() is None


def test_loops_are_found_in_unnamed_blocks_too():
    """llvmlite's view of the IR, not its text: numbered blocks (as LLVM prints an optimised
    module) are told apart as well as named ones."""
    from gpunb.foundation import types as t

    arr = t.float32[::1]
    looped = """
define void @k(ptr readonly %0, i64 %1, i64 %2, i64 %3) {
4:
  br label %5
5:
  %6 = phi i64 [0, %4], [%8, %5]
  %7 = fadd float 1.0, 2.0
  %8 = add i64 %6, 1
  %9 = icmp slt i64 %8, 10
  br i1 %9, label %5, label %10
10:
  ret void
}
"""
    counts = count_llvm(looped, (arr,))
    assert counts.has_loops and counts.flops_per_thread is None
    straight = looped.replace("br i1 %9, label %5, label %10", "br label %10")
    counts = count_llvm(straight, (arr,))
    assert not counts.has_loops and counts.flops_per_thread == 1
