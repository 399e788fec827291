"""From a trace to a Plan: which kernels run, with what sizes, into what output.

A Plan is made once per argument signature (types and shapes, like cupy.fuse) and reused. It
names its kernels by generated source; compiled kernels are memoised per source, so two fused
functions, or two shapes, that generate the same source share one gpunb kernel (and its cache
entries).
"""

from __future__ import annotations

import dataclasses
import hashlib
import linecache
import math
import threading

import numpy as np

from gpunb.fusion import graph as g
from gpunb.fusion import kernels as k
from gpunb.fusion.codegen import BLOCK

SHORT_REDUCTION = 32  # a reduced extent this short is walked by one thread per output


@dataclasses.dataclass
class Step:
    """One launch: the kernel, its generated source, what it is for, and its grid once known."""

    kernel: object              # a gpunb Dispatcher
    source: k.KernelSource
    role: str                   # "map", "reduce_thread", "reduce_block", "finish"
    work: int                   # threads (map, reduce_thread) or blocks (the others) wanted
    tail: tuple = ()            # the parameters after the arrays and scalars (extents, sizes)
    grid: int | None = None     # set at the first launch (occupancy needs the compiled kernel)


@dataclasses.dataclass
class Plan:
    """Everything a call with this argument signature needs besides the argument values."""

    target: str
    steps: list
    out_dtype: np.dtype
    out_shape: tuple
    size: int                   # elements of the map's space, or of the reduction's output
    reduction: g.Reduction | None = None
    red_size: int = 1
    parts: int = 1
    int_checks: list = dataclasses.field(default_factory=list)
    result_kind: str = "numpy"
    zero_d_array: bool = False  # numpy gives a 0-d array here, not a scalar (np.where does)
    python_scalar: bool = False  # Python arithmetic on Python scalars gives a Python number


def build_plan(name: str, root: g.Node, int_checks: list, target: str, capacity: int,
               result_kind: str) -> Plan:
    """The kernels for this graph. `capacity` is how many blocks fill the device at once (used to
    choose how a reduction is split); grids are sized from each kernel's own occupancy later."""
    reduces = [n for n in g.walk(root) if n.kind == g.REDUCE]
    if len(reduces) > 1:
        raise TypeError("gpunb.fuse: only one reduction per fused function is supported; split "
                        "the computation into two fused functions")
    common = {"target": target, "out_dtype": root.dtype, "out_shape": root.shape,
              "int_checks": list(int_checks), "result_kind": result_kind,
              "python_scalar": root.weak}
    if not reduces:
        size = math.prod(root.shape)
        index_type = _index_type(root.shape)
        source = k.map_kernel(name, root, index_type)
        shape = _extents(root.shape, index_type)
        step = _step(source, "map", size, (shape, np.int64(size)))
        return Plan(steps=[step], size=size, **common)
    parts_of = k.ReductionParts(root, reduces[0])
    space = parts_of.space
    n_out = math.prod(space[d] for d in parts_of.kept_dims)
    red_size = math.prod(space[d] for d in parts_of.reduced_dims)
    index_type = _index_type(space)
    plan = Plan(steps=[], size=n_out, reduction=parts_of.reduction, red_size=red_size, **common)
    short = red_size <= SHORT_REDUCTION or n_out >= capacity * BLOCK
    parts = 1 if short or n_out >= capacity else max(1, min(-(-capacity // n_out),
                                                            -(-red_size // (4 * BLOCK))))
    plan.parts = parts
    sizes = (np.int64(n_out), np.int64(red_size), np.int64(parts))
    shape = _extents(space, index_type)
    if short:
        source = k.reduce_thread_kernel(name, parts_of, index_type)
        plan.steps.append(_step(source, "reduce_thread", n_out, (shape, *sizes)))
        return plan
    source = k.reduce_block_kernel(name, parts_of, index_type, final=parts == 1)
    plan.steps.append(_step(source, "reduce_block", n_out * parts, (shape, *sizes)))
    if parts > 1:
        source = k.finish_kernel(f"{name}_finish", parts_of)
        plan.steps.append(_step(source, "finish", n_out, sizes))
    return plan


def _index_type(shape: tuple) -> str:
    return "uint32" if math.prod(shape) < 2**31 else "uint64"


def _extents(shape: tuple, index_type: str) -> tuple:
    return tuple(getattr(np, index_type)(n) for n in shape)


def _step(source: k.KernelSource, role: str, work: int, tail: tuple) -> Step:
    return Step(compile_source(source), source, role, work, tail)


# ---- compiling generated sources ----------------------------------------------------------------

_compiled: dict = {}
_lock = threading.Lock()


def compile_source(source: k.KernelSource):
    """The gpunb kernel for a generated source (memoised by the text). The text is registered
    with linecache, so errors, the inspector and the cache read it like a user's kernel."""
    with _lock:
        found = _compiled.get(source.text)
        if found is not None:
            return found
        digest = hashlib.blake2b(source.text.encode(), digest_size=6).hexdigest()
        filename = f"<gpunb.fuse {source.name} {digest}>"
        linecache.cache[filename] = (len(source.text), None, source.text.splitlines(True),
                                     filename)
        namespace = kernel_namespace()
        exec(compile(source.text, filename, "exec"), namespace)  # noqa: S102 - generated here
        from gpunb.jit.decorator import jit

        kernel = jit(namespace[source.name])
        _compiled[source.text] = kernel
        return kernel


def kernel_namespace() -> dict:
    """The globals a generated kernel reads: cuda (the kernel language's names), math, numpy,
    dtype names and gpunb.fusion.ops."""
    from gpunb.compiler import kernel_api
    from gpunb.fusion import ops

    namespace = {"__name__": "gpunb.fusion.generated", "cuda": kernel_api, "math": math,
                 "np": np}
    for char in g.SUPPORTED_DTYPES:
        dtype = np.dtype(char)
        if dtype.kind != "b":
            namespace[dtype.name] = dtype.type
    namespace.update(ops.HELPERS)
    return namespace


__all__ = ["Plan", "Step", "build_plan", "compile_source"]
