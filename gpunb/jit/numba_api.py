"""numba-cuda's Dispatcher introspection, on gpunb's dispatcher: `overloads`, `specialize(*args)`,
`specialized`, `get_regs_per_thread()` and its siblings (`extensions` is the dispatcher's own).

numba-cuda code reads these to size launches and to check what was compiled; they answer from
gpunb's specialisations (one per argument types on the active target). Resource figures are
ptxas's for the kernel's PTX (the driver's once loaded on a GPU): on the CPU target they say what
the kernel uses on the GPU of GPUNB_ARCH, which is what code sizing launches by them wants.
"""

from __future__ import annotations

from collections import Counter, namedtuple
from types import SimpleNamespace

from gpunb.foundation import types as t


class Overload:
    """One compiled variant, as numba-cuda's `_Kernel`: resource figures, `cooperative`,
    the argument types and its inspection methods."""

    def __init__(self, dispatcher, spec):
        self._dispatcher = dispatcher
        self._spec = spec
        self._resources: dict | None = None

    def _usage(self) -> dict:
        if self._resources is None:
            from gpunb.jit import inspection

            self._resources = inspection.resources_for(self._dispatcher, self._spec)
        return self._resources

    @property
    def argument_types(self) -> tuple:
        return self._spec.argtypes

    @property
    def signature(self) -> t.Signature:
        return t.Signature(t.void, self._spec.argtypes)

    @property
    def cooperative(self) -> bool:
        """True when the kernel synchronises its grid (and so launches cooperatively)."""
        return bool(self._spec.artifact.cooperative)

    @property
    def regs_per_thread(self) -> int:
        return int(self._usage()["registers"])

    @property
    def shared_mem_per_block(self) -> int:
        return int(self._usage()["shared_bytes"])

    @property
    def local_mem_per_thread(self) -> int:
        return int(self._usage()["local_bytes"])

    @property
    def const_mem_size(self) -> int:
        return int(self._usage()["const_bytes"])

    @property
    def max_threads_per_block(self) -> int:
        return int(self._usage()["max_threads_per_block"])

    def inspect_llvm(self) -> str:
        from gpunb.jit import inspection

        return inspection.llvm_for(self._dispatcher, self._spec.argtypes)

    def inspect_asm(self, cc=None) -> str:
        return gpu_artifact(self._dispatcher, self._spec).ptx

    def inspect_sass(self) -> str:
        from gpunb.jit import inspection

        return inspection.sass_for(self._dispatcher, self._spec)

    def max_cooperative_grid_blocks(self, blockdim, dynsmemsize: int = 0) -> int:
        from gpunb.jit import inspection

        return inspection.max_cooperative_blocks(self._spec, blockdim, int(dynsmemsize))

    def __repr__(self) -> str:
        return f"<compiled {self._dispatcher.__name__} {self.signature}>"


class CompiledDevice:
    """What compile_device returns: the signature and the symbol a GPU sees (numba's
    CompileResult, of which gpunb has these facts)."""

    def __init__(self, signature, symbol: str, qualname: str):
        self.signature = signature
        self.fndesc = SimpleNamespace(mangled_name=symbol, qualname=qualname,
                                      argtypes=signature.args)

    def __repr__(self) -> str:
        return f"<compiled device function {self.fndesc.mangled_name} {self.signature}>"


def gpu_artifact(dispatcher, spec):
    """The CUDA target's artifact for a specialisation: a kernel's own on the CUDA target, else
    the PTX compiled for the same argument types (no GPU needed; a device function as itself)."""
    if spec.backend.name == "cuda" and not dispatcher.device:
        return spec.artifact
    from gpunb.jit import inspection

    return inspection.ptx_for(dispatcher, spec.argtypes)


def argument_types(args: tuple) -> tuple:
    """specialize()'s arguments: kernel-language types as they are, values by their type."""
    from gpunb.runtime.typeof import typeof

    return tuple(a if isinstance(a, t.Type) else typeof(a) for a in args)


CompileStats = namedtuple("CompileStats", ("cache_path", "cache_hits", "cache_misses"))


