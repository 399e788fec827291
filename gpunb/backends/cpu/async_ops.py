"""The CPU target's lowering of cp.async, mbarriers, TMA and wgmma (CpuTarget.async_ops()).

Kernels that use them run as coroutines (wg_plan.py): an mbarrier wait suspends the thread
until the scheduler sees its phase complete, a wgmma.mma_async is a rendezvous of its
warpgroup. Copies are queued in the thread's area (async_state.py, async_tma.py) and done when
their wait completes them. Operands are checked as the hardware requires (sizes, contiguity,
alignment, shared memory), each failure an AsyncCopyError at the call's line; with racecheck,
each queued copy records its destination twice - when issued and when done - so that a read in
between is reported (accesses.find_pending_read). Recording, a copy's global accesses are its
issuing thread's, logged at the issue: a cp.async's source bytes, a TMA load's or store's box
elements inside the tensor (access maps count them, racecheck orders them as that thread's).
"""

from __future__ import annotations

import ast

from llvmlite import ir

from gpunb.backends.cpu import abi, cluster_ops, instrument
from gpunb.backends.cpu import async_state as st
from gpunb.backends.cpu import async_tma as tma
from gpunb.backends.cpu import async_wgmma as wg
from gpunb.compiler import datamodel as dm
from gpunb.foundation import types as t
from gpunb.foundation.tensor_types import TensorMap

ISSUE, DONE = "async_issue", "async_done"  # the roles of a copy's two access sites
ASYNC_READ = "async_read"  # a site of the async proxy's reads (TMA store source, wgmma operands)
ASYNC_SOURCE = abi.ROLE_COPY_SOURCE  # a cp.async's reads of its global source


