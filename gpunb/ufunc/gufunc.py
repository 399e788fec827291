"""`cuda.guvectorize`: a function over core dimensions ("(m,n),(n,p)->(m,p)") applied over the
broadcast loop dimensions in front of them, as numpy's generalized ufuncs.

    @cuda.guvectorize(["void(float32[:], float32[:], float32[:])"], "(n),(n)->()")
    def dot(a, b, out):
        ...
        out[0] = s

Outputs are the function's last parameters; they are allocated when not passed (positionally
or with out=). Loop dimensions broadcast as numpy's (a missing or size-1 loop dimension repeats
the argument); core dimensions with one name must agree. Host and device arrays, stream= and the
device-in/device-out rule are those of cuda.vectorize.
"""

from __future__ import annotations

import collections
import inspect
import math

import numpy as np

from gpunb.foundation import forksafe
from gpunb.foundation import types as t
from gpunb.ufunc import arrays
from gpunb.ufunc.functions import device_function
from gpunb.ufunc.kernels import BLOCK, compile_kernel, grid_for, gufunc_source
from gpunb.ufunc.signatures import dtype_of, parse_layout, type_signature


class GUFunc:
    """What cuda.guvectorize returns: call it like a numpy generalized ufunc."""

    def __init__(self, py_func, layout: str, signatures=()):
        self.py_func = py_func
        self.__name__ = getattr(py_func, "__name__", "gufunc")
        self.__qualname__ = getattr(py_func, "__qualname__", self.__name__)
        self.__doc__ = getattr(py_func, "__doc__", None)
        self.signature = layout
        self.inputsig, self.outputsig = parse_layout(layout)
        self.nin, self.nout = len(self.inputsig), len(self.outputsig)
        self._core = device_function(py_func, "cuda.guvectorize")
        nparams = len(inspect.signature(self._core.py_func).parameters)
        if nparams != self.nin + self.nout:
            raise TypeError(f"'{self.__name__}' takes {nparams} parameter(s) but the layout "
                            f"{layout!r} names {self.nin} input(s) and {self.nout} output(s)")
        self._core_dims = tuple(len(g) for g in (*self.inputsig, *self.outputsig))
        # input dtypes -> (output dtypes, argument types of the signature)
        self._loops: collections.OrderedDict = collections.OrderedDict()
        self._kernels: dict = {}
        self._lock = forksafe.lock()
        for sig in signatures:
            self.add(sig)
        self._lazy = not signatures

    def __repr__(self) -> str:
        return f"<gpunb cuda.guvectorize {self.__name__} {self.signature!r}>"

    def __reduce__(self):
        from gpunb.ufunc.vectorize import rebuild_ufunc

        return (rebuild_ufunc, (type(self), self._core, (self.signature,),
                                tuple(self._loops.items()), self._lazy))

    def add(self, sig) -> None:
        """Add (and type-check) a loop such as "void(float32[:], float32[:, :])"."""
        sig = type_signature(sig, "cuda.guvectorize")
        if sig.return_type is not None and sig.return_type != t.void and \
                not isinstance(sig.return_type, t.NoneType):
            raise TypeError(f"guvectorized functions cannot return values: signature {sig} "
                            f"specifies {sig.return_type} return type")
        if len(sig.args) != self.nin + self.nout:
            raise TypeError(f"guvectorize signature {sig} has {len(sig.args)} argument(s); the "
                            f"layout {self.signature!r} names {self.nin + self.nout}")
        for k, (ty, dims) in enumerate(zip(sig.args, self._core_dims, strict=True)):
            ndim = ty.ndim if isinstance(ty, t.Array) else 0
            if ndim != dims and not (dims == 0 and ndim == 1):
                raise TypeError(f"gufunc signature mismatch: argument {k + 1} is {ty} "
                                f"({ndim}-d) but the layout {self.signature!r} gives it {dims} "
                                "core dimension(s)")
            if k >= self.nin and not isinstance(ty, t.Array):
                raise TypeError(f"gufunc signature mismatch: output argument {k + 1} must be an "
                                f"array type (e.g. {ty}[:]), not {ty}")
        self._check_types(sig.args)
        dtypes = tuple(dtype_of(a) for a in sig.args)
        self._loops[dtypes[:self.nin]] = (dtypes[self.nin:], tuple(sig.args))

    def _check_types(self, argtypes: tuple) -> None:
        """Type the core function now, so that its errors are raised at decoration (numba)."""
        from gpunb import backends
        from gpunb.backends.pipeline import compile
        from gpunb.foundation.events import Stage

        compile(self._core.py_func, tuple(argtypes), {}, backends.get("cpu"),
                stop_after=Stage.TYPES, device=True)

    # ---- calls ---------------------------------------------------------------------------------

    def __call__(self, *args, out=None, stream=0, **kwargs):
        from gpunb.runtime.target import active_target

        if kwargs:
            raise TypeError(f"'{self.__name__}' got unexpected keyword argument(s) "
                            f"{', '.join(kwargs)}; a gpunb gufunc takes out= and stream=")
        target = active_target()
        inputs, outputs = self._split(args, out)
        copy_to_host = not any(arrays.is_device_array(a) for a in (*inputs, *outputs)
                               if a is not None)
        inputs = [_normalise(a, target) for a in inputs]
        outputs = [None if o is None else _normalise(o, target) for o in outputs]
        loop_dims, core_shapes = self._schedule(inputs)
        loop = self._select(inputs, outputs)
        out_dtypes, argtypes = self._loops[loop]
        inputs = arrays.cast_inputs(inputs, loop, self.__name__)
        out_cores = [tuple(core_shapes[name] for name in group) for group in self.outputsig]
        loop_dims = _fit_outputs(loop_dims, out_cores, outputs)
        out_shapes = [loop_dims + core for core in out_cores]
        for k, (given, shape, dtype) in enumerate(zip(outputs, out_shapes, out_dtypes,
                                                      strict=True)):
            if given is not None and not isinstance(given, np.ndarray) and given.dtype != dtype:
                raise TypeError(f"output {k + 1} of '{self.__name__}' is a device array of "
                                f"{given.dtype}; the loop writes {dtype}")
            if given is not None and tuple(given.shape) != shape:
                raise ValueError(f"output shape mismatch: output {k + 1} of '{self.__name__}' "
                                 f"has shape {tuple(given.shape)}, the layout gives {shape}")
        dests = [self._destination(o, shape, dtype, target, stream)
                 for o, shape, dtype in zip(outputs, out_shapes, out_dtypes, strict=True)]
        self._launch(inputs, dests, loop, argtypes, loop_dims, target, stream)
        results = []
        for given, dest in zip(outputs, dests, strict=True):
            if given is not None and dest is not given:
                np.copyto(given, arrays.to_host(dest, stream), casting="same_kind")
                results.append(given)
            elif given is not None:
                results.append(given)
            elif copy_to_host:
                results.append(arrays.to_host(dest, stream))
            else:
                results.append(arrays.as_device_result(dest, target))
        return results[0] if len(results) == 1 else tuple(results)

    def _split(self, args: tuple, out) -> tuple:
        nin, nout = self.nin, self.nout
        if out is not None and len(args) > nin:
            raise ValueError("cannot specify argument 'out' as both positional and keyword")
        if out is None and len(args) not in (nin, nin + nout):
            def count(n):
                return f"{n} positional argument{'s' * (n != 1)}"

            raise TypeError(f"This gufunc accepts {count(nin)} (when providing input only) or "
                            f"{count(nin + nout)} (when providing input and output). Got "
                            f"{count(len(args))}.")
        if out is not None:
            outputs = list(out) if isinstance(out, tuple) else [out]
            if len(outputs) != nout:
                raise TypeError(f"out= of '{self.__name__}' needs {nout} array(s), got "
                                f"{len(outputs)}")
        else:
            outputs = list(args[nin:]) or [None] * nout
        return list(args[:nin]), outputs

    def _schedule(self, inputs: list) -> tuple:
        """(the broadcast loop dimensions, {core dimension name: extent})."""
        core: dict = {}
        outer = []
        for k, (array, names) in enumerate(zip(inputs, self.inputsig, strict=True)):
            if array.ndim < len(names):
                raise ValueError(f"arg #{k + 1}: insufficient inner dimension: the layout "
                                 f"{self.signature!r} gives it {len(names)} core dimension(s), "
                                 f"it has shape {tuple(array.shape)}")
            split = array.ndim - len(names)
            for axis, (extent, name) in enumerate(zip(array.shape[split:], names, strict=True)):
                if core.setdefault(name, extent) != extent:
                    raise ValueError(f"arg #{k + 1}: shape[{split + axis}] mismatch argument: "
                                     f"core dimension {name!r} is {extent} here but "
                                     f"{core[name]} before")
            outer.append(tuple(array.shape[:split]))
        try:
            loop_dims = tuple(np.broadcast_shapes(*outer)) if outer else ()
        except ValueError:
            raise ValueError(f"outer dimension mismatch: the loop dimensions "
                             f"{', '.join(map(str, outer))} do not broadcast together") from None
        return loop_dims, core

    def _select(self, inputs: list, outputs: list) -> tuple:
        from gpunb.ufunc.loops import describe, select_loop

        dtypes = [np.dtype(a.dtype) for a in inputs]
        scalars = {k: a[()] for k, a in enumerate(inputs)
                   if isinstance(a, np.ndarray) and a.ndim == 0}
        with self._lock:
            chosen = select_loop(self._loops, dtypes, scalars)
            if chosen is None:
                chosen = _by_value(self._loops, dtypes, scalars)
            if chosen is None and not self._lazy:
                chosen = _by_casting_down(self._loops, dtypes)
            if chosen is None and self._lazy:
                if any(o is None for o in outputs):
                    raise TypeError(f"'{self.__name__}' has no loop for ({_names(dtypes)}) yet: "
                                    "pass the output arrays, so their dtypes are known, or "
                                    "give guvectorize a signature list")
                self._add_for(inputs, outputs)
                chosen = tuple(dtypes)
        if chosen is None:
            device = [k + 1 for k, a in enumerate(inputs) if not isinstance(a, np.ndarray)]
            note = (f"; argument(s) {device} are device arrays, which are not converted (a "
                    "device array does not support .astype() here): convert them first") \
                if device else ""
            raise TypeError(f"no matching signature of '{self.__name__}' for inputs "
                            f"({_names(dtypes)}); its loops: {describe(self._loops)}{note}")
        return chosen

    def _add_for(self, inputs: list, outputs: list) -> None:
        """Lazy mode: the loop for these input and output dtypes, from their ranks."""
        argtypes = []
        for array, dims in zip((*inputs, *outputs), self._core_dims, strict=True):
            base = t.from_dtype(array.dtype)
            argtypes.append(t.Array(base, dims, "A") if dims else base)
        outs = tuple(t.Array(a, 1, "A") if not isinstance(a, t.Array) else a
                     for a in argtypes[self.nin:])
        argtypes = (*argtypes[:self.nin], *outs)
        self._check_types(argtypes)
        dtypes = tuple(np.dtype(a.dtype) for a in (*inputs, *outputs))
        self._loops[dtypes[:self.nin]] = (dtypes[self.nin:], tuple(argtypes))

    def _destination(self, given, shape: tuple, dtype: np.dtype, target: str, stream):
        if given is not None and given.dtype == dtype and \
                (target == "cpu" or not isinstance(given, np.ndarray)):
            return given
        return arrays.empty(shape, dtype, target, stream)

    def _launch(self, inputs: list, dests: list, loop: tuple, argtypes: tuple,
                loop_dims: tuple, target: str, stream) -> None:
        n = math.prod(loop_dims)
        if n == 0:
            return
        run_dims = loop_dims or (1,)
        scalar_args = tuple(k for k, ty in enumerate(argtypes) if not isinstance(ty, t.Array))
        views = []
        for k, array in enumerate([*inputs, *dests]):
            data = arrays.on_target(array, target, stream)
            core = tuple(data.shape[data.ndim - self._core_dims[k]:]) if self._core_dims[k] \
                else ()
            while data.ndim > len(loop_dims) + len(core) and data.shape[0] == 1:
                data = arrays.strided_view(data, data.shape[1:], data.strides[1:],
                                           writeable=k >= self.nin)
            if not loop_dims:
                data = arrays.strided_view(data, (1, *data.shape), (0, *data.strides),
                                           writeable=k >= self.nin)
            views.append(arrays.broadcast_to(data, run_dims + core, writeable=k >= self.nin))
        kernel = self._kernel(loop, scalar_args, len(run_dims))
        launch_args = [*views, np.int64(n)]
        grid = grid_for(kernel, launch_args, n, target)
        kernel[grid, BLOCK, stream](*launch_args)

    def compiled_kernels(self) -> list:
        """The kernels (GPU functions) compiled for this gufunc so far, for `%gpucache status`,
        `explain` and `clear`."""
        return list(self._kernels.values())

    def _kernel(self, loop: tuple, scalar_args: tuple, loop_ndim: int):
        key = (loop, scalar_args, loop_ndim)
        kernel = self._kernels.get(key)
        if kernel is None:
            name = f"gufunc_{''.join(c if c.isalnum() else '_' for c in self.__name__)}"
            text = gufunc_source(name, self._core_dims, scalar_args, loop_ndim)
            kernel = compile_kernel(text, name, f"cuda.guvectorize {self.__name__}", self._core)
            self._kernels[key] = kernel
        return kernel


