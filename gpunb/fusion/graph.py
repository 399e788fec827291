"""gpunb.fuse's expression graph: nodes with numpy dtypes and shapes, and numpy's typing rules.

A node is one value of the traced function. Its dtype, shape and (for ufuncs) the dtypes of the
loop numpy would run come from numpy itself (`ufunc.resolve_dtypes`, `np.result_type`), so
NEP 50's promotion rules - Python scalars are weak, numpy scalars are not - hold by construction.
"""

from __future__ import annotations

import dataclasses

import numpy as np

# what a node is: an element of an array argument, a scalar argument, a Python/numpy constant,
# a ufunc, np.where, astype, or the (single) reduction
ARRAY, SCALAR, CONST, UFUNC, WHERE, CAST, REDUCE = (
    "array", "scalar", "const", "ufunc", "where", "cast", "reduce")

# phases: values known without any array, values per element of the iteration space, values per
# element of a reduction's result
SCALAR_PHASE, ELEMENT_PHASE, REDUCED_PHASE = 0, 1, 2

SUPPORTED_DTYPES = frozenset("?bhilqBHILQefd")  # bool, integers, float16/32/64


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Node:
    """One value of the traced expression (compared by identity: the graph is a DAG)."""

    kind: str
    dtype: np.dtype
    shape: tuple
    args: tuple = ()
    op: str = ""            # ufunc name or reduction name
    loop: tuple = ()        # dtypes numpy's loop computes in, one per argument (ufunc, where)
    weak: bool = False      # a Python scalar (NEP 50): the other operand's dtype wins
    value: object = None    # CONST: the value; SCALAR: the argument index; REDUCE: a Reduction;
    #                         ARRAY: an ArrayView
    phase: int = ELEMENT_PHASE

    @property
    def ndim(self) -> int:
        return len(self.shape)


@dataclasses.dataclass(frozen=True, slots=True)
class ArrayView:
    """How a kernel reads an array argument. `views` are numpy view operations (basic indexing,
    and transposes before it) taken of the argument at launch time, giving an array of
    `source_shape` that the kernel receives; `dims[d]` is the dimension of that array which
    dimension d of the node walks, None for a new axis. New axes and transposes alone need no
    view: they only change which index variable reads which dimension."""

    index: int
    views: tuple
    source_shape: tuple
    dims: tuple

    @property
    def source(self) -> tuple:
        """What identifies the kernel parameter: the argument and the views taken of it."""
        return (self.index, self.views)


@dataclasses.dataclass(frozen=True, slots=True)
class Reduction:
    """sum / prod / max / min / mean / all / any over `axes` (sorted, normalised)."""

    op: str
    axes: tuple
    keepdims: bool
    acc_dtype: np.dtype     # what the kernel accumulates in (float64 for float sums)


def check_dtype(dtype, what: str) -> np.dtype:
    dtype = np.dtype(dtype)
    if not dtype.isnative:
        raise TypeError(f"gpunb.fuse: {what} has non-native byte order ({dtype}); convert with "
                        "x.astype(x.dtype.newbyteorder('='))")
    if dtype.char not in SUPPORTED_DTYPES:
        raise TypeError(f"gpunb.fuse: {what} has dtype {dtype}, which fused kernels do not "
                        "support; use bool, (unsigned) integers, float16, float32 or float64 "
                        "(complex is not supported yet)")
    return dtype


def _resolve_spec(node: Node):
    """What numpy's resolve_dtypes takes for an operand: a dtype, or int/float for weak ones."""
    if node.weak and node.dtype.kind in "iuf":
        return int if node.dtype.kind in "iu" else float
    return node.dtype


def weak_example(node: Node):
    """A value np.result_type treats like this operand (a Python scalar is weak)."""
    if node.weak and node.dtype.kind in "iuf":
        return 0 if node.dtype.kind in "iu" else 0.0
    return node.dtype


