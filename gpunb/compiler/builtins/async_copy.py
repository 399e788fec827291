"""cp.async (global -> shared, with commit/wait groups), mbarriers and the async-proxy fence:
typing here, lowering by the target's async_ops (backends/cuda/async_ops.py emits PTX, the CPU
target runs them with their completion rules).

    cuda.cp_async.copy(dst, src, nbytes[, src_bytes][, cache])   # 4, 8 or 16 bytes
    cuda.cp_async.commit_group(); cuda.cp_async.wait_group(n); cuda.cp_async.wait_all()
    cuda.mbarrier.init(bars, i, count)            token = cuda.mbarrier.arrive(bars, i[, count])
    cuda.mbarrier.arrive(bars, i, block_rank=r)   # mbarrier i of block r of the cluster
    cuda.mbarrier.arrive_expect_tx(bars, i, tx)   cuda.mbarrier.expect_tx(bars, i, tx)
    cuda.mbarrier.try_wait(bars, i, token)        cuda.mbarrier.try_wait_parity(bars, i, parity)
    cuda.mbarrier.wait(bars, i, parity)           cuda.mbarrier.inval(bars, i)
    cuda.fence_proxy_async()

A copy moves `nbytes` from the first element of the view `src` to the first element of `dst`
(both contiguous over those bytes). An mbarrier is element `i` of a uint64 array in shared
memory, as cuda.atomic names an element by (array, index).
"""

from __future__ import annotations

import ast

from gpunb.compiler.builtins import Builtin
from gpunb.compiler.builtins import async_args as aa
from gpunb.compiler.typed import Feature, Typed
from gpunb.foundation import types as t

_CACHE_MODES = ("ca", "cg")


class CpAsyncCopy(Builtin):
    name = "cuda.cp_async.copy"
    params = ("dst", "src", "nbytes", "src_bytes", "cache")

    def type_call(self, inf, node, argtypes, kwtypes):
        bound = aa.bind(inf, node, self.name, self.params, 3, argtypes, kwtypes)
        dst = aa.view_operand(inf, bound, "dst", self.name)
        src = aa.view_operand(inf, bound, "src", self.name)
        if dst.readonly:
            raise inf.error(bound.node("dst"), f"{self.name}: dst is read-only")
        argument = _kernel_argument_under(inf, bound.node("dst"))
        if argument is not None:
            raise inf.error(bound.node("dst"), f"{self.name}: dst {ast.unparse(bound.node('dst'))} "
                            f"is in global memory (the kernel argument '{argument}'); cp.async "
                            "copies from global memory into shared memory",
                            "copy into a cuda.shared.array (or a view of one), e.g. "
                            "s = cuda.shared.array(256, float32); cuda.cp_async.copy(s[i:], "
                            "x[j:], 16)")
        if t.sizeof(dst.dtype) != t.sizeof(src.dtype):
            raise inf.error(node, f"{self.name} copies between views of one element size, got "
                            f"{dst.dtype} and {src.dtype}",
                            "copy between arrays of the same dtype")
        nbytes = aa.const_int(inf, bound, "nbytes", f"the size of {self.name}", (4, 8, 16))
        itemsize = t.sizeof(dst.dtype)
        if nbytes % itemsize:
            raise inf.error(bound.node("nbytes"), f"{self.name}: {nbytes} bytes is not a whole "
                            f"number of {dst.dtype} elements")
        cache = "ca"
        if bound.node("cache") is not None:
            cache = inf.const(bound.node("cache"), f"the cache mode of {self.name}")
            if cache not in _CACHE_MODES:
                raise inf.error(bound.node("cache"), f"{self.name}: cache must be 'ca' or 'cg', "
                                f"got {cache!r}")
        if cache == "cg" and nbytes != 16:
            raise inf.error(bound.node("cache"), f"{self.name}: cache='cg' copies 16 bytes only, "
                            f"not {nbytes}", "use cache='ca' for 4 and 8 byte copies")
        aa.integer_operand(inf, bound, "src_bytes", f"src_bytes of {self.name}")
        inf.require(Feature.ASYNC)
        return Typed(t.none, bound.with_consts(nbytes=nbytes, cache=cache))

    def lower_call(self, low, node, call):
        bound = call.data
        ops = aa.async_ops(low, node, self.name)
        dst = _view(low, bound, "dst")
        src = _view(low, bound, "src")
        src_bytes = aa.int_value(low, bound, "src_bytes", t.int32)
        ops.cp_async(low, node, dst, src, t.sizeof(bound.type("dst").dtype),
                     bound.const("nbytes"), src_bytes, bound.const("cache"))


def _kernel_argument_under(inf, node) -> str | None:
    """The kernel argument `node` is, or is a view of (`out`, `out[i:]`, `out[1][4:]`): global
    memory for sure. None where that is not provable - a local name (checked at run time on
    the CPU target), or a device function's parameter, which may be its caller's shared array."""
    if not inf.is_kernel:
        return None
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name) and inf.env.get(node.id) in inf.params:
        return node.id
    return None


