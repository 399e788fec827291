"""@cuda.jit objects: specialise per argument types, `kernel[grid, block](...)`, the fast path.

A launch on the fast path: one type key per argument, one dict lookup, a validity check of the
cached specialisation (identity checks of the globals its code reads), one test that nobody
subscribes to launch events, argument packing into a persistent buffer, one program launch
(driver or CPU runner). Everything else - inference, compilation, cache lookups (jit/slow_path.py)
and publishing launch events (jit/observe.py) - happens off that path.
"""

from __future__ import annotations

import inspect
import threading
import weakref

from gpunb.cache.fingerprint import still_valid
from gpunb.foundation import config, launch_gate
from gpunb.foundation import config as settings  # (`config` is also a launch config below)
from gpunb.foundation import events as _events
from gpunb.foundation import types as t
from gpunb.foundation.errors import (
    CompileError,
    GpunbError,
    LaunchConfigError,
    LaunchError,
    NoMatchingSignatureError,
    NotAKernelError,
)
from gpunb.jit.numba_api import NumbaDispatcherAPI, warn_low_occupancy
from gpunb.jit.observe import observed_launch
from gpunb.jit.specialization import Specialization
from gpunb.runtime.devicearray import DeviceArray, HostDeviceArray
from gpunb.runtime.typeof import type_key

_DEVICE_ARRAYS = (DeviceArray, HostDeviceArray)  # their type key is precomputed: read it inline
_DECLINED = -1  # a native launcher's "take the Python path" (runtime/native_plan_code.DECLINED)
_live: weakref.WeakSet = weakref.WeakSet()  # every Dispatcher, for _forget_targets


def _forget_targets() -> None:
    """gpunb.set_target changed the target: fast-path entries (which hold specialisations of the
    old target) go, so the next launch resolves the target again. The fast path itself checks
    nothing about targets: a launch costs the same."""
    for dispatcher in list(_live):
        dispatcher._fast.clear()
        dispatcher._fast_target = None
    launch_gate.bump()  # native launchers (of the old target's specialisations) step aside


config._target_listeners.append(_forget_targets)

_OPTION_NAMES = ("fastmath", "lineinfo", "debug", "opt", "max_registers", "cache", "boundscheck",
                 "inline", "cpu_mode", "racecheck", "link", "lto", "launch_bounds",
                 "shared_memory_carveout", "forceinline")


