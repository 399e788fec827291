"""`cuda.reduce` / `cuda.Reduce`: a full reduction of a 1-d array with a binary function, as
numba-cuda has it: `sum_reduce = cuda.reduce(lambda a, b: a + b); sum_reduce(arr, init=0)`.

The binary function becomes a device function; kernels.reduce_source folds the array in a
grid-stride loop and a shared-memory tree per block, and a second one-block pass combines the
blocks' values. The result is `f(fold(f, arr), init)` (numba-cuda folds `init` in last), `init`
for an empty array, and it works on every dtype the compiler does, on both targets.
"""

from __future__ import annotations

import inspect

import numpy as np

from gpunb.foundation import forksafe
from gpunb.ufunc import arrays
from gpunb.ufunc.functions import device_function
from gpunb.ufunc.kernels import BLOCK, compile_kernel, grid_for, reduce_source


def _check_binary(functor) -> None:
    """Refuse, where cuda.reduce is called, a function that cannot take two values (the
    running result and the next element): otherwise the error is raised while compiling the
    generated reduction kernel, at its line, with nothing to say what to do."""
    from gpunb.foundation.errors import CompileError
    from gpunb.jit.options import user_location

    func = getattr(functor, "py_func", functor)
    if not inspect.isfunction(func):
        return  # device_function names what it needs
    signature = inspect.signature(func)
    try:
        signature.bind(0, 0)
    except TypeError:
        raise CompileError(
            f"cuda.reduce needs a function of two values, but {func.__name__!r} takes "
            f"{signature}", user_location(),
            hint="it is called as f(running_result, next_element), e.g. "
                 "cuda.reduce(lambda a, b: a + b)") from None


class Reduce:
    """A reduction with a binary function; keep the object to keep its compiled kernels."""

    def __init__(self, functor):
        self._functor = functor
        _check_binary(functor)
        self._core = device_function(functor, "cuda.reduce")
        self.__name__ = getattr(functor, "__name__", "reduce")
        self._kernels: dict = {}
        self._lock = forksafe.lock()

    def __repr__(self) -> str:
        return f"<gpunb cuda.Reduce {self.__name__}>"

    def __call__(self, arr, size=None, res=None, init=0, stream=0):
        """Reduce `arr` (host or device, 1-d) or its first `size` elements. With `res` (a device
        array) the result is written to res[0] and None returned; otherwise it is returned as a
        numpy scalar of arr's dtype."""
        from gpunb.runtime.target import active_target

        target = active_target()
        if arrays.is_device_array(arr):
            arr = arrays.as_device_array(arr, target)
        elif not isinstance(arr, np.ndarray):
            arr = np.asarray(arr)
        if arr.ndim != 1:
            raise TypeError(f"cuda.reduce reduces 1-d arrays; got {arr.ndim} dimensions "
                            "(reduce arr.ravel() for all elements)")
        if size is not None:
            if not 0 <= int(size) <= arr.shape[0]:
                raise ValueError(f"size={size} is outside the array's {arr.shape[0]} elements")
            arr = arr[:int(size)]
        dtype = np.dtype(arr.dtype)
        init = _init_value(init, dtype)
        if arr.shape[0] == 0:
            if res is not None:
                _store_result(res, np.array([init], dtype), target, stream)
                return None
            return init
        result = self.reduce_on_target(arr, dtype, init, True, target, stream)
        if res is not None:
            _store_result(res, result, target, stream)
            return None
        return arrays.to_host(result, stream)[0]

    def reduce_on_target(self, arr, dtype: np.dtype, init, use_init: bool, target: str,
                         stream):
        """A 1-element target array holding the reduction of the non-empty `arr`."""
        kernel = self._kernel(dtype)
        data = arrays.on_target(arr, target, stream)
        n = data.shape[0]
        init = dtype.type(init)
        work = -(-n // BLOCK) * BLOCK
        probe = [data, data, np.int64(n), init, np.bool_(use_init)]
        blocks = min(grid_for(kernel, probe, work, target), BLOCK)
        if blocks == 1:
            out = arrays.empty((1,), dtype, target, stream)
            kernel[1, BLOCK, stream](data, out, np.int64(n), init, np.bool_(use_init))
            return out
        partials = arrays.empty((blocks,), dtype, target, stream)
        kernel[blocks, BLOCK, stream](data, partials, np.int64(n), init, np.bool_(False))
        out = arrays.empty((1,), dtype, target, stream)
        kernel[1, BLOCK, stream](partials, out, np.int64(blocks), init, np.bool_(use_init))
        return out

    def compiled_kernels(self) -> list:
        """The kernels (GPU functions) compiled for this reduction so far, for `%gpucache status`,
        `explain` and `clear`."""
        return list(self._kernels.values())

    def _kernel(self, dtype: np.dtype):
        with self._lock:
            kernel = self._kernels.get(dtype)
            if kernel is None:
                name = f"reduce_{_safe(self.__name__)}_{dtype.name}"
                kernel = compile_kernel(reduce_source(name, dtype), name,
                                        f"cuda.reduce {self.__name__}", self._core)
                self._kernels[dtype] = kernel
            return kernel


def _init_value(init, dtype: np.dtype):
    try:
        return dtype.type(init)
    except (TypeError, ValueError, OverflowError) as exc:
        raise TypeError(f"cuda.reduce: init={init!r} cannot be a {dtype} (the array's "
                        f"dtype): {exc}") from None


def _store_result(res, value, target: str, stream) -> None:
    """res[0] = the result, on the device (numba-cuda: no copy back to the host)."""
    if not arrays.is_device_array(res) and not isinstance(res, np.ndarray):
        raise TypeError(f"res must be an array (a device array), not {type(res).__name__}")
    dest = res[:1]
    if isinstance(dest, np.ndarray):
        dest[...] = arrays.to_host(value, stream)
    elif isinstance(value, np.ndarray):
        dest.copy_to_device(value, stream=stream)
    else:
        dest.copy_to_device(value, stream=stream)


def _safe(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out or "fn"


def reduce(functor) -> Reduce:
    """`cuda.reduce(fn)`: the same as cuda.Reduce(fn) (numba-cuda exports both names)."""
    return Reduce(functor)


__all__ = ["Reduce", "reduce"]
