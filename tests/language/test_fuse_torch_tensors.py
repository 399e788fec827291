"""gpunb.fuse on CPU torch tensors: read as the numpy view of their memory (any dtype), so a
dtype fused kernels lack is gpunb's FuseError as for the same numpy array, and a tensor without
memory is refused by name. A bfloat16 CPU tensor raised numpy's raw "Unsupported dtype in
DLTensor" (np.from_dlpack), a meta tensor torch's raw BufferError."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb.fusion.errors import FuseError

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


@gpunb.fuse
def _axpy(x, y):
    return x * 2 + y


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.int32], ids=str)
def test_cpu_tensors_compute_as_their_numpy_views(dtype):
    x = torch.arange(8).to(dtype)
    got = _axpy(x, x.flip(0))
    assert np.array_equal(np.asarray(got), (x * 2 + x.flip(0)).numpy())


def test_a_bfloat16_cpu_tensor_gets_the_fuse_dtype_error():
    with pytest.raises(FuseError, match="dtype bfloat16, which fused kernels do not support"):
        _axpy(torch.ones(4, dtype=torch.bfloat16), torch.ones(4, dtype=torch.bfloat16))


def test_a_meta_tensor_is_refused_by_name():
    with pytest.raises(FuseError, match="meta tensor"):
        _axpy(torch.ones(4, device="meta"), torch.ones(4))
