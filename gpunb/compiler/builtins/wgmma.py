"""wgmma (warpgroup MMA, sm_90a) and setmaxnreg: typing here, lowering by the target's async_ops.

    d = cuda.wgmma.descriptor(tile, swizzle[, sbo][, lbo])   # a shared-memory matrix descriptor
    cuda.wgmma.fence()
    cuda.wgmma.mma_async(acc, a, b, (64, N, K), dtype[, scale_d][, trans_a][, trans_b]
                         [, negate_a][, negate_b])
    cuda.wgmma.commit_group(); cuda.wgmma.wait_group(n)
    cuda.wgmma.store(dst, acc, N)                # the D fragment into a 2-d view
    cuda.setmaxnreg_inc(n); cuda.setmaxnreg_dec(n)

`acc` is the warpgroup's D fragment: a per-thread array (cuda.local.array(N // 2, float32), or
int32 for int8 inputs) that mma_async updates in place: D = A x B + (D if scale_d else 0). `a` is
a descriptor (uint64) of A in shared memory, or a per-thread array of 8 float16/bfloat16 (A in
registers, the layout of the D fragment of a k16 slice, or its 4 uint32 pairs); `b` is a
descriptor. A descriptor is
plain uint64 data: adding (bytes >> 4) moves its start address, as CUTLASS's iterators do.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler import promotion
from gpunb.compiler.builtins import Builtin, wgmma_order
from gpunb.compiler.builtins import async_args as aa
from gpunb.compiler.typed import Feature, Typed
from gpunb.foundation import types as t

# input type -> (PTX name, K of one instruction, bytes per element)
AB_TYPES = {t.float16: ("f16", 16, 2), t.bfloat16: ("bf16", 16, 2), t.float32: ("tf32", 8, 4),
            t.fp8_e4m3: ("e4m3", 32, 1), t.fp8_e5m2: ("e5m2", 32, 1), t.int8: ("s8", 32, 1),
            t.uint8: ("u8", 32, 1)}
_INT_N = (8, 16, 24) + tuple(range(32, 257, 16))
SWIZZLE_CODES = {0: 0, 128: 1, 64: 2, 32: 3}  # the descriptor's bits 62-63


@dataclass(frozen=True, slots=True)
class WgmmaSpec:
    """One wgmma.mma_async instruction: m64nNkK with these input and accumulator types."""

    n: int
    k: int
    ab: str  # PTX type of A and B: f16, bf16, tf32, e4m3, e5m2, s8, u8
    acc: str  # f32 or s32
    a_regs: bool  # A from registers (8 x 16-bit per thread) instead of a descriptor
    trans_a: bool = False  # A is MN-major (f16/bf16 only)
    trans_b: bool = False
    neg_a: bool = False
    neg_b: bool = False

    @property
    def acc_count(self) -> int:
        """D values per thread: 64 * N / 128."""
        return self.n // 2

    @property
    def ab_bytes(self) -> int:
        return {"f16": 2, "bf16": 2, "tf32": 4}.get(self.ab, 1)

    def ptx(self) -> str:
        return f"wgmma.mma_async.sync.aligned.m64n{self.n}k{self.k}.{self.acc}.{self.ab}.{self.ab}"


class Descriptor(Builtin):
    name = "cuda.wgmma.descriptor"
    params = ("tile", "swizzle", "sbo", "lbo")

    def type_call(self, inf, node, argtypes, kwtypes):
        bound = aa.bind(inf, node, self.name, self.params, 2, argtypes, kwtypes)
        aa.view_operand(inf, bound, "tile", self.name)
        swizzle = aa.const_int(inf, bound, "swizzle", f"the swizzle of {self.name} (bytes)",
                               tuple(SWIZZLE_CODES))
        if swizzle == 0 and (bound.node("sbo") is None or bound.node("lbo") is None):
            raise inf.error(node, f"{self.name} without swizzle needs sbo and lbo: the byte "
                            "distances between core matrices along M/N and along K",
                            "see README, 'wgmma descriptors'")
        for param in ("sbo", "lbo"):
            aa.integer_operand(inf, bound, param, f"{param} of {self.name}")
            _check_offset(inf, bound, param, self.name)
        inf.require(Feature.ASYNC)
        return Typed(t.uint64, bound.with_consts(swizzle=swizzle))

    def lower_call(self, low, node, call):
        bound = call.data
        b = low.builder
        ops_ = aa.async_ops(low, node, self.name)
        data = low.expr(bound.node("tile"))
        address = ops_.shared_address(low, node, b.extract_value(data, 0))
        swizzle = bound.const("swizzle")
        sbo = aa.int_value(low, bound, "sbo", t.uint64, default=8 * swizzle)
        lbo = aa.int_value(low, bound, "lbo", t.uint64, default=16)
        return encode_descriptor(b, address, lbo, sbo, swizzle)


def _check_offset(inf, bound: aa.Bound, param: str, name: str) -> None:
    node = bound.node(param)
    if node is None:
        return
    from gpunb.compiler.values import NotConstant, const_eval

    try:
        value = const_eval(node, inf.resolve_constant)
    except NotConstant:  # a run-time offset: encoded as given
        return
    if isinstance(value, int) and (value % 16 or not 0 <= value < 1 << 18):
        raise inf.error(node, f"{name}: {param}={value} is not a multiple of 16 below 2**18",
                        "the descriptor holds byte offsets in 16-byte units (14 bits)")


def encode_descriptor(b: ir.IRBuilder, address, lbo, sbo, swizzle: int):
    """start address >> 4 in bits 0-13, lbo >> 4 in 16-29, sbo >> 4 in 32-45, swizzle in 62-63."""
    mask = ir.Constant(dm.i64, 0x3FFF)
    four = ir.Constant(dm.i64, 4)
    field = [b.and_(b.lshr(v, four), mask) for v in (address, lbo, sbo)]
    out = b.or_(field[0], b.shl(field[1], ir.Constant(dm.i64, 16)))
    out = b.or_(out, b.shl(field[2], ir.Constant(dm.i64, 32)))
    return b.or_(out, ir.Constant(dm.i64, SWIZZLE_CODES[swizzle] << 62))


class MmaAsync(Builtin):
    name = "cuda.wgmma.mma_async"
    params = ("acc", "a", "b", "shape", "dtype", "scale_d", "trans_a", "trans_b", "negate_a",
              "negate_b")

    def type_call(self, inf, node, argtypes, kwtypes):
        bound = aa.bind(inf, node, self.name, self.params, 5, argtypes, kwtypes)
        ab = inf.const(bound.node("dtype"), f"the input dtype of {self.name}")
        from gpunb.compiler.values import dtype_to_type

        ab_t = dtype_to_type(ab) if not isinstance(ab, t.Type) else ab
        if ab_t not in AB_TYPES:
            raise inf.error(bound.node("dtype"), f"{self.name} multiplies float16, bfloat16, "
                            f"float32 (as tf32), fp8_e4m3, fp8_e5m2, int8 or uint8, not {ab!r}")
        ptx_ab, k_expected, _ = AB_TYPES[ab_t]
        spec = self._spec(inf, node, bound, ab_t, ptx_ab, k_expected)
        acc_t = t.int32 if spec.acc == "s32" else t.float32
        acc = aa.view_operand(inf, bound, "acc", self.name, ndim=1)
        if acc.dtype != acc_t or acc.readonly:
            raise inf.error(bound.node("acc"), f"{self.name}: the accumulator of m64n{spec.n}"
                            f"k{spec.k}.{spec.ab} is a writable 1-d {acc_t} array of "
                            f"{spec.acc_count} per thread, got {acc}",
                            f"acc = cuda.local.array({spec.acc_count}, {acc_t})")
        if not isinstance(bound.type("b"), t.Integer):
            raise inf.error(bound.node("b"), f"{self.name}: b must be a descriptor (uint64), "
                            f"got {bound.type('b')}", "make one with cuda.wgmma.descriptor")
        self._check_a(inf, bound, spec, ab_t)
        early = wgmma_order.access_before_wait(inf.source.tree, node)
        if early is not None:
            raise inf.error(early, f"'{early.id}' is the accumulator of the cuda.wgmma.mma_async "
                            f"at line {node.lineno}, which the tensor cores may still be "
                            "writing: it is the thread's again only after "
                            "cuda.wgmma.wait_group", "call cuda.wgmma.commit_group() and "
                            "cuda.wgmma.wait_group(0) after the MMAs, before this access")
        aa.integer_operand(inf, bound, "scale_d", f"scale_d of {self.name}")
        inf.require(Feature.ASYNC)
        inf.require(Feature.SM90A)
        return Typed(t.none, bound.with_consts(spec=spec))

    def _spec(self, inf, node, bound, ab_t, ptx_ab, k_expected) -> WgmmaSpec:
        shape = inf.const(bound.node("shape"), f"the shape of {self.name}")
        if not (isinstance(shape, tuple) and len(shape) == 3 and
                all(isinstance(v, int) for v in shape)):
            raise inf.error(bound.node("shape"), f"{self.name}: shape is (64, N, K), got "
                            f"{shape!r}")
        m, n, k = shape
        valid_n = _INT_N if ptx_ab in ("s8", "u8") else tuple(range(8, 257, 8))
        if m != 64 or n not in valid_n or k != k_expected:
            raise inf.error(bound.node("shape"), f"{self.name}: no m{m}n{n}k{k} shape for "
                            f"{ptx_ab} inputs", f"use (64, N, {k_expected}) with N in "
                            f"{valid_n[0]}, {valid_n[1]}, ... {valid_n[-1]}")
        flags = {}
        for param in ("trans_a", "trans_b", "negate_a", "negate_b"):
            flags[param] = aa.const_flag(inf, bound, param, f"{param} of {self.name}")
        if (flags["trans_a"] or flags["trans_b"]) and ptx_ab not in ("f16", "bf16"):
            raise inf.error(node, f"{self.name}: transposed (MN-major) operands exist for "
                            f"float16 and bfloat16 only, not {ptx_ab}",
                            "store the operand K-major instead")
        if (flags["negate_a"] or flags["negate_b"]) and ptx_ab in ("s8", "u8"):
            raise inf.error(node, f"{self.name}: integer inputs cannot be negated")
        a_regs = isinstance(bound.type("a"), t.Array)
        if a_regs and flags["trans_a"]:
            raise inf.error(bound.node("trans_a"), f"{self.name}: A in registers has no "
                            "transpose")
        return WgmmaSpec(n, k, ptx_ab, "s32" if ptx_ab in ("s8", "u8") else "f32", a_regs,
                         flags["trans_a"], flags["trans_b"], flags["negate_a"],
                         flags["negate_b"])

    def _check_a(self, inf, bound, spec: WgmmaSpec, ab_t) -> None:
        a = bound.type("a")
        if spec.a_regs:
            if spec.ab not in ("f16", "bf16") or a.ndim != 1 or a.dtype not in (ab_t, t.uint32):
                raise inf.error(bound.node("a"), f"{self.name}: A in registers is a 1-d array "
                                f"of 8 float16 or bfloat16 matching dtype (or of their 4 packed "
                                f"uint32 pairs, low half first), got {a}",
                                "or pass a shared-memory descriptor (uint64)")
        elif not isinstance(a, t.Integer):
            raise inf.error(bound.node("a"), f"{self.name}: a must be a descriptor (uint64) or "
                            f"an array of 8 registers, got {a}")

    def lower_call(self, low, node, call):
        bound = call.data
        spec = bound.const("spec")
        b = low.builder
        ops_ = aa.async_ops(low, node, self.name)
        acc = low.expr(bound.node("acc"))
        acc_ptr, acc_len = b.extract_value(acc, 0), b.extract_value(acc, [1, 0])
        a_value = low.expr(bound.node("a"))
        if spec.a_regs:  # (pointer, extent, packed: 4 uint32 rather than 8 halves)
            a = ("regs", b.extract_value(a_value, 0), b.extract_value(a_value, [1, 0]),
                 bound.type("a").dtype == t.uint32)
        else:
            a = ("desc", ops.cast(b, a_value, bound.type("a"), t.uint64))
        b_desc = ops.cast(b, low.expr(bound.node("b")), bound.type("b"), t.uint64)
        scale_d = ir.Constant(dm.i1, 1)
        if bound.node("scale_d") is not None:
            scale_d = ops.truth(b, low.expr(bound.node("scale_d")), bound.type("scale_d"))
        ops_.wgmma_mma(low, node, spec, acc_ptr, acc_len, a, b_desc, scale_d)


class StoreFragment(Builtin):
    """cuda.wgmma.store(dst, acc, n): the warpgroup's m64nN D fragment into the 2-d view `dst`
    (its [0, 0] is the fragment's), converted to dst's dtype; elements outside dst's shape are
    skipped, so a view of a partial tile stores only what fits. The per-thread loop is unrolled
    here, in the IR, so `acc` stays in registers without a literal_unroll in the kernel."""

    name = "cuda.wgmma.store"
    params = ("dst", "acc", "n")

    def type_call(self, inf, node, argtypes, kwtypes):
        bound = aa.bind(inf, node, self.name, self.params, 3, argtypes, kwtypes)
        dst = aa.view_operand(inf, bound, "dst", self.name, ndim=2)
        acc = aa.view_operand(inf, bound, "acc", self.name, ndim=1)
        if dst.readonly:
            raise inf.error(bound.node("dst"), f"{self.name}: dst is read-only")
        if not promotion.can_convert(acc.dtype, dst.dtype):
            raise inf.error(node, f"{self.name}: cannot store {acc.dtype} values into {dst}")
        n = aa.const_int(inf, bound, "n", f"the N of {self.name}", tuple(range(8, 257, 8)))
        return Typed(t.none, bound.with_consts(n=n))

    def lower_call(self, low, node, call):
        from gpunb.compiler import arrays
        from gpunb.compiler.builtins.group_ranks import thread_rank

        bound = call.data
        b = low.builder
        n = bound.const("n")
        dst_t, acc_t = bound.type("dst"), bound.type("acc")
        data, shape, strides = arrays.parts(b, low.expr(bound.node("dst")), 2)
        acc = b.extract_value(low.expr(bound.node("acc")), 0)
        elem = dm.value_type(acc_t.dtype)
        rank = b.trunc(thread_rank(low, "block"), dm.i32)
        lane = b.urem(rank, ir.Constant(dm.i32, 32))
        warp = b.urem(b.udiv(rank, ir.Constant(dm.i32, 32)), ir.Constant(dm.i32, 4))
        row0 = b.zext(b.add(b.mul(warp, ir.Constant(dm.i32, 16)),
                            b.udiv(lane, ir.Constant(dm.i32, 4))), dm.i64)
        col0 = b.zext(b.mul(b.urem(lane, ir.Constant(dm.i32, 4)), ir.Constant(dm.i32, 2)),
                      dm.i64)

        def store(value, row, col):
            pointer = arrays.element_pointer(b, dst_t, data, shape, strides, [row, col])
            low.target.record_access(low, node, pointer, "write")
            arrays.store_element(b, dst_t.dtype, pointer,
                                 ops.cast(b, value, acc_t.dtype, dst_t.dtype))

        def value(i):
            return b.load(b.gep(acc, [ir.Constant(dm.i64, i)], source_etype=elem), typ=elem)

        whole = b.and_(b.icmp_signed(">=", shape[0], ir.Constant(dm.i64, 64)),
                       b.icmp_signed(">=", shape[1], ir.Constant(dm.i64, n)))
        # 16-bit outputs go out in 32-bit pairs where the view allows (contiguous rows, 4-byte
        # aligned): half the store instructions
        pairs = t.sizeof(dst_t.dtype) == 2 and not getattr(low.target, "record", False)
        if pairs:
            aligned = b.icmp_signed("==", b.urem(b.or_(b.ptrtoint(data, dm.i64), strides[0]),
                                                 ir.Constant(dm.i64, 4)), ir.Constant(dm.i64, 0))
            whole = b.and_(whole, b.and_(aligned, b.icmp_signed("==", strides[1],
                                                                ir.Constant(dm.i64, 2))))
        with b.if_else(whole) as (then, otherwise):
            with then:  # the whole fragment fits: straight-line stores, acc in registers
                if pairs:
                    _store_pairs(low, node, dst_t, acc_t, data, strides, value, row0, col0, n)
                else:
                    for i in range(n // 2):
                        store(value(i), b.add(row0, ir.Constant(dm.i64, 8 * ((i // 2) % 2))),
                              b.add(col0, ir.Constant(dm.i64, 8 * (i // 4) + i % 2)))
            with otherwise:  # a partial tile: a copy of acc indexed in a loop, each guarded
                spill = low.alloca(ir.ArrayType(elem, n // 2), "wgmma.store")
                for i in range(n // 2):
                    b.store(value(i), b.gep(spill, [ir.Constant(dm.i32, 0),
                                                    ir.Constant(dm.i32, i)]))
                _guarded_loop(low, n // 2, spill, elem, row0, col0, shape, store)


def _store_pairs(low, node, dst_t, acc_t, data, strides, value, row0, col0, n) -> None:
    """D values 2j and 2j+1 (one row, adjacent columns) as one 32-bit store of two 16-bit
    outputs: half the store instructions of element-wise stores."""
    b = low.builder
    pair = ir.VectorType(dm.value_type(dst_t.dtype), 2)
    for i in range(0, n // 2, 2):
        row = b.add(row0, ir.Constant(dm.i64, 8 * ((i // 2) % 2)))
        col = b.add(col0, ir.Constant(dm.i64, 8 * (i // 4)))
        offset = b.add(b.mul(row, strides[0]), b.mul(col, strides[1]))
        pointer = b.gep(data, [offset], source_etype=dm.i8)
        low.target.record_access(low, node, pointer, "write")
        low.target.record_access(low, node, b.gep(pointer, [ir.Constant(dm.i64, 2)],
                                                  source_etype=dm.i8), "write")
        both = ir.Constant(pair, ir.Undefined)
        for k in (0, 1):
            both = b.insert_element(both, ops.cast(b, value(i + k), acc_t.dtype, dst_t.dtype),
                                    ir.Constant(dm.i32, k))
        b.store(both, pointer, align=4)


def _guarded_loop(low, count: int, spill, elem, row0, col0, shape, store) -> None:
    """for i in range(count): D value i (from `spill`) stored where it falls inside `shape`."""
    b = low.builder
    two, four, eight = (ir.Constant(dm.i64, v) for v in (2, 4, 8))
    pre = b.block
    head = low.new_block("wgmma.store.head")
    body = low.new_block("wgmma.store.body")
    done = low.new_block("wgmma.store.done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(dm.i64)
    i.add_incoming(ir.Constant(dm.i64, 0), pre)
    b.cbranch(b.icmp_signed("<", i, ir.Constant(dm.i64, count)), body, done)
    b.position_at_end(body)
    row = b.add(row0, b.mul(b.urem(b.udiv(i, two), two), eight))
    col = b.add(col0, b.add(b.mul(b.udiv(i, four), eight), b.urem(i, two)))
    inside = b.and_(b.icmp_signed("<", row, shape[0]), b.icmp_signed("<", col, shape[1]))
    with b.if_then(inside):
        slot = b.gep(spill, [ir.Constant(dm.i64, 0), i])
        store(b.load(slot), row, col)
    i.add_incoming(b.add(i, ir.Constant(dm.i64, 1)), b.block)
    b.branch(head)
    b.position_at_end(done)


class WarpgroupOp(Builtin):
    """fence(), commit_group(), wait_group(n)."""

    def __init__(self, op: str):
        self.op = op
        self.name = f"cuda.wgmma.{op}"

    def type_call(self, inf, node, argtypes, kwtypes):
        params = ("n",) if self.op == "wait_group" else ()
        bound = aa.bind(inf, node, self.name, params, len(params), argtypes, kwtypes)
        n = aa.const_int(inf, bound, "n", f"the group count of {self.name}", range(0, 8))
        inf.require(Feature.ASYNC)
        inf.require(Feature.SM90A)
        return Typed(t.none, n)

    def lower_call(self, low, node, call):
        ops_ = aa.async_ops(low, node, self.name)
        if self.op == "fence":
            ops_.wgmma_fence(low, node)
        elif self.op == "commit_group":
            ops_.wgmma_commit(low, node)
        else:
            ops_.wgmma_wait(low, node, call.data)


class SetMaxNReg(Builtin):
    def __init__(self, inc: bool):
        self.inc = inc
        self.name = f"cuda.setmaxnreg_{'inc' if inc else 'dec'}"

    def type_call(self, inf, node, argtypes, kwtypes):
        bound = aa.bind(inf, node, self.name, ("count",), 1, argtypes, kwtypes)
        count = aa.const_int(inf, bound, "count", f"the register count of {self.name}",
                             tuple(range(24, 257, 8)))
        inf.require(Feature.SM90A)
        return Typed(t.none, count)

    def lower_call(self, low, node, call):
        aa.async_ops(low, node, self.name).setmaxnreg(low, node, call.data, self.inc)


BUILTINS = {
    "cuda.wgmma.descriptor": Descriptor(),
    "cuda.wgmma.mma_async": MmaAsync(),
    "cuda.wgmma.store": StoreFragment(),
    **{f"cuda.wgmma.{op}": WarpgroupOp(op) for op in ("fence", "commit_group", "wait_group")},
    "cuda.setmaxnreg_inc": SetMaxNReg(True),
    "cuda.setmaxnreg_dec": SetMaxNReg(False),
}
