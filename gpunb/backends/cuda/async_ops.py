"""NVPTX lowering of cp.async, mbarriers and the async-proxy fence (CudaTarget.async_ops()).

LLVM 22's NVVM intrinsics where it has them (cp.async.*, mbarrier.*, fence.proxy.async), inline
PTX where it does not (mbarrier.test_wait.parity on sm_80). Each operation first checks the
architecture it needs, so a kernel compiled for an older GPU gets a CompileError at the line.
TMA and wgmma come from tma_ops.py and wgmma_ops.py (mixed in below).
"""

from __future__ import annotations

from llvmlite import ir

from gpunb.backends.cuda.async_common import CLUSTER, GLOBAL, SHARED, SM80, SM90, need
from gpunb.backends.cuda.tma_ops import TmaLowering, check_block_rank
from gpunb.backends.cuda.wgmma_ops import WgmmaLowering
from gpunb.compiler import datamodel as dm


class CudaAsyncOps(TmaLowering, WgmmaLowering):
    """One per CudaTarget: lowering methods called by compiler/builtins/async_copy.py & co."""

    def __init__(self, target):
        self.target = target

    # ---- helpers --------------------------------------------------------------------------------

    def need(self, low, node, cc: tuple, what: str) -> None:
        need(low, node, self.target.cc, cc, what)

    def call(self, low, name: str, ret, args: list, values: list):
        fn = self.target.intrinsic(low.mb.module, name, ret, args)
        return low.builder.call(fn, values)

    def asm(self, low, text: str, constraints: str, ret, values: list):
        fty = ir.FunctionType(ret, [v.type for v in values])
        return low.builder.asm(fty, text, constraints, values, side_effect=True)

    @staticmethod
    def shared(low, pointer):
        return low.builder.addrspacecast(pointer, SHARED)

    @staticmethod
    def global_(low, pointer):
        return low.builder.addrspacecast(pointer, GLOBAL)

    # ---- cp.async --------------------------------------------------------------------------------

    def cp_async(self, low, node, dst, src, itemsize: int, nbytes: int, src_bytes, cache: str):
        self.need(low, node, SM80, "cuda.cp_async.copy")
        name = f"llvm.nvvm.cp.async.{cache}.shared.global.{nbytes}"
        args = [self.shared(low, dst[0]), self.global_(low, src[0])]
        if src_bytes is None:
            self.call(low, name, dm.void, [SHARED, GLOBAL], args)
        else:  # bytes past src_bytes are zero-filled
            self.call(low, name + ".s", dm.void, [SHARED, GLOBAL, dm.i32], args + [src_bytes])

    def cp_async_commit(self, low, node) -> None:
        self.need(low, node, SM80, "cuda.cp_async.commit_group")
        self.call(low, "llvm.nvvm.cp.async.commit.group", dm.void, [], [])

    def cp_async_wait(self, low, node, n: int) -> None:
        self.need(low, node, SM80, "cuda.cp_async.wait_group")
        self.call(low, "llvm.nvvm.cp.async.wait.group", dm.void, [dm.i32],
                  [ir.Constant(dm.i32, n)])

    def cp_async_wait_all(self, low, node) -> None:
        self.need(low, node, SM80, "cuda.cp_async.wait_all")
        self.call(low, "llvm.nvvm.cp.async.wait.all", dm.void, [], [])

    # ---- mbarrier --------------------------------------------------------------------------------

    def mbarrier_init(self, low, node, bar, count) -> None:
        self.need(low, node, SM80, "cuda.mbarrier.init")
        self.call(low, "llvm.nvvm.mbarrier.init.shared", dm.void, [SHARED, dm.i32],
                  [self.shared(low, bar), count])

    def mbarrier_arrive(self, low, node, bar, count, tx, block_rank=None):
        if block_rank is not None:
            return self.mbarrier_arrive_remote(low, node, bar, count, tx, block_rank)
        shared = self.shared(low, bar)
        if tx is not None:
            self.need(low, node, SM90, "cuda.mbarrier.arrive_expect_tx")
            return self.call(low, "llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta",
                             dm.i64, [SHARED, dm.i32], [shared, tx])
        if count is None:
            self.need(low, node, SM80, "cuda.mbarrier.arrive")
            return self.call(low, "llvm.nvvm.mbarrier.arrive.shared", dm.i64, [SHARED],
                             [shared])
        self.need(low, node, SM90, "cuda.mbarrier.arrive with a count")
        return self.call(low, "llvm.nvvm.mbarrier.arrive.scope.cta.space.cta", dm.i64,
                         [SHARED, dm.i32], [shared, count])

    def mbarrier_arrive_remote(self, low, node, bar, count, tx, block_rank) -> None:
        """Arrive on the mbarrier at this address in block `block_rank` of the cluster: mapa
        into shared::cluster, then CUTLASS's ClusterBarrier::arrive(cta_id) instruction,
        mbarrier.arrive.shared::cluster.b64 _, [addr], count (a remote arrive returns no
        state: PTX's sink `_`; the typing passes no tx with block_rank=). Its release is
        PTX's default, CTA scope: .release.cluster is
        a MEMBAR.GPU in SASS before every arrival (a 2-block cluster GEMM whose producers
        signal each other per stage ran at 519 instead of 707 TFLOP/s on an H200), and it
        would publish nothing more here, the waits being acquire.cta; what a block writes into
        another's shared memory is published by cluster.sync()."""
        self.need(low, node, SM90, "cuda.mbarrier.arrive with block_rank=")
        check_block_rank(low, node, block_rank, "cuda.mbarrier.arrive")
        remote = self.call(low, "llvm.nvvm.mapa.shared.cluster", CLUSTER, [SHARED, dm.i32],
                           [self.shared(low, bar), block_rank])
        self.call(low, "llvm.nvvm.mbarrier.arrive.scope.cta.space.cluster", dm.void,
                  [CLUSTER, dm.i32], [remote, count if count is not None else
                                      ir.Constant(dm.i32, 1)])
        return None

    def mbarrier_expect_tx(self, low, node, bar, tx) -> None:
        self.need(low, node, SM90, "cuda.mbarrier.expect_tx")
        self.call(low, "llvm.nvvm.mbarrier.expect.tx.scope.cta.space.cta", dm.void,
                  [SHARED, dm.i32], [self.shared(low, bar), tx])

    def mbarrier_try_wait(self, low, node, bar, value, parity: bool):
        if parity:
            self.need(low, node, SM90, "cuda.mbarrier.try_wait_parity")
            return self.call(low, "llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta",
                             dm.i1, [SHARED, dm.i32], [self.shared(low, bar), value])
        self.need(low, node, SM90, "cuda.mbarrier.try_wait")
        return self.call(low, "llvm.nvvm.mbarrier.try.wait.scope.cta.space.cta", dm.i1,
                         [SHARED, dm.i64], [self.shared(low, bar), value])

    def mbarrier_wait(self, low, node, bar, parity) -> None:
        """Spin until the phase of this parity completes: try_wait.parity (which suspends the
        thread for a while in hardware) on sm_90, test_wait.parity on sm_80."""
        self.need(low, node, SM80, "cuda.mbarrier.wait")
        b = low.builder
        shared = self.shared(low, bar)
        check = low.new_block("mbarrier.wait")
        done = low.new_block("mbarrier.done")
        b.branch(check)
        b.position_at_end(check)
        if tuple(self.target.cc[:2]) >= SM90:
            ok = self.call(low, "llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta", dm.i1,
                           [SHARED, dm.i32], [shared, parity])
        else:
            flag = self.asm(low, "{\n.reg .pred p;\nmbarrier.test_wait.parity.shared.b64 p, "
                            "[$1], $2;\nselp.u32 $0, 1, 0, p;\n}", "=r,r,r", dm.i32,
                            [b.ptrtoint(shared, dm.i32), parity])
            ok = b.icmp_unsigned("!=", flag, ir.Constant(dm.i32, 0))
        b.cbranch(ok, done, check)
        b.position_at_end(done)

    def mbarrier_inval(self, low, node, bar) -> None:
        self.need(low, node, SM80, "cuda.mbarrier.inval")
        self.call(low, "llvm.nvvm.mbarrier.inval.shared", dm.void, [SHARED],
                  [self.shared(low, bar)])

    def fence_proxy_async(self, low, node) -> None:
        self.need(low, node, SM90, "cuda.fence_proxy_async")
        self.call(low, "llvm.nvvm.fence.proxy.async.shared_cta", dm.void, [], [])
