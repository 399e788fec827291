"""How the runner numbers a launch's blocks (block_of), and its part for thread-block clusters
(runner.emit_runner with `cluster`): a group of blocks scheduled together is one cluster, its
blocks in rank order, claimed whole.

A launch's blocks are numbered cluster by cluster: number k is rank k % size of cluster
k // size; clusters are numbered x fastest over the grid of clusters (grid / cluster dims),
ranks x fastest within a cluster, as CUDA's %cluster_ctarank: rank = x + y*cx + z*cx*cy.
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.backends.cpu import abi
from gpunb.compiler import datamodel as dm


def _i32(v: int) -> ir.Constant:
    return ir.Constant(dm.i32, v)


def _i64(v: int) -> ir.Constant:
    return ir.Constant(dm.i64, v)


def _at(b: ir.IRBuilder, base, offset: int):
    return b.gep(base, [_i64(offset)], source_etype=dm.i8)


def cluster_size(dims: tuple) -> int:
    """Blocks in a cluster of these dims."""
    return dims[0] * dims[1] * dims[2]


def whole_clusters(b: ir.IRBuilder, chunk, size):
    """The launch's claim size rounded up to whole clusters (a claim never splits one)."""
    return b.mul(b.udiv(b.add(chunk, b.sub(size, _i64(1))), size), size)


def block_of(b: ir.IRBuilder, number, grid: list, dims: tuple | None) -> tuple:
    """(x, y, z) i32 blockIdx of block `number` (i64): in cluster order (the module's doc), or
    without cluster dims x fastest over the grid."""
    if dims is None:
        gx = b.zext(grid[0], dm.i64)
        return (b.trunc(b.urem(number, gx), dm.i32),
                b.trunc(b.urem(b.udiv(number, gx), b.zext(grid[1], dm.i64)), dm.i32),
                b.trunc(b.udiv(number, b.zext(b.mul(grid[0], grid[1]), dm.i64)), dm.i32))
    size = cluster_size(dims)
    cluster = b.udiv(number, _i64(size))
    rank = b.trunc(b.urem(number, _i64(size)), dm.i32)
    across = b.udiv(grid[0], _i32(dims[0]))  # clusters along x, and along y
    down = b.udiv(grid[1], _i32(dims[1]))
    per_layer = b.zext(b.mul(across, down), dm.i64)
    in_layer = b.trunc(b.urem(cluster, per_layer), dm.i32)
    layer = b.trunc(b.udiv(cluster, per_layer), dm.i32)
    at_cluster = (b.urem(in_layer, across), b.udiv(in_layer, across), layer)
    in_cluster = (b.urem(rank, _i32(dims[0])),
                  b.urem(b.udiv(rank, _i32(dims[0])), _i32(dims[1])),
                  b.udiv(rank, _i32(dims[0] * dims[1])))
    return tuple(b.add(b.mul(c, _i32(d)), r)
                 for c, d, r in zip(at_cluster, dims, in_cluster, strict=True))


def start_thread(b: ir.IRBuilder, ctx, record: bool = False) -> None:
    """A thread's cluster fields for a new group: no arrivals at the cluster barrier yet, none
    of its block's threads exited (without recording the barrier's counts share the epochs'
    slots, which the runner zeroes anyway; abi.cluster_slots)."""
    for offset in (*abi.cluster_slots(record), abi.CTX_CLUSTER_EXITED):
        b.store(_i32(0), _at(b, ctx, offset))
