"""Warp collectives on the CPU target: each lane publishes its value and waits at a warp
barrier (the coroutine scheduler runs the warp's lanes up to it, runner.py); once all have
arrived each reads the others' snapshots. A mixin of CpuTarget (target.py), kept apart so that
each module has one job."""

from __future__ import annotations

from llvmlite import ir

from gpunb.backends.cpu import abi
from gpunb.compiler import datamodel as dm
from gpunb.foundation import types as t


def _field(b: ir.IRBuilder, base, offset: int):
    return b.gep(base, [ir.Constant(dm.i64, offset)], source_etype=dm.i8)


class WarpCollectives:
    """Shuffles, votes, matches and lane masks, on CpuTarget's `_wait` (a warp barrier)."""

    def _exchange(self, low, node, bits, what: str, mask):
        """Publish `bits` (i64), wait for the warp; returns (lane, participant mask)."""
        b = low.builder
        b.store(bits, _field(b, low.ctx, abi.CTX_XCHG))
        self._wait(low, node, abi.WAIT_WARP, what, mask=mask)
        lane = b.load(_field(b, low.ctx, abi.CTX_LANE), typ=dm.i32)
        lanes = b.load(_field(b, low.ctx, abi.CTX_RESULT), typ=dm.i32)
        return lane, lanes

    def _snapshot_of(self, low, lane, src):
        b = low.builder
        delta = b.mul(b.sext(b.sub(src, lane), dm.i64), ir.Constant(dm.i64, abi.CTX_SIZE))
        other = b.gep(low.ctx, [delta], source_etype=dm.i8)
        return b.load(_field(b, other, abi.CTX_SNAPSHOT), typ=dm.i64)

    @staticmethod
    def _to_bits(b, value, ty: t.Type):
        if isinstance(ty, t.Boolean):
            return b.zext(value, dm.i64)
        width = t.sizeof(ty) * 8
        bits = b.bitcast(value, ir.IntType(width)) if isinstance(ty, t.Float) else value
        return bits if width == 64 else b.zext(bits, dm.i64)

    @staticmethod
    def _from_bits(b, bits, ty: t.Type):
        if isinstance(ty, t.Boolean):
            return b.trunc(bits, dm.i1)
        width = t.sizeof(ty) * 8
        value = bits if width == 64 else b.trunc(bits, ir.IntType(width))
        return b.bitcast(value, dm.value_type(ty)) if isinstance(ty, t.Float) else value

    def warp_shuffle(self, low, node, mode: str, mask, value, ty: t.Type, operand):
        b = low.builder
        lane, lanes = self._exchange(low, node, self._to_bits(b, value, ty), f"cuda.shfl_{mode}",
                                     mask)
        own = lane
        if mode == "idx":
            src = b.and_(operand, ir.Constant(dm.i32, 31))
        elif mode == "up":
            src = b.sub(lane, operand)
        elif mode == "down":
            src = b.add(lane, operand)
        else:
            src = b.xor(lane, operand)
        in_range = b.and_(b.icmp_signed(">=", src, ir.Constant(dm.i32, 0)),
                          b.icmp_signed("<", src, ir.Constant(dm.i32, 32)))
        src = b.select(in_range, src, own)
        # a source lane that does not exist (partial warp) or exited gives the caller's own value
        present = b.icmp_unsigned("!=", b.and_(lanes, b.shl(ir.Constant(dm.i32, 1), src)),
                                  ir.Constant(dm.i32, 0))
        src = b.select(present, src, own)
        return self._from_bits(b, self._snapshot_of(low, lane, src), ty)

    def _fold_lanes(self, low, lane, lanes, mask, combine, init):
        """Fold `combine(acc, other_bits, other_lane)` over participating lanes in `mask`."""
        from gpunb.backends.cpu.runner import _loop

        b = low.builder
        acc = low.alloca(init.type, "warp.acc")
        b.store(init, acc)
        active = b.and_(lanes, mask)
        with _loop(b, ir.Constant(dm.i32, 0), ir.Constant(dm.i32, 32), "warp.fold") as (k, _):
            bit = b.shl(ir.Constant(dm.i32, 1), k)
            take = b.icmp_unsigned("!=", b.and_(active, bit), ir.Constant(dm.i32, 0))
            yes = low.fn.append_basic_block("warp.fold.take")
            nxt = low.fn.append_basic_block("warp.fold.next")
            b.cbranch(take, yes, nxt)
            b.position_at_end(yes)
            b.store(combine(b.load(acc), self._snapshot_of(low, lane, k), k), acc)
            b.branch(nxt)
            b.position_at_end(nxt)
        return b.load(acc)

    def warp_vote(self, low, node, mode: str, mask, pred):
        b = low.builder
        lane, lanes = self._exchange(low, node, b.zext(pred, dm.i64), f"cuda.{mode}_sync",
                                     mask)
        zero64 = ir.Constant(dm.i64, 0)

        def ballot(acc, bits, k):
            bit = b.shl(ir.Constant(dm.i32, 1), k)
            return b.select(b.icmp_unsigned("!=", bits, zero64), b.or_(acc, bit), acc)

        votes = self._fold_lanes(low, lane, lanes, mask, ballot, ir.Constant(dm.i32, 0))
        if mode == "ballot":
            return votes
        active = b.and_(lanes, mask)
        if mode == "any":
            return b.icmp_unsigned("!=", votes, ir.Constant(dm.i32, 0))
        if mode == "all":
            return b.icmp_unsigned("==", votes, active)
        return b.or_(b.icmp_unsigned("==", votes, active),
                     b.icmp_unsigned("==", votes, ir.Constant(dm.i32, 0)))

    def warp_match(self, low, node, mode: str, mask, value, ty: t.Type):
        b = low.builder
        mine = self._to_bits(b, value, ty)
        lane, lanes = self._exchange(low, node, mine, f"cuda.match_{mode}_sync", mask)

        def same(acc, bits, k):
            bit = b.shl(ir.Constant(dm.i32, 1), k)
            return b.select(b.icmp_unsigned("==", bits, mine), b.or_(acc, bit), acc)

        matches = self._fold_lanes(low, lane, lanes, mask, same, ir.Constant(dm.i32, 0))
        if mode == "any":
            return matches
        active = b.and_(lanes, mask)
        all_same = b.icmp_unsigned("==", matches, active)
        out = ir.Constant(ir.LiteralStructType([dm.i32, dm.i1]), ir.Undefined)
        out = b.insert_value(out, b.select(all_same, active, ir.Constant(dm.i32, 0)), 0)
        return b.insert_value(out, all_same, 1)

    def lane_mask(self, low, mode: str, node=None):
        b = low.builder
        if self.wg is not None:
            self.publish_thread(low)
        if mode == "active" and node is not None and self.coroutine:
            # the lanes that reach this call together: a warp wait that names only this lane
            self._wait(low, node, abi.WAIT_WARP, "cuda.activemask")
            return b.load(_field(b, low.ctx, abi.CTX_RESULT), typ=dm.i32)
        lane = b.load(_field(b, low.ctx, abi.CTX_LANE), typ=dm.i32)
        if mode == "lt":
            return b.sub(b.shl(ir.Constant(dm.i32, 1), lane), ir.Constant(dm.i32, 1))
        # lanes of this warp that exist in the block (no divergence tracking between collectives)
        ntid = [b.load(_field(b, low.ctx, abi.CTX_NTID + 4 * k), typ=dm.i32) for k in range(3)]
        n = b.mul(b.mul(ntid[0], ntid[1]), ntid[2])
        warp = b.load(_field(b, low.ctx, abi.CTX_WARP), typ=dm.i32)
        remaining = b.sub(n, b.mul(warp, ir.Constant(dm.i32, 32)))
        full = b.icmp_signed(">=", remaining, ir.Constant(dm.i32, 32))
        partial = b.sub(b.shl(ir.Constant(dm.i32, 1), remaining), ir.Constant(dm.i32, 1))
        return b.select(full, ir.Constant(dm.i32, 0xFFFFFFFF), partial)

