"""gpunb.fuse: a numpy-style elementwise function (and a final reduction) as one gpunb kernel.

    @gpunb.fuse
    def clamp_masked(points, mask):
        return np.where(mask[:, np.newaxis], np.inf, points)

The function is traced with proxy arrays (trace.py) into an expression graph (graph.py) with
numpy's broadcasting and dtype promotion; the graph becomes the source of ordinary gpunb kernels
(codegen.py, kernels.py) compiled by gpunb.cuda.jit and its cache (plan.py), launched on grids
that fill the device (execute.py). Like cupy.fuse, a function is traced once per argument
signature (types and shapes): the traced code must not depend on argument values. Unlike
cupy.fuse, plans are dropped when what the function reads changes (a global, a helper it calls,
their globals): the cache's fingerprint of the function, checked by identity on every call.
"""

from __future__ import annotations

import functools
import keyword
import re

import numpy as np

from gpunb.cache.fingerprint import still_valid
from gpunb.foundation import forksafe
from gpunb.fusion.arguments import prepare, result_kind, signature
from gpunb.fusion.codegen import BLOCK

_NOT_CHECKED = (({}.get, "never", object()),)  # a watch list that is never valid


class FusedFunction:
    """What @gpunb.fuse returns: call it like the numpy function it wraps."""

    _gpunb_fused = True  # the cache's fingerprint follows such a global into .func

    def __init__(self, func, kernel_name: str | None = None):
        functools.update_wrapper(self, func)
        self.func = func
        self.kernel_name = _identifier(kernel_name or func.__name__)
        self._plans: dict = {}
        self._lock = forksafe.lock()
        self._watch: tuple = _NOT_CHECKED  # the fingerprint's watch list
        self._digest: str | None = None
        self.last_launches: tuple = ()  # ((kernel name, grid, block), ...) of the latest call

    def __repr__(self) -> str:
        return f"<gpunb.fuse {self.kernel_name}>"

    def __call__(self, *args, **kwargs):
        from gpunb.fusion.execute import run

        __tracebackhide__ = True  # noqa: F841 - IPython shows the user's frames, not this one
        if _traced(args, kwargs):  # called by a fused function being traced: inline, as cupy
            return self.func(*args, **kwargs)
        try:
            plan, values = self._plan_for(args, kwargs)
        except TypeError as exc:
            from gpunb.fusion.errors import is_report, located

            if not is_report(exc):
                raise  # not a deliberate report about the user's code: keep every frame
            from gpunb.jit.options import user_location

            # where the tracer's report names no line of the function (an argument it cannot
            # take), the call of the fused function is the line
            raise located(exc, user_location()) from None
        result = run(plan, values)
        self.last_launches = tuple((s.source.name, s.grid, BLOCK) for s in plan.steps
                                   if s.grid is not None and plan.size)
        return result

    # ---- inspection ----

    def kernels(self, *args, **kwargs) -> list:
        """The gpunb kernels (Dispatchers) a call with these arguments launches, in order;
        each has inspect_ptx(), inspect_types(), resource_usage() ... once it has run."""
        return [step.kernel for step in self._plan_for(args, kwargs)[0].steps]

    def compiled_kernels(self) -> list:
        """The kernels (GPU functions) every call so far compiled, for `%gpucache status`,
        `explain` and `clear`."""
        out: list = []
        for plan in list(self._plans.values()):
            out.extend(s.kernel for s in plan.steps if all(s.kernel is not k for k in out))
        return out

    def sources(self, *args, **kwargs) -> list:
        """The generated Python source of each kernel a call with these arguments launches."""
        return [step.source.text for step in self._plan_for(args, kwargs)[0].steps]

    # ---- plans ----

    def _plan_for(self, args: tuple, kwargs: dict) -> tuple:
        """(the plan for these arguments, the argument values as the plan takes them)."""
        from gpunb.runtime.target import active_target

        __tracebackhide__ = True  # noqa: F841 - an error in the user's function shows its frame

        target = active_target()
        prepared = [prepare(v, target) for v in (*args, *kwargs.values())]
        values = [v for v, _ in prepared]
        kinds = [kind for _, kind in prepared]
        key = (target, len(args), tuple(kwargs),
               tuple(signature(v, kind) for v, kind in prepared))
        if not still_valid(self._watch):
            self._revalidate()
        plan = self._plans.get(key)
        if plan is None:
            with self._lock:
                plan = self._plans.get(key)
                if plan is None:
                    plan = self._build(values, kinds, len(args), tuple(kwargs), target)
                    self._plans[key] = plan
        return plan, values

    def _revalidate(self) -> None:
        """Drop every plan when the function's content changed: a plan is a trace, and the trace
        ran its code and froze every global and helper it read (`x * SCALE`, `helper(x)`)."""
        from gpunb.cache import epoch
        from gpunb.cache.fingerprint import collect
        from gpunb.foundation.errors import CompileError

        with self._lock:
            try:
                fingerprint = collect(self.func, fresh=True, follow_python=True)
                digest, watch = fingerprint.digest, fingerprint.watch
            except (CompileError, AttributeError, TypeError, OSError):
                # no source to read (a lambda, exec'd text, a callable object): trace per epoch
                digest, watch = None, (epoch.watch_entry(),)
            if digest is None or digest != self._digest:
                self._plans.clear()
            self._digest, self._watch = digest, watch

    def _build(self, values: list, kinds: list, n_positional: int, kw_names: tuple,
               target: str):
        from gpunb.fusion.execute import device_capacity
        from gpunb.fusion.plan import build_plan
        from gpunb.fusion.trace import trace

        __tracebackhide__ = True  # noqa: F841
        scalars = {k for k, kind in enumerate(kinds) if kind == "scalar"}
        traced = trace(self.func, tuple(values[:n_positional]),
                       dict(zip(kw_names, values[n_positional:], strict=True)), scalars)
        plan = build_plan(self.kernel_name, traced.root, traced.int_checks, target,
                          device_capacity(target), result_kind(kinds))
        plan.zero_d_array = _numpy_returns_array(traced.root, values)
        return plan


def fuse(func=None, *, kernel_name: str | None = None):
    """Decorator: `@gpunb.fuse` or `@gpunb.fuse(kernel_name="...")`, as cupy.fuse."""
    if func is None:
        return lambda f: FusedFunction(f, kernel_name)
    if not callable(func):
        raise TypeError(f"gpunb.fuse decorates a function, not {type(func).__name__}")
    return FusedFunction(func, kernel_name)


def _traced(args: tuple, kwargs: dict) -> bool:
    """Whether an argument is a value of a fused function being traced (a trace.Proxy)."""
    for value in args:
        if getattr(value, "_gpunb_traced", False):
            return True
    return any(getattr(value, "_gpunb_traced", False) for value in kwargs.values())


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


__all__ = ["FusedFunction", "fuse"]
