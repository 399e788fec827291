"""@cuda.jit objects: specialise per argument types, `kernel[grid, block]`, the launch version.

A Dispatcher holds a GPU function's specialisations (one per target and argument types),
finds the one for a launch's arguments (`specialization_for_launch`: type keys, one dict lookup,
the watch list), and owns the launch version its launchers are bound at (jit/launcher.py).
`kernel[grid, block]` is a LaunchConfiguration (jit/configuration.py), which launches.
Inference, compilation and cache lookups happen in jit/slow_path.py, only for new argument
types or a changed dependency.
"""

from __future__ import annotations

import inspect
import weakref

import numpy as np

from gpunb.cache.fingerprint import still_valid
from gpunb.foundation import config as settings
from gpunb.foundation import events, forksafe
from gpunb.foundation import types as t
from gpunb.foundation.errors import (
    CompileError,
    GpunbError,
    LaunchConfigError,
    LaunchError,
    NotAKernelError,
    is_launch_interrupt,
    launch_interrupted,
)
from gpunb.jit import failures as _failures
from gpunb.jit.configuration import LaunchConfiguration, key_kinds
from gpunb.jit.declared import match_declared
from gpunb.jit.launcher import LaunchVersion, bump_all
from gpunb.jit.numba_api import NumbaDispatcherAPI, warn_low_occupancy
from gpunb.jit.specialization import Specialization
from gpunb.runtime.devicearray import DeviceArray, HostDeviceArray
from gpunb.runtime.typeof import type_key

_DEVICE_ARRAYS = (DeviceArray, HostDeviceArray)  # their type key is precomputed: read it inline
# `kernel[grid, block]` objects a dispatcher keeps, oldest dropped first: a dict lookup, not
# functools.lru_cache, because `kernel[4, 256](...)` looks one up at every launch (lru_cache's
# lookup costs ~40 ns more; benchmarks/profile_launch.py's "config lookup" row)
CONFIGS_KEPT = 64


class _LiveDispatchers:
    """Every Dispatcher alive, so that a change of what all launches were prepared for (the
    RUNTIME_CHANGED event: the target, launch observers, CUDA contexts) reaches each: every
    launch version moves (under one lock: profile blocks start and end often), and after a
    target change each forgets its specialisation lookup. Subscribed by the first dispatcher
    made, not by importing this module."""

    def __init__(self):
        self._dispatchers: dict = {}  # id -> weakref to a Dispatcher (dropped when it dies)
        self._versions: dict = {}  # id -> that Dispatcher's LaunchVersion
        self._subscription = None
        # reentrant: a dispatcher dying in a garbage collection that runs while this thread
        # holds the lock (an allocation inside it) drops itself through _drop in this thread
        self._lock = forksafe.lock(reentrant=True)

    def add(self, dispatcher: Dispatcher) -> None:
        key = id(dispatcher)
        with self._lock:
            self._dispatchers[key] = weakref.ref(dispatcher, lambda _, key=key: self._drop(key))
            self._versions[key] = dispatcher.version
            if self._subscription is None:
                self._subscription = events.subscribe(events.EventKind.RUNTIME_CHANGED,
                                                      self._runtime_changed)

    def _drop(self, key: int) -> None:
        with self._lock:
            self._dispatchers.pop(key, None)
            self._versions.pop(key, None)

    def all(self) -> list:
        with self._lock:
            refs = list(self._dispatchers.values())
        return [dispatcher for ref in refs if (dispatcher := ref()) is not None]

    def _runtime_changed(self, what: events.RuntimeChange) -> None:
        if what is events.RuntimeChange.TARGET:
            for dispatcher in self.all():
                dispatcher.forget_target()
        with self._lock:
            versions = list(self._versions.values())
        bump_all(versions)


_live = _LiveDispatchers()


def live_dispatchers() -> list:
    """Every GPU function (Dispatcher) alive now."""
    return _live.all()

