"""`cuda.vectorize`: a scalar function applied elementwise with numpy's broadcasting.

    @cuda.vectorize(["float32(float32, float32)", "float64(float64, float64)"])
    def add(a, b):
        return a + b

With signatures, loops are type-checked at decoration (errors there, as numba); without, a loop
is compiled for each new combination of input dtypes at call time. Inputs may be numpy arrays,
scalars, sequences or device arrays; the result is a device array when any input is one (as in
numba-cuda), else a numpy array (a numpy scalar for scalar inputs, as numpy gives). `out=` and
`stream=` are accepted; broadcast inputs are read through zero-stride views, never copied.
"""

from __future__ import annotations

import collections
import inspect

import numpy as np

from gpunb.foundation import forksafe
from gpunb.foundation.errors import CompileError
from gpunb.ufunc import arrays, loops
from gpunb.ufunc.functions import device_function
from gpunb.ufunc.kernels import BLOCK, compile_kernel, elementwise_source, grid_for
from gpunb.ufunc.signatures import dtype_of, type_signature


class UFunc:
    """What cuda.vectorize returns: call it like a numpy ufunc."""

    def __init__(self, py_func, signatures=(), identity=None):
        self.py_func = py_func
        self.__name__ = getattr(py_func, "__name__", "ufunc")
        self.__qualname__ = getattr(py_func, "__qualname__", self.__name__)
        self.__doc__ = getattr(py_func, "__doc__", None)
        self.identity = identity
        self._core = device_function(py_func, "cuda.vectorize")
        self.nin = _parameter_count(self._core.py_func, "cuda.vectorize")
        self.nout = 1
        self._loops: collections.OrderedDict = collections.OrderedDict()
        self._kernels: dict = {}
        self._lock = forksafe.lock()
        self._lazy = True
        for sig in signatures:
            self.add(sig)
        if signatures:
            self._lazy = False  # numba: a signature list fixes the loops (disable_compile)

    def __repr__(self) -> str:
        return f"<gpunb cuda.vectorize {self.__name__} loops: {loops.describe(self._loops)}>"

    def __reduce__(self):
        # by value, as numba pickles its ufuncs: the scalar function goes as its device
        # function does (cloudpickle, with its source text); the loops travel, not the kernels
        return (rebuild_ufunc, (type(self), self._core, ((), self.identity),
                                tuple(self._loops.items()), self._lazy))

    @property
    def types(self) -> list:
        """The loops, as numpy writes them ("ff->f")."""
        return ["".join(d.char for d in ins) + "->" + out.char for ins, out in self._loops.items()]

    @property
    def ntypes(self) -> int:
        return len(self._loops)

    # ---- loops ---------------------------------------------------------------------------------

    def add(self, sig) -> None:
        """Compile (type-check) a loop for a signature such as "float32(float32, float32)"."""
        sig = type_signature(sig, "cuda.vectorize")
        if len(sig.args) != self.nin:
            raise TypeError(f"cuda.vectorize signature {sig} has {len(sig.args)} argument(s); "
                            f"'{self.__name__}' takes {self.nin}")
        ins = tuple(dtype_of(a) for a in sig.args)
        returned = self._infer(sig.args)
        out = dtype_of(sig.return_type) if sig.return_type is not None else dtype_of(returned)
        self._loops[ins] = out

    def _infer(self, argtypes: tuple):
        """The core function's return type for these argument types (errors at their line)."""
        from gpunb import backends
        from gpunb.backends.pipeline import compile
        from gpunb.foundation import types as t
        from gpunb.foundation.events import Stage

        typed = compile(self._core.py_func, tuple(argtypes), {}, backends.get("cpu"),
                        stop_after=Stage.TYPES, device=True).typed
        ret = typed.return_type
        if ret is None or ret == t.void or isinstance(ret, t.NoneType):
            raise CompileError(f"the function '{self.__name__}' given to cuda.vectorize returns "
                               "no value", hint="return the element's result; for functions "
                               "that write into arrays use cuda.guvectorize")
        if isinstance(ret, t.Array) or not t.is_number(ret) and \
                not isinstance(ret, (t.Boolean, t.DateTime)):
            raise CompileError(f"the function '{self.__name__}' given to cuda.vectorize returns "
                               f"{ret}; a ufunc's element must be a number or a bool")
        return ret

    def _loop_for(self, dtypes: list, scalars: dict) -> tuple:
        with self._lock:
            chosen = loops.select_loop(self._loops, dtypes, scalars)
            if chosen is None and self._lazy:
                from gpunb.foundation import types as t

                argtypes = tuple(t.from_dtype(d) for d in dtypes)
                self._loops[tuple(dtypes)] = dtype_of(self._infer(argtypes))
                chosen = tuple(dtypes)
        if chosen is None:
            got = ", ".join(d.name for d in dtypes)
            raise TypeError(f"no loop of '{self.__name__}' accepts ({got}); its loops: "
                            f"{loops.describe(self._loops)}. Pass arrays of a declared type "
                            "(convert with .astype) or add a signature")
        return chosen, self._loops[chosen]

    def compiled_kernels(self) -> list:
        """The kernels (GPU functions) compiled for this ufunc so far, for `%gpucache status`,
        `explain` and `clear`."""
        return list(self._kernels.values())

    def _kernel(self, loop: tuple, scalar_positions: tuple, ndim: int):
        key = (loop, scalar_positions, ndim)
        kernel = self._kernels.get(key)
        if kernel is None:
            name = f"vectorized_{_safe(self.__name__)}"
            text = elementwise_source(name, scalar_positions, self.nin, ndim)
            kernel = compile_kernel(text, name, f"cuda.vectorize {self.__name__}", self._core)
            self._kernels[key] = kernel
        return kernel

    # ---- calls ---------------------------------------------------------------------------------

    def __call__(self, *args, out=None, stream=0, **kwargs):
        from gpunb.runtime.target import active_target

        if kwargs:
            raise TypeError(f"'{self.__name__}' got unexpected keyword argument(s) "
                            f"{', '.join(kwargs)}; a gpunb ufunc takes out= and stream=")
        if len(args) == self.nin + 1 and out is None:
            args, out = args[:-1], args[-1]
        if len(args) != self.nin:
            raise TypeError(f"'{self.__name__}' takes {self.nin} input(s) (and optionally an "
                            f"output), got {len(args)}")
        target = active_target()
        values, scalars, any_device = _normalise(args, target)
        dtypes = [arrays.scalar_dtype(v) if k in scalars else np.dtype(v.dtype)
                  for k, v in enumerate(values)]
        loop, out_dtype = self._loop_for(dtypes, scalars)
        values = arrays.cast_inputs(values, loop, self.__name__, scalars)
        shape = arrays.broadcast_shapes([v.shape for k, v in enumerate(values)
                                         if k not in scalars])
        if out is not None:
            out = _check_out(out, shape, out_dtype, target, self.__name__)
        result = self._run(values, scalars, loop, shape, out_dtype, out, target, stream)
        if out is not None:
            if result is not out:
                np.copyto(out, arrays.to_host(result, stream), casting="same_kind")
            return out
        if any_device:
            return arrays.as_device_result(result, target)
        host = arrays.to_host(result, stream)
        return host[()] if shape == () else host

    def _run(self, values: list, scalars: dict, loop: tuple, shape: tuple,
             out_dtype: np.dtype, out, target: str, stream):
        """Launch the loop; returns the target array holding the result (`out` when usable)."""
        if out is not None and (target == "cpu" or arrays.is_device_array(out)) and \
                out.dtype == out_dtype:
            dest = out
        else:
            dest = arrays.empty(shape, out_dtype, target, stream)
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if n == 0:
            return dest
        params = [values[k] if k in scalars else arrays.on_target(values[k], target, stream)
                  for k in range(self.nin)]
        run_shape = shape or (1,)
        views = [p if k in scalars else arrays.broadcast_to(_at_least_1d(p), run_shape)
                 for k, p in enumerate(params)]
        dest_view = _at_least_1d(dest)
        if all(_c_contiguous(v) for k, v in enumerate(views) if k not in scalars) and \
                _c_contiguous(dest_view):
            views = [v if k in scalars else v.reshape(n) for k, v in enumerate(views)]
            dest_view = dest_view.reshape(n)
        kernel = self._kernel(loop, tuple(sorted(scalars)), dest_view.ndim)
        launch_args = [*views, dest_view, np.int64(n)]
        grid = grid_for(kernel, launch_args, n, target)
        kernel[grid, BLOCK, stream](*launch_args)
        return dest

    def reduce(self, arg, axis: int = 0, stream=0):
        """Reduce a 1-d array with this binary ufunc (numba-cuda's ufunc.reduce); the result has
        the array's dtype."""
        from gpunb.runtime.target import active_target
        from gpunb.ufunc.reduce import Reduce

        if self.nin != 2:
            raise TypeError(f"reduce needs a binary ufunc; '{self.__name__}' takes {self.nin} "
                            "inputs")
        target = active_target()
        arr = arrays.as_device_array(arg, target) if arrays.is_device_array(arg) else \
            np.asarray(arg)
        if arr.ndim != 1 or axis not in (0, -1):
            raise TypeError("reduce supports 1-d arrays (axis=0) only, as numba-cuda's")
        n = arr.shape[0]
        if n == 0:
            raise TypeError("Reduction on an empty array.")
        dtype = np.dtype(arr.dtype)
        loop, _ = self._loop_for([dtype, dtype], {})
        if loop != (dtype, dtype):
            raise TypeError(f"'{self.__name__}' has no loop ({dtype.name}, {dtype.name}) to "
                            f"reduce a {dtype.name} array with; its loops: "
                            f"{loops.describe(self._loops)}")
        if n == 1:
            return arr[0]
        reducer = self.__dict__.get("_reducer")
        if reducer is None:
            reducer = self._reducer = Reduce(self._core)
        result = reducer.reduce_on_target(arr, dtype, dtype.type(0), False, target, stream)
        return arrays.to_host(result, stream)[0]