def note_cache_lookup(dispatcher, argtypes: tuple, hit: bool) -> None:
    """Count one cache lookup of `dispatcher` for `argtypes` (its `stats`, numba's counters)."""
    counts = dispatcher.__dict__.get("_cache_counts")
    if counts is None:
        counts = dispatcher._cache_counts = (Counter(), Counter())
    counts[0 if hit else 1][argtypes] += 1


class NumbaDispatcherAPI:
    """Mixed into Dispatcher: the numba-cuda names over gpunb's specialisations."""

    _specialized = False  # made by specialize(), or cuda.jit with one signature (not a list)

    @property
    def stats(self) -> CompileStats:
        """numba's compile statistics: the cache directory (None with the cache off for this
        function) and Counters of cache hits and misses by argument types - one per lookup, a
        hit being code found in the cache (memory or disk) instead of compiled."""
        from gpunb import cache

        counts = self.__dict__.get("_cache_counts") or (Counter(), Counter())
        enabled = cache.enabled() and self.options.get("cache", True) is not False
        return CompileStats(cache.cache_dir() if enabled else None, counts[0], counts[1])

    def __reduce__(self):
        return reduce_dispatcher(self)

    def recompile(self) -> None:
        """numba's recompile(): every specialisation compiled so far is made again from the
        function and the globals as they are now (numba keeps code that read a changed global
        until this is called; gpunb notices the change at the next launch, so here it only
        forces the work). Launchers bound before it bind again."""
        with self._lock:
            compiled = list(self.specializations)
            self.specializations.clear()
        self.forget_target()
        for target, argtypes in compiled:
            self.specialization_for(argtypes, target)

    @property
    def specialized(self) -> bool:
        """True for a dispatcher fixed to one signature (numba-cuda's meaning)."""
        return self._specialized

    def _variants(self) -> dict:
        """{argtypes: Specialization} on the active target, compiling declared signatures."""
        from gpunb.runtime.target import active_target

        target = active_target(self.requested_target)
        if not any(k[0] == target for k in self.specializations):
            for sig in self.declared_signatures:
                if not self.device:
                    self.specialization_for(tuple(sig.args), target)
        return {k[1]: s for k, s in self.specializations.items() if k[0] == target}

    @property
    def overloads(self) -> dict:
        """{argument types: compiled variant} on the active target, as numba-cuda's."""
        return {argtypes: Overload(self, spec) for argtypes, spec in self._variants().items()}

    def specialize(self, *args):
        """A new dispatcher fixed to the types of `args` (values or types), compiled now; the
        same one for the same types."""
        if self.specialized:
            raise RuntimeError("Dispatcher already specialized")
        argtypes = argument_types(args)
        memo = self.__dict__.setdefault("_specialized_children", {})
        found = memo.get(argtypes)
        if found is not None:
            return found
        spec = self.specialization_for(argtypes)
        child = type(self)(self.py_func, device=self.device, target=self.requested_target,
                           signatures=[t.Signature(t.void, argtypes)], _eager=False,
                           extensions=list(self.extensions), **self.options)
        child.specializations[(spec.target, argtypes)] = spec
        child._specialized = True
        memo[argtypes] = child
        return child

    # ---- inspection: what a GPU runs, on every target (numba-cuda's meaning) -------------------

    def inspect_llvm(self, signature=None):
        """The LLVM IR for a GPU (NVPTX), as gpunb hands it to LLVM's optimiser, on every
        target (numba-cuda's is NVVM's input): one string for a signature, else {signature: ir}
        for every one compiled. The CPU target's own (optimised): inspect_host_llvm()."""
        from gpunb.jit import inspection

        return self._inspected(signature,
                               lambda spec: inspection.llvm_for(self, spec.argtypes))

    def inspect_asm(self, signature=None):
        """PTX, on every target (on the CPU target compiled for the CUDA target, no GPU needed);
        the CPU target's host assembly: inspect_host_asm()."""
        return self._inspected(signature, lambda spec: gpu_artifact(self, spec).ptx)

    def inspect_lto_ptx(self, signature=None):
        """numba-cuda's PTX after link-time optimisation: gpunb compiles a kernel and its device
        functions as one module, so this is the kernel's PTX (inspect_asm)."""
        return self.inspect_asm(signature)

    def inspect_host_llvm(self, signature=None):
        """The LLVM IR of the active target's code (host IR on the CPU target)."""
        return self._inspected(signature, lambda spec: spec.artifact.llvm_ir)

    def inspect_host_asm(self, signature=None):
        """The active target's assembly (host assembly on the CPU target, PTX on CUDA)."""
        return self._inspected(signature, lambda spec: spec.backend.assembly(spec.artifact))

    def compile_device(self, args, return_type=None):
        """numba's Dispatcher.compile_device: compile this function for the argument types
        `args` now; the result names its symbol in inspect_llvm()/inspect_asm() as numba's
        does (`.fndesc.mangled_name`) and holds its signature."""
        from gpunb.jit import inspection
        from gpunb.jit.options import parse_signature

        argtypes = tuple(parse_signature(tuple(args), "compile_device argument types").args)
        self.specialization_for(argtypes)  # errors come now, as numba's compile does
        artifact = inspection.ptx_for(self, argtypes)
        return CompiledDevice(t.Signature(return_type, argtypes), artifact.symbol,
                              self.py_func.__qualname__)

    def _inspected(self, signature, text):
        if signature is not None:
            return text(self._any_spec(signature))
        self._any_spec()
        return {k[1]: text(s) for k, s in self.specializations.items()}

    def _resource(self, name: str, signature):
        if signature is not None:
            argtypes = tuple(signature.args) if isinstance(signature, t.Signature) else \
                tuple(signature)
            return getattr(self.overloads[argtypes], name)
        overloads = self.overloads
        if self.specialized:
            return getattr(next(iter(overloads.values())), name)
        return {argtypes: getattr(o, name) for argtypes, o in overloads.items()}

    def get_regs_per_thread(self, signature=None):
        """Registers per thread: an int for a signature (or a specialized dispatcher), else
        {argument types: registers} for every compiled variant."""
        return self._resource("regs_per_thread", signature)

    def get_shared_mem_per_block(self, signature=None):
        """Static shared memory per block in bytes (same forms as get_regs_per_thread)."""
        return self._resource("shared_mem_per_block", signature)

    def get_local_mem_per_thread(self, signature=None):
        """Local memory per thread in bytes (same forms as get_regs_per_thread)."""
        return self._resource("local_mem_per_thread", signature)

    def get_const_mem_size(self, signature=None):
        """Constant memory in bytes (same forms as get_regs_per_thread)."""
        return self._resource("const_mem_size", signature)

    def get_max_threads_per_block(self, signature=None):
        """The most threads a block of this kernel may have (same forms as
        get_regs_per_thread)."""
        return self._resource("max_threads_per_block", signature)


