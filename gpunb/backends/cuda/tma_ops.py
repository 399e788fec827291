"""NVPTX lowering of TMA bulk tensor copies (cp.async.bulk.tensor, sm_90), mixed into
CudaAsyncOps: LLVM 22's llvm.nvvm.cp.async.bulk.tensor.{g2s,s2g,prefetch}.tile.Nd intrinsics
and the bulk async-group commit/wait. The tensor map is the kernel's __grid_constant__ parameter
(CudaTarget.define_kernel), so its generic address is what the instruction reads."""

from __future__ import annotations

from llvmlite import ir

from gpunb.backends.cuda.async_common import CLUSTER, SHARED, SM90
from gpunb.compiler import datamodel as dm

I16 = ir.IntType(16)


class TmaLowering:
    def shared_address(self, low, node, pointer):
        """A generic pointer into shared memory as its shared-window address (i64)."""
        b = low.builder
        return b.zext(b.ptrtoint(self.shared(low, pointer), dm.i32), dm.i64)

    def tma_load(self, low, node, dst, tmap, desc_type, coords: list, bar,
                 multicast=None) -> None:
        """cp.async.bulk.tensor g2s; with `multicast` (an i16 mask of cluster ranks) its
        .multicast::cluster form: the box lands at dst's offset in every block of the mask and
        completes its bytes on the mbarrier at bar's offset in each."""
        self.need(low, node, SM90, "cuda.tma.load" if multicast is None else
                  "cuda.tma.load with multicast=")
        b = low.builder
        n = len(coords)
        mask = ir.Constant(I16, 0)
        if multicast is not None:
            check_multicast_mask(low, node, multicast)
            mask = multicast
        dst_cluster = b.addrspacecast(self.shared(low, dst[0]), CLUSTER)
        args = [CLUSTER, SHARED, dm.ptr] + [dm.i32] * n + [I16, dm.i64, dm.i1, dm.i1, dm.i32]
        values = [dst_cluster, self.shared(low, bar), tmap, *coords, mask,
                  ir.Constant(dm.i64, 0), ir.Constant(dm.i1, multicast is not None),
                  ir.Constant(dm.i1, 0), ir.Constant(dm.i32, 0)]
        self.call(low, f"llvm.nvvm.cp.async.bulk.tensor.g2s.tile.{n}d", dm.void, args, values)

    def tma_store(self, low, node, tmap, desc_type, coords: list, src) -> None:
        self.need(low, node, SM90, "cuda.tma.store")
        n = len(coords)
        args = [SHARED, dm.ptr] + [dm.i32] * n + [dm.i64, dm.i1]
        values = [self.shared(low, src[0]), tmap, *coords, ir.Constant(dm.i64, 0),
                  ir.Constant(dm.i1, 0)]
        self.call(low, f"llvm.nvvm.cp.async.bulk.tensor.s2g.tile.{n}d", dm.void, args, values)

    def tma_prefetch(self, low, node, tmap, desc_type, coords: list) -> None:
        self.need(low, node, SM90, "cuda.tma.prefetch")
        n = len(coords)
        args = [dm.ptr] + [dm.i32] * n + [dm.i64, dm.i1]
        values = [tmap, *coords, ir.Constant(dm.i64, 0), ir.Constant(dm.i1, 0)]
        self.call(low, f"llvm.nvvm.cp.async.bulk.tensor.prefetch.tile.{n}d", dm.void, args,
                  values)

    def bulk_commit(self, low, node) -> None:
        self.need(low, node, SM90, "cuda.tma.commit_group")
        self.call(low, "llvm.nvvm.cp.async.bulk.commit.group", dm.void, [], [])

    def bulk_wait(self, low, node, n: int, read: bool) -> None:
        name = "wait_group_read" if read else "wait_group"
        self.need(low, node, SM90, f"cuda.tma.{name}")
        self.call(low, "llvm.nvvm.cp.async.bulk.wait.group" + (".read" if read else ""),
                  dm.void, [dm.i32], [ir.Constant(dm.i32, n)])


def _constant(value):
    """The int of an LLVM constant behind the typing's integer conversions, else None."""
    while isinstance(value, ir.CastInstr) and value.opname in ("trunc", "zext", "sext"):
        value = value.operands[0]
    if isinstance(value, ir.Constant) and isinstance(value.constant, int):
        return value.constant
    return None


def check_block_rank(low, node, rank, what: str) -> None:
    """A block rank known at compile time must be one of the kernel's cluster (a rank computed
    at run time is the kernel's to get right: undefined on the hardware, reported by the CPU
    target)."""
    value = _constant(rank)
    if value is None or not low.mb.features:  # run-time value, or a device function alone
        return
    dims = low.mb.options.get("cluster_dims") or (1, 1, 1)
    size = dims[0] * dims[1] * dims[2]
    value &= 0xFFFFFFFF  # the i32 the instruction gets, signed as the user wrote it
    value = value - (1 << 32) if value >= 1 << 31 else value
    if not 0 <= value < size:
        raise low.error(node, f"{what}: block rank {value} is not in this kernel's clusters of "
                        f"{size} block{'s' if size > 1 else ''} (cluster_dims={tuple(dims)}), "
                        f"ranks 0 to {size - 1}",
                        "pass the rank of a block of the cluster (cluster.block_rank() of it)")


def check_multicast_mask(low, node, mask) -> None:
    """A multicast mask known at compile time: at least one block, and only blocks the kernel's
    cluster_dims has (a mask computed at run time is the kernel's to get right: bits past the
    cluster are undefined on the hardware)."""
    value = _constant(mask)  # behind the typing's conversion of a literal to uint16
    if value is None:
        return
    value &= 0xFFFF
    if value and not low.mb.features:  # a device function compiled alone: no cluster known
        return
    dims = low.mb.options.get("cluster_dims") or (1, 1, 1)
    size = dims[0] * dims[1] * dims[2]
    if value == 0 or value >> size:
        raise low.error(node, f"multicast={value:#b} names "
                        f"{'no block' if value == 0 else 'blocks past the cluster'}: this "
                        f"kernel's clusters have {size} block{'s' if size > 1 else ''} "
                        f"(cluster_dims={tuple(dims)}), ranks 0 to {size - 1}",
                        f"set bit r for block rank r of the cluster, e.g. multicast="
                        f"{(1 << size) - 1:#b} for all {size}")