def _normalise(args: tuple, target: str) -> tuple:
    """(values as arrays or scalars, {position: scalar value}, whether any is a device array)."""
    values, scalars, any_device = [], {}, False
    for k, arg in enumerate(args):
        if arrays.is_device_array(arg):
            values.append(arrays.as_device_array(arg, target))
            any_device = True
        elif arrays.is_scalar(arg):
            values.append(arg)
            scalars[k] = arg
        else:
            array = np.asarray(arg)
            if array.dtype == object:
                raise TypeError(f"argument {k + 1} ({type(arg).__name__}) is not an array of "
                                "numbers")
            if array.ndim == 0:
                values.append(array[()])
                scalars[k] = array[()]
            else:
                values.append(array)
    return values, scalars, any_device


def _check_out(out, shape: tuple, out_dtype: np.dtype, target: str, name: str):
    if arrays.is_device_array(out):
        out = arrays.as_device_array(out, target)
        if out.dtype != out_dtype:
            raise TypeError(f"out= of '{name}' has dtype {out.dtype}; the loop writes "
                            f"{out_dtype}")
    elif not isinstance(out, np.ndarray):
        raise TypeError(f"out= of '{name}' must be an array, not {type(out).__name__}")
    elif not np.can_cast(out_dtype, out.dtype, "same_kind"):
        raise TypeError(f"cannot write the {out_dtype} result of '{name}' into out= of dtype "
                        f"{out.dtype} (casting='same_kind')")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"out= of '{name}' has shape {tuple(out.shape)}; the broadcast result "
                         f"has shape {tuple(shape)}")
    return out


def _at_least_1d(array):
    return array.reshape(1) if array.ndim == 0 else array


def _c_contiguous(array) -> bool:
    if isinstance(array, np.ndarray):
        return bool(array.flags.c_contiguous)
    return array.is_c_contiguous()


def _parameter_count(func, what: str) -> int:
    params = inspect.signature(func).parameters.values()
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        raise TypeError(f"{what} needs a function with a fixed number of parameters")
    return len(params)


def _safe(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out or "ufunc"


__all__ = ["UFunc"]


def rebuild_ufunc(cls, core, arguments: tuple, loop_items: tuple, lazy: bool):
    """pickle's constructor of a UFunc or GUFunc (`cls`): made again around the unpickled
    device function `core` (`arguments` after it: no signatures and the identity, or the
    layout), its loops restored as they were (numba's: a signature list stays fixed, a lazy
    ufunc stays lazy)."""
    made = cls(core, *arguments)
    made.py_func = core.py_func
    made._loops = collections.OrderedDict(loop_items)
    made._lazy = lazy
    return made
