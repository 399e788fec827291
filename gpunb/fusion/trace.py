"""Tracing for gpunb.fuse: proxy arrays run the user's function and record an expression graph.

numpy's operators, ufuncs (through __array_ufunc__), np.where and the reductions (through
__array_function__), constants such as np.inf, and basic indexing (`x[:, np.newaxis]`, slices,
integers, `.T`) build graph nodes with numpy's broadcasting and NEP 50 dtype promotion.
"""

from __future__ import annotations

import dataclasses
import operator

import numpy as np

from gpunb.fusion import graph as g
from gpunb.fusion.views import array_view, expand_ellipsis, fold_axes

_REDUCE_UFUNCS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
                  "logical_and": "all", "logical_or": "any"}
_REDUCE_FUNCTIONS = {"sum": "sum", "prod": "prod", "max": "max", "min": "min", "amax": "max",
                     "amin": "min", "mean": "mean", "all": "all", "any": "any"}
SUPPORTED_FUNCTIONS = ("np.where(condition, x, y)", "np.clip", "np.round/np.around (decimals=0)",
                       "np.sum", "np.prod", "np.max/amax", "np.min/amin", "np.mean", "np.all",
                       "np.any", "np.transpose", "np.expand_dims")


def unsupported(what: str, hint: str = "") -> TypeError:
    tail = f"; {hint}" if hint else ""
    return TypeError(f"gpunb.fuse: {what} is not supported inside a fused function{tail}")


@dataclasses.dataclass
class Trace:
    """What tracing produced: the graph's root and the range checks of Python int arguments."""

    root: g.Node
    int_checks: list        # (argument index, dtype): a Python int argument must fit dtype


class Tracer:
    """One trace's leaves (array and scalar arguments) and the int range checks it collects."""

    def __init__(self):
        self.int_checks: list = []

    def array(self, index: int, array) -> g.Node:
        shape = tuple(int(n) for n in array.shape)
        dtype = g.check_dtype(array.dtype, f"argument {index}")
        view = g.ArrayView(index, (), shape, tuple(range(len(shape))))
        return g.Node(g.ARRAY, dtype, shape, value=view)

    def scalar(self, index: int, value) -> g.Node:
        """A scalar argument: Python int and float are weak (NEP 50), bool, numpy scalars and
        0-d arrays have their dtype."""
        cls = type(value)
        if cls is bool:
            return g.Node(g.SCALAR, np.dtype(np.bool_), (), value=index, phase=g.SCALAR_PHASE)
        if isinstance(value, (int, float)) and not isinstance(value, np.generic):
            if isinstance(value, int):
                _check_python_int(value, np.dtype(np.int64), f"argument {index}")
            dtype = np.dtype(np.int64 if isinstance(value, int) else np.float64)
            return g.Node(g.SCALAR, dtype, (), weak=True, value=index, phase=g.SCALAR_PHASE)
        dtype = g.check_dtype(value.dtype, f"argument {index}")
        return g.Node(g.SCALAR, dtype, (), value=index, phase=g.SCALAR_PHASE)


_tracer: list = []  # the Tracer of the trace in progress (traces do not nest)


