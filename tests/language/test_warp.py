"""Warp collectives and bit intrinsics: same results on every target, PTX accepted by ptxas."""

import numpy as np
import pytest

from gpunb import cuda


@cuda.jit
def warp_reduce(out, x):
    i = cuda.grid(1)
    v = x[i]
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        offset //= 2
    if cuda.laneid == 0:
        out[i // 32] = v


@cuda.jit
def shuffles(idx_out, up_out, xor_out, x):
    i = cuda.grid(1)
    idx_out[i] = cuda.shfl_sync(0xFFFFFFFF, x[i], 3)
    up_out[i] = cuda.shfl_up_sync(0xFFFFFFFF, x[i], 1)
    xor_out[i] = cuda.shfl_xor_sync(0xFFFFFFFF, x[i], 1)


@cuda.jit
def votes(ballot, all_out, any_out, eq_out, match_out, x):
    i = cuda.grid(1)
    pred = x[i] > 0
    ballot[i] = cuda.ballot_sync(0xFFFFFFFF, pred)
    all_out[i] = cuda.all_sync(0xFFFFFFFF, pred)
    any_out[i] = cuda.any_sync(0xFFFFFFFF, pred)
    eq_out[i] = cuda.eq_sync(0xFFFFFFFF, pred)
    match_out[i] = cuda.match_any_sync(0xFFFFFFFF, x[i])


@cuda.jit
def bits(out, x):
    i = cuda.grid(1)
    v = x[i]
    out[i, 0] = cuda.popc(v)
    out[i, 1] = cuda.clz(v)
    out[i, 2] = cuda.ffs(v)
    out[i, 3] = cuda.brev(v)
    out[i, 4] = cuda.selp(v > 100, 1, 2)


def test_warp_reduce(target):
    x = np.random.default_rng(0).random(256).astype(np.float32)
    out = np.zeros(8, np.float32)
    warp_reduce[2, 128](out, x)
    np.testing.assert_allclose(out, x.reshape(8, 32).sum(1), rtol=1e-5)


def test_shuffles(target):
    x = np.arange(64, dtype=np.int32) * 10
    idx, up, xor = (np.zeros(64, np.int32) for _ in range(3))
    shuffles[1, 64](idx, up, xor, x)
    lanes = np.arange(64) % 32
    base = np.arange(64) - lanes
    np.testing.assert_array_equal(idx, x[base + 3])
    np.testing.assert_array_equal(up, np.where(lanes >= 1, x[np.arange(64) - 1], x))
    np.testing.assert_array_equal(xor, x[base + (lanes ^ 1)])


def test_votes(target):
    x = np.zeros(64, np.int32)
    x[:32] = np.arange(32) % 3  # warp 0: mixed, warp 1: all zero
    outs = [np.zeros(64, np.uint32) for _ in range(5)]
    votes[1, 64](*outs, x)
    ballot, all_o, any_o, eq_o, match_o = outs
    expected0 = sum(1 << k for k in range(32) if x[k] > 0)
    assert set(ballot[:32]) == {expected0} and set(ballot[32:]) == {0}
    assert set(all_o[:32]) == {0} and set(any_o[:32]) == {1}
    assert set(eq_o[32:]) == {1} and set(any_o[32:]) == {0}
    for k in range(32):
        assert match_o[k] == sum(1 << j for j in range(32) if x[j] == x[k])


def test_bit_intrinsics(target):
    x = np.array([0, 1, 6, 255, 1 << 31, 12345], dtype=np.uint32)
    out = np.zeros((6, 5), np.int64)
    bits[1, 6](out, x)
    for k, v in enumerate(x.tolist()):
        assert out[k, 0] == bin(v).count("1")
        assert out[k, 1] == (32 - v.bit_length())
        assert out[k, 2] == ((v & -v).bit_length() if v else 0)
        assert out[k, 3] == int(f"{v:032b}"[::-1], 2)
        assert out[k, 4] == (1 if v > 100 else 2)


@pytest.mark.parametrize("kernel,sig", [
    (warp_reduce, "void(float32[::1], float32[::1])"),
    (votes, "void(uint32[::1], uint32[::1], uint32[::1], uint32[::1], uint32[::1], int32[::1])"),
    (bits, "void(int64[:, ::1], uint32[::1])"),
])
def test_ptx_accepted(kernel, sig, ptxas):
    ptx, _ = cuda.compile_ptx(kernel, sig, cc=(9, 0))
    ptxas(ptx, "sm_90")
    ptxas(cuda.compile_ptx(kernel, sig, cc=(8, 0))[0], "sm_80")


@pytest.mark.parametrize("sig, message", [
    ("void(float32[:], int32[:], int32[:])", "Mask type must be an integer"),
    ("void(boolean[:], int32[:], int32[:])", "Mask type must be an integer"),
    ("void(int32[:], float64[:], int32[:])", "Predicate must be an integer or boolean"),
])
def test_vote_operand_types_are_checked(sig, message):
    # numba-cuda's test_vote_sync_type_validation: a float mask or predicate is refused
    from gpunb import CompileError

    def vote(mask, predicate, result):
        i = cuda.grid(1)
        if i < result.shape[0]:
            result[i] = cuda.all_sync(mask[i], predicate[i])

    with pytest.raises(CompileError, match=message):
        cuda.jit(sig)(vote)
