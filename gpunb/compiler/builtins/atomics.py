"""cuda.atomic.*: read-modify-write on array elements of 1-3 dimensions, returning the old value."""

from __future__ import annotations

from llvmlite import ir

from gpunb.compiler import arrays
from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin
from gpunb.compiler.hints import READONLY_HINT
from gpunb.foundation import types as t

_ATOMIC_TYPES = (t.int32, t.uint32, t.int64, t.uint64, t.float32, t.float64)

# the role of an atomic's access site (the CPU target's records): "atomic_<name>", e.g.
# "atomic_add"; a compare-and-swap that did not swap is recorded under CAS_FAILED_ROLE (it only
# read). Every atomic reads the old value except exch, whose result is the only thing that
# depends on it: it initialises the element (initcheck) as a plain write does.
ROLE_PREFIX = "atomic_"
CAS_FAILED_ROLE = "atomic_cas_failed"
WRITE_ONLY_ROLES = frozenset({"atomic_exch"})


def role_of(name: str) -> str:
    """The site role of cuda.atomic.<name>."""
    return ROLE_PREFIX + name.rsplit(".", 1)[-1]


class Atomic(Builtin):
    """`op` names the LLVM atomicrmw operation per element kind (signed, unsigned, float)."""

    def __init__(self, name: str, int_op: str | None, uint_op: str | None, float_op: str | None,
                 n_values: int = 1, flat_index: bool = False):
        self.name = name
        self.ops = (int_op, uint_op, float_op)
        self.n_values = n_values
        self.flat_index = flat_index

    def type_call(self, inf, node, argtypes, kwtypes):
        expected = 2 + self.n_values - (1 if self.flat_index else 0)
        if kwtypes or len(argtypes) != expected:
            form = "(ary, old, val)" if self.flat_index else \
                ("(ary, idx, old, val)" if self.n_values == 2 else "(ary, idx, val)")
            raise inf.error(node, f"{self.name} takes {form}")
        arr = argtypes[0]
        if not isinstance(arr, t.Array):
            raise inf.error(node.args[0], f"{self.name} needs an array, got {arr}")
        if arr.readonly:
            raise inf.error(node.args[0], f"{self.name} cannot update a read-only array "
                            f"({arr})", READONLY_HINT)
        if arr.dtype not in _ATOMIC_TYPES:
            raise inf.error(node.args[0], f"{self.name} is not supported on {arr.dtype} arrays",
                            "atomics work on int32, uint32, int64, uint64, float32, float64")
        op = self.op_for(arr.dtype)
        if op is None:
            raise inf.error(node, f"{self.name} is not supported on {arr.dtype}",
                            "inc/dec need unsigned ints; and_/or_/xor need integers")
        if not self.flat_index:
            idx = argtypes[1]
            idx_items = idx.items if isinstance(idx, t.Tuple) else (idx,)
            if not all(isinstance(i, (t.Integer, t.Boolean)) for i in idx_items):
                raise inf.error(node.args[1], f"the index of {self.name} must be integers")
            if len(idx_items) != arr.ndim:
                raise inf.error(node.args[1], f"{self.name} on a {arr.ndim}-d array needs "
                                f"{arr.ndim} indices, got {len(idx_items)}")
        elif arr.ndim != 1:
            raise inf.error(node.args[0], f"{self.name} needs a 1-d array")
        for v in argtypes[-self.n_values:]:
            if not t.is_number(v) or isinstance(v, t.Complex):
                raise inf.error(node, f"the value of {self.name} must be a real number, got {v}")
        return arr.dtype

    def op_for(self, dtype: t.Type):
        if isinstance(dtype, t.Float):
            return self.ops[2]
        return self.ops[0] if dtype.signed else self.ops[1]

    def lower_call(self, low, node, call):
        b = low.builder
        arr_t = call.argtypes[0]
        arr = low.expr(node.args[0])
        data, shape, strides = arrays.parts(b, arr, arr_t.ndim)
        if self.flat_index:
            indices = [ir.Constant(dm.i64, 0)]
        else:
            idx_node = node.args[1]
            idx_t = call.argtypes[1]
            idx = low.expr(idx_node)
            if isinstance(idx_t, t.Tuple):
                items = [(b.extract_value(idx, k), it) for k, it in enumerate(idx_t.items)]
            else:
                items = [(idx, idx_t)]
            indices = []
            for k, (value, ty) in enumerate(items):
                wrapped = arrays.normalise_index(b, value, ty, shape[k])
                low.target.check_bounds(low, node, arr_t, k, wrapped, shape[k],
                                        arrays.signed_index(ty))
                indices.append(wrapped)
        pointer = arrays.element_pointer(b, arr_t, data, shape, strides, indices)
        values = [ops.cast(b, low.expr(n), low.type_of(n), arr_t.dtype)
                  for n in node.args[-self.n_values:]]
        op = self.op_for(arr_t.dtype)
        if op == "cas":  # recorded after the swap: whether it wrote or only read
            old = low.target.atomic_cas(low, pointer, values[0], values[1], arr_t.dtype)
            low.target.record_access(low, node, pointer, "atomic", role_of(self.name),
                                     succeeded=_same_bits(b, old, values[0]))
            return old
        low.target.record_access(low, node, pointer, "atomic", role_of(self.name))
        if op in ("fmax_ordered", "fmin_ordered"):
            return _ordered_float_extreme(low, pointer, values[0], arr_t.dtype,
                                          op == "fmax_ordered")
        return low.target.atomic(low, op, pointer, values[0], arr_t.dtype)


