"""What the CPU target's runtime library costs and saves (backends/cpu/runtime_lib.py).

    python -m benchmarks.profile_cpu_runtime [--quick]

Coroutine-mode kernels (barriers the work-group planner cannot handle, racecheck, the puzzles'
grader, the debugger) call a block scheduler compiled once per process instead of compiling
their own. Prints: each scheduler variant's build and compile+load (paid once per process, at
the first kernel that calls it); puzzle checks (a coroutine compile with access recording and a
launch; best of several); barrier-heavy coroutine launches; and the first launch of a coroutine
and of a work-group kernel from the disk cache in a new process (which pays the runtime's
compile). Before the runtime library (2026-11-28, the 2-core development machine, this script):
puzzle checks 337-457 ms (after: 95-187 ms); the first launch of a coroutine kernel from the
disk cache in a new process 130 ms (after: 240 ms, the scheduler's compile once per process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KERNELS = """
from gpunb import cuda, float32

@cuda.jit(cpu_mode="coroutine")
def coroutine_kernel(out, x):
    buf = cuda.shared.array(16, float32)
    t = cuda.threadIdx.x
    buf[t] = x[t]
    cuda.syncthreads()
    out[t] = buf[15 - t] * 2

@cuda.jit
def workgroup_kernel(out, x):
    buf = cuda.shared.array(16, float32)
    t = cuda.threadIdx.x
    buf[t] = x[t]
    cuda.syncthreads()
    out[t] = buf[15 - t] * 2
"""
CHILD = """
import sys, time, json
import numpy as np
sys.path.insert(0, sys.argv[1])
import kernels
x = np.arange(16, dtype=np.float32); out = np.zeros_like(x)
for name in ("coroutine_kernel", "workgroup_kernel"):
    t = time.perf_counter(); getattr(kernels, name)[1, 16](out, x)
    print(json.dumps({"kernel": name, "ms": (time.perf_counter() - t) * 1e3}))
"""


def variants() -> None:
    from gpunb.backends.cpu import runtime_lib
    from gpunb.backends.cpu.target import _llvm

    _llvm()
    print("scheduler variant                          IR+digest   compile+load (once per process)")
    for flags in ((False, False, False), (False, False, True), (True, False, False),
                  (True, True, False), (False, False, False, True), (True, False, False, True)):
        variant = runtime_lib.variant_name(*flags)
        started = time.perf_counter()
        name = runtime_lib.scheduler_symbol(*flags)
        built = time.perf_counter()
        runtime_lib.require(name, "profile")
        print(f"  {variant:40s} {(built - started) * 1e3:6.1f} ms   "
              f"{(time.perf_counter() - built) * 1e3:6.1f} ms")


def puzzle_checks(repeats: int) -> None:
    from gpunb import puzzles

    sys.path.insert(0, str(REPO / "tests" / "puzzles"))
    import solutions

    print("puzzle check (coroutine compile + recorded launch), best of", repeats)
    for name in ("map", "shared", "dot", "prefix_sum", "warp_sum", "matmul"):
        kernel = getattr(solutions, f"{name}_kernel")
        best = min(_timed(lambda k=kernel, n=name: puzzles.check(n, k)) for _ in range(repeats))
        print(f"  {name:12s} {best * 1e3:7.1f} ms")


def _timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def launches(repeats: int) -> None:
    import numpy as np

    from gpunb import cuda, float32

    @cuda.jit(cpu_mode="coroutine")
    def barrier_loop(out, a, rounds):
        buf = cuda.shared.array(256, float32)
        t = cuda.threadIdx.x
        i = cuda.blockIdx.x * cuda.blockDim.x + t
        acc = a[i]
        for _ in range(rounds):
            buf[t] = acc
            cuda.syncthreads()
            acc = acc + buf[(t + 1) % 256] * 0.5
            cuda.syncthreads()
        out[i] = acc

    @cuda.jit(cpu_mode="coroutine")
    def warp_shuffle(out, a, rounds):
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        v = a[i]
        for _ in range(rounds):
            v = v + cuda.shfl_down_sync(0xFFFFFFFF, v, 1) * 0.5
        out[i] = v

    @cuda.jit(cluster_dims=(2, 1, 1))
    def cluster_loop(out, a, rounds):  # barrier_loop with cluster barriers (clusters of 2)
        buf = cuda.shared.array(256, float32)
        cluster = cuda.cg.this_cluster()
        t = cuda.threadIdx.x
        i = cuda.blockIdx.x * cuda.blockDim.x + t
        acc = a[i]
        for _ in range(rounds):
            buf[t] = acc
            cluster.sync()
            acc = acc + buf[(t + 1) % 256] * 0.5
            cluster.sync()
        out[i] = acc

    a = np.random.rand(64 * 256).astype(np.float32)
    out = np.zeros_like(a)
    print("barrier-heavy coroutine launches, 64 blocks of 256 threads, best of", repeats)
    for label, run in (("100 block barriers", lambda: barrier_loop[64, 256](out, a, 50)),
                       ("50 warp shuffles", lambda: warp_shuffle[64, 256](out, a, 50)),
                       ("100 cluster barriers", lambda: cluster_loop[64, 256](out, a, 50))):
        run()
        print(f"  {label:20s} {min(_timed(run) for _ in range(repeats)) * 1e3:7.2f} ms")


def disk_hits() -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "kernels.py").write_text(textwrap.dedent(KERNELS))
        env = dict(os.environ, GPUNB_CACHE_DIR=str(Path(folder) / "cache"), GPUNB_TARGET="cpu",
                   GPUNB_NOTICES="0", PYTHONPATH=str(REPO))
        env.pop("GPUNB_CACHE", None)
        print("first launch in a new process (incl. the runtime's compile for coroutines)")
        for attempt in ("compile and store", "disk hit", "disk hit"):
            proc = subprocess.run([sys.executable, "-c", CHILD, folder], env=env,
                                  capture_output=True, text=True, timeout=600, check=True)
            rows = [json.loads(line) for line in proc.stdout.splitlines()]
            print(f"  {attempt:18s} " + "  ".join(f"{r['kernel']} {r['ms']:6.0f} ms"
                                                  for r in rows))


def main(argv: list[str]) -> int:
    repeats = 2 if "--quick" in argv else 5
    os.environ.setdefault("GPUNB_CACHE", "0")
    import gpunb

    gpunb.set_target("cpu")
    variants()
    puzzle_checks(repeats)
    launches(repeats * 4)
    disk_hits()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