def compile_declared(dispatcher) -> None:
    """numba compiles the signatures given to cuda.jit at decoration, so their errors surface
    there: kernels are compiled for the active target (types only when that target is a GPU this
    machine lacks), device functions are type-checked (they compile into their callers)."""
    from gpunb.runtime.target import active_target

    if _names_itself_before_bound(dispatcher.py_func):
        return  # self-recursive: its own name is bound after decoration; compiled at first use
    target = active_target(dispatcher.requested_target)
    runnable = target == "cpu"
    if target == "cuda":
        from gpunb.backends.cuda import driver

        runnable = driver.is_available()
    for sig in dispatcher.declared_signatures:
        argtypes = tuple(sig.args)
        if runnable and not dispatcher.device:
            dispatcher.specialization_for(argtypes, target)
            continue
        from gpunb import backends
        from gpunb.backends.pipeline import compile
        from gpunb.foundation.events import Stage

        compile(dispatcher.py_func, argtypes, dict(dispatcher.options), backends.get(target),
                stop_after=Stage.TYPES, device=dispatcher.device)


def _names_itself_before_bound(func) -> bool:
    """Whether `func` calls itself by a name not bound yet (the decorator runs first)."""
    code, own = func.__code__, func.__name__
    if own in code.co_names and own not in func.__globals__:
        return True
    if own in code.co_freevars:
        cell = func.__closure__[code.co_freevars.index(own)]
        try:
            cell.cell_contents  # noqa: B018 - an empty cell raises
        except ValueError:
            return True
    return False


