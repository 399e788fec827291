"""cuda.In / cuda.Out / cuda.InOut of a CPU torch tensor copy as they do for a numpy array
(numba's host-array semantics: In copies in only, so the kernel's writes do not reach the
array; Out copies back only). A CPU tensor under cuda.In had the kernel write into it on the
CPU target, and on the CUDA target was copied in and back whatever the hint."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpunb
from gpunb import cuda

torch = pytest.importorskip("torch")


def _double_and_clobber(out, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] * 2
        a[i] = -1


def _fill(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = i


@pytest.fixture
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


@pytest.mark.parametrize("make", [lambda: np.ones(8, np.float32), lambda: torch.ones(8)],
                         ids=["numpy", "torch"])
def test_in_keeps_the_kernels_writes_out_of_the_host_array(cpu_target, make):
    kernel = cuda.jit(_double_and_clobber)
    a, out = make(), np.zeros(8, np.float32)
    for _ in range(3):
        kernel[1, 8](out, cuda.In(a))
    assert (np.asarray(a) == 1).all() and (out == 2).all()


@pytest.mark.parametrize("hint", [cuda.Out, cuda.InOut])
def test_out_and_inout_bring_a_tensors_results_back(cpu_target, hint):
    kernel = cuda.jit(_fill)
    out = torch.full((8,), 5.0)
    kernel[1, 8](hint(out))
    assert torch.equal(out, torch.arange(8, dtype=torch.float32))


COPIES = ("cuMemcpyHtoD", "cuMemcpyDtoH", "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync")


def _copies(fake, since: int) -> list:
    return [name for name, _ in fake.calls[since:] if name in COPIES]


@pytest.mark.parametrize("hint", [cuda.In, cuda.Out, cuda.InOut])
def test_a_cpu_tensor_is_copied_as_the_same_numpy_array_on_the_gpu(simulated_gpu, hint):
    """On the simulated driver (kernels do not run there): the copies a launch makes of a
    hinted CPU tensor are those of the hinted numpy array - In: host to device only, Out:
    device to host only."""
    kernel = cuda.jit(_fill)
    seen = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the host-copy performance warning
        for name, value in [("numpy", np.zeros(8, np.float32)), ("torch", torch.zeros(8))]:
            kernel[1, 8](hint(value))  # (a first launch compiles and loads)
            since = len(simulated_gpu.calls)
            kernel[1, 8](hint(value))
            seen[name] = _copies(simulated_gpu, since)
    assert seen["torch"] == seen["numpy"]
    assert any("HtoD" in name for name in seen["numpy"]) == (hint is not cuda.Out)
    assert any("DtoH" in name for name in seen["numpy"]) == (hint is not cuda.In)


def _copy_2d(out, a):
    i, j = cuda.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        out[i, j] = a[i, j]


@pytest.mark.parametrize("make", [
    lambda: np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4)),
    lambda: np.arange(24, dtype=np.float32).reshape(3, 8)[:, ::2],
    lambda: torch.arange(12, dtype=torch.float32).reshape(4, 3).t(),
], ids=["numpy F", "numpy A", "torch F"])
def test_in_of_an_array_that_is_not_c_contiguous_reads_its_own_elements(cpu_target, make):
    """cuda.In's copy on the CPU target keeps the array's layout: a C-ordered copy of an
    F-ordered array, passed to a kernel typed for F, read the elements transposed."""
    a = make()
    out = np.zeros((3, 4), np.float32)
    cuda.jit(_copy_2d)[(1, 1), (4, 4)](out, cuda.In(a))
    assert (out == np.asarray(a)).all()
