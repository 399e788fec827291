"""A torch.compile'd MLP block whose bias + GELU is one fused custom operator: gpunb's
(gpunb.torch.custom_op) beside the same operator as a hand-written Triton kernel registered the
same way (torch.library.custom_op with a fake implementation), measured in this run.

The block is x @ w1 -> fused bias + GELU(tanh) -> @ w2 (8192 x 1024 -> 4096 -> 1024, float32
with TF32 matmuls), compiled with fullgraph=True (inductor). Both operators split the work
alike: Triton's blocks of 1024 give each thread 8 elements, all loaded before any is stored;
gpunb's kernel gives each thread one column of four rows, its four loads issued before its
first store (four loads in flight per thread: with one, the H200 streamed 2.4 TB/s where a copy
streams 4.1). Both compute in float32 with the same formula (tanh through exp) and the same
approximations: Triton lowers a float32 `tl.exp` to ex2.approx and `/` to div.full, so gpunb's
kernel is compiled with fastmath=True (ex2.approx, div.approx); its constants are np.float32,
so numba's typing keeps it in float32 too (gpunb's float literals are weak anyway), and it runs
unchanged under numba-cuda. Time per step from CUDA events over many steps. Target (issue 30):
no graph break, gpunb within 5 % of Triton. In the notes: the operators alone, gpunb's
one-element-per-thread kernel (alone and in the block), each operator's host time per call, and
PyTorch's unfused eager block.
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np

from benchmarks.common import Cell, Options, Row, attempt, cell, gpu_missing, missing_module, na
from gpunb import cuda  # (cheap: no CUDA driver is touched on import)

FIGURE = "torch.compile MLP, fused gpunb op"
TOLERANCE = 1.05
BATCH, DIM, HIDDEN = 8192, 1024, 4096
HOST_SHAPE = (8, 256)  # tensors this small leave each operator's host time per call to measure
ROWS_PER_THREAD = 4

SQRT_2_OVER_PI, GELU_CUBIC = np.float32(0.7978845608), np.float32(0.044715)
HALF, ONE, TWO = np.float32(0.5), np.float32(1.0), np.float32(2.0)


@cuda.jit(device=True, inline=True, fastmath=True)
def gelu(v):
    u = SQRT_2_OVER_PI * (v + GELU_CUBIC * v * v * v)
    return HALF * v * (ONE + (TWO / (ONE + math.exp(-TWO * u)) - ONE))


@cuda.jit(fastmath=True)
def bias_gelu(x, bias, out):
    """Thread (j, r): column j of rows r, r + q, r + 2q, r + 3q (q = a quarter of the rows,
    rounded up). Consecutive threads read consecutive columns (coalesced); the four loads come
    before the first store (out may alias x, so the compiler may not hoist a load above a store
    itself), so a thread has four in flight."""
    j, r = cuda.grid(2)
    rows, columns = out.shape
    q = (rows + ROWS_PER_THREAD - 1) // ROWS_PER_THREAD
    if j < columns and r < q:
        b = bias[j]
        if r + 3 * q < rows:
            a0, a1, a2, a3 = x[r, j], x[r + q, j], x[r + 2 * q, j], x[r + 3 * q, j]
            out[r, j] = gelu(a0 + b)
            out[r + q, j] = gelu(a1 + b)
            out[r + 2 * q, j] = gelu(a2 + b)
            out[r + 3 * q, j] = gelu(a3 + b)
        else:  # the last rows, when their count is not a multiple of four
            for k in range(ROWS_PER_THREAD):
                if r + k * q < rows:
                    out[r + k * q, j] = gelu(x[r + k * q, j] + b)


@cuda.jit(fastmath=True)
def bias_gelu_one(x, bias, out):
    """One element per thread: one load of x in flight per thread."""
    j, i = cuda.grid(2)  # column, row: consecutive threads read consecutive columns
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = gelu(x[i, j] + bias[j])


def _launch(x, bias, out):
    return (-(-x.shape[1] // 256), -(-x.shape[0] // ROWS_PER_THREAD)), (256, 1)


def _launch_one(x, bias, out):
    return (-(-x.shape[1] // 256), x.shape[0]), (256, 1)


@functools.cache  # (an operator name registers once per process)
def gpunb_op():
    import gpunb.torch as gt

    return gt.custom_op("gpunb_bench::bias_gelu", bias_gelu, out_shape=lambda x, bias: x,
                        launch=_launch)


@functools.cache  # (an operator name registers once per process)
def gpunb_op_one():
    import gpunb.torch as gt

    return gt.custom_op("gpunb_bench::bias_gelu_one", bias_gelu_one,
                        out_shape=lambda x, bias: x, launch=_launch_one)


@functools.cache  # (an operator name registers once per process)
def triton_op():
    import torch
    import triton

    from benchmarks.triton_kernels import bias_gelu as kernel

    # the schema is given: this module's annotations are strings (from __future__), which
    # torch's schema inference refuses
    @torch.library.custom_op("gpunb_bench::bias_gelu_triton", mutates_args=(),
                             schema="(Tensor x, Tensor bias) -> Tensor")
    def op(x, bias):
        out = torch.empty_like(x)
        n = x.numel()
        kernel[(triton.cdiv(n, 1024),)](x, bias, out, n, bias.numel(), BLOCK=1024)
        return out

    @op.register_fake
    def _(x, bias):
        return torch.empty_like(x)

    return op


def _inputs():
    import torch

    torch.manual_seed(0)
    x = torch.randn(BATCH, DIM, device="cuda")
    w1 = torch.randn(DIM, HIDDEN, device="cuda") / math.sqrt(DIM)
    bias = torch.randn(HIDDEN, device="cuda") / 10
    w2 = torch.randn(HIDDEN, DIM, device="cuda") / math.sqrt(HIDDEN)
    return x, w1, bias, w2


def block_with(op):
    def block(x, w1, bias, w2):
        return op(x @ w1, bias) @ w2

    return block


def _ms_per_call(fn, args, steps: int, repeats: int) -> float:
    import torch

    for _ in range(3):
        fn(*args)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(repeats):
        start.record()
        for _ in range(steps):
            fn(*args)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / steps)
    samples.sort()
    return samples[len(samples) // 2]


def _measure(op, steps: int, repeats: int, figures: dict, key: str) -> float:
    import torch

    args = _inputs()
    block = block_with(op)
    explained = torch._dynamo.explain(block)(*args)
    figures[f"{key} breaks"] = explained.graph_break_count
    torch._dynamo.reset()
    compiled = torch.compile(block, fullgraph=True)
    out = compiled(*args)
    hidden = args[0] @ args[1]
    reference = torch.nn.functional.gelu(hidden + args[2], approximate="tanh") @ args[3]
    assert torch.allclose(out, reference, atol=2e-2, rtol=2e-2), f"{key}: wrong result"
    figures[f"{key} op"] = _ms_per_call(op, (hidden, args[2]), steps, repeats)
    figures[f"{key} host"] = _host_us_per_call(op)
    return _ms_per_call(compiled, args, steps, repeats)


def _host_us_per_call(op, calls: int = 300) -> float:
    """Microseconds per call of `op` on tensors so small that the GPU waits for the host: the
    operator's host path (torch.library's dispatch, then the launch)."""
    import torch

    x = torch.randn(*HOST_SHAPE, device="cuda")
    bias = torch.randn(HOST_SHAPE[1], device="cuda")
    for _ in range(20):
        op(x, bias)
    torch.cuda.synchronize()
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            op(x, bias)
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return sorted(samples)[len(samples) // 2]


def _eager_unfused(steps: int, repeats: int) -> float:
    import torch

    def block(x, w1, bias, w2):
        return torch.nn.functional.gelu(x @ w1 + bias, approximate="tanh") @ w2

    return _ms_per_call(block, _inputs(), steps, repeats)


def run(opts: Options) -> list[Row]:
    no = gpu_missing() or missing_module("torch", "torch")
    if no is None:
        import torch

        no = None if torch.cuda.is_available() else "PyTorch has no CUDA here"
    if no:
        return [Row(FIGURE, "ms", na(no), na(no), na(no), "<= Triton op +5 %", "n/a")]
    import torch

    torch.backends.cuda.matmul.allow_tf32 = True
    steps, repeats = (5, 3) if opts.quick else (50, 7)
    figures: dict = {}
    gp = attempt(lambda: cell(_measure(gpunb_op(), steps, repeats, figures, "gpunb"),
                              "{:.3f} ms"))
    triton = attempt(lambda: cell(_measure(triton_op(), steps, repeats, figures, "triton"),
                                  "{:.3f} ms"), missing_module("triton", "triton"))
    eager = attempt(lambda: cell(_eager_unfused(steps, repeats), "{:.3f} ms"))
    one = attempt(lambda: cell(_measure(gpunb_op_one(), steps, repeats, figures, "one"),
                               "{:.3f} ms"))
    anchor = f"Triton op {triton.text}; <= +5 %"
    verdict = _verdict(gp, triton, figures)
    notes = [f"graph breaks: gpunb {figures.get('gpunb breaks', 'n/a')}, Triton "
             f"{figures.get('triton breaks', 'n/a')}; fused op alone on {BATCH}x{HIDDEN} "
             f"floats: gpunb {figures.get('gpunb op', float('nan')):.3f} ms, Triton "
             f"{figures.get('triton op', float('nan')):.3f} ms; PyTorch eager, unfused: "
             f"{eager.text}",
             f"gpunb's kernel with one element per thread: block {one.text} "
             f"({_ratio(one, triton)}), alone {figures.get('one op', float('nan')):.3f} ms",
             f"host time per call ({HOST_SHAPE[0]}x{HOST_SHAPE[1]} floats): gpunb "
             f"{figures.get('gpunb host', float('nan')):.1f} us, Triton "
             f"{figures.get('triton host', float('nan')):.1f} us",
             "per step: CUDA events around many steps of the compiled block (inductor, "
             "fullgraph=True), median of repeats"]
    if triton.note:
        notes.append(f"Triton: {triton.note}")
    return [Row(FIGURE, "ms", gp, na("not a numba-cuda figure"), na("not a CuPy figure"),
                anchor, verdict, tuple(notes))]


def _verdict(gp: Cell, triton: Cell, figures: dict) -> str:
    if gp.value is None or triton.value is None:
        return "n/a"
    if figures.get("gpunb breaks"):
        return f"MISSED: {figures['gpunb breaks']} graph breaks"
    ratio = gp.value / triton.value
    return f"{'met' if ratio <= TOLERANCE else 'MISSED'}: {ratio:.3f}x Triton"


def _ratio(gp: Cell, triton: Cell) -> str:
    if gp.value is None or triton.value is None:
        return "n/a"
    return f"{gp.value / triton.value:.3f}x Triton"
