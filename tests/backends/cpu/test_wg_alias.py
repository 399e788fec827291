"""Per-thread variables' scratch arrays in alias scopes of their own (backends/cpu/wg_alias.py).

The scopes let LLVM keep a per-thread accumulator in a register inside loops over shared memory
(the tiled matmul's `tmp += sA[ty, j] * sB[j, tx]`). A wrong scope would let it move a load past
a store that changes it, so each kernel here mixes per-thread variables that live across
barriers with shared, local and global memory written in the same regions, and must give the
coroutine path's results (every thread its own frame, no scopes) and numpy's. Bounds checks on
the same loops still report the right line, including when only the last iteration is out of
bounds.
"""

from __future__ import annotations

import numpy as np
import pytest
from llvmlite import ir
from wg_corpus import both

import gpunb
from gpunb import cuda, float32, int32
from gpunb.backends.cpu.executor import KernelIndexError
from gpunb.backends.cpu.wg_alias import tag_per_thread_scopes

TILE = 8


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def tiled_matmul(a, b, c):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    x, y = cuda.grid(2)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    tmp = float32(0.0)
    for i in range(cuda.gridDim.x):
        sa[ty, tx] = 0
        sb[ty, tx] = 0
        if y < a.shape[0] and tx + i * TILE < a.shape[1]:
            sa[ty, tx] = a[y, tx + i * TILE]
        if x < b.shape[1] and ty + i * TILE < b.shape[0]:
            sb[ty, tx] = b[ty + i * TILE, x]
        cuda.syncthreads()
        for j in range(TILE):
            tmp += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if y < c.shape[0] and x < c.shape[1]:
        c[y, x] = tmp


def accumulate_through_memory(out, x, rounds):
    """`acc` and `seen` live across barriers; in the same regions the thread writes shared
    memory, its local array and `out`, then reads them back: every such load must see the
    store before it."""
    buf = cuda.shared.array(32, float32)
    own = cuda.local.array(2, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    acc = float32(0.0)
    seen = int32(0)
    own[0] = x[i]
    for _ in range(rounds):
        buf[t] = acc + own[0]
        out[i] = acc
        acc += buf[t] + out[i]
        own[1] = acc
        seen += 1
        cuda.syncthreads()
        acc = own[1] + buf[(t + 1) % 32]
        own[0] = acc * float32(0.5)
        cuda.syncthreads()
    out[i] = acc + seen


def last_step_past_the_tile(out, x, steps):
    """The inner loop reads tile[t + j + 1], in bounds while t + j < 63: with steps = 32 every
    thread stays in bounds (thread 31 reads tile[63] last); with steps = 33 only the last
    iteration of the last thread is out of bounds."""
    tile = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t] = x[i]
    tile[t + 32] = x[i]
    cuda.syncthreads()
    acc = float32(0.0)
    for j in range(steps):
        acc += tile[t + j + 1]
    cuda.syncthreads()
    out[i] = acc




@pytest.mark.parametrize("n", [8 * TILE, 5 * TILE + 3])
def test_tiled_matmul_matches_coroutines_and_numpy(n):
    rng = np.random.default_rng(n)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    tiles = -(-n // TILE)
    results = []
    for kernel in both(tiled_matmul):
        c = np.zeros((n, n), np.float32)
        kernel[(tiles, tiles), (TILE, TILE)](a, b, c)
        results.append(c)
    fast = both(tiled_matmul)[0]
    assert fast.cpu_mode() == "workgroup"
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], a @ b, rtol=1e-4, atol=1e-4)


def test_tiled_matmul_accumulator_is_scoped():
    kernel = cuda.jit(tiled_matmul)
    n = 2 * TILE
    a = np.ones((n, n), np.float32)
    c = np.zeros((n, n), np.float32)
    kernel[(2, 2), (TILE, TILE)](a, a, c)
    np.testing.assert_array_equal(c, np.full((n, n), n, np.float32))
    assert "!alias.scope" in kernel.inspect_host_llvm(kernel.signatures[0])


@pytest.mark.parametrize("rounds", [0, 1, 3])
def test_per_thread_variables_beside_written_memory(rounds):
    n = 3 * 32
    x = np.random.default_rng(rounds).random(n, dtype=np.float32)
    outs = []
    for kernel in both(accumulate_through_memory):
        out = np.zeros(n, np.float32)
        kernel[3, 32](out, x, rounds)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    expect = np.zeros(n, np.float32) if rounds == 0 else None
    if expect is not None:
        np.testing.assert_array_equal(outs[0], expect)
    else:
        assert np.all(outs[0] != 0)


def test_inner_loop_in_bounds_does_not_raise():
    x = np.arange(64, dtype=np.float32)
    outs = []
    for kernel in both(last_step_past_the_tile):
        out = np.zeros(64, np.float32)
        kernel[2, 32](out, x, 32)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    for block in range(2):
        tile = np.concatenate([x[32 * block:32 * block + 32]] * 2)
        np.testing.assert_allclose(outs[0][32 * block:32 * block + 32],
                                   [tile[t + 1:t + 33].sum() for t in range(32)], rtol=1e-6)


def test_inner_loop_last_iteration_out_of_bounds_names_the_line():
    import inspect

    lines, first = inspect.getsourcelines(last_step_past_the_tile)
    line = first + next(k for k, s in enumerate(lines) if "acc += tile[t + j + 1]" in s)
    messages = []
    for kernel in both(last_step_past_the_tile):
        with pytest.raises(KernelIndexError) as err:
            kernel[1, 32](np.zeros(32, np.float32), np.arange(32, dtype=np.float32), 33)
        assert err.value.loc.line == line
        messages.append(str(err.value).splitlines()[0])
    assert messages[0] == messages[1]
    assert "index 64 is out of bounds" in messages[0]
    assert "thread (31, 0, 0), block (0, 0, 0)" in messages[0]


def _function_with_slot(escape: bool):
    module = ir.Module()
    f32p = ir.PointerType(ir.FloatType())
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [f32p, f32p, f32p.as_pointer()]),
                     "f")
    scratch, other, sink = fn.args
    b = ir.IRBuilder(fn.append_basic_block())
    slot = b.gep(scratch, [ir.Constant(ir.IntType(64), 3)])
    b.store(b.fadd(b.load(slot), b.load(other)), slot)
    if escape:
        b.store(slot, sink)  # the slot's address leaves: nothing may be assumed
    b.ret_void()
    return module, fn, slot


def test_tagging_refuses_an_escaping_slot_pointer():
    module, fn, slot = _function_with_slot(escape=True)
    assert not tag_per_thread_scopes(module, fn, {slot: 0}, "k")
    assert "alias.scope" not in str(module) and "noalias" not in str(module)


def test_tagging_scopes_slot_accesses_and_the_rest():
    module, fn, slot = _function_with_slot(escape=False)
    assert tag_per_thread_scopes(module, fn, {slot: 0}, "k")
    text = str(fn)
    assert text.count("!alias.scope") == 2  # the slot's load and store
    assert text.count("!noalias") == 1  # the other load
