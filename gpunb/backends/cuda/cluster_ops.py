"""NVPTX lowering of thread-block clusters (sm_90), mixed into CudaTarget: the cluster special
registers, the cluster barrier and distributed shared memory (mapa), through LLVM 22's NVVM
intrinsics (every one of them exists there: no inline PTX); and `cluster_dims` as the kernel's
`.explicitcluster` / `.reqnctapercluster` directives (NVVM annotations).

The remote mbarrier arrive and the TMA multicast are async_ops.py's and tma_ops.py's. Each
operation checks the architecture first (CompileError at its line naming sm_90): below sm_90
LLVM's instruction selection aborts the process on these intrinsics.
"""

from __future__ import annotations

import ast

from llvmlite import ir

from gpunb.backends.cuda.async_common import SM90, has_arch, need
from gpunb.backends.cuda.tma_ops import check_block_rank
from gpunb.compiler import datamodel as dm
from gpunb.foundation.errors import CompileError

# the cluster's special registers: %cluster_ctaid.{x,y,z}, %cluster_nctaid.{x,y,z}
CLUSTER_SREGS = {"cluster_ctaid": "cluster.ctaid", "cluster_nctaid": "cluster.nctaid"}


class ClusterLowering:
    """CudaTarget's cluster methods (the interface compiler/builtins/cluster.py calls)."""

    def cluster_rank(self, low):
        """%cluster_ctarank: this block's rank in its cluster (i32)."""
        return self._cluster_sreg(low, "llvm.nvvm.read.ptx.sreg.cluster.ctarank")

    def cluster_size(self, low):
        """%cluster_nctarank: the blocks of the cluster (i32)."""
        return self._cluster_sreg(low, "llvm.nvvm.read.ptx.sreg.cluster.nctarank")

    def check_cluster_query(self, low, node) -> None:
        """The cluster queries need sm_90: a CompileError with its caret at the call."""
        need(low, node, self.cc, SM90, "a cluster query (block_rank(), num_blocks(), "
             "block_index(), dim_blocks(), thread_rank(), num_threads())")

    def _cluster_sreg(self, low, name: str):
        check_cluster_arch(low, self.cc)
        return low.builder.call(self.intrinsic(low.mb.module, name, dm.i32, []), [])

    def cluster_barrier(self, low, node, arrive: bool, wait: bool) -> None:
        """barrier.cluster.arrive (release) / .wait (acquire), every thread of the cluster's
        blocks. Before the arrive, fence.mbarrier_init.release.cluster: mbarriers a thread
        initialised are then visible to the other blocks' remote arrivals and multicast
        copies once they pass the wait (CUTLASS's cluster_arrive_relaxed + fence pattern; the
        fence orders only mbarrier.init, so it costs nothing where there was none)."""
        need(low, node, self.cc, SM90, "cluster.sync" if arrive and wait else
             "cluster.barrier_arrive" if arrive else "cluster.barrier_wait")
        m, b = low.mb.module, low.builder
        if arrive:
            b.call(self.intrinsic(m, "llvm.nvvm.fence.mbarrier_init.release.cluster",
                                  dm.void, []), [])
            b.call(self.intrinsic(m, "llvm.nvvm.barrier.cluster.arrive", dm.void, []), [])
        if wait:
            b.call(self.intrinsic(m, "llvm.nvvm.barrier.cluster.wait", dm.void, []), [])

    def map_shared_rank(self, low, node, pointer, rank):
        """mapa.u64: the generic address of the same shared-memory location in block `rank` of
        the cluster. Generic loads, stores and atomics reach the peer's shared memory through
        it (a rank outside the cluster is undefined on the hardware)."""
        need(low, node, self.cc, SM90, "cluster.map_shared_rank")
        check_block_rank(low, node, rank, "cluster.map_shared_rank")
        fn = self.intrinsic(low.mb.module, "llvm.nvvm.mapa", dm.ptr, [dm.ptr, dm.i32])
        return low.builder.call(fn, [pointer, rank])


def check_cluster_arch(low, cc: tuple) -> None:
    """A cluster register read where no call node is at hand (`cluster.size`, a group's
    thread count; the method calls are checked at their node first, check_cluster_query):
    below sm_90 the CompileError points at the statement being lowered."""
    if not has_arch(cc, SM90):
        need(low, _statement_at(low), cc, SM90, "a cluster query (block_rank(), num_blocks(), "
             "block_index(), dim_blocks(), thread_rank(), num_threads())")


def _statement_at(low):
    """The innermost statement of the function on the line being lowered."""
    line = getattr(low, "current_line", None)
    tree = low.typed.source.tree
    found = tree
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno == line and (
                found is tree or node.col_offset > found.col_offset):
            found = node
    return found


def add_cluster_dims(module: ir.Module, symbol: str, dims: tuple) -> None:
    """The kernel's compile-time cluster shape (CUDA's __cluster_dims__) as the NVVM annotations
    cluster_dim_{x,y,z}, which LLVM writes as `.explicitcluster` and `.reqnctapercluster x, y,
    z`: the driver then launches clusters of that shape with a plain cuLaunchKernel."""
    fn = module.get_global(symbol)
    for axis, value in zip("xyz", dims, strict=True):
        module.add_named_metadata("nvvm.annotations", [
            fn, ir.MetaDataString(module, f"cluster_dim_{axis}"), ir.Constant(dm.i32, value)])


def check_cluster_dims_arch(typed, cc: tuple, dims: tuple) -> None:
    """cluster_dims on a target below sm_90: a CompileError at the function's definition."""
    if not has_arch(cc, SM90):
        arch = f"sm_{cc[0]}{cc[1]}{cc[2] if len(cc) > 2 else ''}"
        raise CompileError(
            f"'{typed.name}' was made with cluster_dims={dims}: thread-block clusters need "
            f"sm_90 (Hopper) or newer; this kernel compiles for {arch}",
            typed.source.loc(typed.source.tree), function=typed.name,
            hint="run it on a GPU that has clusters, or compile for one: cc=(9, 0) in "
                 "compile_ptx, --arch sm_90 in %%gpukernel; or drop cluster_dims")
