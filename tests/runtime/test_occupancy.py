"""The pure-Python occupancy calculator against cases computed by hand from NVIDIA's rules.

Rules (see gpunb/backends/cuda/occupancy.py): warps per block = ceil(threads/32); registers per
warp = ceil(regs*32/256)*256, and an SM holds 4 * floor(16384 / regs_per_warp) warps; shared
memory per block = roundup(bytes + 1024 reserved, 128) on sm_80+, and the SM holds carve-out //
that.
"""

from __future__ import annotations

import pytest

from gpunb.backends.cuda.occupancy import ARCHS, limits_for, occupancy, suggest_block_size

KIB = 1024

# (arch, threads, regs, shared) -> (blocks per SM, warps per SM, fraction, limiter)
HAND_COMPUTED = [
    # sm_90: 8 warps/block; warps 64/8 = 8 blocks; regs 1024/warp -> 16 warps per
    # sub-partition -> 64 warps -> 8 blocks; both bind at 100% -> "warps"
    (("sm_90", 256, 32, 0), (8, 64, 1.0, "warps")),
    # 64 regs: 2048/warp -> 8 warps per sub-partition -> 32 warps -> 4 blocks: 50%, registers
    (("sm_90", 256, 64, 0), (4, 32, 0.5, "registers")),
    # 40 regs: 1280/warp -> floor(16384/1280) = 12 -> 48 warps -> 6 blocks: 75%
    (("sm_90", 256, 40, 0), (6, 48, 0.75, "registers")),
    # 33 regs: 1056 rounds up to 1280 per warp (allocation unit 256): the same as 40
    (("sm_90", 256, 33, 0), (6, 48, 0.75, "registers")),
    # 32 threads = 1 warp: the 32-blocks-per-SM limit gives 32 warps of 64: 50%
    (("sm_90", 32, 16, 0), (32, 32, 0.5, "blocks")),
    # 1024 threads x 65 regs: 2080 -> 2304 per warp x 32 warps = 73728 > 65536 per block
    (("sm_90", 1024, 65, 0), (0, 0, 0.0, "registers")),
    # shared 32300 B: 32300 + 1024 = 33324 -> roundup 128 = 33408; 233472 // 33408 = 6
    # (without the 128-byte granularity it would be 7)
    (("sm_90", 32, 0, 32300), (6, 6, 6 / 64, "shared_memory")),
    # 57 KiB + 1 KiB reserved = 59392; 233472 // 59392 = 3 (4 without the reserve)
    (("sm_90", 32, 0, 57 * KIB), (3, 3, 3 / 64, "shared_memory")),
    # the largest block allocation: 227 KiB + 1 KiB = the whole 228 KiB carve-out
    (("sm_90", 32, 0, 227 * KIB), (1, 1, 1 / 64, "shared_memory")),
    (("sm_90", 32, 0, 227 * KIB + 1), (0, 0, 0.0, "shared_memory")),
    # sm_80: 48 KiB + 1 KiB = 50176; 164 KiB = 167936 // 50176 = 3 blocks = 24 warps of 64
    (("sm_80", 256, 32, 48 * KIB), (3, 24, 0.375, "shared_memory")),
    # sm_86: 48 warps per SM; a 1024-thread block (32 warps) fits once: 66.7%
    (("sm_86", 1024, 32, 0), (1, 32, 32 / 48, "warps")),
    # sm_89: 24 blocks per SM; 64 threads -> 2 warps -> 48/2 = 24 by warps too: 100%
    (("sm_89", 64, 16, 0), (24, 48, 1.0, "warps")),
    # sm_75: 32 warps, 16 blocks; 64-thread blocks: 16 blocks = 32 warps = 100%
    (("sm_75", 64, 32, 0), (16, 32, 1.0, "warps")),
    # sm_75 with 128 regs: 4096/warp -> 4 per sub-partition -> 16 warps -> 2 blocks of 8 warps
    (("sm_75", 256, 128, 0), (2, 16, 0.5, "registers")),
    # sm_70: no reserved shared memory, 256-byte granularity: 100 B -> 256; 96 KiB // 256 = 384
    (("sm_70", 128, 32, 100), (16, 64, 1.0, "warps")),
    # sm_70, 40 KiB per block: 98304 // 40960 = 2 blocks of 8 warps = 16 of 64
    (("sm_70", 256, 32, 40 * KIB), (2, 16, 0.25, "shared_memory")),
    # sm_87 has sm_80's shared memory but 48 warps: 768 threads = 24 warps -> 2 blocks
    (("sm_87", 768, 32, 0), (2, 48, 1.0, "warps")),
]