def _view(low, bound: aa.Bound, param: str) -> tuple:
    """(data pointer, extent and byte stride of the last axis) of a view operand."""
    from gpunb.compiler import arrays

    arr_t = bound.type(param)
    data, shape, strides = arrays.parts(low.builder, low.expr(bound.node(param)), arr_t.ndim)
    return data, shape[-1], strides[-1]


class CpAsyncGroup(Builtin):
    """commit_group(), wait_group(n), wait_all()."""

    def __init__(self, op: str):
        self.op = op
        self.name = f"cuda.cp_async.{op}"

    def type_call(self, inf, node, argtypes, kwtypes):
        params = ("n",) if self.op == "wait_group" else ()
        bound = aa.bind(inf, node, self.name, params, len(params), argtypes, kwtypes)
        n = aa.const_int(inf, bound, "n", f"the group count of {self.name}", range(0, 256))
        inf.require(Feature.ASYNC)
        return Typed(t.none, n)

    def lower_call(self, low, node, call):
        ops = aa.async_ops(low, node, self.name)
        if self.op == "commit_group":
            ops.cp_async_commit(low, node)
        elif self.op == "wait_group":
            ops.cp_async_wait(low, node, call.data)
        else:
            ops.cp_async_wait_all(low, node)


# ---- mbarrier ---------------------------------------------------------------------------------

_MBARRIER_PARAMS = {
    "init": (("bars", "index", "count"), 3, t.none),
    "arrive": (("bars", "index", "count", "block_rank"), 2, t.uint64),
    "arrive_expect_tx": (("bars", "index", "tx_bytes"), 3, t.uint64),
    "expect_tx": (("bars", "index", "tx_bytes"), 3, t.none),
    "try_wait": (("bars", "index", "token"), 3, t.boolean),
    "try_wait_parity": (("bars", "index", "parity"), 3, t.boolean),
    "wait": (("bars", "index", "parity"), 3, t.none),
    "inval": (("bars", "index"), 2, t.none),
}


class MBarrierOp(Builtin):
    def __init__(self, op: str):
        self.op = op
        self.name = f"cuda.mbarrier.{op}"

    def type_call(self, inf, node, argtypes, kwtypes):
        params, required, result = _MBARRIER_PARAMS[self.op]
        bound = aa.bind(inf, node, self.name, params, required, argtypes, kwtypes)
        aa.barrier_operand(inf, bound, self.name)
        for param in params[2:]:
            aa.integer_operand(inf, bound, param, f"{param} of {self.name}")
        inf.require(Feature.ASYNC)
        if bound.node("block_rank") is not None:  # another block's barrier: no token back
            inf.require(Feature.CLUSTER)
            result = t.none
        return Typed(result, bound)

    def lower_call(self, low, node, call):
        bound = call.data
        ops = aa.async_ops(low, node, self.name)
        bar = aa.barrier_address(low, node, bound)
        op = self.op
        if op == "init":
            return ops.mbarrier_init(low, node, bar, aa.int_value(low, bound, "count", t.int32))
        if op == "arrive":
            count = aa.int_value(low, bound, "count", t.int32)
            if bound.node("block_rank") is not None:
                return ops.mbarrier_arrive(low, node, bar, count, None, block_rank=aa.int_value(
                    low, bound, "block_rank", t.int32))
            return ops.mbarrier_arrive(low, node, bar, count, None)
        if op == "arrive_expect_tx":
            return ops.mbarrier_arrive(low, node, bar, None,
                                       aa.int_value(low, bound, "tx_bytes", t.int32))
        if op == "expect_tx":
            return ops.mbarrier_expect_tx(low, node, bar,
                                          aa.int_value(low, bound, "tx_bytes", t.int32))
        if op == "try_wait":
            return ops.mbarrier_try_wait(low, node, bar,
                                         aa.int_value(low, bound, "token", t.uint64), False)
        if op == "try_wait_parity":
            return ops.mbarrier_try_wait(low, node, bar,
                                         aa.int_value(low, bound, "parity", t.uint32), True)
        if op == "wait":
            return ops.mbarrier_wait(low, node, bar,
                                     aa.int_value(low, bound, "parity", t.uint32))
        return ops.mbarrier_inval(low, node, bar)


class FenceProxyAsync(Builtin):
    name = "cuda.fence_proxy_async"

    def type_call(self, inf, node, argtypes, kwtypes):
        if argtypes or kwtypes:
            raise inf.error(node, f"{self.name}() takes no arguments")
        inf.require(Feature.ASYNC)
        return t.none

    def lower_call(self, low, node, call):
        aa.async_ops(low, node, self.name).fence_proxy_async(low, node)


BUILTINS = {
    "cuda.cp_async.copy": CpAsyncCopy(),
    **{f"cuda.cp_async.{op}": CpAsyncGroup(op) for op in ("commit_group", "wait_group",
                                                           "wait_all")},
    **{f"cuda.mbarrier.{op}": MBarrierOp(op) for op in _MBARRIER_PARAMS},
    "cuda.fence_proxy_async": FenceProxyAsync(),
}
