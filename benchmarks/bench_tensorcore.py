"""Tensor-core GEMM 8192^3, FP16 and BF16 in, FP32 accumulate: gpunb's WMMA kernel and its
mma.sync + ldmatrix + cp.async kernels (benchmarks/tensorcore_kernels.py, and the tuned ones of
benchmarks/tensorcore_pipelined.py) beside cuBLAS (through PyTorch's matmul, fp16
reduced-precision reductions off), measured in the same run.

Targets (issue 24): WMMA >= 35 % of cuBLAS, mma.sync + ldmatrix + cp.async >= 55 %.
TFLOP/s = 2 n^3 / device time. numba-cuda has no tensor cores: its column says so.

    python -m benchmarks.bench_tensorcore [--quick] [--variant mma:256:4 ...]

A variant is kernel:block_width:stages for tensorcore_kernels.py's (wmma:128:4, mma:256:3), or
mma2:<bm>x<bn>x<bk>:<warps m>x<warps n>:<stages>[:pad][:nodb] for the tuned kernel
(mma2:128x128x64:2x2:3), or mma2:all for every one of tensorcore_pipelined.VARIANTS.
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks.common import Cell, Options, Row, attempt, cell, gpu_event_ms, gpu_missing, na

TARGETS = {"wmma": 0.35, "mma": 0.55, "mma2": 0.55}
NUMBA = na("numba-cuda has no tensor-core API (numba#5899)")


def _tflops(ms: float, n: int) -> float:
    return 2.0 * n ** 3 / (ms * 1e-3) / 1e12


def _inputs(n: int, dtype_name: str):
    import ml_dtypes

    rng = np.random.default_rng(24)
    dtype = np.float16 if dtype_name == "fp16" else ml_dtypes.bfloat16
    a = rng.standard_normal((n, n), dtype=np.float32).astype(dtype)
    b = rng.standard_normal((n, n), dtype=np.float32).astype(dtype)
    return a, b


def _check(c: np.ndarray, a: np.ndarray, b: np.ndarray, who: str, rtol: float = 1e-4) -> None:
    """A few rows against float64 numpy: enough to catch a wrong kernel. rtol is relative to
    sum |a| |b| (float32 accumulation: 1e-4; an output rounded to bfloat16: 1e-2)."""
    rows = slice(0, 4)
    want = a[rows].astype(np.float64) @ b.astype(np.float64)
    error = np.abs(c[rows].astype(np.float64) - want).max()
    scale = np.abs(a[rows].astype(np.float64)) @ np.abs(b.astype(np.float64))
    if error > rtol * scale.max():
        raise AssertionError(f"{who}: wrong result (max error {error:.3g})")


def _gpunb(variant: tuple, a, b, iters: int, repeats: int) -> Cell:
    import gpunb
    from benchmarks import tensorcore_kernels as tk
    from benchmarks import tensorcore_pipelined as tp
    from gpunb import cuda

    gpunb.set_target("cuda")
    n = a.shape[0]
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_c = cuda.device_array((n, n), np.float32)
    kind = variant[0]
    if kind == "mma2":
        kernel, launch = tp.make_gemm(a.dtype.type, tp.parse(variant[1])), tp.launch
    elif kind == "wmma":
        kernel, launch = tk.make_wmma_gemm(a.dtype.type, stages=variant[2]), tk.launch
    else:
        kernel, launch = tk.make_mma_gemm(a.dtype.type, stages=variant[2], bn=variant[1]), \
            tk.launch
    ms = gpu_event_ms(lambda: launch(kernel, d_c, d_a, d_b), cuda.event(), cuda.event(),
                      lambda s, e: s.elapsed_time(e), iters, repeats)
    _check(d_c.copy_to_host(), a, b, f"gpunb {kind}")
    return cell(_tflops(ms, n), "{:.1f} TFLOP/s", f"{ms:.2f} ms per launch")


def _cublas(a, b, iters: int, repeats: int) -> Cell:
    import torch

    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    kind = torch.float16 if a.dtype == np.float16 else torch.bfloat16
    d_a = torch.from_numpy(a.view(np.int16)).view(kind).cuda()
    d_b = torch.from_numpy(b.view(np.int16)).view(kind).cuda()
    d_c = torch.empty_like(d_a)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ms = gpu_event_ms(lambda: torch.matmul(d_a, d_b, out=d_c), start, end,
                      lambda s, e: s.elapsed_time(e), iters, repeats)
    got = d_c[:4].float().cpu().numpy()
    _check(got, a, b, "torch.matmul", rtol=1e-2)  # its output is float16 / bfloat16
    return cell(_tflops(ms, a.shape[0]), "{:.1f} TFLOP/s", f"cuBLAS via torch.matmul, {ms:.2f} ms")


def _label(variant: tuple) -> str:
    if variant[0] == "mma2":
        from benchmarks import tensorcore_pipelined as tp

        return f"mma.sync+ldmatrix+cp.async {tp.parse(variant[1]).label}"
    kind, bn, stages = variant
    return (f"WMMA 128x{bn}, {stages} stages" if kind == "wmma" else
            f"mma.sync+ldmatrix+cp.async 128x{bn}, {stages} stages")


def _row(variant: tuple, dtype_name: str, n: int, ours: Cell, ref: Cell) -> Row:
    kind = variant[0]
    label = _label(variant)
    target = TARGETS[kind]
    anchor = f">= {target:.0%} of cuBLAS (issue 24)"
    if ours.value is None or ref.value is None:
        verdict = "n/a"
    else:
        ratio = ours.value / ref.value
        verdict = f"{'met' if ratio >= target else 'MISSED'}: {ratio:.0%} of cuBLAS"
    return Row(f"{dtype_name.upper()} GEMM {n}^3 {label}", "TFLOP/s", ours, NUMBA, ref, anchor,
               verdict, ("f32 accumulate; the CuPy column is cuBLAS through torch.matmul "
                         "(same run)",))


# (kernel, block width, pipeline stages), or ("mma2", spec): the configurations the table reports
# mma2's: the best measured (H200, 2026-11-28: 60 % / 59 % of cuBLAS in FP16 / BF16, against
# 55 % / 56 % for the same tile in grid order with 3 stages)
VARIANTS = (("wmma", 128, 4), ("mma", 256, 3), ("mma2", "256x128x64:4x2:4:g8"))


def run(opts: Options, variants: tuple = VARIANTS) -> list[Row]:
    n = 1024 if opts.quick else 8192
    iters, repeats = (2, 3) if opts.quick else (5, 5)
    no_gpu = gpu_missing()
    if no_gpu:
        return [Row(f"FP16 GEMM {n}^3 tensor cores", "TFLOP/s", na(no_gpu), NUMBA, na(no_gpu),
                    ">= 35 % (WMMA) / 55 % (mma.sync) of cuBLAS", "n/a")]
    rows = []
    for dtype_name in ("fp16", "bf16"):
        a, b = _inputs(n, dtype_name)
        ref = attempt(lambda a=a, b=b: _cublas(a, b, iters, repeats))
        for variant in variants:
            ours = attempt(lambda a=a, b=b, v=variant: _gpunb(v, a, b, iters, repeats))
            rows.append(_row(variant, dtype_name, n, ours, ref))
    return rows


def parse_variant(spec: str) -> tuple:
    """The variants one --variant names (mma2:all names every tuned one)."""
    from benchmarks import tensorcore_pipelined as tp

    kind, _, rest = spec.partition(":")
    if kind == "mma2":
        specs = tp.VARIANTS if rest == "all" else (rest,)
        for one in specs:
            try:
                tp.parse(one)  # a bad spec fails here, before the GPU is touched
            except ValueError as err:
                raise SystemExit(f"--variant {spec!r}: {err}") from None
        return tuple(("mma2", one) for one in specs)
    if kind not in ("wmma", "mma"):
        raise SystemExit(f"unknown kernel {kind!r} in --variant {spec!r}: wmma, mma or mma2")
    try:
        width, stages = (int(v) for v in rest.split(":"))
    except ValueError:
        raise SystemExit(f"--variant {spec!r} is not {kind}:<block width>:<stages>, e.g. "
                         f"{kind}:128:4") from None
    return ((kind, width, stages),)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--variant", action="append", default=[],
                        help="kernel:block_width:stages (mma:256:4), mma2:<spec> "
                             "(mma2:128x128x64:2x2:3) or mma2:all (repeatable)")
    args = parser.parse_args()
    variants = tuple(v for spec in args.variant for v in parse_variant(spec)) or VARIANTS
    for row in run(Options(suite="gpu", quick=args.quick), variants):
        print(f"{row.figure:62} {row.gpunb.text:>15} {row.cupy.text:>15}  {row.verdict}"
              f"  [{row.gpunb.note}]")
        for cell_ in (row.gpunb, row.cupy):
            if cell_.value is None:
                print("    ", cell_.note)


if __name__ == "__main__":
    main()
