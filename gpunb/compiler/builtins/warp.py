"""Warp-level intrinsics: shuffles, votes, match, masks, and bit intrinsics (popc, brev, clz, ffs,
fma, cbrt, selp, nanosleep). The CPU target gives warp collectives their lockstep meaning: lanes
wait for each other at every collective (targets/cpu.py)."""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler import promotion
from gpunb.compiler.builtins import Builtin
from gpunb.compiler.typed import Feature
from gpunb.foundation import types as t

_SHUFFLE_TYPES = (t.int32, t.uint32, t.int64, t.uint64, t.float32, t.float64, t.boolean)


def _mask(low, node_arg, ty):
    return ops.cast(low.builder, low.expr(node_arg), ty, t.uint32)


class Shuffle(Builtin):
    def __init__(self, name: str, mode: str):
        self.name, self.mode = name, mode

    def type_call(self, inf, node, argtypes, kwtypes):
        if kwtypes or len(argtypes) != 3:
            third = "src_lane" if self.mode == "idx" else "delta"
            raise inf.error(node, f"{self.name}(mask, value, {third}) takes 3 arguments")
        if argtypes[1] not in _SHUFFLE_TYPES:
            raise inf.error(node.args[1], f"{self.name} cannot shuffle {argtypes[1]}",
                            "shuffle 32/64-bit integers or floats")
        if not all(isinstance(a, (t.Integer, t.Boolean)) for a in (argtypes[0], argtypes[2])):
            raise inf.error(node, f"the mask and lane of {self.name} must be integers")
        inf.require(Feature.WARP_BARRIER)
        return argtypes[1]

    def lower_call(self, low, node, call):
        b = low.builder
        mask = _mask(low, node.args[0], call.argtypes[0])
        value = low.expr(node.args[1])
        operand = ops.cast(b, low.expr(node.args[2]), call.argtypes[2], t.int32)
        return low.target.warp_shuffle(low, node, self.mode, mask, value, call.argtypes[1], operand)


class Vote(Builtin):
    def __init__(self, name: str, mode: str):
        self.name, self.mode = name, mode

    def type_call(self, inf, node, argtypes, kwtypes):
        if kwtypes or len(argtypes) != 2:
            raise inf.error(node, f"{self.name}(mask, predicate) takes 2 arguments")
        mask, predicate = argtypes
        if not isinstance(mask, t.Integer) or isinstance(mask, t.Boolean):  # numba's checks
            raise inf.error(node.args[0], f"Mask type must be an integer, got {mask}",
                            "pass a lane mask such as 0xffffffff or cuda.activemask()")
        if not isinstance(predicate, (t.Integer, t.Boolean)):
            raise inf.error(node.args[1], "Predicate must be an integer or boolean, got "
                            f"{predicate}", "compare explicitly, e.g. x > 0.0")
        inf.require(Feature.WARP_BARRIER)
        return t.uint32 if self.mode == "ballot" else t.boolean

    def lower_call(self, low, node, call):
        b = low.builder
        mask = _mask(low, node.args[0], call.argtypes[0])
        if self.mode == "uni":
            value = ops.cast(b, low.expr(node.args[1]), call.argtypes[1], t.boolean)
        else:
            value = ops.truth(b, low.expr(node.args[1]), call.argtypes[1])
        return low.target.warp_vote(low, node, self.mode, mask, value)


class Match(Builtin):
    def __init__(self, name: str, mode: str):
        self.name, self.mode = name, mode

    def type_call(self, inf, node, argtypes, kwtypes):
        if kwtypes or len(argtypes) != 2 or argtypes[1] not in (t.int32, t.uint32, t.int64,
                                                                t.uint64, t.float32, t.float64):
            raise inf.error(node, f"{self.name}(mask, value) takes a 32/64-bit value")
        inf.require(Feature.WARP_BARRIER)
        return t.uint32 if self.mode == "any" else t.Tuple((t.uint32, t.boolean))

    def lower_call(self, low, node, call):
        mask = _mask(low, node.args[0], call.argtypes[0])
        value = low.expr(node.args[1])
        return low.target.warp_match(low, node, self.mode, mask, value, call.argtypes[1])


class LaneMask(Builtin):
    def __init__(self, name: str, mode: str):
        self.name, self.mode = name, mode

    def type_call(self, inf, node, argtypes, kwtypes):
        if argtypes:
            raise inf.error(node, f"{self.name}() takes no arguments")
        if self.mode == "active":  # the CPU target finds the converged lanes by waiting
            inf.require(Feature.WARP_BARRIER)
        return t.uint32

    def lower_call(self, low, node, call):
        return low.target.lane_mask(low, self.mode, node)


