"""Whole-array reductions in kernels: np.sum(a) or a.sum(), prod, mean, var, std, min, max, all,
any, the nan* forms and count_nonzero, typed and computed as numba's implementations
(numba/np/arraymath.py) do.

Each walks the array's elements once, in memory order for an F-ordered array and C order
otherwise, with numba's accumulator types: integers narrower than 64 bits sum into int64 (uint64),
mean accumulates integers in float64 and floats in their own type and returns the array's float
type, var/std are float64 (numba subtracts the mean in the element type and accumulates the
squares in float64). min/max return the first NaN they meet; an empty array has no min/max
(ValueError, raised as kernels raise). No axis, dtype or out arguments: write a loop for those.
"""

from __future__ import annotations

import ast

from llvmlite import ir

from gpunb.compiler import arrays
from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin
from gpunb.foundation import types as t

FUNCTIONS = ("sum", "prod", "mean", "var", "std", "min", "max", "amin", "amax", "all", "any",
             "nanmin", "nanmax", "nansum", "nanprod", "nanmean", "count_nonzero")
METHODS = ("sum", "prod", "mean", "var", "std", "min", "max", "all", "any")


def accumulator(dtype: t.Type) -> t.Type:
    """numba's get_accumulator_type: bools and integers below 64 bits widen to int64/uint64."""
    if isinstance(dtype, t.Boolean):
        return t.int64
    if isinstance(dtype, t.Integer) and dtype.bitwidth < 64:
        return t.int64 if dtype.signed else t.uint64
    return dtype


class Reduction(Builtin):
    def __init__(self, op: str, method: bool):
        self.op = {"amin": "min", "amax": "max"}.get(op, op)
        self.method = method
        self.name = f"array.{op}" if method else f"numpy.{op}"

    # ---- typing -------------------------------------------------------------------------------

    def type_call(self, inf, node, argtypes, kwtypes):
        want = 0 if self.method else 1
        if kwtypes or len(argtypes) != want:
            raise inf.error(node, f"{self.label()} takes no axis, dtype or out argument in GPU "
                            "code (the whole array is reduced)",
                            "reduce along an axis with a loop over the other axes")
        arr = inf.types[node.func.value] if self.method else argtypes[0]
        if not isinstance(arr, t.Array):
            raise inf.error(node, f"{self.label()} needs an array, got {arr}")
        dtype = arr.dtype
        if not t.is_number(dtype):
            raise inf.error(node, f"{self.label()} needs an array of numbers, got {arr}")
        if isinstance(dtype, t.Complex) and self.op in ("min", "max", "var", "std", "nanmin",
                                                        "nanmax"):
            raise inf.error(node, f"{self.label()} of a complex array is not supported")
        return result_type(self.op, dtype)

    def label(self) -> str:
        return f"a.{self.op}()" if self.method else f"np.{self.op}()"

    # ---- lowering -----------------------------------------------------------------------------

    def lower_call(self, low, node, call):
        arr_node = node.func.value if self.method else node.args[0]
        arr_t = low.type_of(arr_node)
        return _LOWER[self.op](low, node, arr_t, low.expr(arr_node), call.result)


def result_type(op: str, dtype: t.Type) -> t.Type:
    if op in ("all", "any"):
        return t.boolean
    if op == "count_nonzero":
        return t.int64
    if op in ("sum", "prod", "nansum", "nanprod"):
        return accumulator(dtype)
    if op == "mean":
        return t.float64 if t.is_int(dtype) else dtype
    if op == "nanmean":  # numba's nanmean accumulates from 0.0: float64 (complex128)
        return t.complex128 if isinstance(dtype, t.Complex) else t.float64
    if op in ("var", "std"):
        return t.float64
    return dtype  # min, max, nanmin, nanmax


# ---- the element walk -------------------------------------------------------------------------


def for_each(low, arr_t: t.Array, value, body) -> None:
    """body(element) for every element: memory order for an F-ordered array, else C order."""
    b = low.builder
    data, shape, strides = arrays.parts(b, value, arr_t.ndim)
    order = list(range(arr_t.ndim))
    if arr_t.layout == "F":
        order.reverse()

    def visit(indices_in_order):
        indices = [None] * arr_t.ndim
        for axis, index in zip(order, indices_in_order, strict=True):
            indices[axis] = index
        pointer = arrays.element_pointer(b, arr_t, data, shape, strides, indices)
        body(arrays.load_element(b, arr_t.dtype, pointer, arrays.access_alignment(arr_t)))

    low.loop_nest([shape[axis] for axis in order], visit)


