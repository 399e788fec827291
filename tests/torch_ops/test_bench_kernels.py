"""bench_torch_op's fused bias + GELU kernels on the CPU target (any row count, against
PyTorch's GELU) and in PTX: float32 only, Triton's approximations (ex2.approx, div.approx), and
the four-rows kernel's loads all issued before its first store (what keeps four in flight)."""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from benchmarks import bench_torch_op as bench  # noqa: E402
from gpunb import cuda  # noqa: E402

SIGNATURE = "void(float32[:, ::1], float32[::1], float32[:, ::1])"


def _run(kernel, launch, rows: int, columns: int) -> None:
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, columns), dtype=np.float32)
    bias = rng.standard_normal(columns, dtype=np.float32)
    out = np.full_like(x, np.nan)
    grid, block = launch(x, bias, out)
    kernel[grid, block](x, bias, out)
    expected = torch.nn.functional.gelu(torch.from_numpy(x + bias), approximate="tanh")
    np.testing.assert_allclose(out, expected.numpy(), atol=1e-5)


@pytest.mark.parametrize("rows", [1, 3, 4, 13, 64])
def test_four_rows_per_thread_covers_every_row(rows):
    _run(bench.bias_gelu, bench._launch, rows, 300)


def test_one_element_per_thread():
    _run(bench.bias_gelu_one, bench._launch_one, 13, 300)


def _body(ptx: str) -> list[str]:
    return [line.split()[0] for line in ptx.splitlines()
            if re.match(r"\s+(ld|st)\.global|\s+\w+\.f64|\s+(ex2|div)\.", line)]


@pytest.mark.parametrize("kernel", [bench.bias_gelu, bench.bias_gelu_one])
def test_ptx_is_float32_with_tritons_approximations(kernel):
    ptx, _ = cuda.compile_ptx(kernel.py_func, SIGNATURE, fastmath=True)
    ops = _body(ptx)
    assert not [op for op in ops if op.endswith(".f64")]
    assert "ex2.approx.ftz.f32" in ops and "div.approx.ftz.f32" in ops
    assert "div.rn.f32" not in ptx  # (IEEE division is what fastmath=False gives)


def test_the_four_loads_come_before_the_first_store():
    ptx, _ = cuda.compile_ptx(bench.bias_gelu.py_func, SIGNATURE, fastmath=True)
    fast_path = ptx[:ptx.index("ret;")]  # the full-rows branch comes first in the PTX
    memory = [op for op in _body(fast_path) if op.startswith(("ld.", "st."))]
    first_store = next(k for k, op in enumerate(memory) if op.startswith("st."))
    assert memory[:first_store].count("ld.global.b32") >= 5  # bias + four rows of x
