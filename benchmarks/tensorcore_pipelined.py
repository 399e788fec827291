"""mma.sync + ldmatrix + cp.async GEMMs tuned past benchmarks/tensorcore_kernels.py's (37 % of
cuBLAS on an H100): C = A @ B, A (M x K) and B (K x N) row-major float16 or bfloat16, float32 C.

What changes, each a parameter of `make_gemm` so that bench_tensorcore can time them apart:

- **K steps of `bk`** (64): half the cp.async waits and block barriers of 32-wide steps.
- **One barrier per K step.** The copy into stage `kt + stages - 1` is issued after the barrier
  that ends every warp's reads of that stage (the one of the previous step), so no second
  barrier is needed.
- **Register double-buffering** (`double_buffer`): the fragments of k16 step `kk + 1` are
  loaded with ldmatrix before the mma.syncs of step `kk` are issued, and the first fragments
  of the next K step before the last mma.syncs of this one, so the tensor cores never wait for
  shared memory within a warp.
- **Warp tiles of 64 x 64** (4 x 8 mma m16n8k16 per k16 step) on `warps` = (2, 2) for a
  128 x 128 block: 128 threads whose 255 registers still let two blocks share a multiprocessor
  (three stages of 32 KiB each, twice, fit its 228 KiB of shared memory).
- **Swizzled shared tiles** (`swizzle`): rows without padding, each 16-byte chunk c of row r
  stored at chunk c ^ (r % 8) (A with 32-wide steps: c ^ (r / 2 % 4), two rows per 128 bytes),
  so the 8 rows an ldmatrix reads, or 8 consecutive k rows of B that ldmatrix.trans reads, sit
  in 8 different groups of 4 banks. `swizzle=False` pads rows by 16 bytes instead.
- **Grouped block order** (`group`, flag `g<N>`): the block at linear index p computes tile
  row first + p % rows, column p // rows within bands of `group` tile rows (Triton's GROUP_M),
  so the blocks resident together read a few A panels and a few B panels; 0 keeps the grid's
  order (blockIdx.x along N), where the resident blocks share one or two A panels and sweep B.
- **cp.async through `cuda.cp_async.copy`**, which the CPU target runs with its completion
  rules: tests/language/test_tensorcore_pipelined.py checks every variant there at a small size
  (and under racecheck), and that ptxas allocates no local memory (no spills) for sm_90.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpunb import cuda

WARP_M, WARP_N = 64, 64  # each warp's tile: 4 m16 x 8 n8 mma tiles


@dataclass(frozen=True)
class Config:
    """One variant: block tile bm x bn, K step bk, warps (along M, along N), stages."""

    bm: int = 128
    bn: int = 128
    bk: int = 64
    warps: tuple = (2, 2)
    stages: int = 3
    swizzle: bool = True
    double_buffer: bool = True
    group: int = 0

    @property
    def threads(self) -> int:
        return 32 * self.warps[0] * self.warps[1]

    @property
    def row_a(self) -> int:  # elements per shared row of A (bk, padded by 8 without swizzle)
        return self.bk if self.swizzle else self.bk + 8

    @property
    def row_b(self) -> int:
        return self.bn if self.swizzle else self.bn + 8

    @property
    def stage_elements(self) -> int:
        return self.bm * self.row_a + self.bk * self.row_b

    def shared_bytes(self, itemsize: int = 2) -> int:
        return self.stages * self.stage_elements * itemsize

    @property
    def label(self) -> str:
        flags = ("swizzled" if self.swizzle else "padded") + \
            (", fragments double-buffered" if self.double_buffer else "") + \
            (f", blocks in groups of {self.group} rows" if self.group else "")
        return (f"{self.bm}x{self.bn}x{self.bk}, {self.warps[0]}x{self.warps[1]} warps, "
                f"{self.stages} stages, {flags}")

    def check(self) -> None:
        if self.bm != WARP_M * self.warps[0] or self.bn != WARP_N * self.warps[1]:
            raise ValueError(f"{self.label}: warps of 64 x 64 must tile the block")
        if self.bk not in (32, 64) or self.stages < 2:
            raise ValueError(f"{self.label}: bk must be 32 or 64, stages at least 2")
        # the threads copy a tile in passes of whole rows; the swizzle of a piece's row must
        # follow from its first pass's (A: the same in every pass; B: flipping bit 2 at most)
        for rows, width, step in ((self.bm, self.bk, 8), (self.bk, self.bn, 4)):
            if rows * width // 8 % self.threads or self.threads // (width // 8) % step:
                raise ValueError(f"{self.label}: a {rows} x {width} tile's 16-byte pieces do "
                                 f"not divide among {self.threads} threads in passes of a "
                                 f"multiple of {step} rows")


def parse(spec: str) -> Config:
    """'128x128x64:2x2:3' (block tile, warps, stages), then optional ':pad', ':nodb' and
    ':g<N>' (blocks in groups of N tile rows)."""
    parts = spec.split(":")
    try:
        bm, bn, bk = (int(v) for v in parts[0].split("x"))
        wm, wn = (int(v) for v in parts[1].split("x"))
        stages = int(parts[2])
        groups = [f for f in parts[3:] if f[:1] == "g" and f[1:].isdigit() and int(f[1:]) > 0]
        unknown = set(parts[3:]) - {"pad", "nodb"} - set(groups)
        if unknown or len(groups) > 1:
            raise ValueError(f"unknown flags {sorted(unknown)}" if unknown else
                             f"one group flag, not {groups}")
    except (ValueError, IndexError) as err:
        raise ValueError(f"variant {spec!r} is not <bm>x<bn>x<bk>:<warps m>x<warps n>:<stages>"
                         f"[:pad][:nodb][:g<N>], e.g. 128x128x64:2x2:3 ({err})") from None
    config = Config(bm, bn, bk, (wm, wn), stages, "pad" not in parts[3:], "nodb" not in parts[3:],
                    int(groups[0][1:]) if groups else 0)
    config.check()
    return config


def make_gemm(dtype=np.float16, config: Config = Config()):
    """kernel(c, a, b) for C-contiguous c (m x n, float32), a (m x k), b (k x n): m a multiple
    of bm, n of bn, k of bk. Launch with `launch(kernel, c, a, b)`."""
    config.check()
    bm, bn, bk, stages, swz = config.bm, config.bn, config.bk, config.stages, config.swizzle
    threads, row_a, row_b, stage = config.threads, config.row_a, config.row_b, \
        config.stage_elements
    a_tile = bm * row_a
    wn_count = config.warps[1]
    a_pieces, b_pieces = bm * bk // 8 // threads, bk * bn // 8 // threads
    a_chunks, b_chunks = bk // 8, bn // 8
    a_rows, b_rows = threads // a_chunks, threads // b_chunks  # rows per pass of the threads
    ksteps = bk // 16
    double = config.double_buffer
    band = config.group  # tile rows per band of the block order (0: grid order)
    # literal_unroll: every index into the register arrays is a constant, so they stay registers
    m_tiles, n_tiles, n_pairs = (0, 1, 2, 3), tuple(range(8)), (0, 1, 2, 3)
    a_range, b_range = tuple(range(a_pieces)), tuple(range(b_pieces))
    k_range = tuple(range(ksteps))

    @cuda.jit(device=True, forceinline=True)
    def issue(chunks, a8, b8, k8, n8, kt, a_src, a_dst, b_src, b_dst):
        """This thread's cp.async pieces of K step kt into its stage; one commit group per call
        (empty past the end of K, so that wait_group counts stay the same). chunks, a8 and b8
        are the shared tiles and A and B as rows of 8 elements (16 bytes), so a piece is one
        row; a_src / b_src are this thread's first piece in a8 / b8 at K step 0, a_dst / b_dst
        in chunks at stage 0 (`pieces`)."""
        if kt * (bk // 8) < k8:
            base = np.uint32((kt % stages) * (stage // 8))
            # `opaque` is 0, but LLVM cannot know it: the source steps then depend on kt, so
            # the pieces' addresses are sums along the unrolled copies rather than one
            # register per piece hoisted out of the K loop (which made the kernel spill)
            opaque = np.uint32(kt >> 40)
            src = a_src + np.uint32(kt * (bk // 8))
            step = np.uint32(a_rows * k8) + opaque
            for i in cuda.literal_unroll(a_range):
                cuda.cp_async.copy(chunks[base + a_dst + np.uint32(i * a_rows * row_a // 8)],
                                   a8[src], 16, cache="cg")
                src += step
            src = b_src + np.uint32(kt * bk * n8)
            step = np.uint32(b_rows * n8) + opaque
            for i in cuda.literal_unroll(b_range):
                # row b_r0 + i * b_rows: its chunk XOR (r % 8) differs from row b_r0's by 4 for
                # odd i when 4 rows make a pass, by nothing when 8 or more do
                xor = 4 * (i % 2) if swz and b_rows % 8 else 0
                cuda.cp_async.copy(chunks[base + (b_dst ^ xor) +
                                          np.uint32(i * b_rows * row_b // 8)], b8[src], 16,
                                   cache="cg")
                src += step
        cuda.cp_async.commit_group()

    @cuda.jit(device=True, forceinline=True)
    def pieces(tid, bm0, bn0, k8, n8):
        """(a_src, a_dst, b_src, b_dst) of this thread's first pieces (see issue): thread t
        copies chunk t % (chunks per row) of rows t / (chunks per row) + i * (rows per pass)."""
        a_r0, a_c = tid // a_chunks, tid % a_chunks
        xa = (a_r0 % 8 if bk == 64 else a_r0 // 2 % 4) if swz else 0
        b_r0, b_c = tid // b_chunks, tid % b_chunks
        xb = b_r0 % 8 if swz else 0
        return (np.uint32((bm0 + a_r0) * k8 + a_c),
                np.uint32(a_r0 * (row_a // 8) + (a_c ^ xa)),
                np.uint32(b_r0 * n8 + bn0 // 8 + b_c),
                np.uint32((a_tile + b_r0 * row_b) // 8 + (b_c ^ xb)))

    @cuda.jit(device=True, forceinline=True)
    def load_fragments(smem, a_reg, b_reg, buf, base, kk, a_row, a_hi, a_xor, b_row, b_hi,
                       b_xor, wn):
        """ldmatrix the A (4 x .x4) and B (4 x .x4.trans) fragments of k16 step kk of the stage
        at `base` into register buffer `buf`."""
        a_chunk = (2 * kk + a_hi) ^ a_xor
        for i in cuda.literal_unroll(m_tiles):
            frag = cuda.ldmatrix(smem, base + a_row + 16 * i * row_a + a_chunk * 8, 4)
            for e in range(8):
                a_reg[buf, i, e] = frag[e]
        for jj in cuda.literal_unroll(n_pairs):
            b_chunk = ((wn + 16 * jj) // 8 + b_hi) ^ b_xor
            frag = cuda.ldmatrix(smem, base + a_tile + b_row + 16 * kk * row_b + b_chunk * 8,
                                 4, True)
            for e in range(4):
                b_reg[buf, 2 * jj, e] = frag[e]
                b_reg[buf, 2 * jj + 1, e] = frag[4 + e]

    @cuda.jit(device=True, forceinline=True)
    def multiply(acc, a_reg, b_reg, buf):
        for i in cuda.literal_unroll(m_tiles):
            av = (a_reg[buf, i, 0], a_reg[buf, i, 1], a_reg[buf, i, 2], a_reg[buf, i, 3],
                  a_reg[buf, i, 4], a_reg[buf, i, 5], a_reg[buf, i, 6], a_reg[buf, i, 7])
            for j in cuda.literal_unroll(n_tiles):
                d = cuda.mma_sync("m16n8k16", av,
                                  (b_reg[buf, j, 0], b_reg[buf, j, 1], b_reg[buf, j, 2],
                                   b_reg[buf, j, 3]),
                                  (acc[i, j, 0], acc[i, j, 1], acc[i, j, 2], acc[i, j, 3]))
                for e in range(4):
                    acc[i, j, e] = d[e]

    @cuda.jit
    def gemm(c, a, b):
        k_total, n_total = a.shape[1], b.shape[1]
        k8, n8 = k_total // 8, n_total // 8
        a8 = a.reshape(a.shape[0] * k8, 8)  # 16-byte pieces, one per row
        b8 = b.reshape(k_total * n8, 8)
        smem = cuda.shared.array(0, dtype)
        chunks = smem.reshape(stages * stage // 8, 8)
        tid = cuda.threadIdx.x
        lane = tid % 32
        warp = tid // 32
        wm = (warp // wn_count) * WARP_M
        wn = (warp % wn_count) * WARP_N
        if band:
            pid = cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x
            width = band * cuda.gridDim.x
            first = pid // width * band
            rows = min(cuda.gridDim.y - first, band)
            bm0 = (first + pid % width % rows) * bm
            bn0 = (pid % width // rows) * bn
        else:
            bm0 = cuda.blockIdx.y * bm
            bn0 = cuda.blockIdx.x * bn
        acc = cuda.local.array((4, 8, 4), np.float32)
        for i in cuda.literal_unroll(m_tiles):
            for j in cuda.literal_unroll(n_tiles):
                for e in range(4):
                    acc[i, j, e] = 0.0
        a_reg = cuda.local.array((2, 4, 8), dtype)
        b_reg = cuda.local.array((2, 8, 4), dtype)
        # this lane's ldmatrix rows: A .x4 rows wm + lane % 16 (k chunk + lane / 16); B .x4.trans
        # k rows lane % 8 + 8 (lane / 8 % 2) (n chunk + lane / 16); their chunk XORs
        a_row = (wm + lane % 16) * row_a
        a_hi = lane // 16
        a_xor = (lane % 8 if bk == 64 else lane % 16 // 2 % 4) if swz else 0
        b_row = (lane % 8 + 8 * (lane // 8 % 2)) * row_b
        b_hi, b_xor = lane // 16, (lane % 8) if swz else 0
        ktiles = k_total // bk
        a_src, a_dst, b_src, b_dst = pieces(tid, bm0, bn0, k8, n8)
        for s in range(stages - 1):
            issue(chunks, a8, b8, k8, n8, s, a_src, a_dst, b_src, b_dst)
        cuda.cp_async.wait_group(stages - 2)
        cuda.syncthreads()
        if double:
            load_fragments(smem, a_reg, b_reg, 0, 0, 0, a_row, a_hi, a_xor, b_row, b_hi, b_xor,
                           wn)
        for kt in range(ktiles):
            base = (kt % stages) * stage
            # every warp is past the barrier that ended the reads of stage (kt - 1) % stages
            issue(chunks, a8, b8, k8, n8, kt + stages - 1, a_src, a_dst, b_src, b_dst)
            for kk in cuda.literal_unroll(k_range):
                if double:
                    if kk == ksteps - 1:  # the next stage must be resident for its fragments
                        cuda.cp_async.wait_group(stages - 2)
                        cuda.syncthreads()
                        if kt + 1 < ktiles:
                            load_fragments(smem, a_reg, b_reg, (kk + 1) % 2,
                                           ((kt + 1) % stages) * stage, 0, a_row, a_hi, a_xor,
                                           b_row, b_hi, b_xor, wn)
                    else:
                        load_fragments(smem, a_reg, b_reg, (kk + 1) % 2, base, kk + 1, a_row,
                                       a_hi, a_xor, b_row, b_hi, b_xor, wn)
                    multiply(acc, a_reg, b_reg, kk % 2)
                else:
                    load_fragments(smem, a_reg, b_reg, 0, base, kk, a_row, a_hi, a_xor, b_row,
                                   b_hi, b_xor, wn)
                    multiply(acc, a_reg, b_reg, 0)
                    if kk == ksteps - 1:
                        cuda.cp_async.wait_group(stages - 2)
                        cuda.syncthreads()
        cuda.cp_async.wait_group(0)  # the empty groups past the end of K
        group, quad = lane // 4, lane % 4
        for i in cuda.literal_unroll(m_tiles):
            for j in cuda.literal_unroll(n_tiles):
                r = bm0 + wm + 16 * i + group
                col = bn0 + wn + 8 * j + 2 * quad
                c[r, col] = acc[i, j, 0]
                c[r, col + 1] = acc[i, j, 1]
                c[r + 8, col] = acc[i, j, 2]
                c[r + 8, col + 1] = acc[i, j, 3]

    gemm.config = config
    return gemm


def launch(kernel, c, a, b) -> None:
    """Launch a make_gemm kernel for c (m x n, float32), a (m x k), b (k x n)."""
    config = kernel.config
    m, n = c.shape
    if m % config.bm or n % config.bn or a.shape[1] % config.bk:
        raise ValueError(f"{config.label}: m, n, k = {m}, {n}, {a.shape[1]} must be multiples "
                         f"of {config.bm}, {config.bn}, {config.bk}")
    kernel[(n // config.bn, m // config.bm), config.threads, 0, config.shared_bytes()](c, a, b)


# the variants bench_tensorcore times (--variant mma2:all): two blocks of 4 warps per
# multiprocessor, a deeper pipeline, 8-warp blocks of 128 x 256 and 256 x 128 (a third less
# traffic from L2 per flop than 128 x 128, which at 55 % of cuBLAS needs about 6 TB/s of it),
# the block order in bands of 8 tile rows, and the first without each change (fragments not
# double-buffered, padded rows instead of swizzled ones, 32-wide K steps)
VARIANTS = ("128x128x64:2x2:3", "128x128x64:2x2:4", "128x256x64:2x4:3", "128x256x64:2x4:4",
            "256x128x64:4x2:3", "256x128x64:4x2:4", "256x128x64:4x2:3:g8",
            "256x128x64:4x2:4:g8", "128x128x64:2x2:3:nodb",
            "128x128x64:2x2:3:pad", "128x128x32:2x2:4:nodb")
