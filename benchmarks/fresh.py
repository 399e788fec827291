"""Measurements that need a new process: `python -m benchmarks.fresh TASK TOOL WORKDIR`.

Prints one JSON line. Tasks: `cold` (compile + first launch, context created before the clock
starts), `diskhit` (the same with the disk cache on: run twice, the second run is the hit),
`import` (`import gpunb` + `%load_ext gpunb`, or `import numba.cuda`), `sim` (one figure under
numba's simulator, arguments in $BENCH_ARGS). Nothing is imported at module level, so the clock
sees exactly what the task imports.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def _arrays_gpunb():
    import numpy as np

    from gpunb import cuda

    x = cuda.to_device(np.ones(32, np.float32))  # creates the context (CUDA target)
    out = cuda.device_array(32, np.float32)
    cuda.synchronize()
    return cuda, x, out


def _arrays_numba():
    import numpy as np
    from numba import cuda

    x = cuda.to_device(np.ones(32, np.float32))
    out = cuda.device_array(32, np.float32)
    cuda.synchronize()
    return cuda, x, out


def _first_launch(tool: str, workdir: Path, kernel_name: str) -> dict:
    """Seconds for the first launch (+ sync) of a kernel defined in a fresh module file."""
    import numpy as np

    from benchmarks.kernelsrc import load_kernels

    lib = "numba" if tool == "numba" else "gpunb"
    cuda, x, out = _arrays_numba() if lib == "numba" else _arrays_gpunb()
    kernel = getattr(load_kernels(lib, workdir), kernel_name)  # lazy: nothing compiled yet
    started = time.perf_counter()
    kernel[1, 32](out, x, np.float32(2.0))
    cuda.synchronize()
    seconds = time.perf_counter() - started
    ok = bool((out.copy_to_host() == 2.0).all())
    return {"seconds": seconds, "ok": ok, "event": _cache_event(lib, kernel)}


def _cache_event(lib: str, kernel) -> str:
    """What the tool says about its cache for this kernel, so a hit is never assumed."""
    if lib == "numba":
        if not hasattr(kernel, "stats"):
            return "numba cache: no stats on this dispatcher"
        hits = sum(kernel.stats.cache_hits.values())
        misses = sum(kernel.stats.cache_misses.values())
        return f"numba cache hits={hits} misses={misses}"
    records = kernel.cache_info()
    events = [str(r.get("event") or "not recorded") for r in records]
    return "gpunb cache event: " + (", ".join(events) or "none")


def _cold_cupy(workdir: Path) -> dict:
    import cupy as cp

    from benchmarks.kernelsrc import SCALE3_CUDA_C

    x = cp.ones(32, cp.float32)  # creates the context
    out = cp.empty(32, cp.float32)
    cp.cuda.Device().synchronize()
    started = time.perf_counter()
    kernel = cp.RawKernel(SCALE3_CUDA_C, "scale3")
    kernel((1,), (32,), (out, x, cp.float32(2.0)))
    cp.cuda.Device().synchronize()
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "ok": bool((out.get() == 2.0).all()), "event": "NVRTC"}


def _import_time(tool: str) -> dict:
    if tool == "numba":
        started = time.perf_counter()
        import numba.cuda  # noqa: F401

        return {"seconds": time.perf_counter() - started, "touched": []}
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()  # a notebook already has its shell: not counted
    started = time.perf_counter()
    import gpunb  # noqa: F401

    shell.run_line_magic("load_ext", "gpunb")
    seconds = time.perf_counter() - started
    heavy = ("cuda.bindings.driver", "llvmlite.binding", "ipywidgets", "gpunb.compiler.lower")
    return {"seconds": seconds, "touched": [m for m in heavy if m in sys.modules]}


def main(argv: list[str]) -> int:
    task, tool, workdir = argv[0], argv[1], Path(argv[2])
    args = json.loads(os.environ.get("BENCH_ARGS", "{}"))
    if task in ("cold", "diskhit") and tool == "cupy":
        result = _cold_cupy(workdir)
    elif task == "cold":
        result = _first_launch(tool, workdir, "scale3")
    elif task == "diskhit":
        result = _first_launch(tool, workdir, "scale3_cached")
    elif task == "import":
        result = _import_time(tool)
    elif task == "sim":
        from benchmarks.cpu_figures import simulate

        result = simulate(workdir, args)
    else:
        raise SystemExit(f"unknown task {task!r}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
