"""TMA bulk tensor copies (sm_90): typing here, lowering by the target's async_ops.

    cuda.tma.load(dst, desc, coords, bars, i)   # global -> shared, completes tx on mbarrier i
    cuda.tma.load(..., multicast=mask)          # ... into every block of the cluster in mask
    cuda.tma.store(desc, coords, src)           # shared -> global, in bulk async-groups
    cuda.tma.prefetch(desc, coords)             # the box into L2, no copy and no completion
    cuda.tma.commit_group(); cuda.tma.wait_group(n); cuda.tma.wait_group_read(n)

`desc` is a kernel argument made on the host by cuda.tma.descriptor(array, box, swizzle); its
type carries the element type, rank, box and swizzle, so a tile of another dtype or rank, or
coordinates of the wrong count, are compile-time errors. The tile is a shared view of the box's
shape, or a flat 1-d view of its elements (a slice of dynamic shared memory). `coords` are the
element coordinates of the box's first element in numpy order (outermost first): (row, col).
"""

from __future__ import annotations

from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin
from gpunb.compiler.builtins import async_args as aa
from gpunb.compiler.typed import Feature, Typed
from gpunb.foundation import types as t
from gpunb.foundation.tensor_types import TensorMap


def _descriptor(inf, bound: aa.Bound, name: str) -> TensorMap:
    desc = bound.type("desc")
    if not isinstance(desc, TensorMap):
        raise inf.error(bound.node("desc"), f"{name} needs a TMA descriptor, got {desc}",
                        "make one on the host with cuda.tma.descriptor(array, box, swizzle) "
                        "and pass it to the kernel")
    return desc


def _coords(inf, bound: aa.Bound, desc: TensorMap, name: str) -> None:
    coords = bound.type("coords")
    items = coords.items if isinstance(coords, t.Tuple) else (coords,)
    if len(items) != desc.ndim or not all(isinstance(c, (t.Integer, t.Boolean))
                                          for c in items):
        raise inf.error(bound.node("coords"), f"{name} needs {desc.ndim} integer coordinates "
                        f"for a {desc.ndim}-d descriptor, got {coords}",
                        "pass the box's first element, e.g. (row, col) for a 2-d array")


def _tile(inf, bound: aa.Bound, param: str, desc: TensorMap, name: str) -> None:
    tile = aa.view_operand(inf, bound, param, name)
    if tile.dtype != desc.dtype:
        raise inf.error(bound.node(param), f"{name}: the shared tile holds {tile.dtype} but the "
                        f"descriptor copies {desc.dtype}")
    if tile.ndim not in (desc.ndim, 1):
        raise inf.error(bound.node(param), f"{name}: the shared tile has {tile.ndim} "
                        f"dimension(s), the descriptor's box {desc.box} has {desc.ndim}",
                        f"pass a shared view of shape {desc.box} (or a flat one of its "
                        "elements)")


def coordinate_values(low, bound: aa.Bound) -> list:
    """The coordinates as int32 values, innermost first (the order TMA takes them)."""
    b = low.builder
    coords_t = bound.type("coords")
    value = low.expr(bound.node("coords"))
    if not isinstance(coords_t, t.Tuple):
        return [ops.cast(b, value, coords_t, t.int32)]
    out = [ops.cast(b, b.extract_value(value, k), item, t.int32)
           for k, item in enumerate(coords_t.items)]
    return out[::-1]


def tile_operand(low, bound: aa.Bound, param: str) -> tuple:
    """(data pointer, shape values, byte strides) of a shared tile view."""
    from gpunb.compiler import arrays

    arr_t = bound.type(param)
    return arrays.parts(low.builder, low.expr(bound.node(param)), arr_t.ndim)


