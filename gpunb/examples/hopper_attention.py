"""A causal attention forward, FlashAttention-2 style, with TMA and wgmma (head dim 128, bf16).

Q, K, V and O are (batch * heads * seq, 128) arrays. A block owns 128 query rows of one head:
warpgroup 0 loads (TMA) its Q tile once and a 2-deep ring of K/V tiles of 128 keys; warpgroups 1
and 2 own 64 query rows each. Per K/V tile a consumer computes S = Q K^T with wgmma
m64n128k16 from shared memory, masks the diagonal tile, keeps the running row maximum and sum
in registers (the softmax in base 2), turns P into bfloat16 A fragments in registers (the D
fragment of a k16 slice is the A fragment: no shuffles) and accumulates O += P V with wgmma,
V read MN-major. The output is O / l. Every per-element loop over a fragment is a
cuda.literal_unroll, so the fragments stay in registers.

    from gpunb.examples import hopper_attention
    o = hopper_attention.attention(q, k, v, seq)   # (batch * heads * seq, 128) bfloat16
"""

from __future__ import annotations

import math

import numpy as np

from gpunb import cuda, float32, int64, uint32, uint64
from gpunb.cuda.bf16 import bfloat16

D, BM, BN, STAGES = 128, 128, 128, 2
BOX = BN * 64  # elements of one TMA box: 128 rows of 64 columns (128 bytes, the swizzle span)
Q_AT = 0  # element offsets in dynamic shared memory: Q (2 boxes), then per stage K, V (2 each)
KV_AT = 2 * BOX
STAGE = 4 * BOX
BARS = (KV_AT + STAGES * STAGE) * 2 // 8  # uint64 index of the mbarriers
Q_FULL, KV_FULL, KV_EMPTY = BARS, BARS + 1, BARS + 1 + STAGES
SMEM_BYTES = (KV_AT + STAGES * STAGE) * 2 + (1 + 2 * STAGES) * 8
THREADS = 384
R64 = tuple(range(64))
R32 = tuple(range(32))
R8 = tuple(range(8))
LOG2E = 1.4426950408889634


