"""Launch overhead: host time per launch of a 3-argument kernel (1 block of 32 threads).

All four launch the same work back to back on the default stream: gpunb's fast path
(`kernel[1, 32](out, x, a)`), numba-cuda's, CuPy's RawKernel and ElementwiseKernel, and a bare
cuLaunchKernel of hand-written PTX with a prebuilt parameter array - the floor.

A second row launches the same kernel on PyTorch CUDA tensors (gpunb and numba-cuda; float32,
and bfloat16 where numba-cuda has no way in: torch gives bfloat16 tensors no
__cuda_array_interface__), against gpunb's own launch on device arrays.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

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

FIGURE = "launch overhead, 3 args"
FIGURE_TORCH = "launch overhead, 3 args, torch tensors"
TARGET_US = 5.0


def _gpunb(workdir: Path, calls: int, repeats: int) -> Cell:
    import gpunb
    from benchmarks.kernelsrc import load_kernels
    from gpunb import cuda

    gpunb.set_target("cuda")
    kernel = load_kernels("gpunb", workdir).scale3
    x, out, a = cuda.to_device(np.ones(32, np.float32)), cuda.device_array(32, np.float32), \
        np.float32(2.0)
    seconds = per_call_seconds(lambda: kernel[1, 32](out, x, a), cuda.synchronize, calls, repeats)
    assert (out.copy_to_host() == 2.0).all(), "gpunb: wrong result"
    from gpunb.backends.cuda import launch

    path = "native launcher" if kernel[1, 32].launcher is not None else \
        "native trampoline" if launch.driver_calls.trampolines else "cuda.bindings call"
    return cell(seconds * 1e6, "{:.2f} us", f"through the {path}")


def _numba(workdir: Path, calls: int, repeats: int) -> Cell:
    from numba import cuda

    from benchmarks.kernelsrc import load_kernels

    kernel = load_kernels("numba", workdir).scale3
    x, out, a = cuda.to_device(np.ones(32, np.float32)), cuda.device_array(32, np.float32), \
        np.float32(2.0)
    seconds = per_call_seconds(lambda: kernel[1, 32](out, x, a), cuda.synchronize, calls, repeats)
    assert (out.copy_to_host() == 2.0).all(), "numba-cuda: wrong result"
    return cell(seconds * 1e6, "{:.2f} us")


def _torch_args(dtype_name: str):
    import torch

    dtype = getattr(torch, dtype_name)
    return (torch.zeros(32, dtype=dtype, device="cuda"), torch.ones(32, dtype=dtype, device="cuda"),
            np.float32(2.0))


def _gpunb_torch(workdir: Path, calls: int, repeats: int) -> Cell:
    import torch

    import gpunb
    from benchmarks.kernelsrc import load_kernels

    gpunb.set_target("cuda")
    kernel = load_kernels("gpunb", workdir).scale3
    timed = {}
    for name in ("float32", "bfloat16"):
        out, x, a = _torch_args(name)
        timed[name] = per_call_seconds(lambda out=out, x=x, a=a: kernel[1, 32](out, x, a),
                                       torch.cuda.synchronize, calls, repeats)
        assert bool((out.float() == 2.0).all()), f"gpunb ({name} tensors): wrong result"
    launcher = kernel[1, 32].launcher
    native = launcher is not None and launcher.native.plan.kinds[0][0] == "tensor"
    return cell(timed["float32"] * 1e6, "{:.2f} us",
                f"float32; bfloat16 {timed['bfloat16'] * 1e6:.2f} us; through "
                f"{'the native launcher' if native else 'the Python path'}")


def _numba_torch(workdir: Path, calls: int, repeats: int) -> Cell:
    import torch

    from benchmarks.kernelsrc import load_kernels

    kernel = load_kernels("numba", workdir).scale3
    out, x, a = _torch_args("float32")
    seconds = per_call_seconds(lambda: kernel[1, 32](out, x, a), torch.cuda.synchronize, calls,
                               repeats)
    assert bool((out == 2.0).all()), "numba-cuda (torch tensors): wrong result"
    return cell(seconds * 1e6, "{:.2f} us", "float32 (bfloat16 tensors: no way in)")


def _cupy(calls: int, repeats: int) -> Cell:
    import cupy as cp

    from benchmarks.kernelsrc import SCALE3_CUDA_C

    x, out, a = cp.ones(32, cp.float32), cp.empty(32, cp.float32), np.float32(2.0)
    sync = cp.cuda.Device().synchronize
    raw = cp.RawKernel(SCALE3_CUDA_C, "scale3")
    raw_s = per_call_seconds(lambda: raw((1,), (32,), (out, x, a)), sync, calls, repeats)
    assert (out.get() == 2.0).all(), "CuPy RawKernel: wrong result"
    elementwise = cp.ElementwiseKernel("float32 x, float32 a", "float32 out", "out = x * a",
                                       "scale3_elementwise")
    ew_s = per_call_seconds(lambda: elementwise(x, a, out), sync, calls, repeats)
    return cell(raw_s * 1e6, "{:.2f} us", f"RawKernel; ElementwiseKernel {ew_s * 1e6:.2f} us")


def _bare(calls: int, repeats: int) -> float:
    from benchmarks import bare_driver as bd

    x, out = bd.DeviceBuffer(32 * 4), bd.DeviceBuffer(32 * 4)
    try:
        kernel = bd.Scale3(out.ptr, x.ptr, 2.0)
        kernel.launch_checked(1, 32)
        return per_call_seconds(lambda: kernel.launch(1, 32), bd.synchronize, calls, repeats) * 1e6
    finally:
        x.close()
        out.close()


def run(opts: Options) -> list[Row]:
    calls, repeats = (200, 3) if opts.quick else (5000, 9)
    no_gpu = gpu_missing()
    if no_gpu:
        return [Row(FIGURE, "us", na(no_gpu), na(no_gpu), na(no_gpu),
                    f"<= {TARGET_US:g} us; bare 4.15 (DESIGN)", "n/a")]
    with tempfile.TemporaryDirectory(prefix="gpunb-bench-") as tmp:
        workdir = Path(tmp)
        bare = attempt(lambda: cell(_bare(calls, repeats), "{:.2f} us"))
        gp = attempt(lambda: _gpunb(workdir, calls, repeats))
        nb = attempt(lambda: _numba(workdir, calls, repeats),
                     missing_module("numba.cuda", "numba-cuda"))
        cp = attempt(lambda: _cupy(calls, repeats), missing_module("cupy", "cupy-cuda12x"))
        no_torch = missing_module("torch", "torch")
        gp_t = attempt(lambda: _gpunb_torch(workdir, calls, repeats), no_torch)
        nb_t = attempt(lambda: _numba_torch(workdir, calls, repeats),
                       no_torch or missing_module("numba.cuda", "numba-cuda"))
    anchor = f"<= {TARGET_US:g} us; bare {bare.text}"
    notes = ["anchor: a bare cuLaunchKernel of hand-written PTX (DESIGN: 4.15 us, CuPy 6.6, "
             "numba-cuda 35); host time per launch, median over repeats of "
             f"{calls} back-to-back launches + one sync"]
    if bare.value is None:
        notes.append(f"bare cuLaunchKernel: {bare.note}")
    torch_row = Row(FIGURE_TORCH, "us", gp_t, nb_t, na("CuPy kernels take CuPy arrays"),
                    f"gpunb on device arrays {gp.text}", "n/a (no target)",
                    ("the same kernel and grid; host time per launch as above",))
    return [Row(FIGURE, "us", gp, nb, cp, anchor, verdict_at_most(gp.value, TARGET_US, "us"),
                tuple(notes)), torch_row]