class TmaLoad(Builtin):
    """A box global -> shared. With `multicast=mask` (a cluster kernel) the box lands at the
    tile's offset in the shared memory of every block of the cluster whose rank's bit is set in
    `mask`, and completes its bytes on mbarrier i of each of them."""

    name = "cuda.tma.load"
    params = ("dst", "desc", "coords", "bars", "index", "multicast")

    def type_call(self, inf, node, argtypes, kwtypes):
        bound = aa.bind(inf, node, self.name, self.params, 5, argtypes, kwtypes)
        desc = _descriptor(inf, bound, self.name)
        _tile(inf, bound, "dst", desc, self.name)
        _coords(inf, bound, desc, self.name)
        aa.barrier_operand(inf, bound, self.name)
        inf.require(Feature.ASYNC)
        if bound.node("multicast") is not None:
            _multicast_mask(inf, bound, self.name)
            inf.require(Feature.CLUSTER)
        return Typed(t.none, bound)

    def lower_call(self, low, node, call):
        bound = call.data
        ops_ = aa.async_ops(low, node, self.name)
        bar = aa.barrier_address(low, node, bound)
        args = (low, node, tile_operand(low, bound, "dst"), low.expr(bound.node("desc")),
                bound.type("desc"), coordinate_values(low, bound), bar)
        if bound.node("multicast") is None:
            ops_.tma_load(*args)
        else:
            ops_.tma_load(*args, multicast=aa.int_value(low, bound, "multicast", t.uint16))


def _multicast_mask(inf, bound: aa.Bound, name: str) -> None:
    """An integer mask of cluster ranks; a constant one must name 1 to 16 blocks."""
    aa.integer_operand(inf, bound, "multicast", f"the multicast mask of {name}")
    node = bound.node("multicast")
    value = inf.constant_argument(node)  # None unless known at compile time
    if isinstance(value, int) and not isinstance(value, bool) and not 0 < value < 1 << 16:
        raise inf.error(node, f"the multicast mask of {name} is {value}: it must name at least "
                        "one block of the cluster (bit r for the block of rank r, ranks 0-15)",
                        "e.g. multicast=0b11 for both blocks of a 2-block cluster")


class TmaStore(Builtin):
    name = "cuda.tma.store"
    params = ("desc", "coords", "src")

    def type_call(self, inf, node, argtypes, kwtypes):
        bound = aa.bind(inf, node, self.name, self.params, 3, argtypes, kwtypes)
        desc = _descriptor(inf, bound, self.name)
        _tile(inf, bound, "src", desc, self.name)
        _coords(inf, bound, desc, self.name)
        inf.require(Feature.ASYNC)
        return Typed(t.none, bound)

    def lower_call(self, low, node, call):
        bound = call.data
        ops_ = aa.async_ops(low, node, self.name)
        ops_.tma_store(low, node, low.expr(bound.node("desc")), bound.type("desc"),
                       coordinate_values(low, bound), tile_operand(low, bound, "src"))


class TmaPrefetch(Builtin):
    """A hint: the box is brought into L2 for a later load (nothing is copied or awaited; the
    CPU target has no L2, so there it does nothing)."""

    name = "cuda.tma.prefetch"
    params = ("desc", "coords")

    def type_call(self, inf, node, argtypes, kwtypes):
        bound = aa.bind(inf, node, self.name, self.params, 2, argtypes, kwtypes)
        desc = _descriptor(inf, bound, self.name)
        _coords(inf, bound, desc, self.name)
        inf.require(Feature.ASYNC)
        return Typed(t.none, bound)

    def lower_call(self, low, node, call):
        bound = call.data
        ops_ = aa.async_ops(low, node, self.name)
        ops_.tma_prefetch(low, node, low.expr(bound.node("desc")), bound.type("desc"),
                          coordinate_values(low, bound))


class BulkGroup(Builtin):
    """commit_group(), wait_group(n), wait_group_read(n) of the bulk async-groups (TMA stores)."""

    def __init__(self, op: str):
        self.op = op
        self.name = f"cuda.tma.{op}"

    def type_call(self, inf, node, argtypes, kwtypes):
        params = () if self.op == "commit_group" else ("n",)
        bound = aa.bind(inf, node, self.name, params, len(params), argtypes, kwtypes)
        n = aa.const_int(inf, bound, "n", f"the group count of {self.name}", range(0, 64))
        inf.require(Feature.ASYNC)
        return Typed(t.none, n)

    def lower_call(self, low, node, call):
        ops_ = aa.async_ops(low, node, self.name)
        if self.op == "commit_group":
            ops_.bulk_commit(low, node)
        else:
            ops_.bulk_wait(low, node, call.data, read=self.op == "wait_group_read")


BUILTINS = {
    "cuda.tma.load": TmaLoad(),
    "cuda.tma.store": TmaStore(),
    "cuda.tma.prefetch": TmaPrefetch(),
    **{f"cuda.tma.{op}": BulkGroup(op) for op in ("commit_group", "wait_group",
                                                   "wait_group_read")},
}
