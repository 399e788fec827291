"""How long PTX -> cubin takes in a new process, by the ways gpunb could do it.

    python -m benchmarks.profile_link        # on a GPU machine

Each way runs in a fresh process (the CUDA context is created before the clock): the driver's
JIT linker (cuLinkCreate/AddData/Complete, what gpunb uses), nvJitLink (the nvidia-nvjitlink
library through cuda.bindings), and cuModuleLoadData of the PTX itself (the driver compiles and
loads, but gives no cubin to cache). First and second link of the same small kernel's PTX, so
the one-time cost of loading each compiler shows apart from the per-kernel cost.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import sys, time
    import numpy as np
    import gpunb
    from gpunb import cuda
    from gpunb.backends.cuda import driver, modules

    way = sys.argv[1]
    gpunb.set_target("cuda")
    arch = driver.current_device().arch

    def scale(out, x, a):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] * a

    ptx, _ = cuda.compile_ptx(scale, "void(float32[::1], float32[::1], float32)",
                              cc=driver.current_device().compute_capability)
    cu = driver.cuda_driver()

    def link():
        if way == "driver":
            return modules.link_ptx(ptx, arch)[0]
        if way == "nvjitlink":
            from cuda.bindings import nvjitlink
            data = ptx.encode() + b"\\0"
            handle = nvjitlink.create(1, [f"-arch={arch}"])
            try:
                nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "k.ptx")
                nvjitlink.complete(handle)
                size = nvjitlink.get_linked_cubin_size(handle)
                cubin = bytearray(size)
                nvjitlink.get_linked_cubin(handle, cubin)
                return bytes(cubin)
            finally:
                nvjitlink.destroy(handle)
        return driver.check(cu.cuModuleLoadData(ptx.encode() + b"\\0"), "cuModuleLoadData")

    times = []
    for _ in range(2):
        start = time.perf_counter()
        link()
        times.append((time.perf_counter() - start) * 1e3)
    print(f"  {way:<10} first {times[0]:6.1f} ms, second {times[1]:6.1f} ms")
""")


def main() -> int:
    print("PTX -> loadable code, small kernel, fresh process per way")
    for way in ("driver", "nvjitlink", "loadptx"):
        done = subprocess.run([sys.executable, "-c", CHILD, way], capture_output=True, text=True)
        print(done.stdout.rstrip() or f"  {way:<10} failed: {done.stderr.strip()[-300:]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