def prepare_arguments(extensions: list, args: tuple, stream) -> tuple:
    """Run numba's `extensions` over a launch's arguments: (new args, cleanups to run after)."""
    from gpunb.runtime.typeof import typeof

    cleanups: list = []
    out = []
    for value in args:
        ty = typeof(value)
        for ext in reversed(extensions):
            ty, value = ext.prepare_args(ty, value, stream=stream, retr=cleanups)
        out.append(value)
    return tuple(out), cleanups


def rebuild_dispatcher(cls, function_bytes: bytes, device: bool, target, signatures: list,
                       options: dict, extensions: list, specialized: bool,
                       source_text: str | None = None):
    """pickle's constructor for a Dispatcher (`cls`): the Python function by value (as numba
    pickles it, so local functions travel too), then a new dispatcher with the same options.
    numba compiles bytecode; gpunb compiles source, so the function's text travels with it and
    is recorded for the new code object (verified before use, see compiler.source_recovery)."""
    import cloudpickle

    func = cloudpickle.loads(function_bytes)
    if source_text is not None:
        from gpunb.foundation import exec_sources

        exec_sources.remember(func.__code__, source_text, func.__code__.co_filename)
    dispatcher = cls(func, device=device, target=target, signatures=signatures,
                     extensions=extensions, **options)
    dispatcher._specialized = specialized
    return dispatcher


def reduce_dispatcher(dispatcher) -> tuple:
    """Dispatcher.__reduce__: compiled code is not pickled (it is rebuilt, or found in the
    cache, where unpickled); the function goes by value through cloudpickle."""
    try:
        import cloudpickle
    except ImportError:  # pragma: no cover - an optional dependency
        import pickle

        raise pickle.PicklingError(
            f"pickling the GPU function '{dispatcher.__name__}' needs cloudpickle "
            "(pip install cloudpickle), which pickles Python functions by value") from None
    return (rebuild_dispatcher, (type(dispatcher), cloudpickle.dumps(dispatcher.py_func),
                                 dispatcher.device,
                                 dispatcher.requested_target,
                                 list(dispatcher.declared_signatures), dict(dispatcher.options),
                                 list(dispatcher.extensions), dispatcher.specialized,
                                 _source_text(dispatcher.py_func)))


def _source_text(py_func) -> str | None:
    """The whole text (file, cell or exec'd string) `py_func` was defined in, or None."""
    import linecache

    from gpunb.compiler.frontend import load_source
    from gpunb.foundation.errors import CompileError

    try:
        source = load_source(py_func)
    except CompileError:
        return None  # unpickled, it reports the missing source where it compiles
    if source.text_lines is not None:
        return "".join(source.text_lines)
    # with the module's globals, linecache also asks the module's loader (as inspect does)
    return "".join(linecache.getlines(source.filename,
                                      getattr(py_func, "__globals__", None))) or None


def pre_launch_callbacks(config) -> list:
    """A launch configuration's numba-cuda pre_launch_callbacks (host code, run before each of
    its launches with (kernel, launch_config); they must not launch CUDA work). A configuration
    with callbacks is that object only: `kernel[grid, block]` later makes a fresh one, and its
    launches take the Python path (a native launcher cannot call back)."""
    if config._callbacks is None:
        config._callbacks = []
        config._native = config._python = None  # its launches take the Python path
        configs = config.dispatcher._configs
        for key in [k for k, v in configs.items() if v is config]:
            del configs[key]
    return config._callbacks


def run_pre_launch_callbacks(config, args: tuple) -> None:
    dispatcher = config.dispatcher
    kernel = Overload(dispatcher, dispatcher.specialization_for_launch(args)[0])
    for callback in list(config._callbacks):
        callback(kernel, config)


def warn_low_occupancy(griddim) -> None:
    """numba-cuda's warning for a grid of fewer than 128 blocks (on with
    GPUNB_LOW_OCCUPANCY_WARNINGS=1): most such grids leave most of a GPU idle."""
    import warnings

    from gpunb.foundation.errors import PerformanceWarning

    dims = griddim if isinstance(griddim, (tuple, list)) else (griddim,)
    size = 1
    for n in dims:
        size *= int(n)
    if size < 128:
        warnings.warn(f"Grid size {size} will likely result in GPU under-utilization due to "
                      "low occupancy.", PerformanceWarning, stacklevel=4)