_OPTION_NAMES = ("fastmath", "lineinfo", "debug", "opt", "max_registers", "cache", "boundscheck",
                 "inline", "cpu_mode", "racecheck", "link", "lto", "launch_bounds",
                 "shared_memory_carveout", "forceinline", "debugger", "cluster_dims")


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
        jit_checks.check_kernel_only(checked_options, device)
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
        jit_checks.check_kernel_signatures(self.declared_signatures, device)
        # the one thing that invalidates this function's launchers (jit/launcher.py)
        self.version = LaunchVersion()
        self._extensions: list = list(extensions or ())
        self._fast: dict = {}  # the arguments' type keys -> specialisation (the active target's)
        self._fast_target = None
        self._configs: dict = {}
        self._lock = forksafe.lock(reentrant=True)  # held while compiling
        self.specializations: dict = {}  # (target, argtypes) -> Specialization
        # (target, argtypes) -> (error type name, message, SourceLocation or None) of the last
        # compile that failed for them, until one succeeds: `%gpucache status` names it (not the
        # exception itself: its traceback would keep the launch's arguments alive)
        self.failed_compiles: dict = {}
        self.failed_launch = None  # jit/failures.LaunchFailure of the last launch, until one works
        _live.add(self)
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

    def __getitem__(self, config) -> LaunchConfiguration:
        # a loop launching kernel[grid, block] reuses one config object (no validation, no
        # allocation); unhashable configs (lists) take the long way. A key equal as values is
        # not enough: (2.0, 32) == (2, 32), so the types must be the ones it was made for
        try:
            found = self._configs.get(config)
        except TypeError:
            found = None
        if found is not None and (found.key is config or (  # the same tuple object, or
                type(config) is tuple and len(config) == 2 and
                type(config[0]) is int is type(config[1])) or  # two ints: always valid, or
                key_kinds(config) == found.key_kinds):
            return found
        try:
            made = self._make_config(config)
        except LaunchError as exc:
            located = _failures.at_user_line(exc)
            _failures.note_launch_failure(self, located)
            if located is exc:
                raise
            raise located from None
        try:
            if len(self._configs) >= CONFIGS_KEPT:
                del self._configs[next(iter(self._configs))]  # the oldest
            self._configs[config] = made
            made.key, made.key_kinds = config, key_kinds(config)
        except TypeError:
            pass
        return made

    def _make_config(self, config) -> LaunchConfiguration:
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
        from gpunb.backends.launch_config import check_dims, check_stream_and_shared

        check_dims(griddim, "grid", self.__name__)  # numba checks at kernel[...], not at launch
        check_dims(blockdim, "block", self.__name__)
        stream = config[2] if len(config) > 2 else 0
        shared = config[3] if len(config) > 3 else 0
        check_stream_and_shared(stream, shared, self.__name__)
        if settings.low_occupancy_warnings():  # numba-cuda's warning, opt-in in gpunb
            warn_low_occupancy(griddim)
        return LaunchConfiguration(self, griddim, blockdim, stream, shared)

    def __call__(self, *args, **kwargs):
        if any(getattr(a, "_gpunb_traced", False) for a in (*args, *kwargs.values())):
            raise TypeError(
                f"gpunb.fuse: the GPU function '{self.__name__}' is not supported inside a fused "
                "function; write the helper as a plain Python function of numpy operations (fuse "
                "traces through it) or write the whole computation as a @cuda.jit kernel")
        from gpunb.jit.options import user_location

        raise LaunchConfigError(
            f"'{self.__name__}' is a GPU function: launch it as {self.__name__}[grid, block](...) "
            "or call it from another GPU function (the launch configuration was not specified)",
            user_location(), hint="Python code cannot call GPU functions directly")

    def forall(self, ntasks: int, tpb: int = 0, stream=0,
               sharedmem: int = 0) -> LaunchConfiguration:
        """A 1-d launch covering `ntasks` threads (block size from occupancy when tpb == 0)."""
        from gpunb.backends.launch_config import check_stream_and_shared
        from gpunb.jit.options import user_location

        if isinstance(ntasks, (bool, np.bool_)) or not isinstance(ntasks, (int, np.integer)):
            raise LaunchConfigError(f"forall({ntasks!r}): the task count must be an integer, got "
                                    f"{type(ntasks).__name__}", user_location(),
                                    function=self.__name__,
                                    hint="count the tasks with integer arithmetic, e.g. "
                                         "kernel.forall(a.size)")
        if ntasks < 0:
            raise LaunchConfigError(f"forall({ntasks}): the task count must not be negative "
                                    "(Can't create ForAll with negative task count)",
                                    user_location(), function=self.__name__)
        check_stream_and_shared(stream, sharedmem, self.__name__)
        block = tpb or 256
        grid = max(1, -(-ntasks // block))
        return LaunchConfiguration(self, grid, block, stream, sharedmem)

    # ---- what launchers depend on ------------------------------------------------------------

    @property
    def extensions(self) -> list:
        """numba's argument-preparation hooks: objects whose `prepare_args(ty, val, stream=,
        retr=)` transforms each argument before a launch, applied last to first. The list may
        be changed after this: launchers bound before launch no more."""
        self.version.bump()
        return self._extensions

    @property
    def has_extensions(self) -> bool:
        return bool(self._extensions)

    def prepare_arguments(self, args: tuple, stream) -> tuple:
        """(the arguments as its extensions prepare them, cleanups to run after the launch)."""
        from gpunb.jit.numba_api import prepare_arguments

        return prepare_arguments(self._extensions, args, stream)

    def forget_target(self) -> None:
        """The target changed: the next launch looks its specialisation up again (those found
        so far are the old target's), and binds a new launcher (its version moves)."""
        self._fast.clear()
        self._fast_target = None
        self.version.bump()

    def specialization_for_launch(self, args: tuple) -> tuple:
        """(specialisation, the arguments' type keys or None, whether it was made just now) for
        a launch's arguments: one dict lookup and the watch list where it is known, else the
        slow path below."""
        try:
            key = tuple([a._key if a.__class__ in _DEVICE_ARRAYS else type_key(a) for a in args])
        except TypeError:
            key = None
        spec = self._fast.get(key) if key is not None else None
        if spec is not None and still_valid(spec.watch):
            return spec, key, False
        spec, new = self._specialize_for_args(args, key)
        return spec, key, new

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
        if any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in params.values()):
            _refuse_kernel_parameters(self.py_func)  # not "takes 2 arguments (out, args)"
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
        return match_declared(self.__name__, self.declared_signatures, argtypes)

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
                _failures.note_compile_failure(self, target, argtypes, exc)
                raise
            except KeyboardInterrupt as exc:  # Ctrl-C while compiling: say so, not where
                if is_launch_interrupt(exc):
                    raise
                raise launch_interrupted(
                    f"compiling '{self.__name__}' was interrupted (Ctrl-C, SIGINT or the "
                    "notebook's interrupt); nothing of it is kept: the next launch or compile "
                    "of it starts again") from None
            self.failed_compiles.pop((target, argtypes), None)
            self.specializations[(target, argtypes)] = spec
            if spec is not found:  # new code (compiled or from the cache), not a kept one
                _failures.announce_specialization(self, target, argtypes, spec)
            return spec

    # ---- compile-time API (numba.cuda compatible) ----------------------------------------------

    def compile(self, sig) -> Specialization:
        """Compile for a declared signature ("void(float32[:])") now, as numba's does."""
        from gpunb.jit import options as jit_checks

        sig = _parse_signatures([sig], self.py_func)[0]
        jit_checks.check_kernel_signatures([sig], self.device)
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

    def max_active_clusters(self, blockdim, dynsmemsize: int = 0, signature=None,
                            cluster_dims=None) -> int:
        """The most thread-block clusters of this kernel that can be resident at once, for a
        block shape and dynamic shared memory (CUDA's cudaOccupancyMaxActiveClusters): a
        persistent cluster kernel launches cluster size x this many blocks. The kernel's own
        cluster_dims, or `cluster_dims` for one compiled without. On a GPU from the driver
        (clusters are placed within a GPC: fewer than SMs x blocks per SM / cluster size may
        fit); on the CPU target its co-resident blocks over the cluster's."""
        from gpunb.jit import inspection

        spec = self._any_spec(signature)
        return inspection.max_active_clusters(spec, blockdim, int(dynsmemsize), cluster_dims)

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
        from gpunb.jit.options import check_inspection_arch
        from gpunb.jit.report import build_report

        return build_report(self, signature, check_inspection_arch(arch or self.inspection_arch))

    @property
    def signatures(self) -> list:
        return [k[1] for k in self.specializations]


def _refuse_kernel_parameters(py_func) -> None:
    """A kernel with *args, **kwargs, keyword- or positional-only parameters: inference's error
    (at the def), before a launch counts its arguments against them."""
    import linecache

    from gpunb.foundation.errors import CompileError, SourceLocation

    code = py_func.__code__
    line, col = code.co_firstlineno, 0  # the first decorator's line: the caret goes to `def`
    for n in range(line, line + 50):
        text = linecache.getline(code.co_filename, n)
        if text.lstrip().startswith(("def ", "async def ")):
            line, col = n, len(text) - len(text.lstrip())
            break
    raise CompileError("GPU functions take positional parameters and *args only (kernels no "
                       "*args)", SourceLocation(code.co_filename, line, col),
                       hint="pass a tuple instead of *args; remove **kwargs and keyword-only "
                            "parameters", function=py_func.__name__)


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

