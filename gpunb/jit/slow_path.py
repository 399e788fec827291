"""The dispatcher's slow path: argument types -> a launchable Specialization, through the cache.

Protocol with gpunb.cache: fingerprint the function (its code and everything it reads,
transitively); when a previous specialisation's watch list failed but the key is unchanged (a
rebinding to an equal value, a new notebook epoch) keep it with the new watch list; otherwise
look the key up (memory, then disk; a miss claims the key, or waits for the thread or process
already compiling it) and compile only on a miss (backends/pipeline.compile), storing the result
- or abandoning the claim when the compile fails, so that waiters compile at once. The watch
list is taken even with the cache disabled: invalidation in a live process is correctness, not
caching.
"""

from __future__ import annotations

import time

from gpunb.foundation import types as t
from gpunb.jit.numba_api import note_cache_lookup
from gpunb.jit.specialization import Specialization


def build_specialization(dispatcher, argtypes: tuple, backend, previous=None) -> Specialization:
    """The specialisation for these argument types: kept, loaded from the cache, or compiled."""
    from gpunb.cache import default_cache
    from gpunb.cache.fingerprint import collect
    from gpunb.compiler.guard import compile_guard

    options = dict(dispatcher.options)
    signature = str(t.Signature(t.void, argtypes))
    with compile_guard(dispatcher.py_func):
        # fresh: the code compiled below freezes today's values, so its key must describe them
        # (a digest memoised earlier in this epoch may predate `TABLE[0] = 5`)
        fingerprint = collect(dispatcher, fresh=True)
    cache = default_cache()
    arch = backend.cache_arch()  # for cuda: also checks that a GPU is usable
    checked = time.perf_counter()
    if previous is not None and previous.key is not None and previous.key == cache.key_for(
            fingerprint, signature, options, backend.name, arch):
        if _rebound(previous.watch):
            previous.cache_event = cache.kept(
                dispatcher.__name__, fingerprint, signature, backend.name, previous.key,
                getattr(previous.cache_event, "entry_bytes", 0),
                (time.perf_counter() - checked) * 1000.0)
        previous.watch = fingerprint.watch
        previous.fingerprint = fingerprint
        return previous
    _check_load_in_capture(backend.name, dispatcher.__name__)
    started = time.perf_counter()
    artifact, pending = cache.lookup(dispatcher.__name__, fingerprint, signature, options,
                                     backend.name, arch, previous_key=getattr(
                                         previous, "key", None))
    note_cache_lookup(dispatcher, argtypes, artifact is not None)
    typed = None
    if artifact is None:
        from gpunb.backends.pipeline import compile

        try:
            compiled = compile(dispatcher.py_func, argtypes, options, backend,
                               device=dispatcher.device)
            program = backend.load(compiled.artifact)
        except BaseException:
            cache.abandon(pending)  # other processes waiting for this key compile it now
            raise
        typed = compiled.typed
        artifact = program.artifact  # with the resources the loader measured
        compile_ms = (time.perf_counter() - started) * 1000.0
        event = cache.store(pending, artifact, fingerprint, compile_ms)
    else:
        program = backend.load(artifact)
        artifact = program.artifact
        compile_ms = 0.0
        event = pending.event
        _warn_again(artifact)
    carveout = options.get("shared_memory_carveout")
    if carveout is not None and hasattr(program, "function"):  # a GPU kernel: the driver's
        program.function.set_shared_memory_carveout(carveout)  # (the CPU target has no L1)
    spec = _specialization(dispatcher, argtypes, artifact, backend, program, typed)
    spec.compile_ms = compile_ms
    spec.watch = fingerprint.watch
    spec.fingerprint = fingerprint
    spec.key = pending.key
    spec.cache_event = event
    return spec


def _check_load_in_capture(target: str, name: str) -> None:
    """A kernel first launched inside a graph capture is compiled (or loaded from the cache)
    there: drivers from CUDA 12.3 load modules while a stream captures, older ones invalidate
    the capture, so say beforehand what to do."""
    from gpunb.runtime import capture

    if target != "cuda" or capture.current() is None:
        return
    from gpunb.backends.cuda import driver, graphs

    if driver.driver_version() < graphs.LOADS_DURING_CAPTURE:
        from gpunb.foundation.errors import GraphError

        have = ".".join(map(str, driver.driver_version()))
        raise GraphError(f"kernel '{name}' is launched for the first time inside a graph "
                         f"capture, and this driver (CUDA {have}) cannot load kernels while a "
                         "stream captures (CUDA 12.3 and newer can)", function=name,
                         hint="launch it once before the `with gpunb.graph():` block (or "
                              "compile it: kernel.compile('void(float32[:], ...)')), or update "
                              "the NVIDIA driver")


def _specialization(dispatcher, argtypes: tuple, artifact, backend, program,
                    typed) -> Specialization:
    from gpunb.runtime.packing import ArgPacker

    # the packer passes arrays the specialisation's way (host pointers on the CPU target even
    # when the active target is cuda, e.g. cuda.jit(target="cpu") on a GPU machine)
    packer = ArgPacker(artifact.param_slots, backend.name, dispatcher.__name__)
    spec = Specialization(argtypes, artifact, backend, packer, program, typed)
    if artifact.debug_area:  # breakpoint() or the debugger option: launches stop in a debugger
        import functools
        import weakref

        from gpunb.jit.debug_launch import launch_under_debugger

        spec.launch = functools.partial(launch_under_debugger, weakref.ref(dispatcher), spec)
    return spec


def _warn_again(artifact) -> None:
    """A cache hit stands for a compile: the warnings that compile emitted are emitted again."""
    if not artifact.compile_warnings:
        return
    import warnings

    from gpunb.foundation import errors

    for category, message, filename, line in artifact.compile_warnings:
        cls = getattr(errors, category, None)
        cls = cls if isinstance(cls, type) and issubclass(cls, Warning) else errors.CompileWarning
        warnings.warn_explicit(message, cls, filename, line)


def _rebound(watch) -> bool:
    """Whether a name the kernel reads was rebound (not merely a new epoch: a notebook cell ran,
    which re-checks every kernel and is no news)."""
    from gpunb.cache import epoch
    from gpunb.cache.fingerprint import still_valid

    return not still_valid([entry for entry in watch if not epoch.is_watch_entry(entry)])
