"""Argument binding and checks shared by the asynchronous builtins (cp.async, mbarrier, TMA,
wgmma): positional-or-keyword parameters, compile-time constants, barrier and view operands."""

from __future__ import annotations

from dataclasses import dataclass

from gpunb.compiler import arrays
from gpunb.compiler import operators as ops
from gpunb.foundation import types as t


@dataclass(frozen=True, slots=True)
class Bound:
    """A call's arguments by parameter name: (node, type) pairs, and constants read at typing."""

    args: tuple  # ((name, node, type), ...) in parameter order, present ones only
    consts: tuple = ()  # ((name, value), ...)

    def node(self, name: str):
        for n, node, _ in self.args:
            if n == name:
                return node
        return None

    def type(self, name: str):
        for n, _, ty in self.args:
            if n == name:
                return ty
        return None

    def const(self, name: str, default=None):
        for n, value in self.consts:
            if n == name:
                return value
        return default

    def with_consts(self, **values) -> Bound:
        return Bound(self.args, self.consts + tuple(values.items()))


def bind(inf, node, name: str, params: tuple, required: int, argtypes: list,
         kwtypes: dict) -> Bound:
    """Match a call's arguments to `params` (the first `required` of them must be given)."""
    form = f"{name}({', '.join(params[:required])}" + \
        "".join(f"[, {p}]" for p in params[required:]) + ")"
    if len(argtypes) > len(params):
        raise inf.error(node, f"{name} takes at most {len(params)} arguments, got "
                        f"{len(argtypes)}", f"call it as {form}")
    given = {p: (a, ty) for p, a, ty in zip(params, node.args, argtypes, strict=False)}
    for kw in node.keywords:
        if kw.arg not in params:
            raise inf.error(kw.value, f"{name} has no parameter '{kw.arg}'",
                            f"call it as {form}")
        if kw.arg in given:
            raise inf.error(kw.value, f"{name} got '{kw.arg}' twice", f"call it as {form}")
        given[kw.arg] = (kw.value, kwtypes[kw.arg])
    missing = [p for p in params[:required] if p not in given]
    if missing:
        raise inf.error(node, f"{name} needs {', '.join(missing)}", f"call it as {form}")
    return Bound(tuple((p, *given[p]) for p in params if p in given))


def const_int(inf, bound: Bound, param: str, what: str, allowed=None, default=None) -> int:
    """A compile-time integer argument, one of `allowed` when given."""
    node = bound.node(param)
    if node is None:
        return default
    value = inf.const(node, what)
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise inf.error(node, f"{what} must be an integer, got {value!r}")
    value = int(value)
    if allowed is not None and value not in allowed:
        raise inf.error(node, f"{what} must be {_allowed_text(allowed)}, got {value}")
    return value


def _allowed_text(allowed) -> str:
    """'one of 4, 8, 16', or 'an integer from 0 to 255' for a range (not all 256 numbers)."""
    if isinstance(allowed, range) and allowed.step == 1 and len(allowed) > 1:
        return f"an integer from {allowed.start} to {allowed.stop - 1}"
    return "one of " + ", ".join(str(a) for a in allowed)


def const_flag(inf, bound: Bound, param: str, what: str) -> bool:
    """A compile-time True/False (or 0/1) argument; False when not given."""
    node = bound.node(param)
    if node is None:
        return False
    value = inf.const(node, what)
    if value not in (True, False, 0, 1) or not isinstance(value, (bool, int)):
        raise inf.error(node, f"{what} must be a constant True or False, got {value!r}")
    return bool(value)


def integer_operand(inf, bound: Bound, param: str, what: str) -> None:
    ty = bound.type(param)
    if ty is not None and not isinstance(ty, (t.Integer, t.Boolean)):
        raise inf.error(bound.node(param), f"{what} must be an integer, got {ty}")


def barrier_operand(inf, bound: Bound, name: str) -> None:
    """`bars, i`: a uint64/int64 array (the mbarrier objects, in shared memory) and an index."""
    arr, index = bound.type("bars"), bound.type("index")
    if not isinstance(arr, t.Array) or arr.ndim != 1 or \
            arr.dtype not in (t.uint64, t.int64):
        raise inf.error(bound.node("bars"), f"{name} needs a 1-d uint64 array of mbarriers in "
                        f"shared memory, got {arr}",
                        "declare them with bars = cuda.shared.array(n, uint64)")
    if not isinstance(index, (t.Integer, t.Boolean)):
        raise inf.error(bound.node("index"), f"the mbarrier index of {name} must be an "
                        f"integer, got {index}")


def view_operand(inf, bound: Bound, param: str, name: str, ndim: int | None = None) -> t.Array:
    arr = bound.type(param)
    if not isinstance(arr, t.Array):
        raise inf.error(bound.node(param), f"{name}: {param} must be an array view, got {arr}")
    if ndim is not None and arr.ndim != ndim:
        raise inf.error(bound.node(param), f"{name}: {param} must be a {ndim}-d array view, "
                        f"got {arr}")
    return arr


def element_address(low, node, arr_node, arr_t: t.Array, index_node, index_t):
    """The generic address of `arr[index]` (bounds checked where the target checks)."""
    b = low.builder
    data, shape, strides = arrays.parts(b, low.expr(arr_node), arr_t.ndim)
    index = arrays.normalise_index(b, low.expr(index_node), index_t, shape[0])
    low.target.check_bounds(low, node, arr_t, 0, index, shape[0], arrays.signed_index(index_t))
    return arrays.element_pointer(b, arr_t, data, shape, strides, [index])


def barrier_address(low, node, bound: Bound):
    return element_address(low, node, bound.node("bars"), bound.type("bars"),
                           bound.node("index"), bound.type("index"))


def int_value(low, bound: Bound, param: str, ty, default: int | None = None):
    """The argument converted to `ty` (an llvm value), or the constant default."""
    from llvmlite import ir

    from gpunb.compiler import datamodel as dm

    node = bound.node(param)
    if node is None:
        return None if default is None else ir.Constant(dm.value_type(ty), default)
    return ops.cast(low.builder, low.expr(node), bound.type(param), ty)


def async_ops(low, node, what: str):
    """The target's lowering of the asynchronous operations, or a CompileError."""
    found = low.target.async_ops()
    if found is None:
        raise low.error(node, f"{what} is not available on the {low.target.name} target")
    return found
