"""Which compiled loop a ufunc call uses, from the argument dtypes: numba-cuda's rule first
(exact dtypes, scalars matched by their own dtype, then the one loop the arrays match exactly,
scalars converted to it when no value changes),
then numpy's loop selection (the first loop, in declaration order, that every argument casts to
safely; Python scalars are weak, as in numpy 2: a Python float fits any float loop)."""

from __future__ import annotations

import numpy as np


def select_loop(loops, dtypes: list, scalars: dict):
    """The input-dtype tuple of the loop to use, or None when none accepts the arguments.
    `dtypes` has each argument's dtype (scalars: the dtype numpy gives them); `scalars` maps the
    positions of scalar arguments to their values."""
    loops = list(loops)
    exact = [loop for loop in loops if tuple(loop) == tuple(dtypes)]
    if exact:
        return exact[0]
    if scalars:
        arrays_exact = [loop for loop in loops
                        if all(_lossless(scalars[k], formal) if k in scalars
                               else formal == dtypes[k] for k, formal in enumerate(loop))]
        if len(arrays_exact) == 1:
            return arrays_exact[0]
    for loop in loops:
        if all(_accepts(formal, dtypes[k], scalars.get(k, _ARRAY), k in scalars)
               for k, formal in enumerate(loop)):
            return loop
    return None


_ARRAY = object()


def _lossless(value, formal: np.dtype) -> bool:
    """numba-cuda converts scalars to the loop's type; gpunb only where no value is lost (2.0
    into an int32 loop, not 2.5), so no call computes with a silently changed input."""
    try:
        with np.errstate(all="ignore"):
            converted = formal.type(value)
        return bool(converted == value) or (value != value and converted != converted)
    except (TypeError, ValueError, OverflowError):
        return False


def _accepts(formal: np.dtype, actual: np.dtype, value, is_scalar: bool) -> bool:
    if not is_scalar or isinstance(value, np.generic):
        return bool(np.can_cast(actual, formal, "safe"))
    # a Python scalar: its kind decides, and an integer must fit
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        if formal.kind in "iu":
            info = np.iinfo(formal)
            return info.min <= value <= info.max
        return formal.kind in "fc"
    if isinstance(value, float):
        return formal.kind in "fc"
    if isinstance(value, complex):
        return formal.kind == "c"
    return bool(np.can_cast(actual, formal, "safe"))


def describe(loops) -> str:
    return ", ".join("(" + ", ".join(d.name for d in loop) + ")" for loop in loops) or "none"


__all__ = ["describe", "select_loop"]
