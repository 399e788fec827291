"""`Graph.update`: new arguments for captured launches, of the types and shapes captured.

A launch is chosen by its index in `g.launches`, by the record itself, or by its kernel (every
launch of it); arguments are named as the kernel names its parameters. The compiled code, grid
and block stay, so a new argument must be what the specialisation was compiled for: an array of
the same dtype, dimensions, layout and shape (the grid was sized for that shape), a scalar of
the same kind (an int for an int, a float for a float; it is converted as a launch converts
it). Everything is checked before anything changes; then each launch's parameters are
rewritten in a copy of its packed parameters, which replaces them, and on a GPU its kernel node
in the executable graph (cuGraphExecKernelNodeSetParams).
"""

from __future__ import annotations

import inspect

import numpy as np

from gpunb.foundation import types as t
from gpunb.foundation.errors import GraphError, did_you_mean
from gpunb.runtime.capture import CapturedLaunch
from gpunb.runtime.packing import PackedParams
from gpunb.runtime.typeof import typeof

_KINDS = (t.Boolean, t.Integer, t.Float, t.Complex)


def select(launches: list, which) -> list:
    """The launches `which` names: an index into `launches`, a record, or a kernel."""
    if isinstance(which, CapturedLaunch):
        if which.index >= len(launches) or launches[which.index] is not which:
            raise GraphError("update: that launch belongs to another graph",
                             hint="pick launches from this graph's g.launches")
        return [which]
    if getattr(type(which), "__gpunb_function__", False):
        chosen = [launch for launch in launches if launch.kernel is which]
        if not chosen:
            raise GraphError(f"update: kernel '{which.__name__}' was not launched in this graph",
                             hint="g.launches lists what was captured")
        return chosen
    if isinstance(which, (int, np.integer)) and not isinstance(which, bool):
        index = int(which)
        if not -len(launches) <= index < len(launches):
            raise GraphError(f"update: launch {index} does not exist: this graph has "
                             f"{len(launches)} launch{'es' if len(launches) != 1 else ''}",
                             hint="g.launches lists them (from 0)")
        return [launches[index]]
    raise GraphError(f"update: cannot choose launches by {type(which).__name__}",
                     hint="name a launch by its index in g.launches, the record itself, or its "
                          "kernel (all of that kernel's launches)")


def parameter_names(launch: CapturedLaunch) -> list:
    return list(inspect.signature(launch.kernel.py_func).parameters)


def checked_positions(launch: CapturedLaunch, arguments: dict) -> list:
    """[(position, value)] of `arguments` for `launch`; GraphError for an unknown name or a
    value of another type or shape than captured."""
    names = parameter_names(launch)
    out = []
    for name, value in arguments.items():
        if name not in names:
            raise GraphError(f"update: kernel '{launch.name}' has no argument '{name}'",
                             function=launch.name,
                             hint=f"{did_you_mean(name, names)}its arguments are "
                                  f"{', '.join(names)}")
        k = names.index(name)
        _check_value(launch, k, name, value)
        out.append((k, value))
    return out


def _check_value(launch: CapturedLaunch, k: int, name: str, value) -> None:
    expected = launch.spec.argtypes[k]
    where = f"update: argument '{name}' of launch {launch.index} ({launch.name})"
    try:
        got = typeof(value)
    except TypeError as exc:
        raise GraphError(f"{where}: {exc}", function=launch.name) from None
    if isinstance(expected, t.Array):
        if not _array_fits(expected, got):
            raise GraphError(f"{where} was captured as {expected}, got {got}",
                             function=launch.name,
                             hint="pass an array of the captured dtype, dimensions and layout, "
                                  "or capture again for other types")
        shape = tuple(value.shape)
        if shape != launch.shapes[k]:
            raise GraphError(f"{where} was captured with shape {launch.shapes[k]}, got {shape}",
                             function=launch.name,
                             hint="the grid was sized for the captured shape: pass an array of "
                                  "that shape, or capture again")
        return
    if isinstance(expected, _KINDS):
        if _kind(got) is not _kind(expected):
            raise GraphError(f"{where} was captured as {expected}, got {got}",
                             function=launch.name,
                             hint=f"pass a {_kind(expected).__name__.lower()} (it is converted "
                                  f"to {expected} as a launch converts it)")
        return
    if got != expected:
        raise GraphError(f"{where} was captured as {expected}, got {got}", function=launch.name)


def _array_fits(expected: t.Array, got) -> bool:
    return isinstance(got, t.Array) and got.dtype == expected.dtype and \
        got.ndim == expected.ndim and expected.layout in ("A", got.layout) and \
        (expected.readonly or not got.readonly) and (got.aligned or not expected.aligned)


def _kind(ty):
    for kind in _KINDS:
        if isinstance(ty, kind):
            return kind
    return type(ty)


def rewritten(launch: CapturedLaunch, positions: list) -> PackedParams:
    """A copy of the launch's packed parameters with `positions` written into it."""
    packer, argtypes = launch.spec.packer, launch.spec.argtypes
    params = PackedParams(launch.params.buffer, packer.offsets)
    for k, value in positions:
        packer.write_argument(params, k, value, argtypes)
    return params