def constant(value) -> g.Node:
    """A value the function uses that is not an argument: Python scalars are weak, numpy scalars
    (np.float64 too, though it subclasses float) and 0-d arrays are not."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        dtype = g.check_dtype(value.dtype, f"constant {value!r}")
        return g.Node(g.CONST, dtype, (), value=value.item(), phase=g.SCALAR_PHASE)
    if isinstance(value, bool):
        return g.Node(g.CONST, np.dtype(np.bool_), (), value=value, phase=g.SCALAR_PHASE)
    if isinstance(value, int):
        _check_python_int(value, np.dtype(np.int64), "a Python int constant")
        return g.Node(g.CONST, np.dtype(np.int64), (), weak=True, value=value,
                      phase=g.SCALAR_PHASE)
    if isinstance(value, float):
        return g.Node(g.CONST, np.dtype(np.float64), (), weak=True, value=value,
                      phase=g.SCALAR_PHASE)
    if isinstance(value, complex):
        raise unsupported("a complex constant")
    if isinstance(value, np.ndarray):
        raise unsupported(f"an array that is not an argument (shape {value.shape})",
                          "pass it to the fused function as an argument")
    raise unsupported(f"a value of type {type(value).__name__}")


def _check_python_int(value: int, dtype: np.dtype, what: str) -> None:
    info = np.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise OverflowError(f"Python integer {value} out of bounds for {dtype} ({what})")


def node_of(value) -> g.Node:
    return value.node if isinstance(value, Proxy) else constant(value)


def _phase(nodes) -> int:
    phases = {n.phase for n in nodes}
    if g.ELEMENT_PHASE in phases and g.REDUCED_PHASE in phases:
        raise unsupported("combining a reduction's result with another array",
                          "after the reduction only scalars and constants may follow, as in "
                          "np.sqrt(x.sum(axis=1)) or x.max() * 2")
    return max(phases)


# ---- building nodes -----------------------------------------------------------------------------


def apply_ufunc(ufunc: np.ufunc, values: tuple, from_operator: bool = False) -> Proxy:
    if ufunc.nout != 1 or ufunc.nin not in (1, 2):
        raise unsupported(f"np.{ufunc.__name__} (it has {ufunc.nout} outputs)")
    from gpunb.fusion.codegen import supports_ufunc

    if not supports_ufunc(ufunc.__name__):
        raise unsupported(f"np.{ufunc.__name__}",
                          "write it with supported ufuncs, or use a gpunb.cuda.jit kernel")
    nodes = [node_of(v) for v in values]
    if len(nodes) != ufunc.nin:
        raise TypeError(f"gpunb.fuse: np.{ufunc.__name__} takes {ufunc.nin} argument(s), got "
                        f"{len(nodes)}")
    shape = _broadcast(nodes)
    loop, result = g.ufunc_loop(ufunc, nodes)
    loop = _weak_int_loop(ufunc.__name__, nodes, loop)
    if ufunc.__name__ == "nextafter" and loop[0] == np.float16:
        raise unsupported("np.nextafter in float16", "convert to float32 first")
    weak = from_operator and all(n.weak for n in nodes)
    if weak:
        result = np.dtype(np.float64 if result.kind == "f" else np.int64) \
            if result.kind in "iuf" else result
    node = g.Node(g.UFUNC, result, shape, tuple(nodes), ufunc.__name__, loop, weak=weak,
                  phase=_phase(nodes))
    return Proxy(node)


_COMPARISONS = {"less", "less_equal", "greater", "greater_equal", "equal", "not_equal"}


def _weak_int_loop(name: str, nodes: list, loop: tuple) -> tuple:
    """numpy's rules for a Python int next to a narrower integer array: comparisons compare the
    true values (int8 array == 300 is False); other ufuncs raise OverflowError if it does not fit.
    """
    if not any(n.weak and n.dtype.kind in "iu" for n in nodes) or all(n.weak for n in nodes):
        return loop
    if name in _COMPARISONS and all(d.kind in "iu" for d in loop) and \
            all(d.itemsize < 8 for d in loop):
        return (np.dtype(np.int64),) * len(loop)
    for node, dtype in zip(nodes, loop, strict=True):
        if node.weak and node.dtype.kind in "iu" and dtype.kind in "iu":
            if node.kind == g.CONST:
                _check_python_int(node.value, dtype, f"np.{name}")
            elif node.kind == g.SCALAR and _tracer:
                _tracer[-1].int_checks.append((node.value, dtype))
    return loop


def _broadcast(nodes) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*[n.shape for n in nodes]))
    except ValueError:
        shapes = " ".join(str(n.shape) for n in nodes)
        raise ValueError(f"operands could not be broadcast together with shapes {shapes}") \
            from None


def where(condition, x, y) -> Proxy:
    nodes = [node_of(v) for v in (condition, x, y)]
    shape = _broadcast(nodes)
    dtype = g.check_dtype(g.result_type(nodes[1:]), "np.where's result")
    loop = (np.dtype(np.bool_), dtype, dtype)
    return Proxy(g.Node(g.WHERE, dtype, shape, tuple(nodes), "where", loop,
                        phase=_phase(nodes)))


def astype(value, dtype) -> Proxy:
    node = node_of(value)
    dtype = g.check_dtype(dtype, "astype's target")
    return Proxy(g.Node(g.CAST, dtype, node.shape, (node,), "astype", (node.dtype,),
                        phase=node.phase))


def reduce(value, op: str, axis=None, keepdims: bool = False, dtype=None) -> Proxy:
    node = node_of(value)
    if dtype is not None:
        dtype = g.check_dtype(dtype, f"{op}'s dtype=")
        if op != "mean":  # numpy's mean converts the sum, not the elements
            node = astype(Proxy(node), dtype).node
    if node.phase == g.REDUCED_PHASE:
        raise unsupported("a second reduction", "fuse one reduction per function; split the "
                          "computation into two fused functions")
    axes = _normalize_axes(axis, node.ndim)
    result, acc = g.reduction_dtype(op, node.dtype, dtype)
    reduction = g.Reduction(op, axes, bool(keepdims), acc)
    shape = tuple((1 if keepdims else None) if k in axes else n
                  for k, n in enumerate(node.shape))
    shape = tuple(n for n in shape if n is not None)
    return Proxy(g.Node(g.REDUCE, result, shape, (node,), op, value=reduction,
                        phase=g.REDUCED_PHASE))


def _normalize_axes(axis, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(out))


# ---- views: basic indexing, newaxis, transposes ------------------------------------------------
#
# Slicing or integer indexing of an array argument is recorded as numpy view operations,
# ("index", key) and ("axes", mapping), taken of the real array at launch time; the kernel reads
# that view with its own shape and strides. New axes and transposes of arguments and of computed
# values only remap dimensions: they are pushed down to the arguments' ArrayView.dims.


def index(node: g.Node, key) -> Proxy:
    key = key if isinstance(key, tuple) else (key,)
    for item in key:
        if not (item is None or item is Ellipsis or isinstance(item, (slice, int, np.integer))) \
                or isinstance(item, (bool, np.bool_)):
            raise unsupported(f"indexing with {type(item).__name__}",
                              "only basic indexing (integers, slices, np.newaxis, ...) is fused")
    expanded = expand_ellipsis(key, node.ndim)
    only_axes = all(item is None or item == slice(None) for item in expanded)
    if node.kind == g.ARRAY and not only_axes:
        hashable = tuple(("slice", i.start, i.stop, i.step) if isinstance(i, slice) else
                         None if i is None else int(i) for i in expanded)
        return Proxy(array_view(node, ("index", hashable)))
    if not only_axes:
        raise unsupported("slicing or integer indexing of a computed value",
                          "index the function's array arguments, or only insert axes "
                          "(x[:, np.newaxis]) in computed values")
    mapping, k = [], 0
    for item in expanded:
        if item is None:
            mapping.append(None)
        else:
            mapping.append(k)
            k += 1
    return Proxy(remap(node, tuple(mapping)))


def remap(node: g.Node, mapping: tuple, memo: dict | None = None) -> g.Node:
    """The node seen through new dimensions: mapping[j] is the node dimension that new dimension
    j walks, or None for an inserted size-1 dimension (pushed down to the array arguments)."""
    if node.phase == g.REDUCED_PHASE:
        raise unsupported("indexing or transposing a reduction's result",
                          "reduce last, and reshape the result after the call")
    memo = {} if memo is None else memo
    found = memo.get((id(node), mapping))
    if found is not None:
        return found
    if node.ndim == 0:
        shape = (1,) * len(mapping)
        result = node if not mapping else dataclasses.replace(node, shape=shape)
    elif node.kind == g.ARRAY:
        result = fold_axes(node, mapping)
    else:
        args = []
        for arg in node.args:
            offset = node.ndim - arg.ndim  # operands broadcast from the right
            arg_mapping = tuple(None if m is None or m < offset else m - offset for m in mapping)
            args.append(remap(arg, arg_mapping, memo))
        shape = tuple(1 if m is None else node.shape[m] for m in mapping)
        result = dataclasses.replace(node, shape=shape, args=tuple(args))
    memo[(id(node), mapping)] = result
    return result


def transpose(node: g.Node, axes=None) -> Proxy:
    if axes is None or axes == ():
        axes = tuple(reversed(range(node.ndim)))
    elif len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    axes = tuple(operator.index(a) % max(node.ndim, 1) for a in axes)
    if sorted(axes) != list(range(node.ndim)):
        raise ValueError("axes don't match array")
    return Proxy(remap(node, axes))


# ---- the proxy ----------------------------------------------------------------------------------


def _binary(ufunc: np.ufunc):
    def op(self, other):
        return apply_ufunc(ufunc, (self, other), from_operator=True)

    def rop(self, other):
        return apply_ufunc(ufunc, (other, self), from_operator=True)

    return op, rop


def _compare(ufunc: np.ufunc):
    def op(self, other):
        return apply_ufunc(ufunc, (self, other))

    return op


def _reduction_method(op: str):
    def method(self, *args, **kwargs):
        return _reduce_function(op, (self, *args), kwargs, method=True)

    method.__name__ = method.__qualname__ = op
    return method


class Proxy:
    """An array (or scalar argument) of a fused function while it is traced."""

    __array_priority__ = 1000.0
    __hash__ = None  # == is elementwise, as for numpy arrays
    _gpunb_traced = True  # what a fused function called while tracing looks for (inlining)

    def __init__(self, node: g.Node):
        self.node = node

    def __repr__(self) -> str:
        return f"<gpunb.fuse traced value shape={self.shape} dtype={self.dtype}>"

    @property
    def dtype(self) -> np.dtype:
        return self.node.dtype

    @property
    def shape(self) -> tuple:
        return self.node.shape

    @property
    def ndim(self) -> int:
        return self.node.ndim

    @property
    def size(self) -> int:
        return int(np.prod(self.node.shape, dtype=np.int64))

    @property
    def T(self) -> Proxy:
        return transpose(self.node)

    # ---- numpy's protocols ----

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "reduce" and ufunc.__name__ in _REDUCE_UFUNCS:
            extra = set(kwargs) - {"axis", "keepdims", "dtype"}
            if extra:
                raise unsupported(f"np.{ufunc.__name__}.reduce with {sorted(extra)}")
            return reduce(inputs[0], _REDUCE_UFUNCS[ufunc.__name__], kwargs.get("axis", 0),
                          kwargs.get("keepdims", False), kwargs.get("dtype"))
        if method != "__call__":
            raise unsupported(f"np.{ufunc.__name__}.{method}")
        if kwargs:
            raise unsupported(f"np.{ufunc.__name__} with keyword arguments {sorted(kwargs)}",
                              "out=, where=, dtype= and casting= cannot be fused")
        return apply_ufunc(ufunc, inputs)

    def __array_function__(self, func, types, args, kwargs):
        name = func.__name__
        if name == "where":
            if len(args) + len(kwargs) != 3 or kwargs:
                raise unsupported("np.where with one argument (np.nonzero)",
                                  "use np.where(condition, x, y)")
            return where(*args)
        if name in _REDUCE_FUNCTIONS:
            return _reduce_function(_REDUCE_FUNCTIONS[name], args, kwargs)
        if name == "clip":
            return _clip(*args, **kwargs)
        if name in ("round", "around"):
            decimals = kwargs.get("decimals", args[1] if len(args) > 1 else 0)
            if decimals != 0 or set(kwargs) - {"decimals"}:
                raise unsupported(f"np.{name} with decimals={decimals}", "use np.rint")
            return apply_ufunc(np.rint, (args[0],))
        if name == "transpose":
            return transpose(node_of(args[0]), kwargs.get("axes", args[1] if len(args) > 1
                                                         else None))
        if name == "expand_dims":
            return _expand_dims(args[0], kwargs.get("axis", args[1] if len(args) > 1 else None))
        raise unsupported(f"np.{name}", "supported: numpy's ufuncs (np.sqrt, np.exp, ...), "
                          "operators, " + ", ".join(SUPPORTED_FUNCTIONS))

    # ---- operators ----

    __add__, __radd__ = _binary(np.add)
    __sub__, __rsub__ = _binary(np.subtract)
    __mul__, __rmul__ = _binary(np.multiply)
    __truediv__, __rtruediv__ = _binary(np.true_divide)
    __floordiv__, __rfloordiv__ = _binary(np.floor_divide)
    __mod__, __rmod__ = _binary(np.remainder)
    __and__, __rand__ = _binary(np.bitwise_and)
    __or__, __ror__ = _binary(np.bitwise_or)
    __xor__, __rxor__ = _binary(np.bitwise_xor)
    __lshift__, __rlshift__ = _binary(np.left_shift)
    __rshift__, __rrshift__ = _binary(np.right_shift)
    __lt__ = _compare(np.less)
    __le__ = _compare(np.less_equal)
    __gt__ = _compare(np.greater)
    __ge__ = _compare(np.greater_equal)
    __eq__ = _compare(np.equal)  # type: ignore[assignment]
    __ne__ = _compare(np.not_equal)  # type: ignore[assignment]

    def __pow__(self, other):
        return apply_ufunc(np.power, (self, other), from_operator=True)

    def __rpow__(self, other):
        return apply_ufunc(np.power, (other, self), from_operator=True)

    def __neg__(self):
        return apply_ufunc(np.negative, (self,), from_operator=True)

    def __pos__(self):
        return apply_ufunc(np.positive, (self,), from_operator=True)

    def __abs__(self):
        return apply_ufunc(np.absolute, (self,), from_operator=True)

    def __invert__(self):
        return apply_ufunc(np.invert, (self,), from_operator=True)

    def __bool__(self):
        raise TypeError("gpunb.fuse: the truth value of a traced array is not known while "
                        "tracing (no if/and/or/not on arrays); use np.where(condition, x, y), "
                        "np.logical_and/or/not or & | ~")

    def __float__(self):
        raise TypeError("gpunb.fuse: a traced value cannot become a Python number; use "
                        "x.astype(np.float64)")

    __int__ = __index__ = __complex__ = __float__

    def __len__(self):
        raise TypeError("gpunb.fuse: len() of a traced array; use x.shape[0]")

    def __iter__(self):
        raise TypeError("gpunb.fuse: iterating over a traced array is not supported")

    def __getitem__(self, key):
        return index(self.node, key)

    # ---- methods ----

    def astype(self, dtype, copy: bool = True) -> Proxy:
        return astype(self, dtype)

    def transpose(self, *axes) -> Proxy:
        return transpose(self.node, axes)

    def clip(self, a_min=None, a_max=None) -> Proxy:
        return _clip(self, a_min, a_max)

    def round(self, decimals: int = 0) -> Proxy:
        return self.__array_function__(np.round, (), (self, decimals), {})

    # numpy's parameters, in numpy's order (x.sum(0, None, None, True) is keepdims=True);
    # out=, initial= and where= are refused by name
    sum, prod, mean, max, min, all, any = (  # noqa: A003 - numpy's method names
        _reduction_method(op) for op in ("sum", "prod", "mean", "max", "min", "all", "any"))

    def __round__(self, ndigits=None):
        return self.round(0 if ndigits is None else ndigits)

    def __setitem__(self, key, value):
        raise unsupported("assigning into a traced array (x[...] = ...)",
                          "compute a new array instead, e.g. np.where(mask, value, x)")

    def __getattr__(self, name: str):
        # only reached for what Proxy lacks: numpy methods and attributes gpunb.fuse cannot
        # compile (x.std(), x.argmax(), x.reshape(...), x.real) - named at the user's line.
        # An AttributeError too, so hasattr() and getattr(x, name, default) still work.
        if name.startswith("_"):
            raise AttributeError(name)
        raise _UnsupportedAttribute(
            f"gpunb.fuse: x.{name} is not supported inside a fused function; supported on "
            "traced arrays: operators, .astype, .T, .transpose, .clip, .round, .sum, .prod, "
            ".mean, .max, .min, .all, .any, .shape, .ndim, .size, .dtype and basic indexing "
            "- or write a @cuda.jit kernel")


class _UnsupportedAttribute(TypeError, AttributeError):
    """The tracer's report (a TypeError, as every report is) of an attribute a traced array
    lacks, also an AttributeError so that hasattr() keeps working on traced arrays."""


def _reduce_function(op: str, args: tuple, kwargs: dict, method: bool = False) -> Proxy:
    names = ("a", "axis", "dtype", "out", "keepdims") if op in ("sum", "prod", "mean") else \
        ("a", "axis", "out", "keepdims")
    spelled = f"x.{op}" if method else f"np.{op}"
    if len(args) > len(names):
        raise unsupported(f"{spelled} with {len(args) - 1} positional arguments",
                          f"it takes {', '.join(names[1:])}")
    bound = dict(zip(names, args, strict=False))
    bound.update(kwargs)
    if bound.get("out") is not None or set(bound) - set(names):
        extra = sorted(set(bound) - set(names)) or ["out"]
        raise unsupported(f"{spelled} with {extra}")
    return reduce(bound["a"], op, bound.get("axis"), bound.get("keepdims", False),
                  bound.get("dtype"))


def _clip(a, a_min=None, a_max=None, **kwargs) -> Proxy:
    a_min = kwargs.pop("min", a_min)
    a_max = kwargs.pop("max", a_max)
    if kwargs:
        raise unsupported(f"np.clip with {sorted(kwargs)}")
    result = a
    if a_min is not None:
        result = apply_ufunc(np.maximum, (result, a_min))
    if a_max is not None:
        result = apply_ufunc(np.minimum, (result, a_max))
    return result if isinstance(result, Proxy) else Proxy(node_of(result))


def _expand_dims(a, axis) -> Proxy:
    node = node_of(a)
    axes = axis if isinstance(axis, tuple) else (axis,)
    ndim = node.ndim + len(axes)
    axes = {operator.index(x) % ndim for x in axes}
    mapping, k = [], 0
    for j in range(ndim):
        if j in axes:
            mapping.append(None)
        else:
            mapping.append(k)
            k += 1
    return Proxy(remap(node, tuple(mapping)))


def trace(func, args: tuple, kwargs: dict, scalar_positions: set) -> Trace:
    """Run `func` on proxies of its arguments (argument i is a scalar if i is in
    scalar_positions, else an array); the graph of what it returned."""
    __tracebackhide__ = True  # noqa: F841 - IPython shows an error in `func` at its own line
    tracer = Tracer()
    values = list(args) + list(kwargs.values())
    proxies = []
    for k, value in enumerate(values):
        if k in scalar_positions:
            proxies.append(Proxy(tracer.scalar(k, value)))
        else:
            proxies.append(Proxy(tracer.array(k, value)))
    _tracer.append(tracer)
    try:
        result = func(*proxies[:len(args)], **dict(zip(kwargs, proxies[len(args):],
                                                       strict=True)))
    finally:
        _tracer.pop()
    if isinstance(result, (tuple, list)):
        raise unsupported("returning several values", "return one array")
    root = node_of(result)
    return Trace(root, tracer.int_checks)


__all__ = ["Proxy", "Trace", "trace"]