def _slot(low, ty: t.Type, initial):
    slot = low.alloca(dm.value_type(ty), "reduce.acc")
    low.builder.store(initial, slot)
    return slot


def _is_nan(b, value, ty: t.Type):
    if isinstance(ty, t.Float):
        return b.fcmp_unordered("uno", value, value)
    return ir.Constant(dm.i1, 0)


def _size(low, arr_t: t.Array, value):
    return arrays.attribute(low.builder, arr_t, value, "size", t.int64)


def lower_sum(low, node, arr_t, value, result, start=0, nan_skip=False, product=False):
    b = low.builder
    acc = _slot(low, result, ops.constant(result, start))
    op = ast.Mult() if product else ast.Add()

    def add(elem):
        item = ops.cast(b, elem, arr_t.dtype, result)
        new = ops.binary(b, op, b.load(acc), item, result, low.math_call)
        if nan_skip:
            new = b.select(_is_nan(b, elem, arr_t.dtype), b.load(acc), new)
        b.store(new, acc)

    for_each(low, arr_t, value, add)
    return b.load(acc)


def lower_mean(low, node, arr_t, value, result, nan_skip=False):
    """numba: accumulate in float64 (integers) or the element type (nanmean: always float64),
    then c / size in float64, converted to the result type; an empty array (or, for nanmean,
    one of NaNs only) is NaN."""
    b = low.builder
    acc_t = t.float64 if t.is_int(arr_t.dtype) else arr_t.dtype
    if nan_skip:
        acc_t = result  # nanmean: c = 0.0, so float64 (complex128)
    acc = _slot(low, acc_t, ops.constant(acc_t, 0))
    count = _slot(low, t.int64, ir.Constant(dm.i64, 0))

    def add(elem):
        skip = _is_nan(b, elem, arr_t.dtype) if nan_skip else ir.Constant(dm.i1, 0)
        item = ops.cast(b, elem, arr_t.dtype, acc_t)
        summed = ops.binary(b, ast.Add(), b.load(acc), item, acc_t, low.math_call)
        b.store(b.select(skip, b.load(acc), summed), acc)
        b.store(b.select(skip, b.load(count), b.add(b.load(count), ir.Constant(dm.i64, 1))),
                count)

    for_each(low, arr_t, value, add)
    n = b.load(count)
    quotient_t = t.complex128 if isinstance(acc_t, t.Complex) else t.float64
    quotient = ops.binary(b, ast.Div(), ops.cast(b, b.load(acc), acc_t, quotient_t),
                          ops.cast(b, n, t.int64, quotient_t), quotient_t, low.math_call)
    mean = ops.cast(b, quotient, quotient_t, result)
    nan = ops.constant(result, complex("nan+nanj") if isinstance(result, t.Complex)
                       else float("nan"))
    return b.select(b.icmp_signed("==", n, ir.Constant(dm.i64, 0)), nan, mean)


def lower_var(low, node, arr_t, value, result, root=False):
    """numba: m = a.mean() (in the element's float type), then the squares of v - m summed in
    float64 (its ssd starts as the integer 0), divided by the size."""
    b = low.builder
    mean_t = result_type("mean", arr_t.dtype)
    m = lower_mean(low, node, arr_t, value, mean_t)
    ssd = _slot(low, t.float64, ir.Constant(dm.value_type(t.float64), 0.0))
    diff_t = mean_t if not t.is_int(arr_t.dtype) else t.float64

    def add(elem):
        diff = ops.binary(b, ast.Sub(), ops.cast(b, elem, arr_t.dtype, diff_t),
                          ops.cast(b, m, mean_t, diff_t), diff_t, low.math_call)
        square = ops.binary(b, ast.Mult(), diff, diff, diff_t, low.math_call)
        b.store(b.fadd(b.load(ssd), ops.cast(b, square, diff_t, t.float64)), ssd)

    for_each(low, arr_t, value, add)
    var = b.fdiv(b.load(ssd), b.sitofp(_size(low, arr_t, value), dm.value_type(t.float64)))
    return low.math_call("sqrt", [var], [t.float64], t.float64) if root else var