class Dispatcher(NumbaDispatcherAPI):
    """A GPU function: a kernel when launched, a device function when called from GPU code."""

    __gpunb_function__ = True

    def __init__(self, py_func, *, device: bool = False, signatures=(), target: str | None = None,
                 inspection_arch: str | None = None, extensions=None, _eager: bool = True,
                 **options):
        from gpunb.jit import options as jit_checks

        jit_checks.check_function(py_func)
        checked_options = jit_checks.check_options(options, _OPTION_NAMES)
        jit_checks.check_target(target)
        device = jit_checks.check_flag("device", device)
        self.py_func = py_func
        self.__name__ = py_func.__name__
        self.__qualname__ = getattr(py_func, "__qualname__", py_func.__name__)
        self.__doc__ = py_func.__doc__
        self.__module__ = getattr(py_func, "__module__", None)
        self.__wrapped__ = py_func
        self.device = device
        self.requested_target = target
        # the sm_XX that inspect() shows PTX/SASS for when none is passed (%%gpukernel --arch);
        # it never changes the code that runs
        self.inspection_arch = inspection_arch
        # the configuration chosen in the launch explorer: kernel[kernel.launch_config](...)
        self.launch_config = None
        self.options = checked_options
        self.declared_signatures = tuple(_parse_signatures(signatures, py_func))
        self._fast: dict = {}
        self._fast_target = None
        self._configs: dict = {}
        self._lock = threading.RLock()
        self.specializations: dict = {}  # (target, argtypes) -> Specialization
        # (target, argtypes) -> (error type name, message, SourceLocation or None) of the last
        # compile that failed for them, until one succeeds: `%gpucache status` names it (not the
        # exception itself: its traceback would keep the launch's arguments alive)
        self.failed_compiles: dict = {}
        self.failed_launch = None  # jit/failures.LaunchFailure of the last launch, until one works
        _live.add(self)
        if extensions:
            self.extensions.extend(extensions)
        # numba: one signature (not a list) fixes the dispatcher to it; signatures compile now
        self._specialized = bool(signatures) and not isinstance(signatures, list)
        if _eager and self.declared_signatures:
            from gpunb.jit.numba_api import compile_declared

            compile_declared(self)

    def __repr__(self) -> str:
        """`<gpunb kernel saxpy(out, x, y, a) from Cell In[2], line 1; compiled for
        void(float32[::1], ...) on cpu>`: what it is, where it came from, what it was built for."""
        from gpunb.foundation.errors import describe_filename

        kind = "device function" if self.device else "kernel"
        code = self.py_func.__code__
        params = ", ".join(inspect.signature(self.py_func).parameters)
        built = "; ".join(f"{t.Signature(t.void, types)} on {target}"
                          for target, types in list(self.specializations))
        return (f"<gpunb {kind} {self.__qualname__}({params}) from "
                f"{describe_filename(code.co_filename)}, line {code.co_firstlineno}; "
                + (f"compiled for {built}>" if built else "not compiled yet>"))

    # ---- launch syntax -------------------------------------------------------------------------

    def __getitem__(self, config) -> _LaunchConfig:
        # a loop launching kernel[grid, block] reuses one config object (no validation, no
        # allocation); unhashable configs (lists) take the long way
        try:
            found = self._configs.get(config)
        except TypeError:
            found = None
        if found is not None:
            return found
        try:
            made = self._make_config(config)
        except LaunchError as exc:
            from gpunb.jit.failures import note_launch_failure

            note_launch_failure(self, exc)
            raise
        try:
            if len(self._configs) >= 64:
                self._configs.clear()
            self._configs[config] = made
        except TypeError:
            pass
        return made

    def _make_config(self, config) -> _LaunchConfig:
        if self.device:
            raise NotAKernelError(f"'{self.__name__}' is a device function and cannot be "
                                  "launched (Cannot compile a device function as a kernel)",
                                  hint="call it from a kernel, or drop device=True")
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            from gpunb.jit.options import user_location

            raise LaunchError(f"launch configuration of '{self.__name__}' must be "
                              "[grid, block] or [grid, block, stream, dynamic_shared_bytes]",
                              user_location(), hint="e.g. kernel[blocks, 256](args...)")
        griddim, blockdim = config[0], config[1]
        from gpunb.backends.launch_config import check_dims

        check_dims(griddim, "grid", self.__name__)  # numba checks at kernel[...], not at launch
        check_dims(blockdim, "block", self.__name__)
        stream = config[2] if len(config) > 2 else 0
        shared = config[3] if len(config) > 3 else 0
        if settings.low_occupancy_warnings():  # numba-cuda's warning, opt-in in gpunb
            warn_low_occupancy(griddim)
        return _LaunchConfig(self, griddim, blockdim, stream, shared)

    def __call__(self, *args, **kwargs):
        if any(getattr(a, "_gpunb_traced", False) for a in (*args, *kwargs.values())):
            raise TypeError(
                f"gpunb.fuse: the GPU function '{self.__name__}' is not supported inside a fused "
                "function; write the helper as a plain Python function of numpy operations (fuse "
                "traces through it) or write the whole computation as a @cuda.jit kernel")
        raise LaunchConfigError(
            f"'{self.__name__}' is a GPU function: launch it as {self.__name__}[grid, block](...) "
            "or call it from another GPU function (the launch configuration was not specified)",
            hint="Python code cannot call GPU functions directly")

    def forall(self, ntasks: int, tpb: int = 0, stream=0, sharedmem: int = 0) -> _LaunchConfig:
        """A 1-d launch covering `ntasks` threads (block size from occupancy when tpb == 0)."""
        if ntasks < 0:
            raise LaunchConfigError(f"forall({ntasks}): the task count must not be negative "
                                    "(Can't create ForAll with negative task count)")
        block = tpb or 256
        grid = max(1, -(-ntasks // block))
        return _LaunchConfig(self, grid, block, stream, sharedmem)

    # ---- the fast path -------------------------------------------------------------------------

    def launch(self, griddim, blockdim, stream, sharedmem: int, args: tuple):
        """Launch with these arguments: the fast path (see the module docstring). Returns the
        specialisation launched (None when launch events were published)."""
        try:
            key = tuple([a._key if a.__class__ in _DEVICE_ARRAYS else type_key(a) for a in args])
        except TypeError:
            key = None
        spec = self._fast.get(key) if key is not None else None
        if spec is None or not still_valid(spec.watch):
            spec, new = self._specialize_for_args(args, key)
            if _events.launch_observers:
                return observed_launch(self, spec, new, griddim, blockdim, stream, sharedmem, args)
        elif _events.launch_observers:  # a profiler listens or records: the observed launch
            return observed_launch(self, spec, False, griddim, blockdim, stream, sharedmem, args)
        # jit/observe.py repeats these lines around its events; here they stay inline (no call)
        params, writeback = spec.packer.pack(args, spec.argtypes)
        spec.launch(griddim, blockdim, sharedmem, stream, params)
        if writeback:
            for fn in writeback:
                fn()
        return spec

    # ---- the slow path -------------------------------------------------------------------------

    def _specialize_for_args(self, args: tuple, key) -> tuple:
        """(specialisation, whether it was made just now) for a launch's arguments."""
        from gpunb.runtime.target import active_target
        from gpunb.runtime.typeof import typeof

        target = active_target(self.requested_target)
        if self._fast_target != target:
            self._fast.clear()
            self._fast_target = target
        params = inspect.signature(self.py_func).parameters
        if len(args) != len(params):
            n = len(params)
            raise LaunchError(
                f"kernel '{self.__name__}' takes {n} argument{'s' if n != 1 else ''} "
                f"({', '.join(params)}) but {len(args)} {'were' if len(args) != 1 else 'was'} "
                "given", function=self.__name__,
                hint="kernels take every argument positionally, in order (no defaults or "
                     f"keywords at launch): {self.__name__}[grid, block]({', '.join(params)})")
        argtypes = tuple(self._argument_type(typeof, k, name, a)
                         for k, (name, a) in enumerate(zip(params, args, strict=True)))
        argtypes = self._match_declared(argtypes)
        previous = self.specializations.get((target, argtypes))
        spec = self.specialization_for(argtypes, target)
        if key is not None:
            self._fast[key] = spec
        return spec, spec is not previous

    def _argument_type(self, typeof, k: int, name: str, value):
        try:
            return typeof(value)
        except TypeError as exc:
            raise LaunchError(f"cannot pass argument {k + 1} ('{name}') to '{self.__name__}': "
                              f"{exc}",
                              hint="kernels take numbers, tuples and arrays (numpy, device "
                                   "arrays, or anything with __cuda_array_interface__)") from None

    def _match_declared(self, argtypes: tuple) -> tuple:
        if not self.declared_signatures:
            return argtypes
        from gpunb.compiler.promotion import rating

        # numba's choice: the best conversion rating (exact, then safe, then unsafe); two best
        # of equal rating are ambiguous. (int64, float64) picks (float64, float64) over
        # (float32, float32)
        rated = sorted((r, k) for k, s in enumerate(self.declared_signatures)
                       if len(s.args) == len(argtypes)
                       and (r := rating(argtypes, tuple(s.args))) is not None)
        if len(rated) > 1 and rated[0][0] == rated[1][0] and rated[0][0] != (0, 0, 0):
            best = [self.declared_signatures[k] for r, k in rated if r == rated[0][0]]
            raise NoMatchingSignatureError(
                f"Ambiguous overloading for <function {self.__name__}> "
                f"({', '.join(map(str, argtypes))}):\n" +
                "\n".join(f"({', '.join(map(str, s.args))}) -> none" for s in best[:2]),
                hint="pass arguments of one declared signature's exact types, e.g. "
                     "np.float32(x)")
        if rated:
            return tuple(self.declared_signatures[rated[0][1]].args)
        sigs = ", ".join(str(s) for s in self.declared_signatures)
        hint = f"declared: {sigs}"
        if any(isinstance(a, t.Array) and a.readonly for a in argtypes):
            hint += "; a read-only numpy array matches no declared signature (as in numba): " \
                    "pass a writeable copy, e.g. np.array(ary)"
        if any(isinstance(a, t.Array) and not a.aligned for a in argtypes):
            hint += "; an unaligned array (a field of a packed record array, recs['y']) " \
                    "matches no declared signature: pass an aligned copy, e.g. " \
                    "np.ascontiguousarray(ary)"
        raise NoMatchingSignatureError(
            f"No matching definition for argument type(s) {', '.join(map(str, argtypes))}: no "
            f"declared signature of '{self.__name__}' accepts them", hint=hint)

    def specialization_for(self, argtypes: tuple, target: str | None = None) -> Specialization:
        """Compile (or fetch) the specialisation for these kernel-language argument types."""
        from gpunb.runtime.target import active_target

        target = target or active_target(self.requested_target)
        with self._lock:
            found = self.specializations.get((target, argtypes))
            if found is not None and still_valid(found.watch):
                return found
            from gpunb import backends
            from gpunb.jit.slow_path import build_specialization

            try:
                spec = build_specialization(self, argtypes, backends.get(target),
                                            previous=found)
            except GpunbError as exc:
                self.failed_compiles[(target, argtypes)] = (
                    type(exc).__name__, getattr(exc, "message", None) or str(exc),
                    getattr(exc, "loc", None))
                raise
            self.failed_compiles.pop((target, argtypes), None)
            self.specializations[(target, argtypes)] = spec
            return spec

    # ---- compile-time API (numba.cuda compatible) ----------------------------------------------

    def compile(self, sig) -> Specialization:
        """Compile for a declared signature ("void(float32[:])") now, as numba's does."""
        sig = _parse_signatures([sig], self.py_func)[0]
        return self.specialization_for(tuple(sig.args))

    def _any_spec(self, signature=None) -> Specialization:
        if signature is not None:
            sig = _parse_signatures([signature], self.py_func)[0]
            return self.specialization_for(tuple(sig.args))
        if not self.specializations and self.declared_signatures:
            self.specialization_for(tuple(self.declared_signatures[0].args))
        if not self.specializations:
            raise CompileError(f"'{self.__name__}' has not been compiled yet",
                               hint="launch it once, or pass a signature, e.g. "
                                    "inspect_asm('void(float32[:])')")
        return next(reversed(self.specializations.values()))

    def inspect_ptx(self, signature=None) -> str:
        """PTX for these argument types, on any target (compiled for the CUDA target if needed)."""
        from gpunb.jit import inspection

        spec = self._any_spec(signature)
        return inspection.ptx_for(self, spec.argtypes).ptx

    def inspect_sass(self, signature=None) -> str:
        """SASS (the GPU's machine code) of this kernel's PTX, by nvdisasm; no GPU needed."""
        from gpunb.jit import inspection

        if self.device:
            raise NotAKernelError(f"Cannot inspect SASS of a device function ('{self.__name__}')",
                                  hint="inspect the kernel that calls it")
        spec = self._any_spec(signature)
        return inspection.sass_for(self, spec)

    def inspect_types(self, signature=None, file=None) -> str:
        from gpunb.jit import inspection

        spec = self._any_spec(signature)
        if spec.typed is None:  # loaded from the cache: types were not inferred in this process
            spec.typed = self._infer(spec)
        text = inspection.describe_types(spec.typed)
        if file is not None:
            print(text, file=file)
            return None
        return text

    def resource_usage(self, signature=None) -> dict:
        """Registers, shared/local/const bytes and max threads per block: the driver's figures
        on a GPU, ptxas's for the PTX elsewhere."""
        from gpunb.jit import inspection

        spec = self._any_spec(signature)
        return inspection.resources_for(self, spec)

    def cpu_mode(self, signature=None) -> str:
        """How the CPU target runs this kernel's threads: "workgroup" (loops over the block's
        threads, vectorised) or "coroutine: <why>"; "" on the CUDA target."""
        artifact = self._any_spec(signature).artifact
        if artifact.target != "cpu":
            return ""
        if artifact.cpu_mode == "coroutine":
            return f"coroutine: {artifact.cpu_mode_reason}"
        return artifact.cpu_mode

    def line_map(self, signature=None) -> dict:
        """{python source line: [ptx line, ...]} from the PTX `.loc` directives."""
        from gpunb.jit import inspection

        spec = self._any_spec(signature)
        return {line: list(ptx) for line, ptx in inspection.ptx_for(self, spec.argtypes).line_map}

    def suggest_launch(self, n: int, signature=None) -> dict:
        """The block size with the best occupancy and the grid covering `n` threads."""
        from gpunb.jit import inspection

        return inspection.suggest_launch(self, self._any_spec(signature), n)

    def max_cooperative_grid_blocks(self, blockdim, dynsmemsize: int = 0, signature=None) -> int:
        """The most blocks a grid-synchronising launch of this kernel may have (all resident at
        once), for a block shape and dynamic shared memory; numba.cuda's method of the same name.
        On a GPU from the driver's occupancy API, on the CPU target from its co-residency limit."""
        from gpunb.jit import inspection

        spec = self._any_spec(signature)
        return inspection.max_cooperative_blocks(spec, blockdim, int(dynsmemsize))

    def cache_info(self) -> list:
        """Cache events of every specialisation of this function (structured records, in a
        list that prints one readable line each)."""
        from gpunb.jit.cacheinfo import CacheInfo

        out = CacheInfo()
        for (target, argtypes), spec in self.specializations.items():
            out.append({"function": self.__name__, "target": target,
                        "signature": str(t.Signature(t.void, argtypes)),
                        "event": spec.cache_event, "compile_ms": spec.compile_ms,
                        "key": spec.key})
        return out

    def _infer(self, spec: Specialization):
        """The typed function of a specialisation loaded from the cache (for inspect_types)."""
        from gpunb.backends.pipeline import compile
        from gpunb.foundation.events import Stage

        return compile(self.py_func, spec.argtypes, dict(self.options), spec.backend,
                       stop_after=Stage.TYPES, device=self.device).typed

    def inspect(self, signature=None, arch: str | None = None):
        """A KernelReport of this kernel (source, types, LLVM, PTX, SASS, resources, cache);
        after `%load_ext gpunb` it displays as the inspector widget, else as text. `arch`
        (sm_XX) chooses the PTX/SASS architecture (default: `inspection_arch`, the GPU's)."""
        from gpunb.jit.report import build_report

        return build_report(self, signature, arch or self.inspection_arch)

    @property
    def signatures(self) -> list:
        return [k[1] for k in self.specializations]


class _LaunchConfig:
    """`kernel[grid, block, stream, shared]`: call it with the kernel's arguments."""

    __slots__ = ("dispatcher", "grid", "block", "stream", "sharedmem", "_native",
                 "_native_misses", "_callbacks")

    def __init__(self, dispatcher, griddim, blockdim, stream, sharedmem):
        self.dispatcher = dispatcher
        self.grid = griddim  # as given: the launch path normalises (fast for plain ints)
        self.block = blockdim
        self.stream = stream
        self.sharedmem = sharedmem
        self._native = None  # (native launcher builtin, after) once bound (jit/fast_launch.py)
        self._native_misses = 0
        self._callbacks = None  # numba-cuda's pre_launch_callbacks (see the property)

    @property
    def pre_launch_callbacks(self) -> list:
        """numba-cuda's `callback(kernel, launch_config)` list, run before each launch."""
        from gpunb.jit.numba_api import pre_launch_callbacks

        return pre_launch_callbacks(self)

    @property
    def griddim(self) -> tuple:
        """numba's form: the grid as (x, y, z)."""
        return _dim3_of(self.grid)

    @property
    def blockdim(self) -> tuple:
        """numba's form: the block as (x, y, z)."""
        return _dim3_of(self.block)

    def __reduce__(self):
        if self.stream or self._callbacks:
            import pickle

            raise pickle.PicklingError(
                "Cannot pickle configured launches with pre-launch callbacks" if
                self._callbacks else "cannot pickle a launch configuration with a stream")
        return (_configured, (self.dispatcher, self.grid, self.block, self.sharedmem))

    def __call__(self, *args, **kwargs) -> None:
        # jit/fast_launch.py: (native launcher, what follows a packed or failed launch), one
        # attribute so that both always belong to the same launcher
        native = self._native
        if native is not None and not kwargs:
            status = native[0](args)
            if status == 0:
                return None
            if status != _DECLINED:
                return self._after_native(native[1], status)
            return self._rebind(args)
        return self._launch(args, kwargs)

    def _rebind(self, args: tuple) -> None:
        """The native launcher declined: where only the launch gate moved (a profile began or
        ended) bind a fresh one and launch through it, else the Python path."""
        from gpunb.jit import fast_launch

        native = fast_launch.rebind(self, args)
        if native is not None:
            status = native[0](args)
            if status == 0:
                return None
            if status != _DECLINED:
                return self._after_native(native[1], status)
        return self._launch(args, {})

    def _after_native(self, after, status: int) -> None:
        """The native launcher packed (the CPU target runs the grid now) or the driver failed."""
        try:
            after(status)
        except LaunchError as exc:
            if exc.loc is None:
                from gpunb.jit.options import user_location

                exc.loc = user_location()
            from gpunb.jit.failures import note_launch_failure

            note_launch_failure(self.dispatcher, exc)
            raise

    def _launch(self, args: tuple, kwargs: dict) -> None:
        """The Python path: every check, the right error; then maybe a native launcher."""
        dispatcher = self.dispatcher
        cleanups = None
        try:
            if kwargs:
                _refuse_keywords(dispatcher, kwargs)
            if dispatcher.__dict__.get("_extensions"):
                from gpunb.jit.numba_api import prepare_arguments

                args, cleanups = prepare_arguments(dispatcher.extensions, args, self.stream)
            if self._callbacks:
                from gpunb.jit.numba_api import run_pre_launch_callbacks

                run_pre_launch_callbacks(self, args)
            spec = dispatcher.launch(self.grid, self.block, self.stream, self.sharedmem, args)
        except LaunchError as exc:
            if exc.loc is None:  # point at the user's launch line (costs nothing without errors)
                from gpunb.jit.options import user_location

                exc.loc = user_location()
            from gpunb.jit.failures import note_launch_failure

            note_launch_failure(dispatcher, exc, args)  # for %gpucache status, the side panel
            raise
        if dispatcher.failed_launch is not None:
            dispatcher.failed_launch = None  # this launch worked
        for cleanup in cleanups or ():
            cleanup()
        if spec is not None and cleanups is None:
            if self._native_misses == 0 and not spec.natives:
                # the first launch of a specialisation (a process's first: the cold figure)
                self._native_misses = 1  # looks for no native launcher and imports nothing
                return
            from gpunb.jit import fast_launch

            fast_launch.refresh(self, spec, args)


def _dim3_of(dim) -> tuple:
    items = tuple(int(n) for n in (dim if isinstance(dim, (tuple, list)) else (dim,)))
    return items + (1,) * (3 - len(items))


def _configured(dispatcher, grid, block, sharedmem) -> _LaunchConfig:
    """pickle's constructor for `kernel[grid, block]`."""
    return dispatcher[grid, block, 0, sharedmem]


def _refuse_keywords(dispatcher, kwargs: dict) -> None:
    """numba launches take positional arguments only; say so at the user's launch line."""
    from gpunb.jit.options import user_location

    params = ", ".join(inspect.signature(dispatcher.py_func).parameters)
    raise LaunchError(f"kernel '{dispatcher.__name__}' was launched with keyword argument(s) "
                      f"{', '.join(kwargs)}", user_location(), function=dispatcher.__name__,
                      hint="kernels take every argument positionally, in order: "
                           f"{dispatcher.__name__}[grid, block]({params})")


def _parse_signatures(signatures, py_func) -> list:
    from gpunb.jit.options import signature_list

    out = signature_list(signatures)  # SignatureError at the user's line for a bad one
    if not out:
        annotated = _annotation_signature(py_func)
        if annotated is not None:
            out.append(annotated)
    return out


def _annotation_signature(py_func):
    """`def f(x: float32[:], n: int32)` declares a signature when every parameter is annotated."""
    try:
        params = inspect.signature(py_func).parameters.values()
    except (TypeError, ValueError):
        return None
    types = []
    for p in params:
        ann = p.annotation
        if isinstance(ann, str) and ann in t.TYPE_NAMES:
            ann = t.TYPE_NAMES[ann]
        if not isinstance(ann, t.Type):
            return None
        types.append(ann)
    if not types:
        return None
    return t.Signature(None, tuple(types))