def ufunc_loop(ufunc: np.ufunc, operands: list) -> tuple:
    """(operand dtypes, result dtype) of the loop numpy runs for these operands."""
    spec = tuple(_resolve_spec(n) for n in operands) + (None,) * ufunc.nout
    try:
        dtypes = ufunc.resolve_dtypes(spec)
    except TypeError as exc:
        names = ", ".join(str(n.dtype) + (" (Python scalar)" if n.weak else "") for n in operands)
        raise TypeError(f"gpunb.fuse: np.{ufunc.__name__} does not accept ({names}): {exc}") \
            from None
    loop = tuple(np.dtype(d) for d in dtypes[:ufunc.nin])
    result = np.dtype(dtypes[ufunc.nin])
    for dtype in loop + (result,):
        check_dtype(dtype, f"np.{ufunc.__name__}'s loop")
    return loop, result


def result_type(nodes: list) -> np.dtype:
    """np.result_type with NEP 50's weak Python scalars (np.where's rule)."""
    if all(n.weak for n in nodes):
        return np.result_type(*[n.dtype for n in nodes])
    return np.result_type(*[weak_example(n) for n in nodes])


def reduction_dtype(op: str, dtype: np.dtype, requested=None) -> tuple:
    """(numpy's result dtype, the accumulator dtype) of a reduction over `dtype`, or with the
    dtype= the caller asked for (the operand is converted to it first)."""
    if requested is not None and op not in ("all", "any", "max", "min"):
        result = np.dtype(requested)
        if op == "mean" and result.kind != "f":
            return result, np.dtype(np.float64)
        return result, np.dtype(np.float64) if result.kind == "f" else result
    if op in ("all", "any"):
        return np.dtype(np.bool_), np.dtype(np.bool_)
    if op in ("max", "min"):
        return dtype, dtype
    if op == "mean":
        result = dtype if dtype.kind == "f" else np.dtype(np.float64)
        return result, np.dtype(np.float64)
    # sum / prod: numpy widens small integers (and bool) to the platform integer
    if dtype.kind in "b":
        result = np.dtype(np.int64)
    elif dtype.kind == "i":
        result = np.dtype(np.int64)
    elif dtype.kind == "u":
        result = np.dtype(np.uint64)
    else:
        result = dtype
    # float sums accumulate in float64: numpy's pairwise float32 sum is far more accurate than
    # a naive float32 loop, and a float64 accumulator matches it to within float32 rounding
    acc = np.dtype(np.float64) if result.kind == "f" else result
    return result, acc


def reduction_identity(op: str, acc_dtype: np.dtype):
    """The starting value of a reduction in its accumulator dtype."""
    if op in ("sum", "mean"):
        return 0
    if op == "prod":
        return 1
    if op == "all":
        return True
    if op == "any":
        return False
    if acc_dtype.kind == "b":
        return op == "min"
    if acc_dtype.kind == "f":
        return -np.inf if op == "max" else np.inf
    info = np.iinfo(acc_dtype)
    return int(info.min) if op == "max" else int(info.max)


def has_identity(op: str) -> bool:
    """numpy raises for a zero-size max/min; the others have an identity."""
    return op not in ("max", "min")


def numpy_reduction_name(op: str) -> str:
    return {"max": "maximum", "min": "minimum"}.get(op, op)


def walk(root: Node, stop: Node | None = None) -> list:
    """Every node the root depends on, each once, operands before users (not looking below
    `stop`)."""
    order: list = []
    seen: set = set()
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        if node is stop:
            continue
        stack.extend((arg, False) for arg in reversed(node.args) if id(arg) not in seen)
    return order


__all__ = ["ARRAY", "CAST", "CONST", "REDUCE", "SCALAR", "UFUNC", "WHERE", "ArrayView", "Node",
           "Reduction", "reduction_dtype", "reduction_identity", "result_type", "ufunc_loop",
           "walk"]
