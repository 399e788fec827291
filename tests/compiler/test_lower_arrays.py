"""Arrays in kernels: shape/size/ndim/strides, indexing of 1-4 dims in C, F and strided layouts
(reads and writes), negative indices, views, iteration, every numpy dtype numba.cuda supports as
scalar and array arguments, and module-level constants frozen at compile time."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpunb import cuda, types

HYP = settings(max_examples=40, deadline=None,
               suppress_health_check=[HealthCheck.function_scoped_fixture])

# ---- kernels --------------------------------------------------------------------------------


@cuda.jit
def attributes(out, a):
    out[0] = a.ndim
    out[1] = a.size
    out[2] = len(a)
    out[3] = a.itemsize
    out[4] = a.nbytes
    for d in range(a.ndim):
        out[5 + d] = a.shape[d]
        out[9 + d] = a.strides[d]


@cuda.jit
def copy1(out, a):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = a[i] * 2 + 1


@cuda.jit
def copy2(out, a):
    i, j = cuda.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        out[i, j] = a[i, j] * 2 + 1


@cuda.jit
def copy3(out, a):
    i = cuda.grid(1)
    if i < a.shape[0]:
        for j in range(a.shape[1]):
            for k in range(a.shape[2]):
                out[i, j, k] = a[i, j, k] * 2 + 1


@cuda.jit
def copy4(out, a):
    i = cuda.grid(1)
    if i < a.shape[0]:
        for j in range(a.shape[1]):
            for k in range(a.shape[2]):
                for m in range(a.shape[3]):
                    out[i, j, k, m] = a[i, j, k, m] * 2 + 1


COPIES = {1: copy1, 2: copy2, 3: copy3, 4: copy4}


def launch_copy(out, a):
    kernel = COPIES[a.ndim]
    if a.ndim == 2:
        kernel[((a.shape[0] + 7) // 8, (a.shape[1] + 7) // 8), (8, 8)](out, a)
    else:
        kernel[(a.shape[0] + 31) // 32, 32](out, a)


LAST = -1
NEG_ROW = -3


@cuda.jit
def negative_indices(out, a, b):
    out[0] = a[-1]
    out[1] = a[-a.size]
    out[2] = b[-1, -1]
    out[3] = b[0, -2]
    out[4] = b[-b.shape[0], 1]
    out[5] = a[LAST]  # frozen global constants index like literals
    out[6] = b[NEG_ROW, LAST - 1]
    k = -2
    out[7] = a[k]


@cuda.jit
def views(out, a):
    i = cuda.grid(1)
    if i < a.shape[0]:
        row = a[i]  # a 1-d view of row i
        out[i, 0] = row[row.size - 1]
        out[i, 1] = row.shape[0]
        tail = a[i, 1:]  # sliced view
        out[i, 2] = tail[0]
        stepped = a[i, ::2]
        out[i, 3] = stepped.size
        out[i, 4] = stepped[stepped.size - 1]
        rev = a[i, ::-1]
        out[i, 5] = rev[0]
        sub = a[1:, 1:3]
        out[i, 6] = sub.shape[0] * 10 + sub.shape[1]
        out[i, 7] = sub[0, 1]
        col = a[:, 0]
        out[i, 8] = col[i]


@cuda.jit
def iterate(out, a):
    s = 0.0
    for v in a:
        s += v
    out[0] = s
    w = 0.0
    for k, v in enumerate(a):
        w += k * v
    out[1] = w
    z = 0.0
    for v in a[::-1]:
        z = z * 10 + v
    out[2] = z


@cuda.jit
def scalar_echo(out, v):
    out[0] = v


@cuda.jit
def array_double(out, a):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] + a[i]


@cuda.jit
def bool_logic(out, a, b):
    i = cuda.grid(1)
    if i < a.size:
        out[i, 0] = a[i] and b[i]
        out[i, 1] = a[i] or b[i]
        out[i, 2] = a[i] != b[i]
        out[i, 3] = not a[i]


@cuda.jit
def complex_ops(out, a, b):
    i = cuda.grid(1)
    if i < a.size:
        out[i, 0] = a[i] + b[i]
        out[i, 1] = a[i] * b[i]
        out[i, 2] = a[i] / b[i]
        out[i, 3] = a[i].conjugate()
        out[i, 4] = a[i].real + 1j * a[i].imag * 2


SCALE = 3
OFFSETS = (10, 20, 30)
TABLE = np.array([[1.5, 2.5, 3.5], [4.5, 5.5, 6.5]], dtype=np.float32)
TABLE_F = np.asfortranarray(np.arange(12, dtype=np.int64).reshape(3, 4))
MUTATED = np.array([1, 2, 3, 4], dtype=np.int64)
BIG = 2**40


@cuda.jit
def globals_kernel(out, x):
    i = cuda.grid(1)
    if i < x.size:
        out[i, 0] = x[i] * SCALE + OFFSETS[i % 3]
        out[i, 1] = TABLE[i % 2, i % 3] * 2
        out[i, 2] = TABLE_F[i % 3, i % 4]  # an F-ordered global keeps its logical indexing
        out[i, 3] = MUTATED[i % 4]
        out[i, 4] = TABLE.shape[1] + len(OFFSETS)
        out[i, 5] = BIG // (1 << 38)


# ---- tests ----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,order", [((7,), "C"), ((3, 5), "C"), ((3, 5), "F"),
                                         ((2, 3, 4), "C"), ((2, 3, 4), "F"), ((2, 3, 2, 2), "C")])
def test_attributes(target, shape, order):
    a = np.zeros(shape, np.float64, order=order)
    out = np.zeros(13, np.int64)
    attributes[1, 1](out, a)
    assert out[:5].tolist() == [a.ndim, a.size, len(a), a.itemsize, a.nbytes]
    assert out[5:5 + a.ndim].tolist() == list(a.shape)
    assert out[9:9 + a.ndim].tolist() == list(a.strides)


def test_attributes_strided_view(target):
    base = np.zeros((6, 10), np.int32)
    a = base[1::2, ::-3]
    out = np.zeros(13, np.int64)
    attributes[1, 1](out, a)
    assert out[:5].tolist() == [2, a.size, 3, 4, a.nbytes]
    assert out[5:7].tolist() == list(a.shape)
    # the CPU target passes the view itself; on CUDA a host array travels as a compact copy
    # (numba refuses non-contiguous host arrays outright)
    strides = a.strides if target == "cpu" else np.ascontiguousarray(a).strides
    assert out[9:11].tolist() == list(strides)


_layouts = st.sampled_from(["C", "F", "strided", "reversed"])


def _make_input(shape, layout, dtype, rng):
    if layout in ("C", "F"):
        return np.asarray(rng.integers(-100, 100, shape), dtype=dtype, order=layout)
    big = rng.integers(-100, 100, tuple(2 * s + 1 for s in shape)).astype(dtype)
    if layout == "strided":
        return big[tuple(slice(1, None, 2) for _ in shape)]
    return big[tuple(slice(None, None, -2) for _ in shape)][tuple(slice(0, s) for s in shape)]


@HYP
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=4), in_layout=_layouts,
       out_layout=_layouts, seed=st.integers(0, 2**32 - 1))
def test_hypothesis_layouts(target, shape, in_layout, out_layout, seed):
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    a = _make_input(shape, in_layout, np.int64, rng)
    out = _make_input(shape, out_layout, np.int64, rng)
    out[...] = 0
    assert a.shape == shape and out.shape == shape
    launch_copy(out, a)
    np.testing.assert_array_equal(out, a * 2 + 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.uint8])
def test_layouts_all_dims_dtypes(target, dtype):
    rng = np.random.default_rng(5)
    for shape in [(33,), (9, 11), (4, 5, 6), (2, 3, 4, 5)]:
        for layout in ("C", "F", "strided"):
            a = _make_input(shape, layout, dtype, rng)
            out = np.zeros(shape, dtype)
            launch_copy(out, a)
            np.testing.assert_array_equal(out, a * dtype(2) + dtype(1), err_msg=f"{shape}")


def test_negative_indices(target):
    a = np.arange(5, dtype=np.int64) * 10
    b = np.arange(12, dtype=np.int64).reshape(3, 4)
    out = np.zeros(8, np.int64)
    negative_indices[1, 1](out, a, b)
    assert out.tolist() == [a[-1], a[-5], b[-1, -1], b[0, -2], b[-3, 1], a[-1], b[-3, -2],
                            a[-2]]


@pytest.mark.parametrize("order", ["C", "F"])
def test_views(target, order):
    a = np.asarray(np.arange(4 * 7).reshape(4, 7), dtype=np.int64, order=order)
    out = np.zeros((4, 9), np.int64)
    views[1, 4](out, a)
    for i in range(4):
        row = a[i]
        sub = a[1:, 1:3]
        assert out[i].tolist() == [row[-1], 7, a[i, 1], a[i, ::2].size, a[i, ::2][-1],
                                   a[i, -1], sub.shape[0] * 10 + sub.shape[1], sub[0, 1],
                                   a[i, 0]]


def test_iterate_over_arrays(target):
    a = np.array([1.0, 2.0, 3.0, 4.5], np.float64)
    out = np.zeros(3, np.float64)
    iterate[1, 1](out, a)
    reversed_digits = ((4.5 * 10 + 3) * 10 + 2) * 10 + 1
    assert out.tolist() == [a.sum(), float((np.arange(4) * a).sum()), reversed_digits]


ALL_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128]
SCALARS = {np.bool_: True, np.int8: -128, np.int16: -32768, np.int32: -(2**31),
           np.int64: -(2**63), np.uint8: 255, np.uint16: 65535, np.uint32: 2**32 - 1,
           np.uint64: 2**64 - 1, np.float16: 1.5, np.float32: 3.25, np.float64: -1e300,
           np.complex64: 1.5 - 2.5j, np.complex128: 1e300 + 1e-300j}


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_scalar_argument_of_every_dtype(target, dtype):
    v = dtype(SCALARS[dtype])
    out = np.zeros(1, dtype)
    scalar_echo[1, 1](out, v)
    assert out[0] == v and out.dtype == np.dtype(dtype)


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d is not np.bool_],
                         ids=lambda d: np.dtype(d).name)
def test_array_argument_of_every_dtype(target, dtype):
    rng = np.random.default_rng(7)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, 100, endpoint=True, dtype=dtype)
    elif np.issubdtype(dtype, np.complexfloating):
        a = (rng.standard_normal(100) + 1j * rng.standard_normal(100)).astype(dtype)
    else:
        a = rng.standard_normal(100).astype(dtype)
    out = np.zeros_like(a)
    array_double[4, 32](out, a)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, a + a)


def test_bool_arrays(target):
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    out = np.zeros((4, 4), np.bool_)
    bool_logic[1, 4](out, a, b)
    np.testing.assert_array_equal(out[:, 0], a & b)
    np.testing.assert_array_equal(out[:, 1], a | b)
    np.testing.assert_array_equal(out[:, 2], a ^ b)
    np.testing.assert_array_equal(out[:, 3], ~a)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_arithmetic(target, dtype):
    rng = np.random.default_rng(8)
    a = (rng.standard_normal(50) + 1j * rng.standard_normal(50)).astype(dtype)
    b = (rng.standard_normal(50) + 1j * rng.standard_normal(50)).astype(dtype)
    out = np.zeros((50, 5), dtype)
    complex_ops[1, 64](out, a, b)
    rtol = 1e-5 if dtype == np.complex64 else 1e-13
    np.testing.assert_allclose(out[:, 0], a + b, rtol=rtol)
    np.testing.assert_allclose(out[:, 1], a * b, rtol=rtol)
    np.testing.assert_allclose(out[:, 2], a / b, rtol=rtol * 10)
    np.testing.assert_allclose(out[:, 3], np.conj(a), rtol=rtol)
    np.testing.assert_allclose(out[:, 4], a.real + 2j * a.imag, rtol=rtol)


def test_module_constants_frozen_at_compile_time(target):
    x = np.arange(8, dtype=np.int64)
    out = np.zeros((8, 6), np.float64)
    globals_kernel[1, 8](out, x)
    i = np.arange(8)
    np.testing.assert_array_equal(out[:, 0], x * SCALE + np.array(OFFSETS)[i % 3])
    np.testing.assert_array_equal(out[:, 1], TABLE[i % 2, i % 3] * 2)
    np.testing.assert_array_equal(out[:, 2], TABLE_F[i % 3, i % 4])
    np.testing.assert_array_equal(out[:, 3], MUTATED[i % 4])
    assert set(out[:, 4]) == {6.0} and set(out[:, 5]) == {4.0}
    # numba semantics: a global array's contents are frozen into the compiled kernel
    saved = MUTATED.copy()
    try:
        MUTATED[:] = [-1, -2, -3, -4]
        globals_kernel[1, 8](out, x)
        np.testing.assert_array_equal(out[:, 3], saved[i % 4])
    finally:
        MUTATED[:] = saved


A = types.Array
@cuda.jit
def zero_dim(out, a, acc):
    x = a[()]
    out[()] = x + 1
    acc[()] += 2.5
    if a.ndim == 0 and a.size == 1:
        acc[()] *= 2


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.complex128, np.bool_])
def test_zero_dim_arrays(target, dtype):
    """a[()] reads and out[()] = v writes the one element of a 0-d array, as numba does."""
    a = np.array(3, dtype)
    out = np.zeros((), np.complex128 if dtype == np.complex128 else np.float64)
    acc = np.array(1.0)
    zero_dim[1, 1](out, a, acc)
    assert out[()] == a[()] + 1
    assert acc[()] == (1.0 + 2.5) * 2


PTX_CASES = [
    (attributes, "void(int64[::1], float64[:, :, :])"),
    (copy1, "void(int64[:], int64[:])"),
    (copy2, "void(float32[::1, :], float32[:, :])"),
    (copy3, "void(int16[:, :, ::1], int16[::1, :, :])"),
    (copy4, "void(uint8[:, :, :, :], uint8[:, :, :, ::1])"),
    (negative_indices, "void(int64[::1], int64[::1], int64[:, ::1])"),
    (views, "void(int64[:, ::1], int64[::1, :])"),
    (iterate, "void(float64[::1], float64[::1])"),
    (scalar_echo, "void(float16[::1], float16)"),
    (scalar_echo, "void(complex64[::1], complex64)"),
    (array_double, "void(complex128[::1], complex128[::1])"),
    (bool_logic, "void(boolean[:, ::1], boolean[::1], boolean[::1])"),
    (complex_ops, "void(complex64[:, ::1], complex64[::1], complex64[::1])"),
    (globals_kernel, "void(float64[:, ::1], int64[::1])"),
    (zero_dim, (types.Array(types.float64, 0, "C"), types.Array(types.int32, 0, "A"),
                types.Array(types.float64, 0, "C"))),
]


@pytest.mark.parametrize("kernel,sig", PTX_CASES, ids=[f"{k.__name__}-{s}" for k, s in PTX_CASES])
def test_ptx(check_ptx, kernel, sig):
    ptx = check_ptx(kernel, sig)
    if kernel is globals_kernel:
        assert ".const" in ptx  # frozen global arrays live in constant memory