def _fit_outputs(loop_dims: tuple, out_cores: list, outputs: list) -> tuple:
    """numba-cuda pins an argument whose loop dimensions are (1,) instead of broadcasting it, so
    outputs passed without that leading 1 are accepted: drop leading 1s the outputs lack."""
    given = [(o, core) for o, core in zip(outputs, out_cores, strict=True) if o is not None]
    while loop_dims and loop_dims[0] == 1 and given and \
            all(tuple(o.shape) == loop_dims[1:] + core for o, core in given):
        loop_dims = loop_dims[1:]
    return loop_dims


def _normalise(value, target: str):
    if arrays.is_device_array(value):
        return arrays.as_device_array(value, target)
    array = np.asarray(value)
    if array.dtype == object:
        raise TypeError(f"a {type(value).__name__} is not an array of numbers")
    return array


def _by_value(loops, dtypes: list, scalars: dict):
    """numba-cuda also takes a scalar argument whose value fits the loop's type (np.int64(2)
    for an int32 loop); arrays must still cast safely."""
    for loop in loops:
        if all(np.can_cast(np.min_scalar_type(scalars[k]), formal) if k in scalars
               else np.can_cast(dtypes[k], formal, "safe") for k, formal in enumerate(loop)):
            return loop
    return None


def _by_casting_down(loops, dtypes: list):
    """numba-cuda's last resort: the first loop whose every input type casts safely *to* the
    argument's (float32 for float64 input); the inputs are then cast to the loop's types, as
    numba-cuda's gufuncs do (a float64 array into a float32 signature)."""
    for loop in loops:
        if all(np.can_cast(formal, actual) for formal, actual in zip(loop, dtypes, strict=True)):
            return loop
    return None


def _names(dtypes) -> str:
    return ", ".join(d.name for d in dtypes)


__all__ = ["GUFunc"]
