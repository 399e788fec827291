"""Thread and block counts and ranks of the cooperative groups (grid, block, cluster), read from
the target's special registers: shared by groups.py and cluster.py."""

from __future__ import annotations

from gpunb.compiler import datamodel as dm
from gpunb.foundation import types as t


def _linear(low, kind: str, dims: str):
    b = low.builder
    idx = [b.zext(low.target.sreg(low, kind, a), dm.i64) for a in "xyz"]
    ext = [b.zext(low.target.sreg(low, dims, a), dm.i64) for a in "xyz"]
    return b.add(idx[0], b.mul(ext[0], b.add(idx[1], b.mul(ext[1], idx[2]))))


def _count(low, dims: str):
    b = low.builder
    ext = [b.zext(low.target.sreg(low, dims, a), dm.i64) for a in "xyz"]
    return b.mul(b.mul(ext[0], ext[1]), ext[2])


def thread_rank(low, kind: str):
    """The thread's rank (int64) in its block, cluster or grid: blocks in rank order, then
    threads in x-fastest order."""
    b = low.builder
    in_block = _linear(low, "tid", "ntid")
    if kind == "block":
        return in_block
    if kind == "cluster":
        block = b.zext(low.target.cluster_rank(low), dm.i64)
    else:
        block = _linear(low, "ctaid", "nctaid")
    return b.add(b.mul(block, _count(low, "ntid")), in_block)


def block_threads(low):
    """The block's threads (int64)."""
    return _count(low, "ntid")


def group_size(low, group: t.Group):
    if group.kind == "block":
        return _count(low, "ntid")
    if group.kind == "cluster":
        return cluster_threads(low)
    return low.builder.mul(_count(low, "ntid"), _count(low, "nctaid"))


def cluster_threads(low):
    """The cluster's threads (int64): its blocks times the block's threads."""
    b = low.builder
    return b.mul(b.zext(low.target.cluster_size(low), dm.i64), block_threads(low))
