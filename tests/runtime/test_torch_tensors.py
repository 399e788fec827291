"""PyTorch tensors as kernel arguments, read from the tensor itself (runtime/torch_tensors.py):
every dtype numpy or ml_dtypes names (bfloat16 and fp8 crashed on the CPU target: numpy's
from_dlpack refuses them), any strides, the same types numpy arrays get; tensors the fast path
must not read (requiring grad, a pending conjugate bit) keep torch's own refusal."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import LaunchError
from gpunb.runtime import torch_tensors
from gpunb.runtime.typeof import type_key, typeof

torch = pytest.importorskip("torch")
ml_dtypes = pytest.importorskip("ml_dtypes")

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.float8_e4m3fn,
          torch.float8_e5m2, torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64,
          torch.bool, torch.complex64, torch.complex128]


@cuda.jit
def _copy_2d(src, dst):
    i, j = cuda.grid(2)
    if i < src.shape[0] and j < src.shape[1]:
        dst[i, j] = src[i, j]


@cuda.jit
def _scale(src, dst, factor):
    i = cuda.grid(1)
    if i < src.size:
        dst[i] = src[i] * factor


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def _sample(dtype, shape):
    values = torch.arange(int(np.prod(shape)), dtype=torch.float32).reshape(shape) % 7 - 3
    if dtype is torch.bool:
        return values > 0
    if dtype in (torch.uint8,):
        values = values.abs()
    return values.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_copies_exactly(dtype):
    src = _sample(dtype, (6, 10))
    dst = torch.zeros((6, 10), dtype=dtype)
    _copy_2d[(1, 1), (8, 16)](src, dst)
    assert torch.equal(dst.view(torch.uint8) if dtype.itemsize == 1 else dst, src.view(
        torch.uint8) if dtype.itemsize == 1 else src)


@pytest.mark.parametrize("make", [
    lambda t: t.t(),                       # F layout
    lambda t: t[:, ::3],                   # strided
    lambda t: t[1:5, 2:],                  # offset, C rows
    lambda t: t.unsqueeze(0)[0],           # extent-1 dimension dropped again
], ids=["transposed", "stepped", "offset", "unsqueezed"])
def test_views_read_and_write_their_own_elements(make):
    base = torch.arange(72, dtype=torch.float32).reshape(6, 12)
    src = make(base)
    out_base = torch.zeros_like(base)
    dst = make(out_base)
    _copy_2d[(1, 1), (16, 16)](src, dst)
    assert torch.equal(dst, src)
    untouched = torch.ones_like(out_base, dtype=torch.bool)
    make(untouched).fill_(False)
    assert torch.all(out_base[untouched] == 0)  # nothing written outside the view


def test_types_equal_those_of_the_same_numpy_arrays():
    t = torch.zeros((4, 6), dtype=torch.float32)
    for view in (t, t.t(), t[:, ::2], t[0]):
        assert typeof(view) == typeof(view.numpy())
    assert str(typeof(torch.zeros(3, dtype=torch.bfloat16))) == str(typeof(
        np.zeros(3, dtype=ml_dtypes.bfloat16)))
    assert type_key(t) == type_key(torch.ones((9, 2)))
    assert type_key(t) != type_key(t.t()) != type_key(t[:, ::2])
    assert type_key(t) != type_key(t.to(torch.float64))


def test_bfloat16_arithmetic_matches_ml_dtypes():
    src = torch.linspace(-3, 3, 50).to(torch.bfloat16)
    dst = torch.zeros(50, dtype=torch.bfloat16)
    _scale[1, 64](src, dst, np.float32(1.5))
    expect = (src.float().numpy().astype(ml_dtypes.bfloat16).astype(np.float32) * np.float32(1.5))
    np.testing.assert_array_equal(dst.float().numpy(), expect.astype(ml_dtypes.bfloat16).astype(
        np.float32))


def test_tensors_the_fast_path_must_not_read_keep_torchs_refusal():
    grad = torch.ones(4, requires_grad=True)
    assert torch_tensors.geometry(grad) is None
    with pytest.raises((LaunchError, RuntimeError, TypeError), match="grad"):
        _scale[1, 4](grad, torch.zeros(4), 2.0)
    conj = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex64).conj()
    assert torch_tensors.geometry(conj) is None
    with pytest.raises((LaunchError, RuntimeError, TypeError), match="conj"):
        _scale[1, 2](conj, torch.zeros(2, dtype=torch.complex64), 1.0)
    # a subclass (nn.Parameter without grad) is not read by the fast path either
    param = torch.nn.Parameter(torch.ones(4), requires_grad=False)
    assert torch_tensors.geometry(param) is None
    out = torch.zeros(4)
    _scale[1, 4](param, out, 3.0)  # through DLPack, as before
    assert torch.equal(out, torch.full((4,), 3.0))


def test_empty_and_zero_dim_tensors():
    empty = torch.zeros((0, 5))
    _copy_2d[(1, 1), (4, 4)](empty, torch.zeros((0, 5)))
    geo = torch_tensors.geometry(empty)
    assert geo.pointer == 0 and geo.shape == (0, 5)
    assert torch_tensors.geometry(torch.tensor(2.0)).shape == ()


@pytest.mark.gpu
def test_cuda_tensors_of_every_dtype_on_the_gpu():
    gpunb.set_target("cuda")
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn):
        src = _sample(dtype, (6, 10)).cuda()
        dst = torch.zeros((6, 10), dtype=dtype, device="cuda")
        _copy_2d[(1, 1), (16, 16)](src.t(), dst.t())  # (10, 6) views
        torch.cuda.synchronize()
        assert torch.equal(dst.view(torch.uint8) if dtype.itemsize == 1 else dst,
                           src.view(torch.uint8) if dtype.itemsize == 1 else src)
    host = torch.linspace(0, 1, 32).to(torch.bfloat16)  # a CPU tensor: copied in and back out
    out = torch.zeros(32, dtype=torch.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's "host array copied" performance warning
        _scale[1, 32](host, out, np.float32(2.0))
    assert torch.equal(out, (host.float() * 2).to(torch.bfloat16))


def test_tma_descriptors_of_tensors_read_the_tensor():
    """cuda.tma.descriptor of a bfloat16 tensor: its own geometry (DLPack before; on the CPU
    target a CPU tensor describes host memory as a numpy array does)."""
    t = torch.zeros((64, 128), dtype=torch.bfloat16)
    tm = cuda.tma.descriptor(t, (16, 64), 128)
    same = cuda.tma.descriptor(t.view(torch.int16).numpy().view(ml_dtypes.bfloat16), (16, 64),
                               128)
    assert (tm.target, tm.shape, tm.strides, str(tm.type)) == \
        (same.target, same.shape, same.strides, str(same.type))


def test_type_facts_agree_with_geometry_for_every_layout():
    """The launch key's short read (type_facts) and the packing's (geometry) must give the same
    type, including C-contiguous tensors torch answers for without strides."""
    base = torch.zeros((4, 6, 5))
    views = [base, base.transpose(0, 2), base[:, ::2], base[0], base[:, :1, :], base[..., 0],
             torch.zeros((1, 7)), torch.zeros((7, 1)).t(), torch.zeros(0), torch.tensor(3.0),
             base.permute(2, 0, 1).contiguous().permute(1, 2, 0)]
    for view in views:
        dtype, ndim, layout = torch_tensors.type_facts(view)
        assert typeof(view) == typeof(view.numpy())
        assert (ndim, layout) == (typeof(view).ndim, typeof(view).layout), view.shape
    assert torch_tensors.type_facts(torch.ones(2, requires_grad=True)) is None