def _same_bits(b: ir.IRBuilder, old, expected):
    """Whether a compare-and-swap found `expected` (bit for bit, as cmpxchg compares)."""
    if isinstance(old.type, (ir.FloatType, ir.DoubleType)):
        bits = ir.IntType(64 if isinstance(old.type, ir.DoubleType) else 32)
        old, expected = b.bitcast(old, bits), b.bitcast(expected, bits)
    return b.icmp_unsigned("==", old, expected)


def _ordered_float_extreme(low, pointer, value, dtype: t.Float, is_max: bool):
    """numba.cuda's float atomic.max/min: a compare-and-swap loop that stores `value` only when
    it compares greater (less) than the stored value, so a NaN on either side leaves the
    location as it was (LLVM's fmax/fmin, maxnum, would replace a stored NaN: that is nanmax)."""
    b = low.builder
    vt = dm.value_type(dtype)
    slot = low.alloca(vt, "atomic.old")
    b.store(b.load(pointer, typ=vt), slot)
    loop_bb, try_bb, done_bb = (low.new_block(f"atomic.{n}") for n in ("loop", "try", "done"))
    b.branch(loop_bb)
    b.position_at_end(loop_bb)
    old = b.load(slot, typ=vt)
    better = b.fcmp_ordered(">" if is_max else "<", value, old)
    b.cbranch(better, try_bb, done_bb)
    b.position_at_end(try_bb)
    seen = low.target.atomic_cas(low, pointer, old, value, dtype)
    b.store(seen, slot)
    bits = ir.IntType(dtype.bitwidth)
    swapped = b.icmp_unsigned("==", b.bitcast(seen, bits), b.bitcast(old, bits))
    b.cbranch(swapped, done_bb, loop_bb)
    b.position_at_end(done_bb)
    return b.load(slot, typ=vt)



BUILTINS = {
    "cuda.atomic.add": Atomic("cuda.atomic.add", "add", "add", "fadd"),
    "cuda.atomic.sub": Atomic("cuda.atomic.sub", "sub", "sub", "fsub"),
    # numba: max/min keep the stored value when either side is NaN; nanmax/nanmin treat a NaN
    # as missing (LLVM's fmax/fmin, IEEE maxNum)
    "cuda.atomic.max": Atomic("cuda.atomic.max", "max", "umax", "fmax_ordered"),
    "cuda.atomic.min": Atomic("cuda.atomic.min", "min", "umin", "fmin_ordered"),
    "cuda.atomic.nanmax": Atomic("cuda.atomic.nanmax", "max", "umax", "fmax"),
    "cuda.atomic.nanmin": Atomic("cuda.atomic.nanmin", "min", "umin", "fmin"),
    "cuda.atomic.exch": Atomic("cuda.atomic.exch", "xchg", "xchg", "xchg"),
    "cuda.atomic.inc": Atomic("cuda.atomic.inc", None, "uinc_wrap", None),
    "cuda.atomic.dec": Atomic("cuda.atomic.dec", None, "udec_wrap", None),
    "cuda.atomic.and_": Atomic("cuda.atomic.and_", "and", "and", None),
    "cuda.atomic.or_": Atomic("cuda.atomic.or_", "or", "or", None),
    "cuda.atomic.xor": Atomic("cuda.atomic.xor", "xor", "xor", None),
    "cuda.atomic.cas": Atomic("cuda.atomic.cas", "cas", "cas", "cas", n_values=2),
    "cuda.atomic.compare_and_swap": Atomic("cuda.atomic.compare_and_swap", "cas", "cas", "cas",
                                           n_values=2, flat_index=True),
}
