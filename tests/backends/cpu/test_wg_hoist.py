"""Bounds checks and guards hoisted out of work-group thread loops (backends/cpu/wg_hoist.py).

A region whose indices and guards are affine in the thread ids runs a fast loop (no per-thread
checks, guards taken as true) in the blocks where one test proves them all, and the exact loop
elsewhere. Each kernel here runs in the default mode and as coroutines (every check per
thread); the results, and the errors, must be the same, in blocks that take either loop.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from wg_corpus import both

import gpunb
from gpunb import cuda, float32, int64
from gpunb.backends.cpu.executor import KernelIndexError

TPB = 32


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def saxpy(out, x, y, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


def shifted(out, x, offset):
    i = cuda.grid(1)
    out[i] = x[i + offset]


def reverse_2d(out, x):
    col, row = cuda.grid(2)
    if row < x.shape[0] and col < x.shape[1]:
        out[x.shape[0] - 1 - row, col] = x[row, x.shape[1] - 1 - col] * 2


def wrap_negative(out, x):
    i = cuda.grid(1)
    out[i] = x[i - 1]  # i == 0 reads x[-1]: numpy's wraparound


def inner_loop(out, x, width):
    i = cuda.grid(1)
    acc = float32(0.0)
    for j in range(width):
        acc += x[i * width + j]
    out[i] = acc


def huge_stride(out, x, stride):
    i = cuda.grid(1)
    out[i] = x[i * stride]


def tiled(out, x):
    tile = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t] = x[i] if i < x.size else float32(0.0)
    cuda.syncthreads()
    if i < out.size:
        out[i] = tile[TPB - 1 - t] + tile[t]


def uniform_loop_counter(out, x, rounds):
    tile = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    acc = float32(0.0)
    for r in range(rounds):
        if i + r * TPB < x.size:
            tile[t] = x[i + r * TPB]
        cuda.syncthreads()
        acc += tile[(t + r) % TPB]
        cuda.syncthreads()
    if i < out.size:
        out[i] = acc


def grid_stride(out, x, y):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, out.size, stride):
        out[i] = x[i] * 2 + y[i]


def strided_down(out, x, step):
    i = cuda.grid(1)
    acc = float32(0.0)
    for j in range(x.size - 1 - i, -1, step):  # a uniform step: required positive... or not
        acc += x[j]
    out[i] = acc




def run_both(fn, grid, block, make_args):
    out = []
    for kernel in both(fn):
        args = make_args()
        kernel[grid, block](*args)
        out.append(args)
    assert both(fn)[0].cpu_mode().startswith("workgroup")
    return out


def errors_of(fn, grid, block, make_args) -> list:
    messages = []
    for kernel in both(fn):
        with pytest.raises(KernelIndexError) as err:
            kernel[grid, block](*make_args())
        messages.append(str(err.value).splitlines()[0])
    return messages


def vectorised(fn) -> bool:
    kernel = both(fn)[0]
    return re.search(r"<\d+ x float>", kernel.inspect_host_llvm(kernel.signatures[0])) is not None


@pytest.mark.parametrize("n", [1, TPB - 1, TPB, 5 * TPB + 7, 64 * TPB])
def test_guarded_saxpy_equal_in_every_block(n):
    rng = np.random.default_rng(n)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    blocks = -(-n // TPB) + 1  # one block wholly past the end: its guard is false everywhere
    (a, *_), (b, *_) = run_both(saxpy, blocks, TPB,
                                lambda: (np.full(n, -1, np.float32), x, y, np.float32(3)))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, np.float32(3) * x + y, rtol=1e-6)
    assert vectorised(saxpy)  # the fast loop of the proved blocks


def test_ragged_2d_guards_and_reversed_indices():
    x = np.arange(37 * 21, dtype=np.float32).reshape(37, 21)
    (a, _), (b, _) = run_both(reverse_2d, (3, 5), (8, 8),
                              lambda: (np.zeros_like(x), x.copy()))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, x[::-1, ::-1] * 2)


def test_negative_index_wraps_as_numpy_does():
    x = np.arange(4 * TPB, dtype=np.int64)
    (a, _), (b, _) = run_both(wrap_negative, 4, TPB,
                              lambda: (np.zeros_like(x), x.copy()))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, np.roll(x, 1))


def test_inner_range_loop_counter_is_part_of_the_test():
    width = 5
    x = np.random.default_rng(3).random(6 * TPB * width, dtype=np.float32)
    (a, _, _), (b, _, _) = run_both(inner_loop, 6, TPB,
                                    lambda: (np.zeros(6 * TPB, np.float32), x, width))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, x.reshape(-1, width).sum(1), rtol=1e-5)


def test_shared_memory_and_uniform_loop_counter():
    n = 7 * TPB - 3
    x = np.random.default_rng(4).random(n, dtype=np.float32)
    (a, _), (b, _) = run_both(tiled, 7, TPB, lambda: (np.zeros(n, np.float32), x))
    np.testing.assert_array_equal(a, b)
    (a, _, _), (b, _, _) = run_both(uniform_loop_counter, 7, TPB,
                                    lambda: (np.zeros(n, np.float32), x, 4))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("offset", [1, 40, -8 * TPB - 2])
def test_out_of_bounds_in_an_inner_block_names_the_same_thread(offset):
    """The blocks the test cannot prove run the exact loop: the first bad thread and its
    index are reported as in coroutine mode."""
    n = 8 * TPB
    x = np.arange(n, dtype=np.float32)
    first, second = errors_of(shifted, 8, TPB, lambda: (np.zeros(n, np.float32), x, offset))
    assert first == second
    bad = n - offset if offset > 0 else 0  # below -n: past numpy's wraparound
    block, thread = divmod(bad, TPB)
    assert f"(thread ({thread}, 0, 0), block ({block}, 0, 0))" in first


def test_in_bounds_shift_matches():
    n = 8 * TPB
    x = np.arange(n + 40, dtype=np.float32)
    (a, _, _), (b, _, _) = run_both(shifted, 8, TPB,
                                    lambda: (np.zeros(n, np.float32), x, 40))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, x[40:])


def test_overflowing_index_arithmetic_is_not_trusted():
    """i * 2**62 wraps in 64 bits: the test's overflow check sends the block to the exact
    loop, which reports the wrapped index like coroutine mode does."""
    x = np.arange(TPB, dtype=np.float32)
    first, second = errors_of(huge_stride, 1, TPB,
                              lambda: (np.zeros(TPB, np.float32), x, int64(1 << 62)))
    assert first == second
    assert "(thread (1, 0, 0), block (0, 0, 0))" in first


def test_boundscheck_off_is_unchanged():
    kernel = cuda.jit(boundscheck=False)(saxpy)
    n = 3 * TPB + 5
    x = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    kernel[4, TPB](out, x, x, np.float32(2))
    np.testing.assert_array_equal(out, np.full(n, 3, np.float32))


@pytest.mark.parametrize("n", [5, 4 * TPB, 10 * TPB + 3])
def test_grid_stride_loop(n):
    rng = np.random.default_rng(n)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    (a, _, _), (b, _, _) = run_both(grid_stride, 3, TPB,
                                    lambda: (np.zeros(n, np.float32), x, y))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, x * 2 + y, rtol=1e-6)


def test_grid_stride_loop_past_the_end_names_the_thread():
    n = 4 * TPB
    x = np.ones(n - 7, np.float32)  # shorter than out: x[i] fails at i = n - 7
    first, second = errors_of(grid_stride, 2, TPB,
                              lambda: (np.zeros(n, np.float32), x, x))
    assert first == second
    assert f"index {n - 7} is out of bounds" in first


@pytest.mark.parametrize("step", [-1, -3, 2])
def test_uniform_step_of_either_sign(step):
    n = 2 * TPB
    x = np.arange(n, dtype=np.float32)
    (a, _, _), (b, _, _) = run_both(strided_down, 2, TPB,
                                    lambda: (np.zeros(n, np.float32), x, step))
    np.testing.assert_array_equal(a, b)
    expect = [x[n - 1 - i::-1][::-step].sum() if step < 0 else 0.0 for i in range(n)]
    np.testing.assert_allclose(a, expect, rtol=1e-6)


def _lowered_module_text(fn, argtypes: tuple) -> str:
    """The CPU target's module before LLVM's passes (what -O3 is handed)."""
    from gpunb import backends
    from gpunb.backends.pipeline import compile as run_compile
    from gpunb.foundation.events import Stage

    compiled = run_compile(fn, argtypes, {}, backends.get("cpu"), stop_after=Stage.LLVM)
    return str(compiled.builder.module)


def test_the_block_test_emits_each_checked_operation_once():
    """saxpy's three accesses and its guard share the form of `i`: each checked product or
    sum of the test is emitted once, none on operands whose result is known (x * 1, x + 0,
    two constants). Before, each fact emitted its forms again: 44 checked operations where
    13 compute the same i1."""
    from gpunb.foundation import types as t

    arr = t.Array(t.float32, 1, "C")
    text = _lowered_module_text(saxpy, (arr, arr, arr, t.float32))
    calls = re.findall(r'call \{i64, i1\} @"llvm\.(s\w+)\.with\.overflow\.i64"\((.*?)\)', text)
    assert calls, "the block test was not emitted"
    assert len(calls) == len(set(calls)), "a checked operation emitted twice"
    for op, operands in calls:
        a, c = (o.split()[1] for o in operands.split(", "))
        constants = [int(v) for v in (a, c) if re.fullmatch(r"-?\d+", v)]
        assert len(constants) < 2, (op, operands)
        assert not (op == "smul" and {0, 1} & set(constants)), (op, operands)
        assert not (op in ("sadd", "ssub") and c == "0") and not (op == "sadd" and a == "0")


def test_known_results_of_checked_operations():
    from llvmlite import ir

    from gpunb.backends.cpu.wg_hoist import _known_result

    def const(v):
        return ir.Constant(ir.IntType(64), v)

    x = ir.Argument(ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), [ir.IntType(64)]),
                                "f"), ir.IntType(64))
    assert _known_result("smul", const(1), x) is x and _known_result("smul", x, const(1)) is x
    assert _known_result("smul", x, const(0)).constant == 0
    assert _known_result("sadd", const(0), x) is x and _known_result("ssub", x, const(0)) is x
    assert _known_result("ssub", const(0), x) is None  # -x: may overflow (x = -2**63)
    assert _known_result("smul", x, const(2)) is None
    assert _known_result("sadd", const(3), const(4)).constant == 7
    assert _known_result("ssub", const(3), const(4)).constant == -1
    # a constant result outside int64 is left to the emitted operation, which reports it
    assert _known_result("smul", const(1 << 62), const(4)) is None
    assert _known_result("sadd", const((1 << 63) - 1), const(1)) is None
