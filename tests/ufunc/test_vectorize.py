"""cuda.vectorize (and gpunb.vectorize, numba's `vectorize([...], target="cuda")` spelling) on
every available target: eager and lazy loops, numpy broadcasting, out=, stream=, device arrays in
and out, loop selection and the errors for calls that fit no loop.

Partly adapted from numba-cuda's tests/cudapy/test_vectorize.py, test_vectorize_decor.py,
test_vectorize_device.py, test_vectorize_scalar_arg.py and test_vectorize_complex.py:
SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
SPDX-License-Identifier: BSD-2-Clause
"""

from __future__ import annotations

import math
from collections import namedtuple
from functools import partial

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import CompileError
from gpunb.foundation.types import float32, float64, int32, uint32

SIGNATURES = [int32(int32, int32), float32(float32, float32), float64(float64, float64)]
VECTORIZERS = [cuda.vectorize, partial(gpunb.vectorize, target="cuda")]


def _add(vectorize=cuda.vectorize, signatures=SIGNATURES):
    @vectorize(signatures)
    def vector_add(a, b):
        return a + b

    return vector_add


@pytest.mark.parametrize("vectorize", VECTORIZERS)
def test_scalars(target, vectorize):
    c = _add(vectorize)(1.2, 2.3)
    assert c == 1.2 + 2.3 and isinstance(c, np.float64)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
@pytest.mark.parametrize("n", [8, 100, 2**10 + 1, 100_001])
def test_1d_keeps_dtype(target, dtype, n):
    data = (np.random.random(n) * 100).astype(dtype)
    actual = _add()(data, data)
    assert actual.dtype == dtype
    np.testing.assert_allclose(actual, data + data)


@pytest.mark.parametrize("nd", range(1, 6))
@pytest.mark.parametrize("order", ["C", "F"])
def test_nd_and_layouts(target, nd, order):
    data = np.random.random((4,) * nd).astype(np.float32)
    other = np.array(data.T, order=order)
    np.testing.assert_allclose(_add()(data, other), data + other)


@pytest.mark.slow
def test_broadcast(target):
    a = np.random.randn(100, 3, 1)
    b = a.transpose(2, 1, 0)

    @cuda.vectorize(["float64(float64,float64)"])
    def sub(x, y):
        return x - y

    np.testing.assert_allclose(sub(a, b), a - b)
    got = sub(cuda.to_device(a), cuda.to_device(b))
    np.testing.assert_allclose(got.copy_to_host(), a - b)
    np.testing.assert_allclose(sub(a[:, :, 0], 0.5), a[:, :, 0] - 0.5)
    np.testing.assert_allclose(sub(a[::2, ::-1, 0], a[0, :, 0]), a[::2, ::-1, 0] - a[0, :, 0])


def test_output_argument(target):
    add = _add()
    a = np.arange(10, dtype=np.float32)
    out = np.empty_like(a)
    assert add(a, a, out=out) is out
    np.testing.assert_allclose(out, a + a)
    out2 = np.zeros((2, 5), np.float32)[:, ::1]
    add(a.reshape(2, 5), 1.0, out2)  # the output passed positionally, as numpy allows
    np.testing.assert_allclose(out2, a.reshape(2, 5) + 1)
    wider = np.empty(10, np.float64)  # numpy's same_kind casting into the output
    add(a, a, out=wider)
    np.testing.assert_allclose(wider, a + a)


def test_device_in_device_out(target):
    add = _add()
    x = np.arange(10, dtype=np.int32)
    dx = cuda.to_device(x)
    result = add(x, dx)  # one device input: the result stays on the device
    assert not isinstance(result, np.ndarray)
    np.testing.assert_equal(result.copy_to_host(), x + x)
    x2 = x.reshape(2, 5)
    d2 = cuda.to_device(x2)
    add(d2, d2, out=d2)
    np.testing.assert_equal(d2.copy_to_host(), x2 + x2)


