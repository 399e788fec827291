"""C pointers in kernels (numba's types.CPointer and voidptr): declared pointer parameters take an
integer address (or a ctypes pointer), index without bounds, and numba_support's carray/farray
view one as an array; cffi's ffi.from_buffer(arr) makes one to pass to a declared function."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from gpunb import CompileError, LaunchError, cuda
from gpunb.cuda import types
from gpunb.cuda.np.numpy_support import carray, farray

ptr_i32 = types.CPointer(types.int32)


def test_pointer_types_as_numba_names_them():
    assert str(ptr_i32) == "int32*" and str(types.voidptr) == "void*"
    assert isinstance(ptr_i32, types.CPointer) and not isinstance(types.voidptr, types.CPointer)
    assert types.CPointer(types.float32) == types.CPointer(types.float32)
    with pytest.raises(TypeError):
        types.CPointer(np.float32)


@pytest.mark.parametrize("view", [carray, farray])
def test_carray_farray_of_a_pointer_argument(target, view):
    @cuda.jit(types.void(types.CPointer(types.float32)))
    def add(a_ptr):
        a = view(a_ptr, (1,), dtype=cuda.float32)
        a[0] += 1.2

    a = cuda.to_device(np.array([0.0], dtype=np.float32))
    add[1, 1](int(a.gpu_data.device_pointer))
    assert a.copy_to_host()[0] == np.float32(1.2)


def test_pointer_indexing_axpy(target):
    @cuda.jit(types.void(ptr_i32, types.int32, ptr_i32, ptr_i32, types.uint32))
    def axpy(r, a, x, y, n):
        i = cuda.grid(1)
        if i < n:
            r[i] = a * x[i] + y[i]

    hx = np.arange(10, dtype=np.int32)
    dx, dy = cuda.to_device(hx), cuda.to_device(hx * 2)
    dr = cuda.device_array_like(dx)
    axpy[1, 32](dr.gpu_data.device_pointer, 5, dx.gpu_data.device_pointer,
                dy.gpu_data.device_pointer, 10)
    np.testing.assert_array_equal(dr.copy_to_host(), 5 * hx + hx * 2)


@pytest.mark.parametrize("view", [carray, farray])
def test_void_pointer_views_match_numpy(target, view):
    """A c_void_p argument is a voidptr; the kernel's view and the host function's agree."""
    @cuda.jit
    def read(p, out):
        a = view(p, (2, 3), dtype=np.int32)
        for i in range(2):
            for j in range(3):
                out[i, j] = a[i, j]

    src = np.arange(6, dtype=np.int32)
    out = np.zeros((2, 3), np.int32)
    # a GPU reads device memory through a pointer, not the host's
    held = cuda.to_device(src) if target == "cuda" else src
    address = held.__cuda_array_interface__["data"][0] if target == "cuda" else src.ctypes.data
    read[1, 1](ctypes.c_void_p(address), out)
    expected = view(ctypes.c_void_p(src.ctypes.data), (2, 3), np.int32)
    np.testing.assert_array_equal(out, expected)
    order = "C" if view is carray else "F"
    np.testing.assert_array_equal(expected, src.reshape((2, 3), order=order))


def test_host_carray_checks_as_numba():
    src = np.arange(4, dtype=np.int32)
    typed = src.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
    np.testing.assert_array_equal(carray(typed, 4), src)
    with pytest.raises(TypeError, match="explicit dtype required"):
        carray(ctypes.c_void_p(src.ctypes.data), 4)
    with pytest.raises(TypeError, match="mismatching dtype"):
        carray(typed, 4, np.float32)
    with pytest.raises(TypeError, match="expected a ctypes pointer"):
        carray(src.ctypes.data, 4)


def test_void_pointer_needs_a_dtype_and_cannot_be_indexed():
    def no_dtype(p):
        carray(p, 2)[0] = 1

    def index_void(p):
        p[0] = 1

    with pytest.raises(CompileError, match="explicit dtype required for void"):
        cuda.compile_ptx(no_dtype, (types.voidptr,))
    with pytest.raises(CompileError, match="void\\* cannot be indexed"):
        cuda.compile_ptx(index_void, (types.voidptr,))


def test_pointer_argument_refuses_other_values(target):
    @cuda.jit(types.void(ptr_i32))
    def store(p):
        p[0] = 1

    with pytest.raises((LaunchError, TypeError)):
        store[1, 1](np.zeros(1, np.int32))


def test_numba_pointer_types_convert():
    numba_types = pytest.importorskip("numba.core.types")
    from gpunb.foundation.numba_types import from_numba

    assert from_numba(numba_types.CPointer(numba_types.int32)) == ptr_i32
    assert from_numba(numba_types.voidptr) == types.voidptr


def test_ffi_from_buffer_passes_a_pointer_to_a_declared_function():
    cffi = pytest.importorskip("cffi")
    ffi = cffi.FFI()
    mutate = cuda.declare_device("array_mutator", types.void(ptr_i32))

    def kernel(x):
        mutate(ffi.from_buffer(x))

    ptx, _ = cuda.compile_ptx(kernel, (types.int32[::1],))
    assert "array_mutator" in ptx and "call.uni" in ptx


def test_ffi_from_buffer_into_a_device_function(target):
    cffi = pytest.importorskip("cffi")
    ffi = cffi.FFI()

    @cuda.jit(device=True)
    def copy_second(p):
        p[0] = p[1]

    @cuda.jit
    def kernel(x):
        copy_second(ffi.from_buffer(x))

    x = np.arange(2, dtype=np.int32)
    kernel[1, 1](x)
    assert x.tolist() == [1, 1]
