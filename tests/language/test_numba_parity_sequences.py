"""Tuples, iterators and array slicing as numba.cuda types them, ported from numba-cuda's
test_iterators, test_slicing and test_array kernels (only the import changed), plus the forms
those tests lean on: tuple slices and `in`, enumerate(zip(...)), looping over the rows of a 2-d
array, `...` in an index, and assignment to a slice (fill or broadcast copy)."""

from __future__ import annotations

import numpy as np
import pytest

from gpunb import cuda


@cuda.jit
def enumerator(x, error):  # test_iterators.test_enumerate
    count = 0
    for i, v in enumerate(x):
        if count != i:
            error[0] = 1
        if v != x[i]:
            error[0] = 2
        count += 1
    if count != len(x):
        error[0] = 3


@cuda.jit
def zipper(x, y, error):  # test_iterators.test_zip
    i = 0
    for xv, yv in zip(x, y):  # noqa: B905 - numba kernel source
        if xv != x[i]:
            error[0] = 1
        if yv != y[i]:
            error[0] = 2
        i += 1
    if i != len(x):
        error[0] = 3


@cuda.jit
def enumerator_zipper(x, y, error):  # test_iterators.test_enumerator_zip
    count = 0
    for i, (xv, yv) in enumerate(zip(x, y)):  # noqa: B905
        if i != count:
            error[0] = 1
        if xv != x[i]:
            error[0] = 2
        if yv != y[i]:
            error[0] = 3
        count += 1
    if count != len(x):
        error[0] = 4


@pytest.mark.parametrize("kernel", [enumerator, zipper, enumerator_zipper])
def test_iterators(target, kernel):
    x = np.asarray((10, 9, 8, 7, 6))
    y = np.asarray((1, 2, 3, 4, 5))
    error = np.zeros(1, dtype=np.int32)
    if kernel is enumerator:
        kernel[1, 1](x, error)
    else:
        kernel[1, 1](x, y, error)
    assert error[0] == 0


@cuda.jit
def enumerate_zip_sums(out, x, y):
    for i, (a, b) in enumerate(zip(x, y)):  # noqa: B905
        if i == 1:
            continue  # the counter still advances
        out[0] += i * 100 + a * b
    for i, (r, k) in enumerate(zip(range(10, 13), x), 5):  # noqa: B905
        out[1] += i + r + k


def test_enumerate_zip_with_continue_and_start(target):
    out = np.zeros(2, np.int64)
    enumerate_zip_sums[1, 1](out, np.array([1, 2, 3]), np.array([4, 5, 6]))
    assert out.tolist() == [0 + 4 + 200 + 18, (5 + 6 + 7) + 33 + 6]


@cuda.jit
def rows(out, m):
    s = 0
    for row in m:
        for v in row:
            s += v
    out[0] = s
    for i, row in enumerate(m):
        row[0] = i * 10
    for plane in m[:1]:
        out[1] = plane.size


def test_loop_over_rows_of_2d_array_gives_views(target):
    m = np.arange(6).reshape(2, 3)
    out = np.zeros(2, np.int64)
    rows[1, 1](out, m)
    assert out.tolist() == [15, 3]
    assert m.tolist() == [[0, 1, 2], [10, 4, 5]]


@cuda.jit
def tuple_forms(out, a):
    t = (a[0], a[1], a[2])
    out[0] = t[1:][0]
    u = t[::-1]
    out[1] = u[0]
    out[2] = len(t[:2])
    out[3] = a[0] in (1, 2, 5)
    out[4] = a[1] not in (1, 2.5)
    out[5] = 7 in a
    out[6] = 6.0 in a
    out[7] = a[0] in t[1:]
    s = 0
    for i in range(3):
        s += t[i]
    out[8] = s
    out[9] = ((1, 2), (3, 4))[1][0] + t[-1]


def test_tuple_slices_in_and_dynamic_index(target):
    out = np.zeros(10, np.int64)
    tuple_forms[1, 1](out, np.array([5, 6, 7], np.int64))
    assert out.tolist() == [6, 7, 2, 1, 1, 1, 1, 0, 18, 10]


@cuda.jit
def in_empty_and_float(out, a, x):
    out[0] = x[0] in a
    out[1] = x[1] in a[:0]
    out[2] = np.nan in a


def test_in_array_compares_by_value(target):
    out = np.ones(3, np.bool_)
    in_empty_and_float[1, 1](out, np.array([0.5, np.nan, 2.0]), np.array([2, 0], np.int32))
    assert out.tolist() == [True, False, False]  # NaN is never equal, as in numpy


def foo(inp, out):
    for i in range(out.shape[0]):
        out[i] = inp[i]


cufoo = cuda.jit("void(int32[:], int32[:])", device=True)(foo)


@cuda.jit("void(int32[:,:], int32[:,:])")
def copy_rows(inp, out):  # test_slicing.test_slice_as_arg
    i = cuda.grid(1)
    cufoo(inp[i, :], out[i, :])


def test_slice_as_device_function_arg(target):
    inp = np.arange(100, dtype=np.int32).reshape(10, 10)
    out = np.zeros_like(inp)
    copy_rows[1, 10](inp, out)
    np.testing.assert_array_equal(out, inp)