def lower_extreme(low, node, arr_t, value, result, smallest=True, nan_skip=False):
    """min/max return the first NaN (numba); nanmin/nanmax skip NaNs (all NaN: NaN). An empty
    array has no extreme: ValueError, as a kernel raises it."""
    b = low.builder
    size = _size(low, arr_t, value)
    empty_bb, ok_bb = low.new_block("reduce.empty"), low.new_block("reduce.nonempty")
    b.cbranch(b.icmp_signed("==", size, ir.Constant(dm.i64, 0)), empty_bb, ok_bb)
    b.position_at_end(empty_bb)
    which = "minimum" if smallest else "maximum"
    low.raise_exception(node, "ValueError", f"zero-size array to reduction operation {which} "
                        "which has no identity")
    b.position_at_end(ok_bb)
    best = _slot(low, result, ops.constant(result, float("nan") if isinstance(
        result, t.Float) else 0))
    seen = _slot(low, t.boolean, ir.Constant(dm.i1, 0))
    op = ast.Lt() if smallest else ast.Gt()

    def visit(elem):
        nan = _is_nan(b, elem, result)
        better = ops.compare(b, op, elem, b.load(best), result)
        take = b.or_(b.not_(b.load(seen)), better)
        if nan_skip:
            take = b.and_(take, b.not_(nan))
        else:  # the first NaN wins and stays
            have_nan = _is_nan(b, b.load(best), result)
            take = b.and_(b.or_(take, nan), b.not_(b.and_(b.load(seen), have_nan)))
        b.store(b.select(take, elem, b.load(best)), best)
        b.store(b.or_(b.load(seen), b.not_(nan) if nan_skip else ir.Constant(dm.i1, 1)), seen)

    for_each(low, arr_t, value, visit)
    return b.load(best)


def lower_logical(low, node, arr_t, value, result, every=True):
    b = low.builder
    acc = _slot(low, t.boolean, ir.Constant(dm.i1, int(every)))

    def visit(elem):
        truth = ops.truth(b, elem, arr_t.dtype)
        b.store((b.and_ if every else b.or_)(b.load(acc), truth), acc)

    for_each(low, arr_t, value, visit)
    return b.load(acc)


def lower_count(low, node, arr_t, value, result):
    b = low.builder
    acc = _slot(low, t.int64, ir.Constant(dm.i64, 0))

    def visit(elem):
        truth = ops.truth(b, elem, arr_t.dtype)
        b.store(b.add(b.load(acc), b.zext(truth, dm.i64)), acc)

    for_each(low, arr_t, value, visit)
    return b.load(acc)


_LOWER = {
    "sum": lower_sum,
    "prod": lambda low, n, a, v, r: lower_sum(low, n, a, v, r, start=1, product=True),
    "nansum": lambda low, n, a, v, r: lower_sum(low, n, a, v, r, nan_skip=True),
    "nanprod": lambda low, n, a, v, r: lower_sum(low, n, a, v, r, start=1, nan_skip=True,
                                                 product=True),
    "mean": lower_mean,
    "nanmean": lambda low, n, a, v, r: lower_mean(low, n, a, v, r, nan_skip=True),
    "var": lower_var,
    "std": lambda low, n, a, v, r: lower_var(low, n, a, v, r, root=True),
    "min": lower_extreme,
    "max": lambda low, n, a, v, r: lower_extreme(low, n, a, v, r, smallest=False),
    "nanmin": lambda low, n, a, v, r: lower_extreme(low, n, a, v, r, nan_skip=True),
    "nanmax": lambda low, n, a, v, r: lower_extreme(low, n, a, v, r, smallest=False,
                                                    nan_skip=True),
    "all": lower_logical,
    "any": lambda low, n, a, v, r: lower_logical(low, n, a, v, r, every=False),
    "count_nonzero": lower_count,
}

BUILTINS: dict = {f"numpy.{name}": Reduction(name, method=False) for name in FUNCTIONS}
METHOD_BUILTINS: dict = {name: Reduction(name, method=True) for name in METHODS}
