"""Where a disk-cache hit's milliseconds go in a new process (cProfile of the first launch).

    python -m benchmarks.profile_disk_hit

Compiles a small kernel into a fresh cache directory in one process, then, in a second process
with the CUDA context already created, profiles the first launch (fingerprint, lookup, cubin load,
packing, launch) and prints the 30 most expensive functions by cumulative time.
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

SECOND = textwrap.dedent("""
    import cProfile, pstats, sys, time
    import numpy as np
    from gpunb import cuda
    from gpunb.backends.cuda import driver
    driver.current_device()
    x = cuda.to_device(np.ones(1024, np.float32)); out = cuda.device_array(1024, np.float32)
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    import kernels_mod
    kernels_mod.scale[4, 256](out, x, np.float32(2.0))
    driver.synchronize()
    profiler.disable()
    print(f"first launch from the disk cache: {(time.perf_counter() - start) * 1e3:.1f} ms")
    print(kernels_mod.scale.cache_info()[0]["event"])
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
""")


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "kernels_mod.py"), "w") as f:
            f.write(KERNEL)
        env = dict(os.environ, GPUNB_CACHE_DIR=os.path.join(tmp, "cache"), GPUNB_TARGET="cuda",
                   PYTHONPATH=os.pathsep.join([tmp, os.environ.get("PYTHONPATH", "")]))
        first = ("import numpy as np, kernels_mod\nfrom gpunb import cuda\n"
                 "kernels_mod.scale[1, 32](cuda.device_array(32, np.float32), "
                 "cuda.to_device(np.ones(32, np.float32)), np.float32(1))\n")
        subprocess.run([sys.executable, "-c", first], env=env, check=True)
        subprocess.run([sys.executable, "-c", SECOND], env=env, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
