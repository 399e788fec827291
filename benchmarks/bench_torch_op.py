"""A torch.compile'd MLP block whose bias + GELU is one fused custom operator: gpunb's
(gpunb.torch.custom_op) beside the same operator as a hand-written Triton kernel registered the
same way (torch.library.custom_op with a fake implementation), measured in this run.

The block is x @ w1 -> fused bias + GELU(tanh) -> @ w2 (8192 x 1024 -> 4096 -> 1024, float32
with TF32 matmuls), compiled with fullgraph=True (inductor); each operator is written the way its
language suggests (gpunb's a 2-D grid over rows and columns, four columns per thread,
Triton's 1-D blocks over the flat matrix). Time per step from CUDA events over many steps.
Target (issue 30): no graph break, gpunb within 5 % of Triton. The fused operator alone and
PyTorch's unfused eager block are in the notes.
"""

from __future__ import annotations

import math

from benchmarks.common import Cell, Options, Row, attempt, cell, gpu_missing, missing_module, na
from gpunb import cuda  # (cheap: no CUDA driver is touched on import)

FIGURE = "torch.compile MLP, fused gpunb op"
TOLERANCE = 1.05
BATCH, DIM, HIDDEN = 8192, 1024, 4096


COLUMNS_PER_THREAD = 4  # four loads in flight per thread, as Triton's blocks of 1024 have


@cuda.jit(device=True, inline=True)
def _gelu(v):
    u = 0.7978845608 * (v + 0.044715 * v * v * v)
    return 0.5 * v * (1.0 + (2.0 / (1.0 + math.exp(-2.0 * u)) - 1.0))


def bias_gelu(x, bias, out):
    """Block (bx, row) covers 4 x 256 columns of one row; thread t the columns t, t + 256,
    t + 512, t + 768 (consecutive threads, consecutive columns: coalesced). The four loads are
    issued before any result is stored, so a thread has four in flight: one each would leave
    the memory system idle (out may alias x, so the compiler cannot reorder them itself)."""
    i = cuda.blockIdx.y
    j = cuda.blockIdx.x * 1024 + cuda.threadIdx.x
    n = out.shape[1]
    if i >= out.shape[0]:
        return
    if j + 768 < n:
        a, b, c, d = x[i, j], x[i, j + 256], x[i, j + 512], x[i, j + 768]
        out[i, j] = _gelu(a + bias[j])
        out[i, j + 256] = _gelu(b + bias[j + 256])
        out[i, j + 512] = _gelu(c + bias[j + 512])
        out[i, j + 768] = _gelu(d + bias[j + 768])
    else:  # the row's last, partial block
        for k in range(COLUMNS_PER_THREAD):
            if j + 256 * k < n:
                out[i, j + 256 * k] = _gelu(x[i, j + 256 * k] + bias[j + 256 * k])


def gpunb_op():
    import gpunb.torch as gt

    return gt.custom_op("gpunb_bench::bias_gelu", bias_gelu, out_shape=lambda x, bias: x,
                        launch=lambda x, bias, out: ((-(-x.shape[1] // 1024), x.shape[0]),
                                                     (256, 1)))


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
    return _ms_per_call(compiled, args, steps, repeats)


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
    anchor = f"Triton op {triton.text}; <= +5 %"
    verdict = _verdict(gp, triton, figures)
    notes = [f"graph breaks: gpunb {figures.get('gpunb breaks', 'n/a')}, Triton "
             f"{figures.get('triton breaks', 'n/a')}; fused op alone on {BATCH}x{HIDDEN} "
             f"floats: gpunb {figures.get('gpunb op', float('nan')):.3f} ms, Triton "
             f"{figures.get('triton op', float('nan')):.3f} ms; PyTorch eager, unfused: "
             f"{eager.text}",
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
