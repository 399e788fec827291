"""numba-cuda's ufunc API on gpunb's compiler: `cuda.vectorize`, `cuda.guvectorize` and
`cuda.reduce` / `cuda.Reduce` (also `gpunb.vectorize(..., target="cuda")`, numba's spelling).

Each turns the user's function into a device function and generates a small kernel around it
(kernels.py), launched with gpunb.fuse's grid sizing, so ufuncs run on a GPU and on the CPU
target alike and share the compiler's cache. The decorators here check numba's options and
give numba's errors for the ones gpunb does not have.
"""

from __future__ import annotations

import warnings

from gpunb.ufunc.gufunc import GUFunc
from gpunb.ufunc.reduce import Reduce, reduce
from gpunb.ufunc.vectorize import UFunc

_TARGETS = ("cuda", "gpu")


def vectorize(ftylist_or_function=(), target: str = "cuda", **kws):
    """`@cuda.vectorize(["float32(float32, float32)", ...])` (loops fixed and type-checked at
    decoration) or `@cuda.vectorize` / `@cuda.vectorize()` (a loop compiled per new input
    dtypes at call time). Options: identity; nopython is accepted (redundant, as in numba)."""
    _check_target(target)
    identity = kws.pop("identity", None)
    if kws.pop("cache", False):
        raise TypeError("caching is not supported")
    for option in kws:
        if option == "nopython":
            warnings.warn("nopython kwarg for cuda target is redundant", RuntimeWarning,
                          stacklevel=2)
        else:
            raise KeyError("Unrecognized options. cuda vectorize target does not support "
                           f"option: '{option}'")
    if callable(ftylist_or_function) and not isinstance(ftylist_or_function, str) and \
            not hasattr(ftylist_or_function, "args"):
        return UFunc(ftylist_or_function, (), identity)
    signatures = _signature_list(ftylist_or_function)

    def wrap(func):
        return UFunc(func, signatures, identity)

    return wrap


def guvectorize(*args, **kwargs):
    """`@cuda.guvectorize([signatures], "(m,n),(n)->(m)")`, or with the layout only (loops
    compiled at call time from the dtypes of the inputs and of the outputs passed in)."""
    if len(args) == 1:
        signatures, layout = [], args[0]
    elif len(args) == 2:
        signatures, layout = _signature_list(args[0]), args[1]
    else:
        raise TypeError("guvectorize() takes one or two positional arguments")
    _check_target(kwargs.pop("target", "cuda"))
    kwargs.pop("identity", None)
    kwargs.pop("is_dynamic", None)
    if kwargs.pop("cache", False):
        raise TypeError("caching is not supported")
    if kwargs.pop("writable_args", ()):
        raise TypeError("writable_args are not supported")
    if not kwargs.pop("nopython", True):
        raise TypeError("nopython flag must be True")
    if kwargs:
        names = ", ".join(repr(k) for k in kwargs)
        raise TypeError(f"The following target options are not supported: {names}")

    def wrap(func):
        return GUFunc(func, layout, signatures)

    return wrap


def _signature_list(value) -> list:
    if isinstance(value, str) or hasattr(value, "args"):
        return [value]  # a single signature: numba accepts it (a common mistake) as a list
    return list(value)


def _check_target(target) -> None:
    if target not in _TARGETS:
        raise ValueError(f"Unsupported target: {target} (gpunb's ufuncs run on the active "
                         "target: a GPU, or the CPU target; choose it with gpunb.set_target)")


__all__ = ["GUFunc", "Reduce", "UFunc", "guvectorize", "reduce", "vectorize"]
