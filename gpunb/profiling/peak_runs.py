"""How gpunb's own peak-measuring kernels run (peaks.py's FMA chains, tensor_peak.py's mma.sync
chains): launched through their specialisation, and timed as the best of a few passes with
CUDA events."""

from __future__ import annotations

import numpy as np


def spec_launcher(kernel, target: str, blocks: int, threads: int, args: tuple):
    """run(iters): launch `kernel` on `target` with `args + (int64(iters),)` through its
    specialisation, so a profile running in another thread records no launch of it."""
    from gpunb.jit.launcher import Launcher
    from gpunb.runtime.typeof import typeof

    def run(iters: int) -> None:
        values = (*args, np.int64(iters))
        spec = kernel.specialization_for(tuple(typeof(v) for v in values), target)
        # a launcher without hooks, whatever observes launches now: no recorder records it
        Launcher(spec, kernel[blocks, threads], None, kernel.version.value).run(values)

    return run


def best_event_seconds(run, iters: int, passes: int = 5) -> float:
    """The fastest of `passes` calls of run(iters) on the GPU, in seconds by CUDA events (after
    one short call that compiles and loads the kernel)."""
    from gpunb.backends.cuda import driver

    cu, check = driver.cuda_driver(), driver.check
    run(16)
    start = check(cu.cuEventCreate(0), "cuEventCreate")
    end = check(cu.cuEventCreate(0), "cuEventCreate")
    try:
        best = float("inf")
        for _ in range(passes):  # the first passes may run before the clocks have risen
            check(cu.cuEventRecord(start, 0), "cuEventRecord")
            run(iters)
            check(cu.cuEventRecord(end, 0), "cuEventRecord")
            check(cu.cuEventSynchronize(end), "cuEventSynchronize")
            ms = float(check(cu.cuEventElapsedTime(start, end), "cuEventElapsedTime"))
            best = min(best, ms * 1e-3)
    finally:
        for event in (start, end):
            cu.cuEventDestroy(event)
    return best
