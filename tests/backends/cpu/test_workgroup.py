"""The CPU target's two modes agree: work-group loops (the default where proven safe) and
coroutines, on the same kernels and inputs, and both agree with numpy where there is an answer.

Each kernel of wg_corpus.py is compiled twice, `cuda.jit(cpu_mode="coroutine")` and the default;
the tests also pin which mode the default chose (kernel.cpu_mode()).
"""

from __future__ import annotations

import numpy as np
import pytest
import wg_corpus as corpus
from hypothesis import given, settings
from hypothesis import strategies as st
from wg_corpus import both

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import CompileError, GpunbError

TPB, TILE = corpus.TPB, corpus.TILE


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def run_both(fn, grid, block, make_args, expect_mode="workgroup"):
    """Launch both modes on fresh copies of the same arguments; return both results."""
    results = []
    for kernel in both(fn):
        args = make_args()
        kernel[grid, block](*args)
        results.append(args)
    wg = both(fn)[0]
    assert wg.cpu_mode().startswith(expect_mode), wg.cpu_mode()
    assert both(fn)[1].cpu_mode().startswith("coroutine")
    return results


def test_block_reduction_matches_numpy_in_both_modes():
    x = np.random.default_rng(1).random(TPB * 9 + 5, dtype=np.float32)
    blocks = -(-x.size // TPB)
    (wg_out, _), (co_out, _) = run_both(corpus.block_reduce, blocks, TPB,
                                        lambda: (np.zeros(blocks, np.float32), x.copy()))
    padded = np.concatenate([x, np.zeros(blocks * TPB - x.size, np.float32)])
    np.testing.assert_allclose(wg_out, padded.reshape(blocks, TPB).sum(1), rtol=1e-5)
    np.testing.assert_array_equal(wg_out, co_out)  # same order of additions: bit-identical


def test_tiled_matmul_both_modes():
    rng = np.random.default_rng(2)
    n = 3 * TILE
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    (_, _, wg_c), (_, _, co_c) = run_both(
        corpus.tiled_matmul, (3, 3), (TILE, TILE),
        lambda: (a.copy(), b.copy(), np.zeros((n, n), np.float32)))
    np.testing.assert_allclose(wg_c, a @ b, rtol=1e-5)
    np.testing.assert_array_equal(wg_c, co_c)


def test_scan_with_value_live_across_barrier():
    x = np.arange(1, TPB * 3 + 1, dtype=np.int32) % 7
    (wg_out, _), (co_out, _) = run_both(corpus.inclusive_scan, 3, TPB,
                                        lambda: (np.zeros_like(x), x.copy()))
    np.testing.assert_array_equal(wg_out, np.cumsum(x.reshape(3, TPB), axis=1).ravel())
    np.testing.assert_array_equal(wg_out, co_out)


def test_barrier_in_uniform_for_loop():
    x = np.random.default_rng(3).random(TPB * 2, dtype=np.float32)
    (wg_out, _, _), (co_out, _, _) = run_both(corpus.uniform_for_rounds, 2, TPB,
                                              lambda: (np.zeros_like(x), x.copy(), 5))
    v = x.reshape(2, TPB).astype(np.float32)
    for r in range(1, 6):
        v = v + np.roll(v, -r, axis=1) * np.float32(0.5)
    np.testing.assert_allclose(wg_out, v.ravel(), rtol=1e-5)
    np.testing.assert_array_equal(wg_out, co_out)


def test_barrier_in_while_loop_with_uniform_condition():
    x = np.arange(TPB * 2, dtype=np.int32)
    (wg_out, _, _), (co_out, _, _) = run_both(corpus.uniform_while_arg, 2, TPB,
                                              lambda: (np.zeros_like(x), x.copy(), 3))
    rev = x.reshape(2, TPB)[:, ::-1].ravel()
    np.testing.assert_array_equal(wg_out, 3 * rev + 3)
    np.testing.assert_array_equal(wg_out, co_out)


def test_barrier_in_uniform_if():
    x = np.arange(TPB * 4, dtype=np.int32)
    (wg_out, _), (co_out, _) = run_both(corpus.uniform_if_barrier, 4, TPB,
                                        lambda: (np.zeros_like(x), x.copy()))
    np.testing.assert_array_equal(wg_out, co_out)
    assert wg_out[0] == 1 and wg_out[TPB] == -(TPB + 2)


def test_early_return_before_barrier_falls_back_to_coroutines():
    x = np.arange(TPB + 10, dtype=np.int32)
    (wg_out, _), (co_out, _) = run_both(corpus.early_return, 2, TPB,
                                        lambda: (np.zeros_like(x), x.copy()),
                                        expect_mode="coroutine")
    assert "return" in both(corpus.early_return)[0].cpu_mode()
    np.testing.assert_array_equal(wg_out, co_out)
    assert wg_out[TPB + 3] == TPB + 3


def test_syncthreads_count_and_or():
    x = np.random.default_rng(4).integers(-3, 8, TPB * 5).astype(np.int32)
    x[:TPB] = 1  # block 0: all positive
    (wg_out, _), (co_out, _) = run_both(corpus.sync_predicates, 5, TPB,
                                        lambda: (np.zeros((5, 3), np.int32), x.copy()))
    np.testing.assert_array_equal(wg_out, co_out)
    blocks = x.reshape(5, TPB)
    np.testing.assert_array_equal(wg_out[:, 0], (blocks > 0).sum(1) +
                                  1000 * (blocks == 3).any(1))
    np.testing.assert_array_equal(wg_out[:, 1], (blocks > 0).all(1))
    np.testing.assert_array_equal(wg_out[:, 2], (blocks > 5).any(1))


def test_shared_2d_transpose_with_2d_blocks():
    x = np.arange(20 * 13, dtype=np.float32).reshape(20, 13)
    (wg_out, _), (co_out, _) = run_both(corpus.shared_2d_transpose, (2, 3), (TILE, TILE),
                                        lambda: (np.zeros((13, 20), np.float32), x.copy()))
    np.testing.assert_array_equal(wg_out, x.T)
    np.testing.assert_array_equal(wg_out, co_out)


def test_local_array_lives_across_barrier():
    x = np.arange(TPB * 2, dtype=np.int32)
    (wg_out, _), (co_out, _) = run_both(corpus.local_across_barrier, 2, TPB,
                                        lambda: (np.zeros_like(x), x.copy()))
    rev = x.reshape(2, TPB)[:, ::-1].ravel()
    np.testing.assert_array_equal(wg_out, 6 * x + 4 * rev)
    np.testing.assert_array_equal(wg_out, co_out)


def test_warp_collectives_keep_coroutines():
    x = np.arange(TPB * 2, dtype=np.int32)
    (wg_out, _), (co_out, _) = run_both(corpus.warp_shuffle_sum, 2, TPB,
                                        lambda: (np.zeros(TPB * 2 // 32, np.int32), x.copy()),
                                        expect_mode="coroutine")
    assert "warp" in both(corpus.warp_shuffle_sum)[0].cpu_mode()
    np.testing.assert_array_equal(wg_out, x.reshape(-1, 32).sum(1))
    np.testing.assert_array_equal(wg_out, co_out)


def test_barrier_under_memory_condition_keeps_coroutines():
    x = np.arange(1, TPB + 1, dtype=np.int32)
    (wg_out, _), (co_out, _) = run_both(corpus.memory_condition, 1, TPB,
                                        lambda: (np.zeros_like(x), x.copy()),
                                        expect_mode="coroutine")
    assert "not provably the same" in both(corpus.memory_condition)[0].cpu_mode()
    np.testing.assert_array_equal(wg_out, x[::-1])
    np.testing.assert_array_equal(wg_out, co_out)


def test_3d_blocks():
    (wg_out,), (co_out,) = run_both(corpus.block_3d, 3, (4, 4, 4),
                                    lambda: (np.zeros((3, 64), np.int32),))
    lin = np.arange(64)
    np.testing.assert_array_equal(wg_out, (63 - lin) * 3 + np.arange(3)[:, None])
    np.testing.assert_array_equal(wg_out, co_out)


def test_no_barrier_kernel_is_workgroup_and_matches():
    rng = np.random.default_rng(5)
    n = 1000
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    (wg_out, *_), (co_out, *_) = run_both(
        corpus.saxpy, 4, 256, lambda: (np.zeros(n, np.float32), x, y, np.float32(2.0)))
    np.testing.assert_allclose(wg_out, np.float32(2.0) * x + y, rtol=1e-6)
    np.testing.assert_array_equal(wg_out, co_out)


def test_cpu_mode_workgroup_insists_with_a_reason():
    kernel = cuda.jit(cpu_mode="workgroup")(corpus.early_return)
    x = np.zeros(4, np.int32)
    with pytest.raises(CompileError, match="cannot run as work-group loops: return"):
        kernel[1, 4](x, x)


def test_cpu_mode_option_is_checked():
    with pytest.raises(GpunbError, match="cpu_mode"):
        cuda.jit(cpu_mode="threads")(corpus.saxpy)


def test_env_var_forces_coroutines(monkeypatch):
    monkeypatch.setenv("GPUNB_CPU_MODE", "coroutine")
    kernel = cuda.jit(corpus.block_reduce)
    x = np.ones(TPB, np.float32)
    out = np.zeros(1, np.float32)
    kernel[1, TPB](out, x)
    assert out[0] == TPB
    assert kernel.cpu_mode().startswith("coroutine")


@settings(max_examples=25, deadline=None)
@given(blocks=st.integers(1, 6), tail=st.integers(0, TPB - 1),
       seed=st.integers(0, 2**31 - 1))
def test_reduction_and_scan_agree_on_generated_inputs(blocks, tail, seed):
    rng = np.random.default_rng(seed)
    n = (blocks - 1) * TPB + tail + 1
    xf = rng.standard_normal(n).astype(np.float32)
    (wg_r, _), (co_r, _) = run_both(corpus.block_reduce, blocks, TPB,
                                    lambda: (np.zeros(blocks, np.float32), xf.copy()))
    np.testing.assert_array_equal(wg_r, co_r)
    xi = rng.integers(-50, 50, n).astype(np.int32)
    (wg_s, _), (co_s, _) = run_both(corpus.inclusive_scan, blocks, TPB,
                                    lambda: (np.zeros_like(xi), xi.copy()))
    np.testing.assert_array_equal(wg_s, co_s)
    padded = np.concatenate([xi, np.zeros(blocks * TPB - n, np.int32)])
    np.testing.assert_array_equal(wg_s, np.cumsum(padded.reshape(blocks, TPB), 1).ravel()[:n])


@settings(max_examples=15, deadline=None)
@given(rounds=st.integers(0, 6), limit=st.integers(-1, 4), seed=st.integers(0, 2**31 - 1))
def test_uniform_loops_agree_on_generated_trip_counts(rounds, limit, seed):
    x = np.random.default_rng(seed).random(TPB * 2, dtype=np.float32)
    (a, _, _), (b, _, _) = run_both(corpus.uniform_for_rounds, 2, TPB,
                                    lambda: (np.zeros_like(x), x.copy(), rounds))
    np.testing.assert_array_equal(a, b)
    xi = (x * 100).astype(np.int32)
    (a, _, _), (b, _, _) = run_both(corpus.uniform_while_arg, 2, TPB,
                                    lambda: (np.zeros_like(xi), xi.copy(), limit))
    np.testing.assert_array_equal(a, b)



def keep_positive(out, x):
    i = cuda.grid(1)
    if x[i] > 0:  # a guard on memory: no test before the loop proves it
        out[i] = x[i]


def test_guarded_thread_loops_are_kept_scalar_and_others_vectorised():
    """A guard the block's test cannot prove would become masked loads/stores (slow on x86):
    its thread loop carries `vectorize.enable false`. saxpy's tail guard is proved for all but
    the ragged block (wg_hoist.py): its fast loop is vectorised, the exact one is kept cold
    (neither vectorised nor unrolled); an unguarded thread loop is vectorised."""
    wg, _ = both(corpus.saxpy)
    x = np.ones(100, np.float32)
    wg[1, 128](np.zeros(100, np.float32), x, x, np.float32(2))
    ir_text = wg.inspect_host_llvm(wg.signatures[0])
    assert "x float>" in ir_text  # the fast loop
    assert '!{!"llvm.loop.unroll.disable"}' in ir_text  # the exact loop
    guarded = cuda.jit(keep_positive)
    guarded[1, 64](np.zeros(64, np.float32), np.ones(64, np.float32))
    text = guarded.inspect_host_llvm(guarded.signatures[0])
    assert '!"llvm.loop.vectorize.enable", i1 false' in text
    assert "x float>" not in text
    plain, _ = both(corpus.block_3d)
    plain[2, (4, 4, 4)](np.zeros((2, 64), np.int32))
    text = plain.inspect_host_llvm(plain.signatures[0])
    assert "x i32>" in text  # an unguarded thread loop is vectorised
