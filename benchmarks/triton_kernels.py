"""Hand-written Triton kernels that benchmarks set beside gpunb's (imported only where Triton is
installed). `bias_gelu`: out = gelu_tanh(x + bias[i % nb]), tanh written with exp as gpunb's
kernel in bench_torch_op.py writes it, so both do the same arithmetic."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def bias_gelu(x_ptr, bias_ptr, out_ptr, n, nb, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    bias = tl.load(bias_ptr + offsets % nb, mask=mask)
    v = x + bias
    u = 0.7978845608 * (v + 0.044715 * v * v * v)
    tanh = 2.0 / (1.0 + tl.exp(-2.0 * u)) - 1.0
    tl.store(out_ptr + offsets, 0.5 * v * (1.0 + tanh), mask=mask)