class CpuAsyncOps:
    """One per CpuTarget: lowering methods called by compiler/builtins/async_copy.py & co."""

    def __init__(self, target):
        self.target = target

    # ---- helpers ---------------------------------------------------------------------------------

    def site(self, low, node, what: str) -> int:
        """A barrier site for this call (errors and deadlocks name it)."""
        self.target.barrier_sites.append((low.typed.source.filename, node.lineno,
                                          node.col_offset, what))
        return len(self.target.barrier_sites) - 1

    def access_site(self, low, node, what: str, role: str, kind: str = "write") -> int:
        """Racecheck: an access site of an asynchronous operation (a copy's destination
        written, or the async proxy's reads)."""
        if not self.target.record:
            return -1
        src = low.typed.source
        self.target.access_sites.append((src.filename, node.lineno, node.col_offset, what,
                                         kind, low.typed.name, role))
        return len(self.target.access_sites) - 1

    def sync(self, low, kind: int, obj, site: int = -1, done=None, extra=None) -> None:
        """Racecheck: a synchronisation record of this thread (happens_before.py reads them)."""
        if self.target.record:
            instrument.record_sync(low.builder, low.ctx, kind, obj, site, done, extra)

    def check(self, low, bad, site: int, reason: st.Reason, first=None, second=None) -> None:
        """Report `reason` and end the thread where `bad` holds."""
        with low.builder.if_then(bad, likely=False):
            st.report(low.builder, low.ctx, site, reason, first, second)
            self.target.end_thread(low, None)

    def end_if_failed(self, low) -> None:
        with low.builder.if_then(st.failed(low.builder, low.ctx), likely=False):
            self.target.end_thread(low, None)

    def in_shared(self, low, pointer, nbytes, site: int) -> None:
        b = low.builder
        offset = st.shared_offset(b, low.ctx, pointer)
        limit = st.load(b, st.area(b, low.ctx), st.AREA_SHARED_BYTES, dm.i64)
        self.check(low, b.icmp_unsigned(">", b.add(offset, nbytes), limit), site,
                   st.Reason.NOT_SHARED, offset, limit)

    def record_issue(self, low, site: int, pointer, count, itemsize: int) -> None:
        if site < 0:
            return
        b = low.builder
        st.record_elements(b, low.ctx, st.i32(site), pointer, b.mul(count, st.i64(itemsize)),
                           st.i64(itemsize))

    def shared_address(self, low, node, pointer):
        return st.shared_offset(low.builder, low.ctx, pointer)

    # ---- cp.async --------------------------------------------------------------------------------

    def cp_async(self, low, node, dst, src, itemsize: int, nbytes: int, src_bytes, cache: str):
        b = low.builder
        site = self.site(low, node, "cuda.cp_async.copy")
        count = nbytes // itemsize
        for (pointer, extent, stride), short, misaligned in (
                (dst, st.Reason.DST_SHORT, st.Reason.DST_MISALIGNED),
                (src, st.Reason.SRC_SHORT, st.Reason.SRC_MISALIGNED)):
            self.check(low, b.icmp_signed("<", extent, st.i64(count)), site, short,
                       st.i64(nbytes), b.mul(extent, st.i64(itemsize)))
            if count > 1:
                self.check(low, b.icmp_signed("!=", stride, st.i64(itemsize)), site,
                           st.Reason.NOT_CONTIGUOUS, stride, st.i64(itemsize))
            if pointer is dst[0]:  # in shared memory before its shared offset means anything
                self.in_shared(low, pointer, st.i64(nbytes), site)
            address = st.shared_offset(b, low.ctx, pointer) if pointer is dst[0] \
                else b.ptrtoint(pointer, dm.i64)
            self.check(low, b.icmp_unsigned("!=", b.urem(address, st.i64(nbytes)), st.i64(0)),
                       site, misaligned, address, st.i64(nbytes))
        size = st.i32(nbytes) if src_bytes is None else src_bytes
        if src_bytes is not None:
            self.check(low, b.icmp_unsigned(">", src_bytes, st.i32(nbytes)), site,
                       st.Reason.SRC_BYTES, b.sext(src_bytes, dm.i64), st.i64(nbytes))
        what = _text(node.args[0]) if node.args else "dst"
        issue = self.access_site(low, node, what, ISSUE)
        done = self.access_site(low, node, what, DONE)
        self.record_issue(low, issue, dst[0], st.i64(count), itemsize)
        source = self.access_site(low, node, _text(node.args[1]) if len(node.args) > 1 else "src",
                                  ASYNC_SOURCE, "read")
        if source >= 0:  # the bytes it reads (src_bytes of them; the rest is zero-filled)
            st.record_elements(b, low.ctx, st.i32(source), src[0], b.zext(size, dm.i64),
                               st.i64(itemsize))
        b.call(st.cp_issue_function(low.mb.module, self.target.record),
               [low.ctx, dst[0], src[0], st.i32(nbytes), size, st.i32(done), st.i32(itemsize)])

    def cp_async_commit(self, low, node) -> None:
        b = low.builder
        state = st.area(b, low.ctx)
        st.store(b, b.add(st.load(b, state, st.AREA_CP_GROUPS, dm.i32), st.i32(1)), state,
                 st.AREA_CP_GROUPS)

    def cp_async_wait(self, low, node, n: int) -> None:
        low.builder.call(st.cp_wait_function(low.mb.module, self.target.record),
                         [low.ctx, st.i32(n)])

    def cp_async_wait_all(self, low, node) -> None:
        self.cp_async_commit(low, node)
        self.cp_async_wait(low, node, 0)

    # ---- mbarriers -------------------------------------------------------------------------------

    def mbarrier_init(self, low, node, bar, count) -> None:
        site = self.site(low, node, "cuda.mbarrier.init")
        self.in_shared(low, bar, st.i64(8), site)
        self.target.record_access(low, node, bar, "write")
        ok = low.builder.call(st.mbarrier_init_function(low.mb.module),
                              [low.ctx, bar, count, st.i32(site)])
        self.check(low, low.builder.not_(ok), site, st.Reason.MBAR_COUNT)
        self.sync(low, abi.SYNC_MB_INIT, st.shared_offset(low.builder, low.ctx, bar))

    def _update(self, low, node, bar, arrivals, delta, what: str, event: int):
        b = low.builder
        site = self.site(low, node, what)
        self.in_shared(low, bar, st.i64(8), site)
        self.target.record_access(low, node, bar, "atomic")
        result = b.call(st.mbarrier_update_function(low.mb.module, self.target.record),
                        [low.ctx, bar, arrivals, delta, st.i32(site), st.i32(event)])
        self.end_if_failed(low)
        return b.extract_value(result, 0)

    def mbarrier_arrive(self, low, node, bar, count, tx, block_rank=None):
        b = low.builder
        if block_rank is not None:
            self._remote_arrive(low, node, bar, st.i32(1) if count is None else count,
                                block_rank)
            return None
        if tx is not None:
            return self._update(low, node, bar, st.i32(1), b.sext(tx, dm.i64),
                                "cuda.mbarrier.arrive_expect_tx", abi.SYNC_MB_ARRIVE)
        arrivals = st.i32(1) if count is None else count
        return self._update(low, node, bar, arrivals, st.i64(0), "cuda.mbarrier.arrive",
                            abi.SYNC_MB_ARRIVE)

    def _remote_arrive(self, low, node, bar, count, block_rank) -> None:
        """Arrive on the same mbarrier of block `block_rank` of the cluster (mapa, then
        mbarrier.arrive.shared::cluster): its waiters resume when the phase completes."""
        site = self.site(low, node, "cuda.mbarrier.arrive")
        self.in_shared(low, bar, st.i64(8), site)
        cluster_ops.check_rank(self.target, low, site, block_rank)
        cluster_ops.check_peer_running(self.target, low, site, block_rank)
        peer = cluster_ops.peer_address(self.target, low, site, bar, block_rank)
        self.target.record_access(low, node, peer, "atomic")  # the peer's mbarrier
        low.builder.call(st.mbarrier_update_function(low.mb.module, self.target.record),
                         [low.ctx, peer, count, st.i64(0), st.i32(site),
                          st.i32(abi.SYNC_MB_ARRIVE)])
        self.end_if_failed(low)

    def mbarrier_expect_tx(self, low, node, bar, tx) -> None:
        self._update(low, node, bar, st.i32(0), low.builder.sext(tx, dm.i64),
                     "cuda.mbarrier.expect_tx", abi.SYNC_MB_TX)

    def mbarrier_try_wait(self, low, node, bar, value, parity: bool):
        """try_wait on the CPU target waits until the phase completes (a GPU's try_wait returns
        false after a time limit and every correct program asks again): true, or a deadlock
        reported by the scheduler when nothing can complete it."""
        b = low.builder
        bit = b.trunc(value, dm.i32) if parity else b.trunc(b.lshr(value, st.i64(63)), dm.i32)
        self._wait(low, node, bar, bit, "cuda.mbarrier.try_wait" +
                   ("_parity" if parity else ""))
        return ir.Constant(dm.i1, 1)

    def mbarrier_wait(self, low, node, bar, parity) -> None:
        self._wait(low, node, bar, parity, "cuda.mbarrier.wait")

    def _wait(self, low, node, bar, parity, what: str) -> None:
        b = low.builder
        parity = b.and_(parity, st.i32(1))
        site = self.site(low, node, what)
        self.in_shared(low, bar, st.i64(8), site)
        self.target.record_access(low, node, bar, "atomic")
        with b.if_then(b.not_(st.mbarrier_done(b, bar, parity))):
            st.store(b, b.ptrtoint(bar, dm.i64), low.ctx, abi.CTX_XCHG)
            self.target.wait_at(low, node, abi.WAIT_MBARRIER, what, b.trunc(parity, dm.i1))
        self.sync(low, abi.SYNC_MB_WAIT, st.shared_offset(b, low.ctx, bar), extra=parity)

    def mbarrier_inval(self, low, node, bar) -> None:
        site = self.site(low, node, "cuda.mbarrier.inval")
        self.in_shared(low, bar, st.i64(8), site)
        self.target.record_access(low, node, bar, "write")
        low.builder.store(st.i64(0), bar)

    def fence_proxy_async(self, low, node) -> None:
        # one memory on the CPU: the generic and async proxies see the same bytes; racecheck
        # notes the fence (a generic write read by TMA or wgmma needs one in between)
        self.sync(low, abi.SYNC_FENCE, st.i32(0))

    # ---- TMA -------------------------------------------------------------------------------------

    def _tile(self, low, node, tile, desc: TensorMap, site: int):
        """Check a shared tile against the descriptor's box: shape, C order, 128-byte
        alignment, inside shared memory; returns its element count."""
        b = low.builder
        data, shape, strides = tile
        itemsize = t.sizeof(desc.dtype)
        expected = itemsize
        if len(shape) != desc.ndim:  # a flat view of the box's elements
            count = 1
            for n in desc.box:
                count *= n
            self.check(low, b.icmp_signed("!=", shape[0], st.i64(count)), site,
                       st.Reason.TILE_SHAPE, st.i64(0), shape[0])
            self.check(low, b.icmp_signed("!=", strides[0], st.i64(itemsize)), site,
                       st.Reason.TILE_NOT_CONTIGUOUS, st.i64(0), strides[0])
            expected = count * itemsize
        for axis in range(desc.ndim - 1, -1, -1) if len(shape) == desc.ndim else ():
            self.check(low, b.icmp_signed("!=", shape[axis], st.i64(desc.box[axis])), site,
                       st.Reason.TILE_SHAPE, st.i64(axis), shape[axis])
            if desc.box[axis] > 1:
                self.check(low, b.icmp_signed("!=", strides[axis], st.i64(expected)), site,
                           st.Reason.TILE_NOT_CONTIGUOUS, st.i64(axis), strides[axis])
            expected *= desc.box[axis]
        offset = st.shared_offset(b, low.ctx, data)
        self.check(low, b.icmp_unsigned("!=", b.urem(offset, st.i64(128)), st.i64(0)), site,
                   st.Reason.TILE_MISALIGNED, offset, st.i64(128))
        self.in_shared(low, data, st.i64(expected), site)
        return expected // itemsize

    def _issue(self, low, node, kind: int, tile, tmap, desc, coords, bar, what: str,
               multicast=None) -> None:
        b = low.builder
        site = self.site(low, node, what)
        count = self._tile(low, node, tile, desc, site)
        if bar is not None:
            self.in_shared(low, bar, st.i64(8), site)
            self.target.record_access(low, node, bar, "atomic")
        destinations = [(None, None)]  # (rank, whether its bit is set): this block alone
        if multicast is not None:
            destinations = cluster_ops.multicast_ranks(self.target, low, site, multicast)
        done = issue = -1
        if kind == tma.LOAD:
            name = _text(node.args[0]) if node.args else "dst"
            issue = self.access_site(low, node, name, ISSUE)
            done = self.access_site(low, node, name, DONE)
            if multicast is None:  # a multicast's: each destination's tile (below)
                self.record_issue(low, issue, tile[0], st.i64(count), t.sizeof(desc.dtype))
        else:  # the store's reads of its source tile, recorded when it completes
            name = _text(node.args[2]) if len(node.args) > 2 else "src"
            done = issue = self.access_site(low, node, name, ASYNC_READ, "read")
        slots = low.alloca(ir.ArrayType(dm.i32, tma.RANK), "tma.coords")
        for d in range(tma.RANK):
            value = coords[d] if d < len(coords) else st.i32(0)
            b.store(value, b.gep(slots, [st.i32(0), st.i32(d)], inbounds=True))
        self._record_global(low, node, kind, tmap, slots)
        for rank, wanted in destinations:  # multicast: one copy per destination block
            dst, barrier = tile[0], bar if bar is not None else ir.Constant(dm.ptr, None)
            if rank is None:
                self._queue(low, kind, dst, tmap, barrier, slots, done, site, issue)
                continue
            with b.if_then(wanted):
                to = st.i32(rank)
                cluster_ops.check_peer_running(self.target, low, site, to)
                peer_dst = cluster_ops.peer_address(self.target, low, site, dst, to)
                peer_bar = cluster_ops.peer_address(self.target, low, site, barrier, to)
                self.record_issue(low, issue, peer_dst, st.i64(count), t.sizeof(desc.dtype))
                self._queue(low, kind, peer_dst, tmap, peer_bar, slots, done, site, issue)

    def _queue(self, low, kind: int, dst, tmap, bar, slots, done: int, site: int,
               issue: int) -> None:
        """Queue one TMA copy in the issuing thread's area."""
        serial = low.builder.call(tma.issue_function(low.mb.module, self.target.record),
                                  [low.ctx, st.i32(kind), dst, tmap, bar, slots, st.i32(done),
                                   st.i32(site)])
        self.sync(low, abi.SYNC_COPY_ISSUE, serial, issue, extra=st.i32(kind))

    def _record_global(self, low, node, kind: int, tmap, coords) -> None:
        """Recording: the box's elements inside the tensor as the issuing thread's reads (a
        load) or writes (a store) at the issue, as a cp.async's source reads are - access maps
        count them, the puzzles' rules see them."""
        at = 1 if kind == tma.LOAD else 0  # the descriptor's argument
        name = _text(node.args[at]) if len(node.args) > at else "tensor"
        site = (self.access_site(low, node, name, abi.ROLE_TMA_SOURCE, "read")
                if kind == tma.LOAD else
                self.access_site(low, node, name, abi.ROLE_TMA_DEST, "write"))
        if site >= 0:
            low.builder.call(tma.record_box_function(low.mb.module),
                             [low.ctx, tmap, coords, st.i32(site)])

    def tma_load(self, low, node, dst, tmap, desc, coords: list, bar, multicast=None) -> None:
        self._issue(low, node, tma.LOAD, dst, tmap, desc, coords, bar, "cuda.tma.load",
                    multicast)

    def tma_store(self, low, node, tmap, desc, coords: list, src) -> None:
        self._issue(low, node, tma.STORE, src, tmap, desc, coords, None, "cuda.tma.store")

    def tma_prefetch(self, low, node, tmap, desc, coords: list) -> None:
        return  # an L2 hint: there is no L2 to fill here, and nothing to wait for

    def bulk_commit(self, low, node) -> None:
        b = low.builder
        state = st.area(b, low.ctx)
        st.store(b, b.add(st.load(b, state, st.AREA_BULK_GROUPS, dm.i32), st.i32(1)), state,
                 st.AREA_BULK_GROUPS)

    def bulk_wait(self, low, node, n: int, read: bool) -> None:
        b = low.builder
        before = b.sub(st.load(b, st.area(b, low.ctx), st.AREA_BULK_GROUPS, dm.i32), st.i32(n))
        b.call(tma.complete_function(low.mb.module, self.target.record),
               [low.ctx, st.i32(tma.STORE), before])

    # ---- wgmma -----------------------------------------------------------------------------------

    def wgmma_fence(self, low, node) -> None:
        # registers and shared memory are one memory here: only remember that the thread
        # fenced, as the PTX ISA requires before its first wgmma.mma_async
        st.store(low.builder, st.i32(1), st.area(low.builder, low.ctx), st.AREA_WG_FENCED)

    def wgmma_commit(self, low, node) -> None:
        # mma_async computed its D at the rendezvous; the count says which group a wgmma is
        # in, so that racecheck knows when its reads of shared memory are over
        b = low.builder
        state = st.area(b, low.ctx)
        st.store(b, b.add(st.load(b, state, st.AREA_WG_GROUPS, dm.i32), st.i32(1)), state,
                 st.AREA_WG_GROUPS)

    def wgmma_wait(self, low, node, n: int) -> None:
        if self.target.record:  # the groups before the newest n are complete for this thread
            b = low.builder
            groups = st.load(b, st.area(b, low.ctx), st.AREA_WG_GROUPS, dm.i32)
            self.sync(low, abi.SYNC_WGMMA_WAIT, st.i32(0), extra=b.sub(groups, st.i32(n)))

    def setmaxnreg(self, low, node, count: int, inc: bool) -> None:
        return  # no register file to repartition

    def wgmma_mma(self, low, node, spec, acc_ptr, acc_len, a: tuple, b_desc, scale_d) -> None:
        b = low.builder
        site = self.site(low, node, "cuda.wgmma.mma_async")
        self.check(low, b.icmp_signed("<", acc_len, st.i64(spec.acc_count)), site,
                   st.Reason.ACC_SHORT, acc_len, st.i64(spec.acc_count))
        state = st.area(b, low.ctx)
        unfenced = b.icmp_signed("==", st.load(b, state, st.AREA_WG_FENCED, dm.i32), st.i32(0))
        self.check(low, unfenced, site, st.Reason.WGMMA_UNFENCED)
        state = st.area(b, low.ctx)
        epoch = st.load(b, state, st.AREA_WG_EPOCH, dm.i32)
        parity = b.and_(epoch, st.i32(1))
        a_desc = st.i64(0)
        if a[0] == "regs":
            needed = st.i64(4 if a[3] else 8)  # packed uint32 pairs, or 16-bit values
            self.check(low, b.icmp_signed("<", a[2], needed), site, st.Reason.A_SHORT, a[2],
                       needed)
            slot = b.add(st.i64(st.AREA_A_SLOTS), b.zext(b.mul(parity, st.i32(16)), dm.i64))
            st.memcpy(b, st.at(b, state, slot), a[1], st.i64(16))
        else:
            a_desc = a[1]
        self.target.wait_at(low, node, abi.WAIT_WARPGROUP, "cuda.wgmma.mma_async")
        b.call(wg.compute_function(low.mb.module, spec),
               [low.ctx, acc_ptr, a_desc, b_desc, scale_d, parity, st.i32(site)])
        if self.target.record:
            self._record_operands(low, node, spec, a_desc, b_desc, epoch)
        state = st.area(b, low.ctx)
        st.store(b, b.add(epoch, st.i32(1)), state, st.AREA_WG_EPOCH)
        self.end_if_failed(low)

    def _record_operands(self, low, node, spec, a_desc, b_desc, epoch) -> None:
        """Racecheck: the warpgroup's first thread logs the wgmma's reads of shared memory
        (every element of B, and of A unless it is in registers) between a WGMMA_ISSUE and a
        WGMMA_END record: the async proxy may read them until the group's wait_group."""
        b = low.builder
        texts = [_text(node.args[k]) if len(node.args) > k else name
                 for k, name in ((1, "a"), (2, "b"))]
        a_site = -1 if spec.a_regs else self.access_site(low, node, texts[0], ASYNC_READ, "read")
        b_site = self.access_site(low, node, texts[1], ASYNC_READ, "read")
        linear = st.load(b, low.ctx, abi.CTX_LINEAR, dm.i32)
        with b.if_then(b.icmp_unsigned("==", b.urem(linear, st.i32(128)), st.i32(0))):
            groups = st.load(b, st.area(b, low.ctx), st.AREA_WG_GROUPS, dm.i32)
            self.sync(low, abi.SYNC_WGMMA_ISSUE, epoch, b_site, extra=groups)
            b.call(wg.record_function(low.mb.module, spec),
                   [low.ctx, a_desc, b_desc, st.i32(a_site), st.i32(b_site)])
            self.sync(low, abi.SYNC_WGMMA_END, epoch)

    # ---- the thread's end ------------------------------------------------------------------------

    def thread_end(self, low) -> None:
        """Copies still queued when a thread ends land (TMA loads are the scheduler's)."""
        b = low.builder
        b.call(st.cp_drain_function(low.mb.module, self.target.record), [low.ctx])
        b.call(tma.complete_function(low.mb.module, self.target.record),
               [low.ctx, st.i32(tma.STORE), st.i32(2**31 - 1)])


def _text(node) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - a name for messages only
        return "shared"