@cuda.jit(launch_bounds=(THREADS, 1))
def attention_fwd(out, dq, dk, dv, seq, scale_log2):
    smem = cuda.shared.array(0, bfloat16, alignment=1024)
    bars = cuda.shared.array(0, uint64)
    tid = cuda.threadIdx.x
    group = tid // 128
    # 32-bit unsigned quotients: a 64-bit division is a subroutine call, and the driver's JIT
    # then serialises every wgmma of the kernel (hopper_gemm's tile_origin says more)
    qblocks = uint32(seq // BM)
    block = uint32(cuda.blockIdx.x)
    qb = int64(qblocks - 1 - uint32(block % qblocks))  # the longest rows first
    head_row = int64(uint32(block // qblocks)) * seq
    tiles = qb + 1  # causal: key tiles up to the diagonal
    if tid == 0:
        cuda.mbarrier.init(bars, Q_FULL, 1)
        for s in range(STAGES):
            cuda.mbarrier.init(bars, KV_FULL + s, 1)
            cuda.mbarrier.init(bars, KV_EMPTY + s, 2)
    cuda.syncthreads()
    if group == 0:
        cuda.setmaxnreg_dec(40)
        if tid == 0:
            _produce(smem, bars, dq, dk, dv, head_row, qb, tiles)
    else:
        cuda.setmaxnreg_inc(232)
        _consume(out, smem, bars, head_row, qb, tiles, group - 1, tid % 128, scale_log2)


@cuda.jit(device=True, forceinline=True)
def _produce(smem, bars, dq, dk, dv, head_row, qb, tiles):
    cuda.mbarrier.arrive_expect_tx(bars, Q_FULL, 2 * BOX * 2)
    for half in range(2):
        cuda.tma.load(smem[Q_AT + half * BOX:Q_AT + (half + 1) * BOX], dq,
                      (head_row + qb * BM, half * 64), bars, Q_FULL)
    for j in range(tiles):
        s = j % STAGES
        if j >= STAGES:
            cuda.mbarrier.wait(bars, KV_EMPTY + s, (j // STAGES - 1) % 2)
        cuda.mbarrier.arrive_expect_tx(bars, KV_FULL + s, STAGE * 2)
        base = KV_AT + s * STAGE
        for half in range(2):
            cuda.tma.load(smem[base + half * BOX:base + (half + 1) * BOX], dk,
                          (head_row + j * BN, half * 64), bars, KV_FULL + s)
            cuda.tma.load(smem[base + (2 + half) * BOX:base + (3 + half) * BOX], dv,
                          (head_row + j * BN, half * 64), bars, KV_FULL + s)


@cuda.jit(device=True, forceinline=True)
def _consume(out, smem, bars, head_row, qb, tiles, wg, t, scale_log2):
    warp, lane = t // 32, t % 32
    row_lo = qb * BM + wg * 64 + warp * 16 + lane // 4  # this thread's rows: row_lo, row_lo + 8
    s_acc = cuda.local.array(64, float32)
    o_acc = cuda.local.array(64, float32)
    p = cuda.local.array(32, uint32)  # P as bfloat16 pairs, the A registers of P V
    m_lo, m_hi = float32(-math.inf), float32(-math.inf)  # float32 all through: no doubles
    l_lo, l_hi = float32(0), float32(0)
    cuda.mbarrier.wait(bars, Q_FULL, 0)
    # this warpgroup's 64 rows of Q; descriptors move in 16-byte units (+ bytes // 16)
    q_desc = cuda.wgmma.descriptor(smem[Q_AT + wg * 64 * 64:], 128)
    for j in range(tiles):
        s = j % STAGES
        base = KV_AT + s * STAGE
        k_desc = cuda.wgmma.descriptor(smem[base:], 128)
        v_desc = cuda.wgmma.descriptor(smem[base + 2 * BOX:], 128, 1024, BOX * 2)
        cuda.mbarrier.wait(bars, KV_FULL + s, (j // STAGES) % 2)
        # S = Q K^T: head dim 128 in 8 steps of 16, 4 per 64-column box
        cuda.wgmma.fence()
        for kk in cuda.literal_unroll(R8):  # constant kk: the first step ignores old S values
            step = ((kk // 4) * BOX + (kk % 4) * 16) * 2 // 16
            cuda.wgmma.mma_async(s_acc, q_desc + step, k_desc + step, (64, BN, 16), bfloat16,
                                 scale_d=kk > 0)
        cuda.wgmma.commit_group()
        cuda.wgmma.wait_group(0)
        if j == qb:  # the diagonal tile: keys after the query are masked
            # column j*BN + 8(i//4) + 2(lane%4) + i%2 > row row_lo + 8((i//2)%2), arranged so
            # that the left side is a constant per i (nothing per i stays live in registers)
            limit = row_lo - j * BN - 2 * (lane % 4)
            for i in cuda.literal_unroll(R64):
                if 8 * (i // 4) + i % 2 - 8 * ((i // 2) % 2) > limit:
                    s_acc[i] = -math.inf
        x_lo, x_hi = float32(-math.inf), float32(-math.inf)
        for i in cuda.literal_unroll(R64):
            if (i // 2) % 2 == 0:
                x_lo = max(x_lo, s_acc[i])
            else:
                x_hi = max(x_hi, s_acc[i])
        for d in (1, 2):  # the 4 lanes of a row
            x_lo = max(x_lo, cuda.shfl_xor_sync(0xFFFFFFFF, x_lo, d))
            x_hi = max(x_hi, cuda.shfl_xor_sync(0xFFFFFFFF, x_hi, d))
        new_lo, new_hi = max(m_lo, x_lo * scale_log2), max(m_hi, x_hi * scale_log2)
        alpha_lo, alpha_hi = math.exp2(m_lo - new_lo), math.exp2(m_hi - new_hi)
        sum_lo, sum_hi = float32(0), float32(0)
        for q in cuda.literal_unroll(R32):  # pairs of D values: one row, adjacent columns
            if q % 2 == 0:
                e0 = math.exp2(s_acc[2 * q] * scale_log2 - new_lo)
                e1 = math.exp2(s_acc[2 * q + 1] * scale_log2 - new_lo)
                sum_lo += e0 + e1
            else:
                e0 = math.exp2(s_acc[2 * q] * scale_log2 - new_hi)
                e1 = math.exp2(s_acc[2 * q + 1] * scale_log2 - new_hi)
                sum_hi += e0 + e1
            p[q] = _pack(e0, e1)  # packed now: 32 registers of P rather than 64
        l_lo, l_hi = l_lo * alpha_lo + sum_lo, l_hi * alpha_hi + sum_hi
        m_lo, m_hi = new_lo, new_hi
        if j > 0:
            for i in cuda.literal_unroll(R64):
                if (i // 2) % 2 == 0:
                    o_acc[i] *= alpha_lo
                else:
                    o_acc[i] *= alpha_hi
        # O += P V: P's k16 slice kk is its D values 8kk..8kk+7 (A in registers); V MN-major
        cuda.wgmma.fence()
        for kk in cuda.literal_unroll(R8):  # 16 keys (16 rows of 128 bytes) per step
            cuda.wgmma.mma_async(o_acc, p[kk * 4:kk * 4 + 4], v_desc + kk * 128, (64, D, 16),
                                 bfloat16, scale_d=j + kk > 0, trans_b=True)
        cuda.wgmma.commit_group()
        cuda.wgmma.wait_group(0)
        if t == 0:
            cuda.mbarrier.arrive(bars, KV_EMPTY + s)
    for d in (1, 2):
        l_lo += cuda.shfl_xor_sync(0xFFFFFFFF, l_lo, d)
        l_hi += cuda.shfl_xor_sync(0xFFFFFFFF, l_hi, d)
    # the approximate reciprocal (div.approx): an IEEE division's slow path is a subroutine
    # call, and ptxas serialises the wgmma of a kernel that makes one
    inv_lo = cuda.libdevice.fast_fdividef(float32(1), l_lo)
    inv_hi = cuda.libdevice.fast_fdividef(float32(1), l_hi)
    for i in cuda.literal_unroll(R64):
        if (i // 2) % 2 == 0:
            o_acc[i] *= inv_lo
        else:
            o_acc[i] *= inv_hi
    first = head_row + qb * BM + wg * 64
    cuda.wgmma.store(out[first:first + 64, :], o_acc, D)


@cuda.jit(device=True, forceinline=True)
def _pack(lo, hi):
    """Two float32 values as bfloat16 in one uint32, the first in the low half."""
    a = uint32(cuda.bf16.bfloat16_as_uint16(bfloat16(lo)))
    b = uint32(cuda.bf16.bfloat16_as_uint16(bfloat16(hi)))
    return a | (b << 16)


def descriptors(q, k, v) -> tuple:
    return tuple(cuda.tma.descriptor(x, (BN, 64), 128) for x in (q, k, v))


def launch(out, q, k, v, seq: int, descs=None, scale: float | None = None) -> None:
    """O = softmax(Q K^T * scale, causal) V for (batch * heads * seq, 128) arrays."""
    if seq % BM:
        raise ValueError(f"seq={seq} must be a multiple of {BM}")
    heads = q.shape[0] // seq
    dq, dk, dv = descs or descriptors(q, k, v)
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    attention_fwd[heads * (seq // BM), THREADS, 0, SMEM_BYTES](out, dq, dk, dv, seq,
                                                               np.float32(scale * LOG2E))


def attention(q, k, v, seq: int):
    out = np.zeros_like(q) if isinstance(q, np.ndarray) else cuda.device_array_like(q)
    launch(out, q, k, v, seq)
    return out


def reference(q, k, v, seq: int, scale: float | None = None) -> np.ndarray:
    """The same attention in float64 numpy (inputs as float32), for checks."""
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    q, k, v = (np.asarray(x, np.float64).reshape(-1, seq, D) for x in (q, k, v))
    s = q @ k.transpose(0, 2, 1) * scale
    s = np.where(np.tril(np.ones((seq, seq), bool)), s, -np.inf)
    s = np.exp(s - s.max(-1, keepdims=True))
    return (s / s.sum(-1, keepdims=True) @ v).reshape(-1, D)


__all__ = ["attention", "attention_fwd", "descriptors", "float32", "launch", "reference"]
