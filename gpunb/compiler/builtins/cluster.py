"""Thread-block clusters (sm_90): the methods of `cuda.cg.this_cluster()`, CUDA's
cooperative_groups::cluster_group under its names.

    cluster = cuda.cg.this_cluster()
    cluster.sync()                      cluster.barrier_arrive(); cluster.barrier_wait()
    cluster.block_rank()                cluster.num_blocks()            (int32)
    cluster.block_index()               cluster.dim_blocks()            ((x, y, z) of int32)
    cluster.thread_rank()               cluster.num_threads(), cluster.size   (int64)
    peer = cluster.map_shared_rank(shared_array, rank)

A kernel gets its cluster shape at compile time (`@cuda.jit(cluster_dims=(2, 1, 1))`, CUDA's
`__cluster_dims__`); without one every block is a cluster of one, as on a GPU. The targets
lower what this module types: `sreg(low, "cluster_ctaid" | "cluster_nctaid", axis)`,
`cluster_rank(low)`, `cluster_size(low)`, `cluster_barrier(low, node, arrive, wait)` and
`map_shared_rank(low, node, pointer, rank)`; remote mbarrier arrivals and TMA multicast are
parameters of cuda.mbarrier.arrive and cuda.tma.load (async_copy.py, tma.py).
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin
from gpunb.compiler.builtins.group_ranks import cluster_threads, thread_rank
from gpunb.compiler.builtins.tensorcore_tiles import memory_space
from gpunb.compiler.typed import Feature
from gpunb.foundation import types as t

_DIM3 = t.Tuple((t.int32, t.int32, t.int32))


def _no_arguments(inf, node, argtypes, kwtypes, name: str) -> None:
    if argtypes or kwtypes:
        raise inf.error(node, f"cluster.{name}() takes no arguments")


class ClusterBarrier(Builtin):
    """sync() (arrive, then wait), barrier_arrive() and barrier_wait(): the cluster barrier.
    Every thread of every block of the cluster arrives before any passes its wait; an arrive
    does not block, so a block can do independent work between the two."""

    def __init__(self, name: str, arrive: bool, wait: bool):
        self.name, self.arrive, self.wait = name, arrive, wait

    def type_call(self, inf, node, argtypes, kwtypes):
        _no_arguments(inf, node, argtypes, kwtypes, self.name)
        inf.require(Feature.CLUSTER)
        return t.none

    def lower_call(self, low, node, call):
        low.target.cluster_barrier(low, node, self.arrive, self.wait)


class ClusterQuery(Builtin):
    """block_rank(), num_blocks(), block_index(), dim_blocks(), thread_rank(), num_threads()."""

    _RESULTS = {"block_rank": t.int32, "num_blocks": t.int32, "block_index": _DIM3,
                "dim_blocks": _DIM3, "thread_rank": t.int64, "num_threads": t.int64}

    def __init__(self, name: str):
        self.name = name

    def type_call(self, inf, node, argtypes, kwtypes):
        _no_arguments(inf, node, argtypes, kwtypes, self.name)
        inf.require(Feature.CLUSTER)
        return self._RESULTS[self.name]

    def lower_call(self, low, node, call):
        b = low.builder
        low.target.check_cluster_query(low, node)  # below sm_90: the error's caret is here
        if self.name == "block_rank":
            return low.target.cluster_rank(low)
        if self.name == "num_blocks":
            return low.target.cluster_size(low)
        if self.name in ("block_index", "dim_blocks"):
            kind = "cluster_ctaid" if self.name == "block_index" else "cluster_nctaid"
            value = ir.Constant(dm.value_type(_DIM3), ir.Undefined)
            for k, axis in enumerate("xyz"):
                value = b.insert_value(value, low.target.sreg(low, kind, axis), k)
            return value
        if self.name == "num_threads":
            return cluster_threads(low)
        return thread_rank(low, "cluster")


class MapSharedRank(Builtin):
    """map_shared_rank(array, rank): the same shared-memory array in block `rank` of the
    cluster (distributed shared memory). The view has the array's type; its reads, writes and
    atomics reach that block's shared memory, which stays valid while the block runs (a block
    must not exit while others still use its memory: end with cluster.sync())."""

    name = "map_shared_rank"

    def type_call(self, inf, node, argtypes, kwtypes):
        if kwtypes or len(argtypes) != 2:
            raise inf.error(node, "cluster.map_shared_rank takes 2 arguments (array, rank), "
                            f"got {len(argtypes) + len(kwtypes)}",
                            "pass a shared-memory array and the rank of a block of the cluster")
        arr, rank = argtypes
        if not isinstance(arr, t.Array):
            raise inf.error(node.args[0], f"cluster.map_shared_rank needs a shared-memory "
                            f"array, got {arr}",
                            "pass an array made with cuda.shared.array (or a view of one)")
        if not isinstance(rank, (t.Integer, t.Boolean)):
            raise inf.error(node.args[1], f"the block rank of cluster.map_shared_rank must be "
                            f"an integer, got {rank}")
        inf.require(Feature.CLUSTER)
        return arr

    def lower_call(self, low, node, call):
        space = memory_space(low, node.args[0])
        if space not in (None, "shared"):  # None: not provable here, checked at run time
            raise low.error(node.args[0], f"cluster.map_shared_rank maps shared memory, and "
                            f"this array is in {_SPACE_NAMES[space]}",
                            hint="pass an array made with cuda.shared.array (or a view of one)")
        b = low.builder
        array = low.expr(node.args[0])
        rank = ops.cast(b, low.expr(node.args[1]), low.type_of(node.args[1]), t.int32)
        data = low.target.map_shared_rank(low, node, b.extract_value(array, 0), rank)
        return b.insert_value(array, data, 0)


_SPACE_NAMES = {"global": "global memory (a kernel argument)",
                "local": "the thread's local memory (cuda.local.array)",
                "const": "constant memory (cuda.const.array_like)"}

METHODS = {
    "sync": ClusterBarrier("sync", True, True),
    "barrier_arrive": ClusterBarrier("barrier_arrive", True, False),
    "barrier_wait": ClusterBarrier("barrier_wait", False, True),
    **{name: ClusterQuery(name) for name in ClusterQuery._RESULTS},
    "map_shared_rank": MapSharedRank(),
}
