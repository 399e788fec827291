"""100 small kernels in sequence, replayed as one graph: time per kernel.

GPU suite: the same tiny kernel (x[i] += 1 over 1024 floats, 4 blocks of 256) launched 100 times
in a row, captured once and replayed; wall time of many replays plus one sync, per kernel -
gpunb.graph beside CuPy's stream capture (a RawKernel of the same code) and torch.cuda.graph
(`x.add_(1)`), all measured in this run; gpunb's eager launches of the same sequence are the
anchor (issue 30: eager ~4.3 us per kernel, target <= 1.5 us replayed). numba-cuda has no graph
API. CPU suite: the same on the CPU target (a graph replays its launches without the launch
path's checks) beside eager launches.
"""

from __future__ import annotations

import numpy as np

from benchmarks.common import (
    Cell,
    Options,
    Row,
    attempt,
    cell,
    gpu_missing,
    missing_module,
    na,
    per_call_seconds,
    verdict_at_most,
)
from gpunb import cuda  # (cheap: no CUDA driver is touched on import)

FIGURE = "100 small kernels, graph replay"
TARGET_US = 1.5
KERNELS = 100
N = 1024

INC_CUDA_C = r"""
extern "C" __global__ void inc(float *x, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
"""


def inc(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1


def _gpunb(target: str, replays: int, repeats: int) -> tuple:
    """(eager us per kernel, replayed us per kernel, the check's final value)."""
    import gpunb

    gpunb.set_target(target)
    try:
        kernel = cuda.jit(inc)
        x = cuda.to_device(np.zeros(N, np.float32))
        config = kernel[N // 256, 256]

        def sequence():
            for _ in range(KERNELS):
                config(x)

        sequence()  # compiled, native launcher bound
        eager = per_call_seconds(sequence, cuda.synchronize, replays, repeats)
        with gpunb.graph() as g:
            sequence()
        replayed = per_call_seconds(g.replay, cuda.synchronize, replays, repeats)
        before = float(x.copy_to_host()[0])
        g.replay()
        cuda.synchronize()
        assert float(x.copy_to_host()[0]) == before + KERNELS, "gpunb graph: wrong result"
        return eager * 1e6 / KERNELS, replayed * 1e6 / KERNELS
    finally:
        gpunb.set_target(None)


def _cupy(replays: int, repeats: int) -> Cell:
    import cupy as cp

    x = cp.zeros(N, cp.float32)
    kernel = cp.RawKernel(INC_CUDA_C, "inc")
    stream = cp.cuda.Stream(non_blocking=True)
    args = (x, np.int64(N))
    with stream:
        kernel((N // 256,), (256,), args)  # compiled and loaded before the capture
        stream.synchronize()
        stream.begin_capture()
        for _ in range(KERNELS):
            kernel((N // 256,), (256,), args)
        graph = stream.end_capture()
    seconds = per_call_seconds(lambda: graph.launch(stream), stream.synchronize, replays,
                               repeats)
    before = float(x[0])
    graph.launch(stream)
    stream.synchronize()
    assert float(x[0]) == before + KERNELS, "CuPy graph: wrong result"
    return cell(seconds * 1e6 / KERNELS, "{:.2f} us", "RawKernel captured on a stream")


def _torch(replays: int, repeats: int) -> float:
    import torch

    x = torch.zeros(N, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            x.add_(1)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(KERNELS):
            x.add_(1)
    seconds = per_call_seconds(graph.replay, torch.cuda.synchronize, replays, repeats)
    return seconds * 1e6 / KERNELS


def _gpu_row(opts: Options) -> Row:
    replays, repeats = (20, 3) if opts.quick else (400, 7)
    no_gpu = gpu_missing()
    if no_gpu:
        return Row(FIGURE, "us", na(no_gpu), na(no_gpu), na(no_gpu),
                   f"<= {TARGET_US:g} us per kernel", "n/a")
    figures: dict = {}

    def measure() -> Cell:
        eager, replayed = _gpunb("cuda", replays, repeats)
        figures["eager"] = eager
        return cell(replayed, "{:.2f} us", f"eager launches of the same sequence {eager:.2f} "
                                           "us per kernel")

    gp = attempt(measure)
    cp = attempt(lambda: _cupy(replays, repeats), missing_module("cupy", "cupy-cuda12x"))
    torch_cell = attempt(lambda: cell(_torch(replays, repeats), "{:.2f} us"),
                         missing_module("torch", "torch"))
    notes = [f"per kernel: wall time of {replays} replays of a {KERNELS}-kernel graph + one "
             "sync, / (replays x kernels); median of repeats; tiny kernels, so this is the "
             "graph's per-node cost",
             f"torch.cuda.graph of {KERNELS} x.add_(1): {torch_cell.text}"
             + (f" ({torch_cell.note})" if torch_cell.note else "")]
    eager = figures.get("eager")
    anchor = f"<= {TARGET_US:g} us; eager {eager:.2f}" if eager else f"<= {TARGET_US:g} us"
    return Row(FIGURE, "us", gp, na("numba-cuda has no graph API"), cp, anchor,
               verdict_at_most(gp.value, TARGET_US, "us"), tuple(notes))


def _cpu_row(opts: Options) -> Row:
    replays, repeats = (5, 3) if opts.quick else (50, 5)
    figures: dict = {}

    def measure() -> Cell:
        eager, replayed = _gpunb("cpu", replays, repeats)
        figures["eager"] = eager
        return cell(replayed, "{:.2f} us", f"eager {eager:.2f} us per kernel")

    gp = attempt(measure)
    eager = figures.get("eager")
    verdict = "n/a" if gp.value is None or eager is None else \
        f"{'met' if gp.value <= eager else 'MISSED'}: {gp.value / eager:.2f}x eager"
    return Row(f"{FIGURE}, CPU target", "us", gp, na("no CPU graph"), na("no CPU graph"),
               "<= eager launches (same run)", verdict,
               (f"CPU target: {KERNELS} launches of a 4x256-thread kernel, replayed "
                f"{replays} times per repeat; eager: the same launches through the fast path",))


def run(opts: Options) -> list[Row]:
    return [_gpu_row(opts)] if opts.suite == "gpu" else [_cpu_row(opts)]
