"""gpunb.torch.custom_op with the CPU build of PyTorch: the operator's schema, results on CPU
tensors (the CPU target, tensors viewed without copies), fake-tensor shapes, torch.compile with
fullgraph=True and no graph break, autograd, in-place operators and clear usage errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gpunb  # noqa: E402
import gpunb.torch as gt  # noqa: E402
from gpunb import cuda  # noqa: E402


def bias_gelu(x, bias, out):
    i = cuda.grid(1)
    if i < out.size:
        v = x[i] + bias[i % bias.size]
        out[i] = 0.5 * v * (1.0 + math.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))


def reference_bias_gelu(x, bias):
    return torch.nn.functional.gelu(x + bias.repeat(x.numel() // bias.numel()),
                                    approximate="tanh")


@pytest.fixture(scope="module")
def gelu_op():
    return gt.custom_op("gpunb_tests::bias_gelu", bias_gelu, out_shape=lambda x, bias: x)


def test_the_operator_has_a_schema_from_the_kernel_and_computes_on_cpu_tensors(gelu_op):
    assert str(torch.ops.gpunb_tests.bias_gelu.default._schema) == \
        "gpunb_tests::bias_gelu(Tensor x, Tensor bias) -> Tensor"
    x, bias = torch.randn(4096), torch.randn(64)
    y = gelu_op(x, bias)
    assert y.shape == x.shape and y.dtype == torch.float32
    assert torch.allclose(y, reference_bias_gelu(x, bias), atol=1e-6)
    assert torch.equal(torch.ops.gpunb_tests.bias_gelu(x, bias), y)


def test_inputs_given_by_keyword_or_position_give_the_same_result(gelu_op):
    x, bias = torch.randn(1024), torch.randn(64)
    expected = reference_bias_gelu(x, bias)
    for result in (gelu_op(x, bias), gelu_op(x, bias=bias), gelu_op(bias=bias, x=x)):
        assert torch.allclose(result, expected, atol=1e-6)
    with pytest.raises(RuntimeError, match="missing value for argument 'bias'"):
        gelu_op(x)  # (torch's dispatcher checks the schema before the implementation runs)


def test_fake_tensors_get_the_output_shapes_and_nothing_runs(gelu_op):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        y = gelu_op(torch.empty(128, 64).view(-1), torch.empty(64))
    assert y.shape == (8192,) and y.dtype == torch.float32


def test_torch_compile_keeps_one_graph(gelu_op):
    def block(x, w, bias):
        return gelu_op((x @ w).view(-1), bias).view(x.shape[0], -1) @ w.t()

    x, w, bias = torch.randn(32, 64), torch.randn(64, 64), torch.randn(64)
    explained = torch._dynamo.explain(block)(x, w, bias)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    assert torch.allclose(compiled(x, w, bias), block(x, w, bias), atol=1e-5)
    dynamic = torch.compile(block, fullgraph=True, backend="aot_eager", dynamic=True)
    for rows in (8, 24):  # one compiled graph for several batch sizes
        x = torch.randn(rows, 64)
        assert torch.allclose(dynamic(x, w, bias), block(x, w, bias), atol=1e-5)


def test_autograd_through_a_registered_backward():
    def scale(x, a, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] * a

    def setup(ctx, inputs, output):
        ctx.a = inputs[1]

    op = gt.custom_op("gpunb_tests::scale", scale, out_shape=lambda x, a: x,
                      scalars={"a": float}, setup_context=setup,
                      backward=lambda ctx, grad: (op(grad, ctx.a), None))
    x = torch.randn(50, dtype=torch.float64, requires_grad=True)
    op(x, 2.5).pow(2).sum().backward()
    assert torch.allclose(x.grad, 2 * 2.5 * 2.5 * x.detach())
    assert torch.autograd.gradcheck(lambda t: op(t, 1.5), (x,))
    checks = torch.library.opcheck(op, (torch.randn(10), 2.0))
    assert set(checks.values()) == {"SUCCESS"}


def test_several_outputs_and_shapes_given_as_shape_and_dtype():
    def split_sum(x, total, halves):
        i = cuda.grid(1)
        if i < x.shape[0]:
            s = 0.0
            for j in range(x.shape[1]):
                s += x[i, j]
            total[i] = s
            halves[i, 0] = s / 2
            halves[i, 1] = s / 2

    op = gt.custom_op(
        "gpunb_tests::split_sum", split_sum, outputs=2,
        out_shape=lambda x: (((x.shape[0],), torch.float64), ((x.shape[0], 2), torch.float64)),
        launch=lambda x, total, halves: (1, x.shape[0]))
    x = torch.randn(16, 5, dtype=torch.float64)
    total, halves = op(x)
    assert torch.allclose(total, x.sum(1)) and torch.allclose(halves, x.sum(1, keepdim=True)
                                                              .expand(16, 2) / 2)
    assert "-> (Tensor, Tensor)" in str(torch.ops.gpunb_tests.split_sum.default._schema)


def test_an_in_place_operator_writes_its_input_without_a_copy():
    @gt.custom_op("gpunb_tests::add_one_", mutates_args=("x",))
    def add_one_(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] += 1

    x = torch.zeros(10, 3)
    column = x.t()[1]  # a strided view: the kernel writes through its strides
    assert add_one_(column) is None
    assert torch.equal(x[:, 1], torch.ones(10)) and x[:, 0].eq(0).all()
    assert "Tensor(a0!) x" in str(torch.ops.gpunb_tests.add_one_.default._schema)


def test_scalars_are_typed_by_a_declared_signature():
    @gt.custom_op("gpunb_tests::shift", out_shape=lambda x, by: x)
    @cuda.jit("void(float32[::1], int32, float32[::1])")
    def shift(x, by, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] + by

    assert "(Tensor x, SymInt by) -> Tensor" in str(torch.ops.gpunb_tests.shift.default._schema)
    assert torch.equal(shift(torch.zeros(4), 3), torch.full((4,), 3.0))


def test_tensors_become_kernel_arguments_without_copies():
    t = torch.arange(6, dtype=torch.float32).view(2, 3)
    view = gt.kernel_argument(t.t())
    assert isinstance(view, np.ndarray) and view.shape == (3, 2) and view.strides == (4, 12)
    view[0, 1] = 42
    assert t[1, 0] == 42
    needs_grad = torch.ones(3, requires_grad=True)
    assert gt.kernel_argument(needs_grad).ctypes.data == needs_grad.data_ptr()
    bf16 = torch.ones(4, dtype=torch.bfloat16)
    as_numpy = gt.kernel_argument(bf16)
    assert str(as_numpy.dtype) == "bfloat16" and as_numpy.ctypes.data == bf16.data_ptr()
    assert gt.kernel_argument(2.5) == 2.5


@pytest.mark.parametrize("kwargs, message", [
    ({"name": "no_namespace"}, "must be 'namespace::name'"),
    ({"outputs": 5}, "has 3 parameters, fewer than the 5 outputs"),
    ({"scalars": {"z": float}}, "'z' not among the operator's inputs (x, bias)"),
    ({"scalars": {"bias": str}}, "must be float, int or bool"),
    ({"out_shape": None, "outputs": 1}, "needs out_shape="),
    ({"launch": 256}, "must be (grid, block)"),
])
def test_usage_errors_say_what_is_wrong(kwargs, message):
    arguments = {"name": "gpunb_tests::bad", "out_shape": lambda x, bias: x, **kwargs}
    name = arguments.pop("name")
    with pytest.raises(gpunb.LaunchError) as info:
        gt.custom_op(name, bias_gelu, **arguments)
    assert message in str(info.value)


def test_an_output_description_of_the_wrong_kind_is_named():
    op = gt.custom_op("gpunb_tests::bad_shape", bias_gelu, out_shape=lambda x, bias: 3)
    with pytest.raises(gpunb.LaunchError, match="a tensor it is like or a \\(shape, dtype\\)"):
        op(torch.ones(4), torch.ones(4))


def _add_one(x, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] + 1


@pytest.mark.parametrize("kwargs, message", [
    ({"out_shape": lambda x: x}, "out_shape= is called with the operator's inputs (x, bias), "
                                 "but it takes (x)"),
    ({"launch": lambda x, bias: (1, 32)}, "launch= is called with the operator's inputs and "
                                          "outputs (x, bias, out)"),
    ({"backward": 5}, "backward= must be a function, not int"),
    ({"backward": lambda ctx, g: g, "setup_context": "ctx"}, "setup_context= must be a function"),
])
def test_functions_that_cannot_take_the_arguments_are_refused_at_registration(kwargs, message):
    # found by hunt-prog: each was accepted, then every call raised Python's bare TypeError
    # ("<lambda>() takes 1 positional argument but 2 were given") from inside gpunb
    arguments = {"out_shape": lambda x, bias: x, **kwargs}
    with pytest.raises(gpunb.LaunchError) as info:
        gt.custom_op("gpunb_tests::bad_function", bias_gelu, **arguments)
    assert message in str(info.value)


def test_out_shape_may_give_a_length_as_torch_empty_takes_it():
    # found by hunt-prog: (n, dtype) raised "'int' object is not iterable"
    op = gt.custom_op("gpunb_tests::length_shape", _add_one,
                      out_shape=lambda x: (x.shape[0] - 1, torch.float64))
    assert torch.equal(op(torch.arange(5.0)), torch.arange(1.0, 5.0, dtype=torch.float64))


def test_a_failed_launch_names_the_users_call_not_torch_library_frames():
    # found by hunt-prog: the location was torch/_library/custom_ops.py's `return fn(...)`
    op = gt.custom_op("gpunb_tests::empty_grid", _add_one, out_shape=lambda x: x,
                      launch=(0, 32))
    with pytest.raises(gpunb.LaunchError) as info:
        op(torch.ones(4))  # the line the error must name
    assert f"{__file__}\", line {info.tb.tb_lineno}" in str(info.value)