def test_stream(target):
    add = _add()
    stream = cuda.stream()
    data = np.random.random(1001)
    dresult = add(cuda.to_device(data, stream), cuda.to_device(data, stream), stream=stream)
    np.testing.assert_allclose(dresult.copy_to_host(stream=stream), data + data)
    np.testing.assert_allclose(add(data, data, stream=stream), data + data)


@pytest.mark.parametrize("a,b", [
    ((1.0, 2.0, 3.0), (4.0, 5.0, 6.0)),
    (namedtuple("Point", "x y z")(1.0, 2.0, 3.0), namedtuple("Point", "x y z")(4.0, 5.0, 6.0)),
    ((np.arange(10, dtype=np.int32), np.arange(10, dtype=np.int32) + 1),
     (np.arange(10, dtype=np.int32) + 2, np.arange(10, dtype=np.int32) + 2)),
])
def test_sequences(target, a, b):
    np.testing.assert_equal(_add()(a, b), np.asarray(a) + np.asarray(b))


def test_scalar_and_device_array(target):
    add = _add(signatures=[float64(float64, float64)])
    got = add(1.0, cuda.to_device(np.arange(10, dtype=np.float64)))
    np.testing.assert_allclose(got.copy_to_host(), np.arange(1, 11))


def _sinc(x):
    if x == 0.0:
        return 1.0
    return math.sin(x * math.pi) / (math.pi * x)


def _scaled_sinc(x, scale):
    if x == 0.0:
        return scale
    return scale * (math.sin(x * math.pi) / (math.pi * x))


@pytest.mark.slow
def test_numba_decor_examples(target):
    a = np.arange(100, dtype=np.float64)
    sinc = cuda.vectorize(["float64(float64)", "float32(float32)"])(_sinc)
    np.testing.assert_allclose(sinc(a), np.vectorize(_sinc)(a))
    scaled = cuda.vectorize(["float64(float64, uint32)"])(_scaled_sinc)
    np.testing.assert_allclose(scaled(a, np.uint32(3)), np.vectorize(_scaled_sinc)(a, 3),
                               atol=1e-8)
    add4 = cuda.vectorize([int32(int32, int32), uint32(uint32, uint32),
                           float32(float32, float32), float64(float64, float64)])(
        lambda x, y: x + y)
    for dtype in (np.float64, np.float32, np.int32, np.uint32):
        got = add4(a.astype(dtype), a.astype(dtype))
        assert got.dtype == dtype
        np.testing.assert_allclose(got, a + a)


def test_calls_a_device_function(target):
    @cuda.jit(float32(float32, float32, float32), device=True)
    def device_fn(x, y, z):
        return x**y / z

    ufunc = cuda.vectorize([float32(float32, float32, float32)])(
        lambda x, y, z: device_fn(x, y, z))
    x, y = np.random.sample(100).astype(np.float32), np.random.sample(100).astype(np.float32)
    z = np.random.sample(100).astype(np.float32) + 0.1
    np.testing.assert_allclose(ufunc(x, y, z), x**y / z, rtol=1e-5)


def test_complex(target):
    @cuda.vectorize(["complex128(complex128)"])
    def vcomp(a):
        return a * a + 1.0

    a = np.arange(5, dtype=np.complex128) * (1 + 2j)
    np.testing.assert_allclose(vcomp(a), a * a + 1.0)


def test_bool_output(target):
    @cuda.vectorize(["boolean(float64, float64)"])
    def greater(a, b):
        return a > b

    a, b = np.random.random(50), np.random.random(50)
    got = greater(a, b)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, a > b)


def test_lazy_compiles_per_dtype(target):
    @cuda.vectorize
    def axpy(a, x, y):
        return a * x + y

    x = np.arange(6, dtype=np.float32)
    got = axpy(np.float32(2), x, x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, 2 * x + x)
    got = axpy(3, np.arange(6), np.arange(6))  # int64 loop, compiled on this call
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, 3 * np.arange(6) + np.arange(6))
    assert set(axpy.types) == {"fff->f", "lll->l"}


