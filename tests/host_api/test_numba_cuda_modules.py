"""numba-cuda's public submodules under gpunb.cuda (a program changes `numba` to `gpunb` in its
imports and nothing else): types, random, np.numpy_support, kernels.transpose,
cudadrv.{devicearray, driver, error}, api, typing, misc.special; DeviceNDArray for both targets;
numba-cuda's .T of a 2-d device array (a C-contiguous copy)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import gpunb
from gpunb import cuda


@pytest.mark.parametrize("name", ["types", "random", "np.numpy_support", "kernels.transpose",
                                  "cudadrv.devicearray", "cudadrv.driver", "cudadrv.error",
                                  "api", "compiler", "typing", "typing.typeof", "misc.special",
                                  "bf16", "fp8", "libdevice"])
def test_numba_cuda_module_paths_import(name):
    module = importlib.import_module(f"gpunb.cuda.{name}")
    assert module is not None
    head = name.split(".")[0]
    assert getattr(cuda, head) is importlib.import_module(f"gpunb.cuda.{head}")


def test_names_from_the_modules():
    from gpunb.cuda.api import is_fp8_supported
    from gpunb.cuda.compiler import compile_ptx
    from gpunb.cuda.misc.special import literal_unroll
    from gpunb.cuda.np.numpy_support import as_dtype, from_dtype
    from gpunb.cuda.random import create_xoroshiro128p_states
    from gpunb.cuda.types import UniTuple, f2, float32, void
    from gpunb.cuda.typing import signature
    from gpunb.cuda.typing.typeof import typeof

    assert is_fp8_supported is cuda.is_fp8_supported and compile_ptx is cuda.compile_ptx
    assert literal_unroll is cuda.literal_unroll
    assert create_xoroshiro128p_states is gpunb.random.create_xoroshiro128p_states
    rec = np.dtype([("a", np.int8), ("b", np.float64)], align=True)
    assert as_dtype(from_dtype(rec)) == rec and as_dtype(float32) == np.float32
    with pytest.raises(TypeError):
        as_dtype(void)
    assert str(signature(float32, float32, f2)) == "float32(float32, float16)"
    assert str(typeof(np.zeros((2, 2), np.float32))) == "float32[:, ::1]"
    assert str(UniTuple(float32, 2)) == "(float32, float32)"


def test_device_nd_array_is_one_class_for_both_targets():
    from gpunb.cuda.cudadrv.devicearray import DeviceNDArray, auto_device, from_array_like

    a = DeviceNDArray((3, 4), (32, 8), np.float64)
    assert isinstance(a, DeviceNDArray) and a.strides == (32, 8)
    assert isinstance(cuda.to_device(np.ones(3)), cuda.DeviceNDArray)
    assert not isinstance(np.ones(3), DeviceNDArray)
    b = from_array_like(np.zeros((2, 3)).T)
    assert b.shape == (3, 2) and b.strides == (8, 24)
    d, converted = auto_device(2)
    assert converted and d.shape == () and d.copy_to_host() == 2
    assert auto_device(a) == (a, False)
    with pytest.raises(ValueError, match="non-contiguous"):
        auto_device(np.arange(10.0)[::2])


def test_transpose_kernel_matches_numpy(target):
    from gpunb.cuda.kernels.transpose import transpose

    for rows, cols, dtype in ((5, 6, np.float64), (33, 17, np.complex128), (2, 3, np.bool_)):
        x = (np.arange(rows * cols) % 7).astype(dtype).reshape(cols, rows)
        got = transpose(cuda.to_device(x))
        assert got.shape == (rows, cols) and got.is_c_contiguous()
        np.testing.assert_array_equal(got.copy_to_host(), x.T)
    record = np.dtype([("i", np.int32), ("j", np.float32, (3, 2))])
    arr = np.zeros((3, 4), record)
    arr["i"] = np.arange(12).reshape(3, 4)
    arr["j"] = np.arange(12 * 6, dtype=np.float32).reshape(3, 4, 3, 2)
    out = cuda.device_array_like(arr.T)
    transpose(cuda.to_device(arr), out)
    np.testing.assert_array_equal(out.copy_to_host(), arr.T)
    with pytest.raises(ValueError, match="shape"):
        transpose(cuda.to_device(x), cuda.device_array((2, 2), x.dtype))


def test_transpose_of_a_view_is_numba_cudas_contiguous_copy(target):
    """numba-cuda's DeviceNDArray.T of a 2-d array: a new C-contiguous array (numba issue
    #4974); the like-arrays of it are C-contiguous too."""
    a = np.arange(120, dtype=np.int64).reshape((10, 12))
    t = cuda.to_device(a)[::2, ::2].T
    assert t.shape == (6, 5) and t.strides == (40, 8) and t.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(t.copy_to_host(), a[::2, ::2].T)
    like = cuda.device_array_like(t)
    assert like.strides == (40, 8) and like.flags["C_CONTIGUOUS"]
    square = cuda.to_device(np.zeros((3, 3)))
    square.T[0, 1] = 5.0  # a copy: the original is unchanged
    assert square.copy_to_host()[1, 0] == 0.0


def test_gpus_slices_like_a_list():
    assert list(cuda.gpus[0:]) == list(cuda.gpus)
    assert cuda.gpus[len(cuda.gpus):] == []


@cuda.jit
def _index_with_0d(out, values, i):
    out[()] = values[i]


def test_a_0d_integer_array_indexes_as_its_value(target):
    out = np.zeros((), np.float64)
    _index_with_0d[1, 1](out, np.arange(5.0), np.asarray(3))
    assert out[()] == 3.0
