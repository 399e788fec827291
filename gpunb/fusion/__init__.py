"""gpunb.fuse: a numpy-style elementwise function (and a final reduction) as one gpunb kernel.

    @gpunb.fuse
    def clamp_masked(points, mask):
        return np.where(mask[:, np.newaxis], np.inf, points)

The function is traced with proxy arrays (trace.py) into an expression graph (graph.py) with
numpy's broadcasting and dtype promotion; the graph becomes the source of ordinary gpunb kernels
(codegen.py, kernels.py) compiled by gpunb.cuda.jit and its cache (plan.py), launched on grids
that fill the device (execute.py). Like cupy.fuse, a function is traced once per argument
signature (types and shapes): the traced code must not depend on argument values.
"""

from __future__ import annotations

import functools
import keyword
import re
import threading

import numpy as np

_PYTHON_SCALARS = (bool, int, float)


class FusedFunction:
    """What @gpunb.fuse returns: call it like the numpy function it wraps."""

    def __init__(self, func, kernel_name: str | None = None):
        functools.update_wrapper(self, func)
        self.func = func
        self.kernel_name = _identifier(kernel_name or func.__name__)
        self._plans: dict = {}
        self._lock = threading.Lock()
        self.last_launches: tuple = ()  # ((kernel name, grid, block), ...) of the latest call

    def __repr__(self) -> str:
        return f"<gpunb.fuse {self.kernel_name}>"

    def __call__(self, *args, **kwargs):
        from gpunb.fusion.execute import run

        values = [_normalise(v) for v in args] + [_normalise(v) for v in kwargs.values()]
        plan = self._plan(values, len(args), tuple(kwargs))
        result = run(plan, values)
        self.last_launches = tuple((s.source.name, s.grid, 256) for s in plan.steps
                                   if s.grid is not None and plan.size)
        return result

    # ---- inspection ----

    def kernels(self, *args, **kwargs) -> list:
        """The gpunb kernels (Dispatchers) a call with these arguments launches, in order;
        each has inspect_ptx(), inspect_types(), resource_usage() ... once it has run."""
        return [step.kernel for step in self._plan_for(args, kwargs).steps]

    def sources(self, *args, **kwargs) -> list:
        """The generated Python source of each kernel a call with these arguments launches."""
        return [step.source.text for step in self._plan_for(args, kwargs).steps]

    def _plan_for(self, args: tuple, kwargs: dict):
        values = [_normalise(v) for v in args] + [_normalise(v) for v in kwargs.values()]
        return self._plan(values, len(args), tuple(kwargs))

    # ---- plans ----

    def _plan(self, values: list, n_positional: int, kw_names: tuple):
        from gpunb.runtime.target import active_target

        target = active_target()
        key = (target, n_positional, kw_names, tuple(_signature(v) for v in values))
        plan = self._plans.get(key)
        if plan is None:
            with self._lock:
                plan = self._plans.get(key)
                if plan is None:
                    plan = self._build(values, n_positional, kw_names, target)
                    self._plans[key] = plan
        return plan

    def _build(self, values: list, n_positional: int, kw_names: tuple, target: str):
        from gpunb.fusion.execute import device_capacity
        from gpunb.fusion.plan import build_plan
        from gpunb.fusion.trace import trace

        scalars = {k for k, v in enumerate(values) if _is_scalar(v)}
        traced = trace(self.func, tuple(values[:n_positional]),
                       dict(zip(kw_names, values[n_positional:], strict=True)), scalars)
        kinds = [_array_kind(v) for k, v in enumerate(values) if k not in scalars]
        result_kind = next((kind for kind in kinds if kind != "numpy"), "numpy")
        plan = build_plan(self.kernel_name, traced.root, traced.int_checks, target,
                          device_capacity(target), result_kind)
        plan.zero_d_array = _numpy_returns_array(traced.root, values)
        return plan


def fuse(func=None, *, kernel_name: str | None = None):
    """Decorator: `@gpunb.fuse` or `@gpunb.fuse(kernel_name="...")`, as cupy.fuse."""
    if func is None:
        return lambda f: FusedFunction(f, kernel_name)
    if not callable(func):
        raise TypeError(f"gpunb.fuse decorates a function, not {type(func).__name__}")
    return FusedFunction(func, kernel_name)


def _numpy_returns_array(node, values: list) -> bool:
    """For a 0-d result: whether numpy returns a 0-d array rather than a scalar (np.where and
    astype of a 0-d array do; ufuncs and reductions give scalars)."""
    from gpunb.fusion import graph as g

    if node.kind == g.WHERE:
        return True
    if node.kind == g.CAST:
        return _numpy_returns_array(node.args[0], values)
    if node.kind == g.SCALAR:
        return isinstance(values[node.value], np.ndarray)
    return False


def _identifier(name: str) -> str:
    name = re.sub(r"\W", "_", name) or "fused"
    if name[0].isdigit() or keyword.iskeyword(name):
        name = "fused_" + name
    return name


def _normalise(value):
    """Arguments as the tracer takes them: scalars, or objects with shape and dtype (lists and
    tuples become numpy arrays, as numpy's ufuncs take them)."""
    if isinstance(value, (list, tuple)):
        value = np.asarray(value)
    if isinstance(value, complex) or getattr(getattr(value, "dtype", None), "kind", "") == "c":
        raise TypeError("gpunb.fuse: complex arguments are not supported yet")
    if isinstance(value, (*_PYTHON_SCALARS, np.generic)):
        return value
    if getattr(value, "shape", None) is None or getattr(value, "dtype", None) is None:
        raise TypeError(f"gpunb.fuse: an argument of type {type(value).__name__} is neither an "
                        "array nor a scalar")
    return value


def _is_scalar(value) -> bool:
    return isinstance(value, (*_PYTHON_SCALARS, np.generic)) or len(value.shape) == 0


def _signature(value):
    cls = value.__class__
    if cls in _PYTHON_SCALARS:
        return cls
    if isinstance(value, np.generic):
        return value.dtype
    return (cls, value.dtype, tuple(value.shape))


def _array_kind(value) -> str:
    if isinstance(value, np.ndarray):
        return "numpy"
    module = type(value).__module__.split(".")[0]
    if module in ("cupy", "torch"):
        return module
    return "device"


__all__ = ["FusedFunction", "fuse"]