@pytest.mark.parametrize("args,expected", HAND_COMPUTED,
                         ids=[f"{a[0]}-{a[1]}t-{a[2]}r-{a[3]}B" for a, _ in HAND_COMPUTED])
def test_hand_computed_cases(args, expected):
    occ = occupancy(*args)
    blocks, warps, fraction, limiter = expected
    assert occ.active_blocks_per_sm == blocks
    assert occ.active_warps_per_sm == warps
    assert occ.occupancy_fraction == pytest.approx(fraction)
    assert occ.limiter == limiter


def test_limit_details_are_reported():
    occ = occupancy("sm_90", 256, 32, 0)
    assert occ.limiters == ("warps", "registers")
    assert occ.blocks_limited_by_warps == 8 and occ.blocks_limited_by_registers == 8
    assert occ.blocks_limited_by_blocks == 32 and occ.blocks_limited_by_shared_memory == 228
    assert occ.registers_per_block == 8 * 1024 and occ.shared_per_block == 1024
    assert occ.max_warps_per_sm == 64 and occ.active_threads_per_sm == 2048
    zero_regs = occupancy("sm_70", 128, 0, 0)
    assert zero_regs.blocks_limited_by_registers is None  # no registers: no register limit
    assert zero_regs.blocks_limited_by_shared_memory is None


def test_carveout_preference():
    # 50% of 228 KiB = 114 KiB snaps up to the 132 KiB configuration: 132 KiB // 17 KiB = 7
    occ = occupancy("sm_90", 64, 16, 16 * KIB, carveout_percent=50)
    assert occ.shared_per_sm == 132 * KIB and occ.active_blocks_per_sm == 7
    # a carve-out too small for even one block is raised to one that fits
    occ = occupancy("sm_90", 64, 16, 100 * KIB, carveout_percent=0)
    assert occ.active_blocks_per_sm == 1 and occ.shared_per_sm == 132 * KIB
    assert occupancy("sm_90", 64, 16, 16 * KIB).shared_per_sm == 228 * KIB


def test_arch_spellings_and_unknown_archs():
    assert limits_for("90") is limits_for((9, 0)) is limits_for("sm_90a") is ARCHS["sm_90"]
    with pytest.raises(ValueError, match="no occupancy table for sm_100"):
        limits_for("sm_100")
    with pytest.raises(ValueError):
        occupancy("sm_90", 0, 32, 0)


def test_block_size_over_the_limit_fits_zero():
    occ = occupancy("sm_90", 2048, 16, 0)
    assert occ.active_blocks_per_sm == 0 and occ.limiter == "warps"


def test_suggest_block_size():
    # few registers: every multiple of 128 up to 1024 reaches 100%; the larger wins the tie
    best = suggest_block_size("sm_90", 32, 0)
    assert best["block_size"] == 1024 and best["occupancy"] == 1.0
    # 64 registers cap every size at 32 warps; 1024 still reaches it
    assert suggest_block_size("sm_90", 64, 0)["occupancy"] == 0.5
    # sm_86 (48 warps): 1024-thread blocks leave 16 warps idle; 768 (= 6 x 128) fills the SM
    assert suggest_block_size("sm_86", 32, 0)["block_size"] == 768
    # a per-thread shared-memory cost: 256 B/thread -> 1024 threads need 257 KiB: too much
    best = suggest_block_size("sm_90", 32, 0, shared_per_thread=256)
    assert best["block_size"] <= 896 and best["active_blocks_per_sm"] >= 1
    assert suggest_block_size("sm_90", 32, 0, max_block_size=256)["block_size"] == 256
    with pytest.raises(ValueError, match="no block size fits"):
        suggest_block_size("sm_90", 300, 0)


def test_device_limits_cover_new_archs():
    from gpunb.backends.cuda.occupancy import limits_from_device

    class Device:  # what driver.Device reports, for an architecture newer than the table
        compute_capability = (12, 0)
        max_threads_per_multiprocessor = 1536
        max_blocks_per_multiprocessor = 32
        max_shared_memory_per_multiprocessor = 100 * KIB
        max_shared_memory_per_block_optin = 99 * KIB
        reserved_shared_memory_per_block = KIB
        max_threads_per_block = 1024
        warp_size = 32
        regs_per_multiprocessor = 65536
        regs_per_block = 65536

    lim = limits_from_device(Device())
    assert lim.arch == "sm_120" and lim.max_warps_per_sm == 48
    assert occupancy(Device(), 256, 32, 0).active_blocks_per_sm == 6
