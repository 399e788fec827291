"""gpunb.torch.custom_op on CUDA tensors (the `gpu` marker): results on PyTorch's current stream,
torch.compile(fullgraph=True) with inductor and with CUDA graphs (mode="reduce-overhead"),
capture inside torch.cuda.graph, autograd, and tensors on two devices refused."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

import gpunb  # noqa: E402
import gpunb.torch as gt  # noqa: E402
from gpunb import cuda  # noqa: E402

pytestmark = pytest.mark.gpu


def bias_gelu(x, bias, out):
    i = cuda.grid(1)
    if i < out.size:
        v = x[i] + bias[i % bias.size]
        out[i] = 0.5 * v * (1.0 + math.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))


@pytest.fixture(scope="module")
def op():
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA here")
    return gt.custom_op("gpunb_gpu_tests::bias_gelu", bias_gelu, out_shape=lambda x, b: x)


def reference(x, bias):
    return torch.nn.functional.gelu(x + bias.repeat(x.numel() // bias.numel()),
                                    approximate="tanh")


def test_results_on_the_current_stream(op):
    x = torch.randn(1 << 20, device="cuda")
    bias = torch.randn(1024, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = op(x, bias)
        z = y * 2  # ordered after the kernel on the same stream
    side.synchronize()
    assert torch.allclose(y, reference(x, bias), atol=1e-5)
    assert torch.allclose(z, 2 * y)


def test_the_stream_handle_is_torchs_current_stream():
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA here")
    from gpunb.torch.tensors import current_stream_handle

    index = torch.cuda.current_device()
    assert current_stream_handle(index) == torch.cuda.current_stream(index).cuda_stream
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        assert current_stream_handle(index) == side.cuda_stream != 0
        assert gt.current_stream.cuda_stream == side.cuda_stream


def mlp(op, x, w1, bias, w2):
    hidden = x @ w1
    return op(hidden.view(-1), bias).view_as(hidden) @ w2


def test_torch_compile_fullgraph_with_inductor_and_with_cuda_graphs(op):
    x = torch.randn(64, 512, device="cuda")
    w1 = torch.randn(512, 1024, device="cuda") / 20
    bias = torch.randn(1024, device="cuda")
    w2 = torch.randn(1024, 512, device="cuda") / 30
    eager = mlp(op, x, w1, bias, w2)
    explained = torch._dynamo.explain(lambda *a: mlp(op, *a))(x, w1, bias, w2)
    assert explained.graph_break_count == 0
    for mode in ("default", "reduce-overhead"):
        torch._dynamo.reset()
        compiled = torch.compile(lambda *a: mlp(op, *a), fullgraph=True, mode=mode)
        for _ in range(3):  # the CUDA-graph mode records on a later call, then replays
            out = compiled(x, w1, bias, w2)
        torch.cuda.synchronize()
        assert torch.allclose(out, eager, atol=1e-3, rtol=1e-3), mode


def test_the_operator_inside_torch_cuda_graph(op):
    x = torch.randn(4096, device="cuda")
    bias = torch.randn(64, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        op(x, bias)  # warm-up: compiled before the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = op(x, bias)
    x.copy_(torch.randn(4096, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.allclose(y, reference(x, bias), atol=1e-5)


def test_autograd_on_cuda():
    def scale(x, a, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] * a

    def setup(ctx, inputs, output):
        ctx.a = inputs[1]

    op = gt.custom_op("gpunb_gpu_tests::scale", scale, out_shape=lambda x, a: x,
                      scalars={"a": float}, setup_context=setup,
                      backward=lambda ctx, grad: (op(grad, ctx.a), None))
    x = torch.randn(1000, device="cuda", requires_grad=True)
    op(x, 3.0).sum().backward()
    assert torch.allclose(x.grad, torch.full_like(x, 3.0))
    assert set(torch.library.opcheck(op, (torch.randn(10, device="cuda"), 2.0)).values()) == \
        {"SUCCESS"}


def test_tensors_on_two_devices_are_refused(op):
    with pytest.raises(gpunb.LaunchError, match="on 2 devices"):
        op(torch.randn(8, device="cuda"), torch.randn(8))
