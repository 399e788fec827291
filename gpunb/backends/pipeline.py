"""One compile for every caller: types -> LLVM -> PTX or host code -> cubin, each stage an event.

The dispatcher's slow path, inspection (PTX, SASS), `cuda.compile_ptx` and the notebook all call
`compile`; a caller that needs less stops early (`stop_after=Stage.PTX`). The stages are the
backend's (`backend.stages`), run in order, all under compile_guard so that an internal failure
reaches the user as a CompileError naming their function. Each stage publishes STAGE_STARTED and
STAGE_FINISHED (with its time) and the whole compile COMPILE_STARTED / COMPILE_FINISHED; while
nobody subscribes, no event object is built.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import re
import time
import warnings
from typing import Any

from gpunb.foundation import events
from gpunb.foundation import types as t
from gpunb.foundation.artifact import KernelArtifact
from gpunb.foundation.events import CompileEvent, EventKind, Stage
from gpunb.foundation.records import record


@record
class Compilation:
    """What compile() produced up to the stage it stopped after."""

    typed: Any  # the compiler's TypedFunction (Stage.TYPES onwards)
    stage: Stage  # the last stage that ran
    builder: Any = None  # the compiler's ModuleBuilder holding the LLVM module (Stage.LLVM on)
    artifact: KernelArtifact | None = None  # from the stage after LLVM on (PTX / host code)


def compile(py_func, argtypes: tuple, options: dict, backend, *,
            stop_after: Stage | None = None, arch=None, device: bool = False,
            export_device: bool = False, return_type=None) -> Compilation:
    """Compile `py_func` for these kernel-language argument types on `backend`.

    `stop_after` is one of `backend.stages` (default: all of them, ending with a loadable
    artifact); `arch` defaults to the backend's (the current GPU, GPUNB_ARCH, the host).
    `device=True` infers a device function (it may return a value); `export_device=True` also
    lowers it as an externally visible function of its own name instead of a kernel entry
    (compile_ptx(device=True); such a compile stops after the code stage). A device function's
    declared `return_type` is its return type, the returned values cast to it.
    """
    from gpunb.backends import warmup

    last = stop_after or backend.stages[-1]
    if last not in backend.stages:
        raise ValueError(f"the {backend.name} backend has no stage {last}; its stages are "
                         f"{', '.join(map(str, backend.stages))}")
    if last is not Stage.TYPES:  # LLVM's library (and the driver's linker) load meanwhile
        warmup.start(link=last is Stage.LINK)
    from gpunb.backends.llvm_lock import LLVM_LOCK
    from gpunb.compiler.guard import compile_guard
    from gpunb.compiler.pipeline import infer_kernel

    signature = str(t.Signature(return_type if device else t.void, tuple(argtypes)))
    report = _Report(py_func.__name__, signature, backend.name)
    # one compile at a time in a process (LLVM's global context); threads launching kernels
    # already compiled never wait for it
    with LLVM_LOCK, _collector_paused(), report.compiling(), compile_guard(py_func), \
            warnings.catch_warnings(record=True) as emitted:
        typed = report.stage(Stage.TYPES, infer_kernel, py_func, tuple(argtypes), options,
                             device, return_type)
        if last is Stage.TYPES:
            compilation = Compilation(typed, Stage.TYPES)
        else:
            compilation = _after_types(typed, options, backend, arch, last, export_device,
                                       report)
    return _with_warnings(compilation, emitted)


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic garbage collector off for one compile (taken under LLVM_LOCK: one
    compile at a time, so the pauses never interleave; a nested compile finds it off already).

    A compile makes tens of thousands of short-lived, cyclic objects (llvmlite's IR: every
    instruction points at its block, every block at its function). Collected while the compile
    runs, those still alive are promoted to the old generations, and in a process holding a
    large heap (a notebook with torch or pandas loaded, a test worker) each promotion brings the
    next full collection of that whole heap nearer: measured, ~19 % of a test worker's CPU went
    to the collector. Paused, they die young: the first collection after the compile finds them
    unreachable. The cost is the compile's garbage held until then (megabytes)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _with_warnings(compilation: Compilation, emitted: list) -> Compilation:
    """Emit the compile's warnings (recorded, so that they can be kept) and keep gpunb's own in
    the artifact: a cache hit emits them again (jit/slow_path.py)."""
    kept = []
    for w in emitted:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if w.category.__module__.startswith("gpunb."):
            kept.append((w.category.__name__, str(w.message), w.filename, w.lineno))
    if kept and compilation.artifact is not None:
        compilation = dataclasses.replace(compilation, artifact=dataclasses.replace(
            compilation.artifact, compile_warnings=tuple(kept)))
    return compilation


def run_stage(kernel: str, signature: str, target: str, stage: Stage, fn, *args):
    """fn(*args) published as a compile of one stage: work outside compile() that a progress
    view should name (SASS for inspection)."""
    report = _Report(kernel, signature, target)
    with report.compiling():
        return report.stage(stage, fn, *args)


def _after_types(typed, options: dict, backend, arch, last: Stage, export_device: bool,
                 report: _Report) -> Compilation:
    from gpunb.compiler.pipeline import mangle

    arch = backend.default_arch() if arch is None else arch
    # export_device: True exports the function under its own name, a str under that name
    symbol = (export_device if isinstance(export_device, str) else
              re.sub(r"[^0-9A-Za-z_$]", "_", typed.name)) if export_device \
        else mangle(typed.name, typed.argtypes)
    builder = report.stage(Stage.LLVM, backend.lower, typed, options, symbol, arch,
                           export_device)
    if last is Stage.LLVM:
        return Compilation(typed, Stage.LLVM, builder)
    code_stage = backend.stages[2]  # PTX or host code
    artifact = report.stage(code_stage, backend.emit, typed, builder, options, symbol, arch)
    if last is code_stage or export_device:
        return Compilation(typed, code_stage, builder, artifact)
    artifact = report.stage(Stage.LINK, backend.link, artifact, options)
    return Compilation(typed, Stage.LINK, builder, artifact)


class _Report:
    """Publishes one compile's events; builds none for a kind nobody subscribes to."""

    __slots__ = ("kernel", "signature", "target", "started")

    def __init__(self, kernel: str, signature: str, target: str):
        self.kernel = kernel
        self.signature = signature
        self.target = target
        self.started = time.perf_counter()

    def _publish(self, kind: EventKind, stage: Stage | None, ms: float = 0.0,
                 error: BaseException | None = None) -> None:
        if events.has_subscribers(kind):
            events.publish(kind, CompileEvent(kind, self.kernel, self.signature, self.target,
                                              stage, ms, _first_line(error)))

    @contextlib.contextmanager
    def compiling(self):
        """COMPILE_STARTED now, COMPILE_FINISHED (with the error, if any) when the block ends."""
        self._publish(EventKind.COMPILE_STARTED, None)
        try:
            yield
        except BaseException as exc:
            self._finished(exc)
            raise
        self._finished(None)

    def _finished(self, error: BaseException | None) -> None:
        ms = (time.perf_counter() - self.started) * 1000.0
        self._publish(EventKind.COMPILE_FINISHED, None, ms, error)

    def stage(self, stage: Stage, fn, *args):
        """fn(*args), between STAGE_STARTED and STAGE_FINISHED events."""
        self._publish(EventKind.STAGE_STARTED, stage)
        started = time.perf_counter()
        try:
            result = fn(*args)
        except BaseException as exc:
            self._publish(EventKind.STAGE_FINISHED, stage,
                          (time.perf_counter() - started) * 1000.0, exc)
            raise
        self._publish(EventKind.STAGE_FINISHED, stage, (time.perf_counter() - started) * 1000.0)
        return result


def _first_line(error: BaseException | None) -> str:
    if error is None:
        return ""
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


__all__ = ["Compilation", "compile", "run_stage"]
