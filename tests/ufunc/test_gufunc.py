"""cuda.guvectorize on every available target: core and loop dimensions, broadcasting of loop
dimensions, scalar arguments, several outputs, out=, stream=, device arrays, lazy loops and the
errors of numba-cuda for bad calls and declarations.

Partly adapted from numba-cuda's tests/cudapy/test_gufunc.py and test_gufunc_scalar.py:
SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
SPDX-License-Identifier: BSD-2-Clause
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.types import float32, float64, int32, void


def _matmul(dtype=float32):
    @cuda.guvectorize([void(dtype[:, :], dtype[:, :], dtype[:, :])], "(m,n),(n,p)->(m,p)")
    def matmulcore(A, B, C):
        m, n = A.shape
        n, p = B.shape
        for i in range(m):
            for j in range(p):
                C[i, j] = 0
                for k in range(n):
                    C[i, j] += A[i, k] * B[k, j]

    return matmulcore


@pytest.mark.parametrize("count", [2, 1001])
def test_matmul(target, count):
    A = np.arange(count * 2 * 4, dtype=np.float32).reshape(count, 2, 4)
    B = np.arange(count * 4 * 5, dtype=np.float32).reshape(count, 4, 5)
    np.testing.assert_allclose(_matmul()(A, B), np.matmul(A, B), rtol=1e-6)


def test_matmul_high_dims_and_device_input(target):
    gufunc = _matmul()
    A = np.arange(100 * 2 * 4, dtype=np.float32).reshape(4, 25, 2, 4)
    B = np.arange(100 * 4 * 5, dtype=np.float32).reshape(4, 25, 4, 5)
    np.testing.assert_allclose(gufunc(A, B), np.matmul(A, B))
    got = gufunc(A, cuda.to_device(B))
    np.testing.assert_allclose(got.copy_to_host(), np.matmul(A, B))


@pytest.mark.slow
def test_loop_dimensions_broadcast(target):
    gufunc = _matmul(float64)
    X = np.random.randn(10, 3, 3)
    Y = np.random.randn(3, 3)
    np.testing.assert_allclose(gufunc(X, Y), np.matmul(X, Y))
    np.testing.assert_allclose(gufunc(X, np.tile(Y, (10, 1, 1))), np.matmul(X, Y))
    Z = np.random.randn(4, 1, 3, 3)
    np.testing.assert_allclose(gufunc(Z, X), np.matmul(Z, X))  # (4,1) with (10,) -> (4, 10)


def test_stream_and_device_out(target):
    gufunc = _matmul()
    A = np.arange(1001 * 8, dtype=np.float32).reshape(1001, 2, 4)
    B = np.arange(1001 * 20, dtype=np.float32).reshape(1001, 4, 5)
    stream = cuda.stream()
    dA, dB = cuda.to_device(A, stream), cuda.to_device(B, stream)
    dC = cuda.device_array(shape=(1001, 2, 5), dtype=A.dtype, stream=stream)
    dC = gufunc(dA, dB, out=dC, stream=stream)
    C = dC.copy_to_host(stream=stream)
    stream.synchronize()
    np.testing.assert_allclose(C, np.matmul(A, B), rtol=1e-6)


@pytest.mark.parametrize("sig", [void(float32[:], float32[:]), (float32[:], float32[:])])
@pytest.mark.parametrize("n", [10, 11])
def test_copy(target, sig, n):
    @cuda.guvectorize([sig], "(x)->(x)")
    def copy(A, B):
        for i in range(B.size):
            B[i] = A[i]

    A = np.arange(n, dtype=np.float32) + 1
    B = np.zeros_like(A)
    copy(A, out=B)
    np.testing.assert_allclose(A, B)


def test_copy2d(target):
    @cuda.guvectorize([void(float32[:, :], float32[:, :])], "(x, y)->(x, y)")
    def copy2d(A, B):
        for x in range(B.shape[0]):
            for y in range(B.shape[1]):
                B[x, y] = A[x, y]

    A = np.arange(30, dtype=np.float32).reshape(5, 6) + 1
    B = np.zeros_like(A)
    copy2d(A, out=B)
    np.testing.assert_allclose(A, B)


def test_scalar_output(target):
    @cuda.guvectorize(["void(int32[:], int32[:])"], "(n)->()")
    def sum_row(inp, out):
        tmp = 0
        for i in range(inp.shape[0]):
            tmp += inp[i]
        out[0] = tmp

    inp = np.arange(300, dtype=np.int32).reshape(100, 3)
    dev_inp = cuda.to_device(inp)
    dev_out1 = cuda.to_device(np.empty(100, dtype=np.int32), copy=False)
    sum_row(dev_inp, out=dev_out1)
    dev_out2 = sum_row(dev_inp)
    np.testing.assert_array_equal(dev_out1.copy_to_host(), inp.sum(axis=1))
    np.testing.assert_array_equal(dev_out2.copy_to_host(), inp.sum(axis=1))
    np.testing.assert_array_equal(sum_row(inp), inp.sum(axis=1))


@pytest.mark.slow
def test_scalar_arguments(target):
    @cuda.guvectorize(["void(int32, int32[:])"], "()->()")
    def twice(inp, out):
        out[0] = inp * 2

    assert twice(10) == 20
    arg = np.arange(10).astype(np.int32)
    np.testing.assert_array_equal(twice(arg), arg * 2)

    @cuda.guvectorize(["void(float32, float32[:], float32[:], float32[:])"], "(),(t),(t)->(t)")
    def saxpy(a, x, y, out):
        for i in range(out.shape[0]):
            out[i] = a * x[i] + y[i]

    X = np.arange(10, dtype=np.float32).reshape(5, 2)
    np.testing.assert_array_equal(saxpy(np.float32(2), X, X), 2 * X + X)
    x = np.arange(10, dtype=np.float32)
    np.testing.assert_array_equal(saxpy(np.float32(2), x, x), 2 * x + x)
    A = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(saxpy(A, X, X), A[:, None] * X + X)


def test_scalar_cast(target):
    @cuda.guvectorize(["void(int32, int32[:], int32[:])"], "(),(t)->(t)")
    def foo(a, b, out):
        for i in range(b.size):
            out[i] = a * b[i]

    b = np.arange(10).astype(np.int32)
    np.testing.assert_array_equal(foo(np.int64(2), b), 2 * b)  # the value fits int32
    da = cuda.to_device(np.array(np.int64(2)))
    with pytest.raises(TypeError, match="does not support .astype()"):
        foo(da, b)


def test_old_style_scalar_as_array(target):
    @cuda.guvectorize(["void(int32[:],int32[:],int32[:])"], "(n),()->(n)")
    def gufunc(x, y, res):
        for i in range(x.shape[0]):
            res[i] = x[i] + y[0]

    a = np.array([1, 2, 3, 4], dtype=np.int32)
    res = np.zeros(4, dtype=np.int32)
    gufunc(a, np.array([2], dtype=np.int32), out=res)
    np.testing.assert_array_equal(res, a + 2)
    a = np.array([1, 2, 3, 4] * 2, dtype=np.int32).reshape(2, 4)
    res = np.zeros((2, 4), dtype=np.int32)
    gufunc(a, np.array([2, 10], dtype=np.int32), res)
    np.testing.assert_array_equal(res, a + np.array([[2], [10]]))


def test_multiple_outputs(target):
    @cuda.guvectorize([void(int32[:], int32[:], float64[:])], "(x)->(x),(x)")
    def copy_and_multiply(A, B, C):
        for i in range(B.size):
            B[i] = A[i]
            C[i] = A[i] * 1.5

    A = np.arange(10, dtype=np.int32) + 1
    B, C = np.zeros_like(A), np.zeros_like(A, dtype=np.float64)
    copy_and_multiply(A, B, C)
    np.testing.assert_array_equal(A, B)
    np.testing.assert_allclose(A * 1.5, C)
    B2, C2 = copy_and_multiply(A)
    np.testing.assert_array_equal(A, B2)
    np.testing.assert_allclose(A * 1.5, C2)


@pytest.mark.parametrize("a,b", [
    (((1.0, 2.0, 3.0), (4.0, 5.0, 6.0)), ((1.5, 2.5, 3.5), (4.5, 5.5, 6.5))),
    ((namedtuple("P", "x y z")(1.0, 2.0, 3.0), namedtuple("P", "x y z")(4.0, 5.0, 6.0)),
     (namedtuple("P", "x y z")(1.5, 2.5, 3.5), namedtuple("P", "x y z")(4.5, 5.5, 6.5))),
])
def test_tuple_arguments(target, a, b):
    @cuda.guvectorize([(float64[:], float64[:], float64[:])], "(n),(n)->()")
    def gu_dot(x, y, r):
        s = 0
        for i in range(len(x)):
            s += x[i] * y[i]
        r[0] = s

    np.testing.assert_allclose(gu_dot(a, b), np.sum(np.asarray(a) * np.asarray(b), axis=1))


def test_lazy_layout_only(target):
    @gpunb.guvectorize("(n),(n)->()", target="cuda")
    def dot(x, y, r):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i] * y[i]
        r[0] = s

    x = np.random.random((6, 4))
    with pytest.raises(TypeError, match="pass the output arrays"):
        dot(x, x)  # no loop yet, and no output to take the dtype from
    r = np.empty(6)
    dot(x, x, r)
    np.testing.assert_allclose(r, (x * x).sum(axis=1))
    r32 = np.empty(6, np.float32)  # float32 inputs cast to the float64 loop, as numpy's
    dot(x.astype(np.float32), x.astype(np.float32), r32)
    np.testing.assert_allclose(r32, (x * x).sum(axis=1), rtol=1e-6)


# ---- errors -------------------------------------------------------------------------------------

def test_argument_count_errors(target):
    @cuda.guvectorize([(int32[:], int32[:], int32[:])], "(m),(m)->(m)")
    def f(x, y, z):
        pass

    arr = np.arange(5, dtype=np.int32)
    with pytest.raises(TypeError, match=r"accepts 2 positional arguments .* or 3 positional "
                                        r"arguments .* Got 1 positional argument\."):
        f(arr)
    with pytest.raises(TypeError, match="Got 4 positional arguments."):
        f(arr, arr, arr, arr)
    with pytest.raises(ValueError, match="cannot specify argument 'out' as both"):
        f(arr, arr, arr, out=arr)


def test_shape_errors(target):
    gufunc = _matmul()
    with pytest.raises(ValueError, match="mismatch"):
        gufunc(np.zeros((2, 2, 3), np.float32), np.zeros((2, 4, 5), np.float32))
    with pytest.raises(ValueError, match="insufficient inner dimension"):
        gufunc(np.zeros(3, np.float32), np.zeros((3, 3), np.float32))
    with pytest.raises(ValueError, match="outer dimension mismatch"):
        gufunc(np.zeros((2, 3, 3), np.float32), np.zeros((4, 3, 3), np.float32))
    with pytest.raises(ValueError, match="output shape mismatch"):
        gufunc(np.zeros((2, 3, 3), np.float32), np.zeros((2, 3, 3), np.float32),
               out=np.zeros((2, 3, 4), np.float32))


def test_declaration_errors():
    def foo(A, B):
        pass

    cuda.guvectorize([void(float32[:], float32[:])], "(x)->(x)", nopython=True)(foo)
    with pytest.raises(TypeError, match="^nopython flag must be True$"):
        cuda.guvectorize([void(float32[:], float32[:])], "(x)->(x)", nopython=False)(foo)
    with pytest.raises(TypeError, match="The following target options are not supported: "
                                        "'what1', 'ever2'"):
        cuda.guvectorize([void(float32[:], float32[:])], "(x)->(x)", what1=True,
                         ever2=False)(foo)
    with pytest.raises(TypeError, match="cannot return values.*specifies int32 return type"):
        cuda.guvectorize([int32(int32[:], int32[:])], "(m)->(m)")(foo)
    with pytest.raises(TypeError, match="gufunc signature mismatch"):
        cuda.guvectorize([void(float32[:, :], float32[:])], "(x)->(x)")(foo)
    with pytest.raises(NameError, match="undefined output symbols: q"):
        cuda.guvectorize([void(float32[:], float32[:])], "(x)->(q)")(foo)
    with pytest.raises(ValueError, match="bad token"):
        cuda.guvectorize([void(float32[:], float32[:])], "(x)->[x]")(foo)
    assert _matmul().__name__ == "matmulcore"


def _add_rows(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] + b[i]


def test_wider_inputs_are_cast_to_the_declared_loop_as_numba_cuda_does(target):
    """numba-cuda's gufuncs take float64 arrays for a float32-only signature: the first loop
    whose types cast safely to the arguments' is chosen and the inputs are cast to it."""
    add = cuda.guvectorize(["void(float32[:], float32[:], float32[:])"], "(n),(n)->(n)")(
        _add_rows)
    a = np.arange(6, dtype=np.float64).reshape(2, 3) + 0.25
    got = add(a, a)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, (a.astype(np.float32) * 2))
    with pytest.raises(TypeError, match="no matching signature"):
        add(a.astype(np.int32), a.astype(np.int32))  # float32 does not cast safely to int32
