"""Cooperative groups: cuda.cg.this_grid() / this_thread_block(), .sync(), .thread_rank(), .size;
cuda.cg.this_cluster() and its methods are cluster.py's.

A kernel that calls this_grid() (numba-cuda's rule) or grid.sync() is cooperative: the artifact
says so and the CUDA launch goes through cuLaunchCooperativeKernel; with grid.sync() the CPU
target schedules the whole grid together. The flag lives in the artifact, so a kernel loaded
from the disk cache launches the same way (seed 000).
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler.builtins import Builtin
from gpunb.compiler.builtins.group_ranks import thread_rank
from gpunb.compiler.typed import Feature
from gpunb.foundation import types as t


class ThisGroup(Builtin):
    def __init__(self, name: str, kind: str):
        self.name, self.kind = name, kind

    def type_call(self, inf, node, argtypes, kwtypes):
        if argtypes or kwtypes:
            raise inf.error(node, f"{self.name}() takes no arguments")
        if self.kind == "grid":  # numba-cuda launches every this_grid() user cooperatively
            inf.require(Feature.COOPERATIVE)
        elif self.kind == "cluster":
            inf.require(Feature.CLUSTER)
        return t.Group(self.kind)

    def lower_call(self, low, node, call):
        return ir.Constant(ir.LiteralStructType([]), None)


class GroupSync(Builtin):
    def __init__(self, kind: str):
        self.kind = kind
        self.name = f"{'GridGroup' if kind == 'grid' else 'ThreadBlockGroup'}.sync"

    def type_call(self, inf, node, argtypes, kwtypes):
        if argtypes or kwtypes:
            raise inf.error(node, "sync() takes no arguments")
        inf.require(Feature.GRID_SYNC if self.kind == "grid" else Feature.BARRIER)
        return t.none

    def lower_call(self, low, node, call):
        if self.kind == "grid":
            low.target.grid_sync(low, node)
        else:
            low.target.barrier(low, node, "sync", None)


class ThreadRank(Builtin):
    def __init__(self, kind: str):
        self.kind = kind
        self.name = "thread_rank"

    def type_call(self, inf, node, argtypes, kwtypes):
        if argtypes or kwtypes:
            raise inf.error(node, "thread_rank() takes no arguments")
        return t.int64

    def lower_call(self, low, node, call):
        return thread_rank(low, self.kind)


_METHODS = {
    ("grid", "sync"): GroupSync("grid"), ("block", "sync"): GroupSync("block"),
    ("grid", "thread_rank"): ThreadRank("grid"), ("block", "thread_rank"): ThreadRank("block"),
}


def group_method(group: t.Group, name: str):
    if group.kind == "cluster":
        from gpunb.compiler.builtins.cluster import METHODS

        return METHODS.get(name)
    return _METHODS.get((group.kind, name))


def method_names(group: t.Group) -> list:
    """The methods a group has, for the error that names one it has not."""
    if group.kind == "cluster":
        from gpunb.compiler.builtins.cluster import METHODS

        return sorted(METHODS)
    return sorted(name for kind, name in _METHODS if kind == group.kind)


BUILTINS = {
    "cuda.cg.this_grid": ThisGroup("cuda.cg.this_grid", "grid"),
    "cuda.cg.this_thread_block": ThisGroup("cuda.cg.this_thread_block", "block"),
    "cuda.cg.this_cluster": ThisGroup("cuda.cg.this_cluster", "cluster"),
}
