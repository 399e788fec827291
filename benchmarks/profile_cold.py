"""Where a cold compile's milliseconds go in a new process: stages, imports, hot functions.

    python -m benchmarks.profile_cold            # on a GPU machine
    python -m benchmarks.profile_cold --ptx      # anywhere: stop after PTX (llvmlite's NVPTX)
    python -m benchmarks.profile_cold --cpu      # the CPU target

Runs a fresh child process with the disk cache off. The child creates the CUDA context (or
nothing, for --ptx/--cpu) and its arrays before the clock starts, then compiles and launches a
small kernel once under cProfile, printing the time of each compile stage (from gpunb's compile
events), the modules the first compile imported, and the 25 functions with the most cumulative
time. `--noprof` prints the figures without the profiler's overhead; `--no-warmup` runs the child
with GPUNB_WARMUP=0 (no warm-up thread: backends/warmup.py), for an A/B of the two.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap

KERNEL = textwrap.dedent("""
    from gpunb import cuda

    @cuda.jit
    def scale(out, x, a):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] * a
""")

CHILD = textwrap.dedent("""
    import cProfile, pstats, sys, time
    import numpy as np
    import gpunb
    from gpunb import cuda

    mode, profile = sys.argv[1], sys.argv[2] == "1"
    stages = []
    gpunb.events.subscribe("stage_finished", lambda e: stages.append((str(e.stage), e.ms)))
    if mode == "cuda":
        gpunb.set_target("cuda")
        from gpunb.backends.cuda import driver
        driver.current_device()
    elif mode == "cpu":
        gpunb.set_target("cpu")
    x = cuda.to_device(np.ones(1024, np.float32))
    out = cuda.device_array(1024, np.float32)
    before = set(sys.modules)
    profiler = cProfile.Profile()
    start = time.perf_counter()
    if profile:
        profiler.enable()
    import kernels_mod
    if mode == "ptx":
        cuda.compile_ptx(kernels_mod.scale, "void(float32[::1], float32[::1], float32)")
        what = "cold compile to PTX"
    else:
        kernels_mod.scale[4, 256](out, x, np.float32(2.0))
        cuda.synchronize()
        what = "cold compile + first launch"
    profiler.disable()
    total = (time.perf_counter() - start) * 1e3
    print(f"{what} ({mode}): {total:.1f} ms")
    for stage, ms in stages:
        print(f"  stage {stage:<12} {ms:7.1f} ms")
    from gpunb.backends import warmup
    print(f"  warm-up thread finished: {', '.join(warmup.done) or 'nothing'}")
    new = sorted(m for m in set(sys.modules) - before if not m.startswith("gpunb."))
    print(f"  {len(set(sys.modules) - before)} modules imported; outside gpunb: {' '.join(new)}")
    if profile:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
""")


def main(argv: list[str]) -> int:
    mode = "ptx" if "--ptx" in argv else "cpu" if "--cpu" in argv else "cuda"
    profile = "0" if "--noprof" in argv else "1"
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "kernels_mod.py"), "w") as f:
            f.write(KERNEL)
        env = dict(os.environ, GPUNB_CACHE="0", GPUNB_CACHE_DIR=os.path.join(tmp, "cache"),
                   PYTHONPATH=os.pathsep.join([tmp, os.environ.get("PYTHONPATH", "")]))
        if "--no-warmup" in argv:
            env["GPUNB_WARMUP"] = "0"
        subprocess.run([sys.executable, "-c", CHILD, mode, profile], env=env, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
