"""Compile-time values passed to device functions, as numba does: types, intrinsics and GPU
functions are first-class arguments (the callee is specialised on each), and a literal reaches a
place that needs a constant (cuda.shared.array(n, dtype) with n a parameter). Patterns from
numba-cuda's test_atomics (BSD-2-Clause, NVIDIA): a device function taking the array dtype, its
size, the atomic to apply and a cast function."""

import numpy as np
import pytest

from gpunb import CompileError, cuda
from gpunb.cuda import float64, int32, uint32


@cuda.jit(device=True)
def cast_none(x):
    return x


@cuda.jit(device=True)
def cast_int(x):
    return int(x)


@cuda.jit(device=True)
def shared_histogram(ary, idx, op2, ary_dtype, ary_nelements, binop_func, cast_func, init):
    tid = cuda.threadIdx.x
    sm = cuda.shared.array(ary_nelements, ary_dtype)
    sm[tid] = init
    cuda.syncthreads()
    binop_func(sm, cast_func(idx[tid] % ary_nelements), op2)
    cuda.syncthreads()
    ary[tid] = sm[tid]


@cuda.jit
def histogram_add(ary):
    shared_histogram(ary, ary, 1, uint32, 32, cuda.atomic.add, cast_none, 0)


@cuda.jit
def histogram_max_float(ary, idx):
    shared_histogram(ary, idx, 2.5, float64, 32, cuda.atomic.max, cast_int, 0.0)


def test_types_intrinsics_and_functions_pass_as_arguments(target):
    rng = np.random.default_rng(1)
    ary = rng.integers(0, 32, 32).astype(np.uint32)
    expected = np.bincount(ary, minlength=32).astype(np.uint32)
    histogram_add[1, 32](ary)
    np.testing.assert_array_equal(ary, expected)


def test_each_function_passed_gives_its_own_specialisation(target):
    idx = np.arange(32, dtype=np.float64)
    out = np.zeros(32, np.float64)
    histogram_max_float[1, 32](out, idx)
    assert np.all(out == 2.5)
    text = histogram_max_float.inspect_types()
    assert "<cuda.atomic.max>" in text and "<type float64>" in text
    assert "Literal[int64](32)" in text


@cuda.jit(device=True)
def fill_shared(out, n):
    buf = cuda.shared.array(n, int32)  # n must be a constant: every caller passes one
    buf[cuda.threadIdx.x] = n
    cuda.syncthreads()
    out[cuda.threadIdx.x] = buf[cuda.threadIdx.x]


@cuda.jit(device=True)
def fill_twice_removed(out, size):
    fill_shared(out, size)


@cuda.jit
def literal_through_two_calls(out):
    fill_twice_removed(out, 16)


@cuda.jit
def two_sizes(out_a, out_b):
    fill_shared(out_a, 8)
    fill_shared(out_b, 4)


def test_a_literal_reaches_a_constant_through_calls(target):
    out = np.zeros(16, np.int32)
    literal_through_two_calls[1, 16](out)
    assert out.tolist() == [16] * 16
    a, b = np.zeros(8, np.int32), np.zeros(4, np.int32)
    two_sizes[1, 4](a, b)
    assert a[:4].tolist() == [8] * 4 and b.tolist() == [4] * 4


@cuda.jit
def shape_from_kernel_argument(out, n):
    fill_shared(out, n)  # n is a launch argument: not a constant


def test_a_runtime_value_where_a_constant_is_needed_is_a_located_error(target):
    with pytest.raises(CompileError, match="must be a compile-time constant") as info:
        shape_from_kernel_argument[1, 1](np.zeros(4, np.int32), 4)
    assert info.value.loc.line == fill_shared.py_func.__code__.co_firstlineno + 2


@cuda.jit
def local_constants(out):
    n = 64
    shape = (2, 3)
    sm = cuda.shared.array(n, int32)
    grid = cuda.local.array(shape, float64)
    add = cuda.atomic.add
    sm[cuda.threadIdx.x] = 0
    grid[1, 2] = 1.5
    cuda.syncthreads()
    add(sm, 0, 1)
    cuda.syncthreads()
    out[cuda.threadIdx.x] = sm[0] + n + grid[1, 2]


def test_locals_bound_to_constants_and_functions(target):
    out = np.zeros(8, np.float64)
    local_constants[1, 8](out)
    assert out.tolist() == [8 + 64 + 1.5] * 8


def test_compile_time_arguments_reach_the_ptx():
    ptx = histogram_add.inspect_ptx()
    assert "atom.shared.add.u32" in ptx or "red.shared.add.u32" in ptx