def test_loop_selection_numpy_rule(target):
    add = _add()
    got = add(np.arange(4, dtype=np.int16), np.arange(4, dtype=np.int16))  # casts to int32
    assert got.dtype == np.int32
    got = add(np.arange(4, dtype=np.float32), 2.5)  # a Python float is weak: float32 loop
    assert got.dtype == np.float32
    got = add(np.arange(4, dtype=np.int32), np.float64(2.5))  # a numpy float64 is not
    assert got.dtype == np.float64


def test_ufunc_reduce(target):
    add = _add()
    for n in (1, 8, 100, 2**10 + 1):
        x = np.arange(n, dtype=np.int32)
        actual = add.reduce(x)
        assert actual == x.sum() and actual.dtype == np.int32
        assert add.reduce(cuda.to_device(x), stream=cuda.stream()) == x.sum()
    with pytest.raises(TypeError, match="empty"):
        add.reduce(np.zeros(0, np.int32))


def test_name_and_zero_sized(target):
    @cuda.vectorize("f8(f8)")
    def bar(x):
        return x**2

    assert bar.__name__ == "bar"
    assert bar(np.zeros((0, 3))).shape == (0, 3)


# ---- errors -------------------------------------------------------------------------------------

def test_no_matching_loop(target):
    add = _add(signatures=[float32(float32, float32)])
    with pytest.raises(TypeError, match="no loop of 'vector_add' accepts"):
        add(np.arange(3, dtype=np.float64), np.arange(3, dtype=np.float64))
    dev = cuda.to_device(np.arange(3, dtype=np.int16))
    with pytest.raises(TypeError, match="does not support .astype"):
        add(dev, dev)


def test_shape_errors(target):
    add = _add()
    with pytest.raises(ValueError, match="could not be broadcast"):
        add(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="out= of 'vector_add' has shape"):
        add(np.zeros(3), np.zeros(3), out=np.zeros(4))
    with pytest.raises(TypeError, match="cannot write the float64 result"):
        add(np.zeros(3), np.zeros(3), out=np.zeros(3, np.int32))
    with pytest.raises(TypeError, match="takes 2 input"):
        add(np.zeros(3))


def test_decorator_options():
    with pytest.warns(RuntimeWarning, match="nopython kwarg for cuda target is redundant"):
        cuda.vectorize([float32(float32, float32)], nopython=True)(lambda a, b: a + b)
    with pytest.raises(KeyError, match="Unrecognized options"):
        cuda.vectorize([float32(float32, float32)], nonexistent=2)(lambda a, b: a + b)
    with pytest.raises(ValueError, match="Unsupported target"):
        gpunb.vectorize(["f4(f4)"], target="parallel")(lambda a: a)


def test_type_errors_at_decoration():
    with pytest.raises(CompileError, match="returns no value"):
        @cuda.vectorize(["float32(float32)"])
        def nothing(a):
            a + 1

    with pytest.raises(CompileError) as info:
        @cuda.vectorize(["float32(float32)"])
        def bad(a):
            return a + undefined_name  # noqa: F821

    assert "undefined_name" in str(info.value)


def test_a_vectorized_local_function_pickles_by_value_as_numba():
    """numba-cuda's test_pickling_vectorize: a ufunc of a local function survives two pickle
    round trips with its loops (a fixed signature list stays fixed); a gufunc too."""
    import pickle

    @cuda.vectorize(["intp(intp)", "float64(float64)"])
    def doubled(x):
        return x * 2

    ary = np.arange(10, dtype=np.intp)
    expected = doubled(ary)
    once = pickle.loads(pickle.dumps(doubled))
    twice = pickle.loads(pickle.dumps(once))
    for copy in (once, twice):
        np.testing.assert_equal(copy(ary), expected)
        assert copy.types == doubled.types and copy.__name__ == "doubled"
        with pytest.raises(TypeError, match="no loop"):
            copy(np.arange(3, dtype=np.complex128))  # still only the declared loops

    @cuda.guvectorize(["void(float64[:], float64[:])"], "(n)->()")
    def total(a, out):
        s = 0.0
        for v in a:
            s += v
        out[0] = s

    rows = np.arange(6.0).reshape(2, 3)
    np.testing.assert_equal(pickle.loads(pickle.dumps(total))(rows), [3.0, 12.0])
