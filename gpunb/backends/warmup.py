"""Starting LLVM's library and the driver's PTX compiler while a process's first compile infers.

Two costs of a process's first compile do not depend on the kernel and release the GIL: loading
llvmlite's shared library (a dlopen of ~100 MB, which the LLVM stage would do) and starting the
driver's PTX compiler, which the first cuLink of a process pays (~20 ms on an H100, against
0.6 ms for the second). The first compile starts a daemon thread for each - the link of a
trivial kernel only for a compile that ends in a driver link, in a process that already made
its CUDA context - while the compile itself imports the compiler and infers types; on a machine
of several cores the two overlap each other as well. Started at the first compile and not at
decoration, so a process whose kernels all come from the disk cache does none of it. Failures
are silent: the compile then does the same work and reports its own errors. `GPUNB_WARMUP=0`
turns it off.
"""

from __future__ import annotations

import threading

from gpunb.foundation import config

# a kernel that any GPU of the last decade accepts: linking it starts the driver's PTX compiler
# (PTX ISA 6.0 for sm_50, JIT-compiled for the device's own architecture)
TRIVIAL_PTX = """.version 6.0
.target sm_50
.address_size 64

.visible .entry gpunb_warmup()
{
    ret;
}
"""

_lock = threading.Lock()
_started: dict = {}  # "library" / "linker" -> the thread doing it
done: list = []  # what finished, in order ("library", "linker", or "failed: ...")


def start(link: bool) -> list:
    """At a compile's start: load LLVM's library (once per process) and, for a compile ending
    in a driver link (`link`), warm the linker (once) - each on its own daemon thread, since
    both wait in native code with the GIL released and, one after the other, the linker's
    start could still be running when the compile reaches its link. The threads started."""
    if not config.warmup_enabled():
        return []
    with _lock:
        jobs = [job for job, wanted in (("library", True), ("linker", link))
                if wanted and job not in _started]
        threads = []
        for job in jobs:
            thread = threading.Thread(target=_warm, args=(job,), name=f"gpunb-warmup-{job}",
                                      daemon=True)
            _started[job] = thread
            threads.append(thread)
    for thread in threads:
        thread.start()
    return threads


def _warm(job: str) -> None:
    try:
        if job == "library":
            _load_llvm_library()
        elif _has_cuda_context():
            from gpunb.backends.cuda import modules

            modules.link_ptx(TRIVIAL_PTX)
        else:
            return
        done.append(job)
    except Exception as exc:  # noqa: BLE001 - the compile does this work itself then
        done.append(f"failed: {job}: {type(exc).__name__}")


def _load_llvm_library() -> None:
    """dlopen llvmlite's library (the GIL released); `import llvmlite.binding` then finds it
    loaded. Nothing is imported: the Python side of llvmlite stays the compile's."""
    import ctypes
    import importlib.util
    import os
    import sys

    if "llvmlite.binding" in sys.modules:
        return
    spec = importlib.util.find_spec("llvmlite")
    folder = os.path.join(spec.submodule_search_locations[0], "binding")
    names = [n for n in os.listdir(folder) if n.startswith("libllvmlite")]
    if names:
        ctypes.CDLL(os.path.join(folder, names[0]))


def _has_cuda_context() -> bool:
    """Whether the process made a CUDA context through cuda.bindings (never initialises one)."""
    from gpunb.backends.cuda import driver

    return driver.has_context() and driver.drives_libcuda()
