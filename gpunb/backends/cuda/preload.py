"""Importing the compiler and starting LLVM's NVPTX code generator while the driver makes the
process's first CUDA context.

A process's first compile used to pay, before any work on its kernel, for importing the compiler
and llvmlite (~45 ms on an H100 host: some ninety modules) and for LLVM's first-time setup (its
targets, the device's NVPTX target machine, the first code generation: ~15 ms). None of it
depends on the kernel. Meanwhile every process that uses the GPU waits for the driver's first
context (cuDevicePrimaryCtxRetain: 100-130 ms on the H100 host) in native code, the GIL
released. So once cuInit has found a GPU, a thread does the compile's kernel-independent work
then: it imports the compile path's modules (this backend's, and those the layers above name
with `install`), creates the device's target machine and emits PTX for a trivial kernel (under
LLVM_LOCK, as every compile). driver.init starts it just before cuInit. Measured on the H100:
cold compile + first launch 76 -> 13 ms, a first launch from the disk cache 8.7 -> 3.1 ms
(benchmarks/profile_cold.py, profile_disk_hit.py; RESULTS.md).

A machine without a GPU never starts it (cuInit fails). A process whose kernels all come from
the disk cache pays for it only where the context's creation does not hide it (its native
launchers load llvmlite anyway). Importing in two threads at once is safe because the package
has no module-level import cycles (import-linter's acyclic_siblings contract). A fork waits for
the thread, and so does the interpreter's exit (never stopped inside LLVM). Failures are
silent: the compile then does the work itself and reports its own errors. `GPUNB_WARMUP=0`
turns it off; `done` says what finished.
"""

from __future__ import annotations

import atexit
import importlib
import os
import threading

from gpunb.foundation import config

# what a first compile on this backend imports (their imports follow), in the order it does
MODULES = (
    "gpunb.compiler.guard",
    "gpunb.compiler.frontend",
    "gpunb.backends.pipeline",
    "gpunb.backends.warmup",
    "gpunb.compiler.pipeline",
    "gpunb.compiler.builtins.cuda_intrinsics",
    "gpunb.compiler.builtins.warp",
    "gpunb.compiler.builtins.cache_hints",
    "gpunb.compiler.builtins.vectors",
    "gpunb.backends.cuda.backend",
    "gpunb.backends.cuda.target",
    "llvmlite.binding",
    "gpunb.backends.cuda.linemap",
    "gpunb.backends.cuda.modules",
    "gpunb.backends.cuda.toolchain",
)

# a kernel in NVPTX's LLVM IR: emitting it runs every pass and the code generator once
TRIVIAL_IR = """
target triple = "nvptx64-nvidia-cuda"

define void @gpunb_preload(float* %out, float %a) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %i = sext i32 %tid to i64
  %p = getelementptr float, float* %out, i64 %i
  %x = load float, float* %p
  %y = fmul contract float %x, %a
  %z = fadd contract float %y, 1.0
  store float %z, float* %p
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

!nvvm.annotations = !{!0}
!0 = !{void (float*, float)* @gpunb_preload, !"kernel", i32 1}
"""

_extra: list = []  # modules the layers above add (the dispatcher's slow path, the cache, ...)
_lock = threading.Lock()
_thread: threading.Thread | None = None
_stop = threading.Event()  # the interpreter is exiting: do not start more LLVM work
done: list = []  # what finished, in order: "imports", "ptx sm_XY", or "failed: ..."


def install(*names: str) -> None:
    """Import also `names` (modules of the compile path above this layer: the dispatcher's slow
    path, the cache) after MODULES."""
    for name in names:
        if name not in _extra:
            _extra.append(name)


def start(answered: threading.Event, device_cc,
          real_driver: bool = True) -> threading.Thread | None:
    """cuInit is about to be called (driver.init): start the thread, once per process.
    `answered` is set when cuInit has returned; `device_cc()` is then the compute capability to
    warm the code generator for, or None where there is no usable GPU. Not for a simulated
    driver (`real_driver` False: the tests'), which has no context creation to hide the work
    behind and whose recorded calls are the tests' to check."""
    global _thread
    if not config.warmup_enabled() or not real_driver:
        return None
    with _lock:
        if _thread is not None:
            return None
        _thread = threading.Thread(target=_preload, args=(answered, device_cc),
                                   name="gpunb-preload", daemon=True)
        atexit.register(_finish)
        # a child forked while the thread holds an import's lock or LLVM_LOCK would wait on it
        # forever: the fork waits for the thread instead (at most a few seconds)
        os.register_at_fork(before=_before_fork)
    _thread.start()
    return _thread


def wait(timeout: float | None = None) -> bool:
    """Wait for the thread to finish (tests; a fork). True when it is not running."""
    thread = _thread
    if thread is None or thread is threading.current_thread():
        return True
    thread.join(timeout)
    return not thread.is_alive()


def _preload(answered: threading.Event, device_cc) -> None:
    try:
        # no GPU, no compile for it: a machine without one (CI's) never imports in the back
        if not answered.wait(60.0) or _stop.is_set() or device_cc() is None:
            return
        for name in (*MODULES, *_extra):
            if _stop.is_set():
                return
            importlib.import_module(name)
        done.append("imports")
        cc = device_cc()
        if cc is None or _stop.is_set():
            return
        from gpunb.backends.cuda import target
        from gpunb.backends.llvm_lock import LLVM_LOCK

        with LLVM_LOCK:
            if _stop.is_set():
                return
            target.emit_ptx(TRIVIAL_IR, tuple(cc), kernel_symbols=("gpunb_preload",))
        done.append(f"ptx {target.arch_string(tuple(cc))}")
    except Exception as exc:  # noqa: BLE001 - the compile does this work itself then
        done.append(f"failed: {type(exc).__name__}: {exc}")


def _before_fork() -> None:
    wait(5.0)


def _finish() -> None:
    """At exit: let the thread end its LLVM call rather than stop it inside LLVM."""
    _stop.set()
    wait(10.0)


__all__ = ["MODULES", "TRIVIAL_IR", "install", "done", "start", "wait"]