class BitIntrinsic(Builtin):
    """popc, brev, clz, ffs on integers."""

    def __init__(self, name: str, op: str):
        self.name, self.op = name, op

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(argtypes) != 1 or not isinstance(argtypes[0], t.Integer):
            raise inf.error(node, f"{self.name}() takes one integer")
        a = argtypes[0]
        return a if self.op == "brev" else (t.int32 if a.bitwidth <= 32 else t.int32)

    def operand(self, node):
        return node.args[0]

    def lower_call(self, low, node, call):
        b = low.builder
        a = call.argtypes[0]
        x = low.expr(self.operand(node))
        width = a.bitwidth
        m = low.mb.module

        def intrinsic(name, extra=()):
            fn = low.target.intrinsic(m, f"llvm.{name}.i{width}", x.type,
                                      [x.type] + [e.type for e in extra])
            return b.call(fn, [x, *extra])

        if self.op == "brev":
            return intrinsic("bitreverse")
        if self.op == "popc":
            out = intrinsic("ctpop")
        elif self.op == "clz":
            out = intrinsic("ctlz", (ir.Constant(dm.i1, 0),))
        else:  # ffs: 1-based position of the least significant set bit, 0 when none
            tz = intrinsic("cttz", (ir.Constant(dm.i1, 0),))
            is_zero = b.icmp_unsigned("==", x, ir.Constant(x.type, 0))
            out = b.select(is_zero, ir.Constant(x.type, 0), b.add(tz, ir.Constant(x.type, 1)))
        return ops.cast(b, out, t.Integer(width, False), t.int32)


class IntBitCount(BitIntrinsic):
    """`x.bit_count()` on an integer (Python 3.10's int method): its set bits, as cuda.popc."""

    def __init__(self):
        super().__init__("int.bit_count", "popc")

    def operand(self, node):
        return node.func.value


INT_BIT_COUNT = IntBitCount()


class Fma(Builtin):
    name = "cuda.fma"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(argtypes) != 3 or not all(isinstance(a, t.Float) for a in argtypes):
            raise inf.error(node, "fma(a, b, c) takes three floats of one type")
        return argtypes[0]

    def lower_call(self, low, node, call):
        b = low.builder
        ft = call.result
        args = [ops.cast(b, low.expr(n), at, ft)
                for n, at in zip(node.args, call.argtypes, strict=True)]
        return low.math_call("fma", args, [ft] * 3, ft)


class Cbrt(Builtin):
    name = "cuda.cbrt"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(argtypes) != 1 or not isinstance(argtypes[0], t.Float):
            raise inf.error(node, "cbrt(x) takes one float")
        return argtypes[0]

    def lower_call(self, low, node, call):
        return low.math_call("cbrt", [low.expr(node.args[0])], [call.result], call.result)


class Selp(Builtin):
    name = "cuda.selp"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(argtypes) != 3:
            raise inf.error(node, "selp(predicate, a, b) takes 3 arguments")
        merged = promotion.unify(argtypes[1], argtypes[2])
        if merged is None:
            raise inf.error(node, f"selp() needs a and b of one type, got {argtypes[1]} and "
                            f"{argtypes[2]}")
        return merged

    def lower_call(self, low, node, call):
        b = low.builder
        pred = ops.truth(b, low.expr(node.args[0]), call.argtypes[0])
        x = ops.cast(b, low.expr(node.args[1]), call.argtypes[1], call.result)
        y = ops.cast(b, low.expr(node.args[2]), call.argtypes[2], call.result)
        return b.select(pred, x, y)


class NanoSleep(Builtin):
    name = "cuda.nanosleep"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(argtypes) != 1 or not isinstance(argtypes[0], t.Integer):
            raise inf.error(node, "nanosleep(ns) takes one integer")
        return t.none

    def lower_call(self, low, node, call):
        ns = ops.cast(low.builder, low.expr(node.args[0]), call.argtypes[0], t.uint32)
        low.target.nanosleep(low, ns)


BUILTINS = {
    "cuda.shfl_sync": Shuffle("cuda.shfl_sync", "idx"),
    "cuda.shfl_up_sync": Shuffle("cuda.shfl_up_sync", "up"),
    "cuda.shfl_down_sync": Shuffle("cuda.shfl_down_sync", "down"),
    "cuda.shfl_xor_sync": Shuffle("cuda.shfl_xor_sync", "bfly"),
    "cuda.all_sync": Vote("cuda.all_sync", "all"),
    "cuda.any_sync": Vote("cuda.any_sync", "any"),
    "cuda.eq_sync": Vote("cuda.eq_sync", "uni"),
    "cuda.ballot_sync": Vote("cuda.ballot_sync", "ballot"),
    "cuda.match_any_sync": Match("cuda.match_any_sync", "any"),
    "cuda.match_all_sync": Match("cuda.match_all_sync", "all"),
    "cuda.activemask": LaneMask("cuda.activemask", "active"),
    "cuda.lanemask_lt": LaneMask("cuda.lanemask_lt", "lt"),
    "cuda.popc": BitIntrinsic("cuda.popc", "popc"),
    "cuda.brev": BitIntrinsic("cuda.brev", "brev"),
    "cuda.clz": BitIntrinsic("cuda.clz", "clz"),
    "cuda.ffs": BitIntrinsic("cuda.ffs", "ffs"),
    "cuda.fma": Fma(),
    "cuda.cbrt": Cbrt(),
    "cuda.selp": Selp(),
    "cuda.nanosleep": NanoSleep(),
}