@cuda.jit
def slice_stores(a, m, src, out):
    a[1:3] = 7
    b = a[5:]
    b[0] = -1
    a[-1:] = 2.5
    m[:, 1] = src[:3]
    m[0, ...] = 9
    m[2:, ::2] = src[:1]
    out[0] = m[..., 1][1]
    out[1] = m[1, ...][2]
    loc = cuda.local.array((2, 2), np.float64)
    loc[:] = 0.0
    loc[...] = 1.0
    out[2] = loc[1, 1] + loc[0, 0]
    t = cuda.local.array(4, np.int32)
    t[:] = src
    out[3] = t[3]
    a[8:] = 5  # an empty slice stores nothing


def test_slice_assignment_fills_and_broadcasts(target):
    a = np.zeros(8, np.int64)
    m = np.zeros((3, 3))
    src = np.array([1.0, 2.0, 3.0, 4.0])
    out = np.zeros(4)
    slice_stores[1, 1](a, m, src, out)
    ea, em = np.zeros(8, np.int64), np.zeros((3, 3))
    ea[1:3] = 7
    ea[5] = -1
    ea[-1:] = 2.5
    em[:, 1] = src[:3]
    em[0, ...] = 9
    em[2:, ::2] = src[:1]
    np.testing.assert_array_equal(a, ea)
    np.testing.assert_array_equal(m, em)
    assert out.tolist() == [em[..., 1][1], em[1, ...][2], 2.0, 4.0]


@cuda.jit
def ellipsis_views(out, a):
    out[0] = a[..., 2][1, 0]
    out[1] = a[1, ...][0, 3]
    out[2] = a[...][2, 1, 0]
    out[3] = a[1, ..., 2][1]


def test_ellipsis_index(target):
    a = np.arange(3 * 2 * 4, dtype=np.float64).reshape(3, 2, 4)
    out = np.zeros(4)
    ellipsis_views[1, 1](out, a)
    assert out.tolist() == [a[..., 2][1, 0], a[1, ...][0, 3], a[...][2, 1, 0], a[1, ..., 2][1]]


def test_sequence_kernels_ptx(ptxas):
    ptxas(cuda.compile_ptx(slice_stores, "void(int64[::1], float64[:, ::1], float64[::1], "
                                         "float64[::1])")[0])
    ptxas(cuda.compile_ptx(tuple_forms, "void(int64[::1], int64[::1])")[0])
    ptxas(cuda.compile_ptx(enumerate_zip_sums, "void(int64[::1], int64[::1], int64[::1])")[0])
    ptxas(cuda.compile_ptx(rows, "void(int64[::1], int64[:, ::1])")[0])


@cuda.jit
def mismatched_slice_store(a, src, out):
    a[0:4] = src  # 4 elements from a source of len(src)
    out[0] = 1.0  # the thread goes on either way


def test_slice_store_of_a_mismatched_shape_reads_nothing_past_the_source(target):
    """numpy (and numba) refuse shapes that do not broadcast; gpunb stores nothing rather than
    reading past the end of the source (numba raises ValueError, which ends the thread)."""
    a, out = np.zeros(8), np.zeros(1)
    backing = np.arange(10.0)
    mismatched_slice_store[1, 1](a, backing[:3], out)  # 3 into 4: does not broadcast
    assert a.tolist() == [0.0] * 8 and out[0] == 1.0
    mismatched_slice_store[1, 1](a, backing[7:8], out)  # 1 broadcasts
    assert a.tolist() == [7.0] * 4 + [0.0] * 4
    mismatched_slice_store[1, 1](a, backing[2:6], out)  # 4 into 4
    assert a.tolist() == [2.0, 3.0, 4.0, 5.0] + [0.0] * 4


@cuda.jit
def none_slice_bounds(out, a):
    stop = None
    b = a[None:3]
    c = a[1:stop:None]
    out[0] = b.size
    out[1] = c[c.size - 1]
    out[2] = a[None:None:-1][0]


def test_none_slice_bounds_mean_omitted(target):
    a, out = np.arange(5.0), np.zeros(3)
    none_slice_bounds[1, 1](out, a)
    assert out.tolist() == [3.0, 4.0, 4.0]


@cuda.jit
def np_dtype_objects(out):
    loc = cuda.local.array(3, np.dtype("int16"))
    sh = cuda.shared.array(2, dtype=np.dtype(np.float32))
    loc[0] = 40000  # wraps as an int16
    sh[0] = 1.5
    out[0] = loc[0] + sh[0]


def test_np_dtype_calls_give_compile_time_dtypes(target):
    out = np.zeros(1)
    np_dtype_objects[1, 1](out)
    assert out[0] == np.int16(40000 - 65536) + 1.5


@cuda.jit
def overlapping_slice_copies(a, m):
    a[1:] = a[:-1]  # target above the source: copied backwards, as memmove
    a[:2] = a[3:5]  # below: forwards
    m[1:, :] = m[:-1, :]


def test_overlapping_slice_copies_give_numpys_result(target):
    a, m = np.arange(6.0), np.arange(12.0).reshape(4, 3)
    ea, em = a.copy(), m.copy()
    ea[1:] = ea[:-1]
    ea[:2] = ea[3:5]
    em[1:, :] = em[:-1, :]
    overlapping_slice_copies[1, 1](a, m)
    assert a.tolist() == ea.tolist() and m.tolist() == em.tolist()
