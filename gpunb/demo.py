"""A headless tour of gpunb: compile and run three kernels; show PTX, inspection and cache facts.

`python -m gpunb.demo` is the "main job" of the README: it works on any machine, choosing the CUDA
target when a usable GPU is present and the CPU target otherwise, and it says which one it used.
Every result is checked against numpy, so a non-zero exit status means something is wrong.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from gpunb import cuda, float32, int64

TPB = 256  # threads per block of the reduction; a compile-time constant, as numba requires


@cuda.jit
def saxpy(out, x, y, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


@cuda.jit
def block_sum(values, total):
    # a tree reduction in shared memory: every thread must reach every syncthreads()
    buf = cuda.shared.array(TPB, int64)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[tid] = values[i] if i < values.size else 0
    cuda.syncthreads()
    step = TPB // 2
    while step > 0:
        if tid < step:
            buf[tid] += buf[tid + step]
        cuda.syncthreads()
        step //= 2
    if tid == 0:
        cuda.atomic.add(total, 0, buf[0])


@cuda.jit
def box_blur(out, img):
    row, col = cuda.grid(2)
    rows, cols = img.shape
    if row < rows and col < cols:
        acc = float32(0.0)
        for dr in range(-1, 2):
            for dc in range(-1, 2):
                r = min(max(row + dr, 0), rows - 1)
                c = min(max(col + dc, 0), cols - 1)
                acc += img[r, c]
        out[row, col] = acc / 9.0


def describe_target(requested: str) -> tuple[str, str]:
    """The target kernels will run on, and a sentence saying why."""
    import gpunb
    from gpunb.runtime.target import active_target

    gpunb.set_target(requested)
    target = active_target()
    if target == "cuda":
        device = cuda.get_current_device()
        cc = ".".join(map(str, device.compute_capability))
        return target, f"CUDA GPU: {device.name} (sm_{cc.replace('.', '')})"
    if requested == "cpu":
        return target, "CPU target (asked for with --target cpu)"
    return target, "CPU target: no usable CUDA GPU found, so kernels run compiled on the host"


def timed_launches(launch, sync) -> tuple[float, float]:
    """(first launch incl. compile, second launch) in milliseconds, each waited for."""
    started = time.perf_counter()
    launch()
    sync()
    first = (time.perf_counter() - started) * 1e3
    started = time.perf_counter()
    launch()
    sync()
    return first, (time.perf_counter() - started) * 1e3


def run_saxpy(n: int) -> tuple[bool, str]:
    rng = np.random.default_rng(1)
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    d_x, d_y = cuda.to_device(x), cuda.to_device(y)
    d_out = cuda.device_array(n, np.float32)
    blocks = (n + 255) // 256
    first, again = timed_launches(lambda: saxpy[blocks, 256](d_out, d_x, d_y, np.float32(2.0)),
                                  cuda.synchronize)
    err = float(np.max(np.abs(d_out.copy_to_host() - (np.float32(2.0) * x + y))))
    return err <= 1e-6, (f"saxpy          n={n:,}  grid {blocks}x256  first launch (compile + run) "
                         f"{first:.1f} ms, next {again:.2f} ms  max |error| {err:.1e}")


def run_reduction(n: int) -> tuple[bool, str]:
    values = np.random.default_rng(2).integers(0, 10, n, dtype=np.int64)
    d_values = cuda.to_device(values)
    d_total = cuda.to_device(np.zeros(1, np.int64))
    blocks = (n + TPB - 1) // TPB

    def launch():
        d_total.copy_to_device(np.zeros(1, np.int64))
        block_sum[blocks, TPB](d_values, d_total)

    first, again = timed_launches(launch, cuda.synchronize)
    got, want = int(d_total.copy_to_host()[0]), int(values.sum())
    return got == want, (f"block_sum      n={n:,}  grid {blocks}x{TPB}  shared memory + "
                         f"syncthreads + atomic.add  sum {got:,} (numpy {want:,})  "
                         f"first {first:.1f} ms, next {again:.2f} ms")


def blur_reference(img: np.ndarray) -> np.ndarray:
    padded = np.pad(img, 1, mode="edge")
    rows, cols = img.shape
    acc = sum(padded[1 + dr:1 + dr + rows, 1 + dc:1 + dc + cols]
              for dr in (-1, 0, 1) for dc in (-1, 0, 1))
    return acc / np.float32(9.0)


def run_blur(rows: int, cols: int) -> tuple[bool, str]:
    img = np.random.default_rng(3).random((rows, cols), dtype=np.float32)
    d_img = cuda.to_device(img)
    d_out = cuda.device_array_like(d_img)
    block = (16, 16)
    grid = ((rows + 15) // 16, (cols + 15) // 16)
    first, again = timed_launches(lambda: box_blur[grid, block](d_out, d_img), cuda.synchronize)
    err = float(np.max(np.abs(d_out.copy_to_host() - blur_reference(img))))
    return err <= 1e-5, (f"box_blur (2-D) {rows}x{cols}  grid {grid} x block {block}  "
                         f"first {first:.1f} ms, next {again:.2f} ms  max |error| {err:.1e}")


def show_ptx() -> None:
    ptx = saxpy.inspect_ptx()
    print(f"\n--- PTX of saxpy ({len(ptx.splitlines())} lines, from gpunb's own compiler; "
          "no GPU needed) ---")
    print(ptx.rstrip())
    try:
        from gpunb.backends.cuda.toolchain import find_tool

        ptxas = find_tool("ptxas")
    except Exception:  # noqa: BLE001 - the check below is optional, never a failure
        ptxas = None
    if ptxas:
        import subprocess
        import tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
            f.write(ptx)
        arch = next((w for w in ptx.split() if w.startswith("sm_")), "sm_90")
        proc = subprocess.run([ptxas, f"-arch={arch}", f.name, "-o", f.name + ".cubin"],
                              capture_output=True, text=True)
        verdict = "accepts it" if proc.returncode == 0 else f"REJECTS it: {proc.stderr.strip()}"
        print(f"ptxas ({ptxas}) -arch={arch} {verdict}")


def show_inspection() -> None:
    print("\n--- inspection of saxpy ---")
    print(saxpy.inspect_types().rstrip())
    usage = saxpy.resource_usage()
    print("resources (ptxas, CUDA target):", ", ".join(f"{k}={v}" for k, v in usage.items()))
    line_map = saxpy.line_map()
    print("source line -> PTX lines:",
          ", ".join(f"{line}: {ptx[0]}-{ptx[-1]}" for line, ptx in line_map.items() if line))


def show_cache() -> None:
    import gpunb.cache

    print("\n--- cache ---")
    enabled = "on" if gpunb.cache.enabled() else "off (GPUNB_CACHE=0)"
    print(f"cache {enabled}; disk cache directory: {gpunb.cache.cache_dir()}")
    for kernel in (saxpy, block_sum, box_blur):
        for record in kernel.cache_info():
            event = record["event"]
            outcome = event.outcome if event is not None else "not recorded"
            print(f"  {record['function']:<10} target={record['target']:<4} "
                  f"{record['signature']}  compile {record['compile_ms']:.0f} ms  "
                  f"cache: {outcome}")
    print("gpunb.cache.explain(saxpy):")
    print(gpunb.cache.explain(saxpy))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpunb.demo", description=__doc__)
    parser.add_argument("--target", choices=("auto", "cpu", "cuda"), default="auto",
                        help="where kernels run (auto: cuda when a GPU is usable, else cpu)")
    parser.add_argument("--n", type=int, default=1 << 20, help="elements for saxpy and the sum")
    args = parser.parse_args(argv)

    import gpunb

    try:
        target, why = describe_target(args.target)
        print(f"gpunb {gpunb.__version__} demo - target: {target} ({why})\n")
        results = [run_saxpy(args.n), run_reduction(args.n), run_blur(480, 640)]
    except gpunb.GpunbError as exc:  # e.g. --target cuda on a machine without a GPU
        print(f"gpunb demo: {exc}", file=sys.stderr)
        return 2
    for ok, line in results:
        print(("ok    " if ok else "WRONG ") + line)
    show_ptx()
    show_inspection()
    show_cache()
    failed = sum(not ok for ok, _ in results)
    print(f"\n{len(results) - failed} of {len(results)} kernels gave numpy's results "
          f"on the {target} target.")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
