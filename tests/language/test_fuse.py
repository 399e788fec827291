"""gpunb.fuse: numpy-style functions fused into gpunb kernels must give numpy's answers.

The oracle is numpy itself: a fused function is plain numpy code, so each test calls the same
function on numpy arrays and compares values, dtypes and shapes (exact for integers and bools,
NaN where numpy has NaN, a tight tolerance for floats). Expressions are fixed and shapes vary,
so the number of distinct kernels (each compiled once) stays small.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpunb
from gpunb import cuda

HYP = settings(max_examples=25, deadline=None, derandomize=True,
               suppress_health_check=[HealthCheck.function_scoped_fixture,
                                      HealthCheck.too_slow, HealthCheck.data_too_large])
RTOL = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-13}


def numpy_result(func, *args, **kwargs):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


def assert_same(got, expected, atol=0.0):
    """Same kind of result (numpy scalar or array), dtype, shape and values as numpy."""
    if not isinstance(expected, np.ndarray):
        assert type(got) is type(expected), f"{type(got)}, numpy gives {type(expected)}"
    else:
        assert isinstance(got, np.ndarray), f"expected a numpy array, got {type(got)}"
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype, f"dtype {got.dtype}, numpy gives {expected.dtype}"
    assert got.shape == expected.shape, f"shape {got.shape}, numpy gives {expected.shape}"
    if expected.dtype.kind == "f":
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected), "NaN positions")
        np.testing.assert_allclose(got, expected, rtol=RTOL[expected.dtype], atol=atol)
    else:
        np.testing.assert_array_equal(got, expected)


def check(fused, *args, atol=0.0):
    """Run the fused function and its numpy original on the same arguments and compare."""
    expected = numpy_result(fused.__wrapped__, *args)
    got = numpy_result(fused, *args)
    assert_same(got, expected, atol)
    return got


def values(dtype, shape, rng, low=-6, high=6):
    """Test data with the awkward values of each kind (NaN, infinities, zeros, extremes)."""
    dtype = np.dtype(dtype)
    size = math.prod(shape)
    if dtype.kind == "b":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind == "f":
        x = rng.uniform(low, high, size)
        specials = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -1.5, 2.5]
        x[:min(size, len(specials))] = specials[:size]
        rng.shuffle(x)
        return x.reshape(shape).astype(dtype)
    info = np.iinfo(dtype)
    x = rng.integers(max(info.min, -100), min(info.max, 100), size, endpoint=True)
    specials = [info.min, info.max, 0, 1]
    x = x.astype(dtype)
    x[:min(size, len(specials))] = np.array(specials[:size]).astype(dtype)
    rng.shuffle(x)
    return x.reshape(shape)


def strided(array, rng):
    """The same values through a non-contiguous view (every other element, maybe reversed)."""
    if array.ndim == 0:
        return array.copy()
    big = np.empty(tuple(2 * n for n in array.shape), array.dtype)
    view = big[tuple(slice(None, None, 2) for _ in array.shape)]
    if rng.random() < 0.5:
        view = big[tuple(slice(None, None, -2) for _ in array.shape)]
    view[...] = array
    return view


# ---- the seed: CuPy's fuse got this wrong ------------------------------------------------------


@gpunb.fuse
def mask_points(points, mask):
    return np.where(mask[:, np.newaxis], np.inf, points)


@HYP
@given(n=st.integers(0, 40), dtype=st.sampled_from([np.float32, np.float64]),
       layout=st.sampled_from(["C", "strided", "F"]), seed=st.integers(0, 2**16))
@pytest.mark.slow
def test_seed_where_newaxis_matches_numpy_exactly(target, n, dtype, layout, seed):
    rng = np.random.default_rng(seed)
    points = values(dtype, (n, 3), rng)
    mask = rng.random(n) < 0.5
    if layout == "strided":
        points, mask = strided(points, rng), strided(mask, rng)
    elif layout == "F":
        points = np.asfortranarray(points)
    got = check(mask_points, points, mask)
    np.testing.assert_array_equal(got, np.where(mask[:, None], np.inf, points))  # bit for bit


def test_seed_on_the_cupy_bug_example(target):
    points = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    mask = np.array([True, False, True])
    got = mask_points(points, mask)
    assert got.tolist() == [[np.inf] * 3, [4.0, 5.0, 6.0], [np.inf] * 3]


@gpunb.fuse
def pairwise_distance(a, b):
    return np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=-1))


@HYP
@given(n=st.integers(0, 12), m=st.integers(1, 12), d=st.integers(1, 40),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))
@pytest.mark.slow
def test_fused_pairwise_distance(target, n, m, d, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, d)).astype(dtype)
    b = rng.normal(size=(m, d)).astype(dtype)
    expected = np.sqrt(((a[:, None, :].astype(np.float64) - b[None, :, :]) ** 2).sum(axis=-1))
    got = pairwise_distance(a, b)
    assert got.dtype == dtype and got.shape == (n, m)
    np.testing.assert_allclose(got, expected.astype(dtype), rtol=RTOL[np.dtype(dtype)] * 4)


# ---- broadcasting, dtype promotion, layouts ---------------------------------------------------

DTYPES = [np.bool_, np.uint8, np.int32, np.int64, np.float32, np.float64]


@gpunb.fuse
def select_chain(x, y):
    return np.where(x > y, x + y * 3, np.maximum(x, y) * 2)


@HYP
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3,
                                                min_side=0, max_side=4),
       dtypes=st.tuples(st.sampled_from(DTYPES), st.sampled_from(DTYPES)),
       layout=st.sampled_from(["C", "strided"]), seed=st.integers(0, 2**16))
@pytest.mark.slow
def test_broadcasting_and_promotion(target, shapes, dtypes, layout, seed):
    rng = np.random.default_rng(seed)
    x = values(dtypes[0], shapes.input_shapes[0], rng)
    y = values(dtypes[1], shapes.input_shapes[1], rng)
    if layout == "strided":
        x, y = strided(x, rng), strided(y, rng)
    check(select_chain, x, y)


@gpunb.fuse
def smooth(x, y):
    return np.sqrt(np.abs(x)) * np.exp(-np.abs(y)) + np.log1p(np.abs(x * y)) / (1 + y * y)


@HYP
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3,
                                                min_side=0, max_side=5),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))
@pytest.mark.slow
def test_float_chain_broadcast(target, shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    x = values(dtype, shapes.input_shapes[0], rng)
    y = np.asfortranarray(values(dtype, shapes.input_shapes[1], rng))
    check(smooth, x, y)


@gpunb.fuse
def scaled(x, s):
    return x * s + 1


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.float32, np.float64,
                                   np.bool_])
@pytest.mark.parametrize("scalar", [3, 2.5, True, np.int64(3), np.float32(0.5),
                                    np.float64(2.5), np.int16(7), np.array(4, np.int16),
                                    np.array(1.5, np.float32)],
                         ids=lambda s: f"{type(s).__name__}:{s!r}")
def test_python_scalars_are_weak_numpy_scalars_strong(target, dtype, scalar):
    x = values(dtype, (5,), np.random.default_rng(1))
    check(scaled, x, scalar)


@pytest.mark.parametrize("dtype", [np.float32, np.int8])
def test_constants_in_the_function_follow_nep50(target, dtype):
    x = values(dtype, (6,), np.random.default_rng(13))
    check(gpunb.fuse(lambda a: a * np.float64(2)), x)   # strong, though np.float64 is a float
    check(gpunb.fuse(lambda a: a * 2.0 + np.float32(1)), x)
    check(gpunb.fuse(lambda a: np.where(a > 0, np.int16(3), -1)), x)


def test_python_int_out_of_range_raises_like_numpy(target):
    x = np.arange(4, dtype=np.int8)
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        gpunb.fuse(lambda a: a + 300)(x)
    with pytest.raises(OverflowError, match="300 out of bounds for int8"):
        scaled(x, 300)
    assert scaled(x, 3).dtype == np.int8  # the same plan: the check is per call
    # comparisons compare the true values, as numpy 2 does
    check(gpunb.fuse(lambda a, b: (a == b) | (a < b)), x, 300)


def test_scalar_only_calls_give_what_numpy_gives(target):
    assert type(scaled(2, 3)) is int and scaled(2, 3) == 7  # Python arithmetic
    assert type(scaled(2.5, 2)) is float and scaled(2.5, 2) == 6.0
    assert type(gpunb.fuse(lambda a: np.sqrt(a))(4.0)) is np.float64
    got = check(scaled, np.float32(2), 0.5)
    assert type(got) is np.float32
    check(select_chain, np.array(2.5), np.array(3, np.int8))


@gpunb.fuse
def views(x):
    return x[::2, 1:] * 10 + x.T[::2, 1:] - x[::2, -1][:, None] + x[0, 1:]


@pytest.mark.parametrize("shape", [(4, 4), (5, 5), (1, 1), (0, 0), (6, 6)])
def test_indexing_inside_the_function(target, shape):
    x = values(np.int32, shape, np.random.default_rng(2))
    if shape == (0, 0):
        with pytest.raises(IndexError):
            numpy_result(views.__wrapped__, x)
        with pytest.raises(IndexError):
            views(x)
        return
    check(views, x)
    check(views, strided(x, np.random.default_rng(3)))


@gpunb.fuse
def newaxis_of_computed(x, y):
    return ((x + 1)[:, None] * (y - 1)[None, :]).T


def test_newaxis_and_transpose_of_computed_values(target):
    rng = np.random.default_rng(4)
    check(newaxis_of_computed, values(np.float32, (7,), rng), values(np.float64, (3,), rng))
    check(newaxis_of_computed, values(np.int64, (1,), rng), values(np.int64, (0,), rng))


# ---- reductions --------------------------------------------------------------------------------

REDUCTIONS = ["sum", "prod", "max", "min", "mean", "all", "any"]


def reduction_of(op: str, axis, keepdims: bool):
    def reduce_it(x, y):
        value = np.where(y > 0, x * 2, x - y)
        return getattr(value, op)(axis=axis, keepdims=keepdims)
    return reduce_it


def reduction_tolerance(op, x, y, axis):
    """numpy's float sums round differently (pairwise, in the result dtype): allow what its
    rounding can add, relative to the sum of magnitudes."""
    if op not in ("sum", "mean"):
        return 0.0
    with np.errstate(all="ignore"):
        magnitude = np.abs(np.where(y > 0, x * 2, x - y).astype(np.float64))
        scale = np.nan_to_num(magnitude, posinf=0).sum(axis=axis) if magnitude.size else 0
    return 1e-6 * float(np.max(scale, initial=1.0))


@HYP
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5),
       op=st.sampled_from(REDUCTIONS), axis_pick=st.integers(0, 7), keepdims=st.booleans(),
       dtype=st.sampled_from([np.bool_, np.int8, np.int32, np.uint8, np.float32, np.float64]),
       seed=st.integers(0, 2**16))
@pytest.mark.slow
def test_reductions_match_numpy(target, shape, op, axis_pick, keepdims, dtype, seed):
    rng = np.random.default_rng(seed)
    ndim = len(shape)
    axis = [None, 0, -1, ndim - 1, tuple(range(ndim)), (0, -1), -ndim, None][axis_pick]
    if isinstance(axis, tuple) and len(set(a % ndim for a in axis)) < len(axis):
        axis = axis[0]
    x = values(dtype, shape, rng, low=-2, high=2)
    y = values(dtype, shape[1:], rng, low=-2, high=2)
    fused = gpunb.fuse(reduction_of(op, axis, keepdims))
    try:
        expected = numpy_result(fused.__wrapped__, x, y)
    except (TypeError, ValueError) as exc:  # bool - bool, empty max: the same error type
        with pytest.raises(type(exc)):
            numpy_result(fused, x, y)
        return
    assert_same(numpy_result(fused, x, y), expected,
                atol=reduction_tolerance(op, x, y, axis))


@pytest.mark.parametrize("op,shape,axis", [
    ("sum", (5000,), None), ("max", (5000,), None),          # block partials + finish
    ("prod", (3, 2000), 1), ("min", (3, 2000), 1),            # a few outputs, 2 parts each
    ("mean", (2000, 3), 0), ("max", (2000, 3), 0),            # long strided reductions
    ("any", (40, 300), -1), ("sum", (40, 300), -1),           # one block per output
    ("min", (3000, 40), 1), ("prod", (3000, 40), 1)])         # one thread per output
def test_reduction_strategies(target, op, shape, axis):
    rng = np.random.default_rng(5)
    x = rng.uniform(0.5, 1.5, shape)  # prod stays finite, and every strategy is exercised
    x.flat[7] = np.nan if op in ("max", "min") else x.flat[7]
    fused = gpunb.fuse(lambda a, op=op, axis=axis: getattr(a * 1.0, op)(axis=axis))
    got = fused(x)
    expected = getattr(x, op)(axis=axis)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert len(fused.last_launches) in (1, 2)


@pytest.mark.slow
def test_reduction_kernel_choice_follows_the_shape(target):
    rng = np.random.default_rng(6)
    fused = gpunb.fuse(lambda a: (a * a).sum(axis=-1), kernel_name="sumsq")
    roles = {}
    for shape in [(10000,), (3, 4000), (50, 3), (20, 500)]:
        x = rng.normal(size=shape)
        np.testing.assert_allclose(fused(x), (x * x).sum(axis=-1), rtol=1e-12)
        roles[shape] = [name for name, _, _ in fused.last_launches]
    assert roles[(10000,)] == ["sumsq", "sumsq_finish"]
    assert roles[(50, 3)] == ["sumsq"]
    assert "def sumsq(out" in fused.sources(np.zeros((50, 3)))[0]
    assert "for r in range(red_size):" in fused.sources(np.zeros((50, 3)))[0]
    assert "cuda.shared.array" in fused.sources(np.zeros((20, 500)))[0]


def test_zero_size_reductions(target):
    empty = np.zeros((0, 3))
    check(gpunb.fuse(lambda a: a.sum(axis=0)), empty)
    check(gpunb.fuse(lambda a: np.prod(a + 1)), empty)
    check(gpunb.fuse(lambda a: a.max(axis=1)), empty)  # nothing reduced is empty: fine
    for func in (lambda a: a.max(), lambda a: np.min(a, axis=0)):
        with pytest.raises(ValueError, match="zero-size array to reduction operation"):
            gpunb.fuse(func)(empty)


@gpunb.fuse
def rms_after_reduce(x, scale):
    return np.sqrt((x * x).mean(axis=-1)) * scale + 1


@pytest.mark.slow
def test_ufuncs_after_the_reduction(target):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(6, 50)).astype(np.float32)
    check(rms_after_reduce, x, 2.0)
    # a float32 mean rounded once (ours) or pairwise (numpy's), then widened: 1 float32 ulp
    check(rms_after_reduce, x, np.float64(2.0), atol=4e-7 * 4)
    check(rms_after_reduce, rng.normal(size=(3, 1000)), np.float32(0.5))
    check(gpunb.fuse(lambda a: np.abs(a).max() * 2 > 1), x)


# ---- every supported ufunc, a few kernels per dtype --------------------------------------------

UNARY = ["negative", "positive", "absolute", "fabs", "square", "reciprocal", "sign", "floor",
         "ceil", "trunc", "rint", "logical_not", "invert", "sqrt", "exp", "exp2", "expm1", "log",
         "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh",
         "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "cbrt", "deg2rad", "rad2deg",
         "degrees", "radians", "isnan", "isinf", "isfinite", "signbit"]
BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "power",
          "float_power", "maximum", "minimum", "fmax", "fmin", "arctan2", "hypot", "copysign",
          "fmod", "nextafter", "logaddexp", "logaddexp2", "heaviside", "bitwise_and",
          "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "less", "less_equal",
          "greater", "greater_equal", "equal", "not_equal", "logical_and", "logical_or",
          "logical_xor"]


def result_dtype(name: str, dtype):
    """numpy's result dtype of the ufunc on arguments of `dtype`, None if it has no loop."""
    ufunc = getattr(np, name)
    try:
        loop = ufunc.resolve_dtypes((np.dtype(dtype),) * ufunc.nin + (None,))
    except TypeError:
        return None
    if name == "nextafter" and loop[0] == np.float16:
        return None  # refused with a TypeError (numpy's float16 nextafter is not emulated)
    return loop[-1]


def one_of_each(names: list):
    """A function computing every ufunc of `names`, ufunc k in column k of a 2-d result
    (through broadcasting and np.where), so one kernel covers them all."""
    def every(x, y, column):
        out = None
        for k, name in enumerate(names):
            ufunc = getattr(np, name)
            value = ufunc(x) if ufunc.nin == 1 else ufunc(x, y)
            out = value if out is None else np.where(column == k, value, out)
        return out
    return every


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int32, np.int64, np.float16,
                                   np.float32, np.float64])
@pytest.mark.slow
def test_every_ufunc_matches_numpy(target, dtype):
    rng = np.random.default_rng(8)
    x = values(dtype, (64, 1), rng)
    y = values(dtype, (64, 1), rng)
    if np.dtype(dtype).kind in "iu":  # shifts and integer powers where numpy defines them
        y = np.abs(y.astype(np.int64) % 9).astype(dtype)
    groups: dict = {}  # one kernel per result dtype, so no value is converted on the way
    for name in UNARY + BINARY:
        if result_dtype(name, dtype) is not None:
            groups.setdefault(result_dtype(name, dtype), []).append(name)
    for names in groups.values():
        column = np.arange(len(names))
        fused = gpunb.fuse(one_of_each(names))
        got, expected = fused(x, y, column), numpy_result(fused.__wrapped__, x, y, column)
        for k, name in enumerate(names):
            try:
                assert_same(got[:, k], expected[:, k])
            except AssertionError as exc:
                raise AssertionError(f"np.{name} on {np.dtype(dtype)}: {exc}") from None


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64])
def test_integer_edge_cases_wrap_like_numpy(target, dtype):
    info = np.iinfo(dtype)
    x = np.array([info.min, info.max, -1 if info.min else 3, 0, 7, info.min + 1], dtype)
    y = np.array([-1 if info.min else 2, 2, 0, 0, -3 if info.min else 3, 70 % info.max],
                 dtype)
    fused = gpunb.fuse(lambda a, b:
                       (a * b) ^ (a // b) ^ (a % b) ^ np.fmod(a, b) ^ (a << 3) ^ (-a) ^ abs(a))
    check(fused, x, y)
    check(gpunb.fuse(lambda a, b: np.left_shift(a, b) | np.right_shift(a, b)), x, y)


# ---- device arrays in, device arrays out ------------------------------------------------------


def test_device_arrays_in_give_device_arrays_out(target):
    rng = np.random.default_rng(9)
    points, mask = values(np.float32, (50, 3), rng), rng.random(50) < 0.5
    expected = np.where(mask[:, None], np.inf, points)
    d_points, d_mask = cuda.to_device(points), cuda.to_device(mask)
    got = mask_points(d_points, d_mask)
    assert not isinstance(got, np.ndarray) and hasattr(got, "copy_to_host")
    assert got.shape == (50, 3) and got.dtype == np.float32
    np.testing.assert_array_equal(got.copy_to_host(), expected)
    mixed = mask_points(points, d_mask)  # one device array makes the result a device array
    np.testing.assert_array_equal(mixed.copy_to_host(), expected)
    total = gpunb.fuse(lambda a: (a * 2).sum())(cuda.to_device(np.arange(10.0)))
    assert total.shape == () and total.copy_to_host()[()] == 90.0  # 0-d, like cupy
    view = cuda.to_device(np.arange(24.0).reshape(4, 6))[::2, 1::2]  # a strided device view
    np.testing.assert_array_equal(
        gpunb.fuse(lambda a: a + 1)(view).copy_to_host(), np.arange(24.0).reshape(4, 6)[::2, 1::2]
        + 1)


def test_keyword_arguments_and_defaults(target):
    @gpunb.fuse
    def affine(x, scale=2.0, *, shift=1):
        return x * scale + shift

    x = np.arange(5, dtype=np.float32)
    assert_same(affine(x), x * 2.0 + 1)
    assert_same(affine(x, shift=np.float64(0.5)), x * 2.0 + np.float64(0.5))
    assert_same(affine(x, 3, shift=2), x * 3 + 2)
    assert_same(affine(x=x, scale=np.float32(4)), x * np.float32(4) + 1)


# ---- errors: clear, and at trace time ----------------------------------------------------------


def test_unsupported_operations_raise_clear_type_errors(target):
    x = np.arange(6.0)
    cases = [
        (lambda a: np.cumsum(a), r"np\.cumsum is not supported inside a fused function"),
        (lambda a: np.where(a > 1), r"np\.where with one argument"),
        (lambda a: a if a > 0 else -a, r"truth value of a traced array"),
        (lambda a: a.sum() + a.max(), r"only one reduction"),
        (lambda a: a - a.sum(), r"combining a reduction's result with another array"),
        (lambda a: np.add(a, 1, out=a), r"keyword arguments"),
        (lambda a: np.frexp(a), r"np\.frexp .*2 outputs"),
        (lambda a: a[a > 2], r"indexing with"),
        (lambda a: a + np.ones(6), r"an array that is not an argument"),
        (lambda a: (a, a), r"returning several values"),
        (lambda a: np.nextafter(a.astype(np.float16), 1), r"float16"),
        (lambda a: float(a), r"cannot become a Python number"),
    ]
    for func, message in cases:
        with pytest.raises(TypeError, match=message):
            gpunb.fuse(func)(x)
    with pytest.raises(TypeError, match="complex"):
        gpunb.fuse(lambda a: a * 2)(np.ones(3, np.complex64))
    with pytest.raises(TypeError, match="neither an array nor a scalar"):
        gpunb.fuse(lambda a, b: a)(x, "text")


@pytest.mark.parametrize("func, message", [
    (lambda a: a.std(), r"x\.std is not supported"),
    (lambda a: a.argmax(), r"x\.argmax is not supported"),
    (lambda a: a.reshape(3, 2) + 1, r"x\.reshape is not supported"),
    (lambda a: a.real, r"x\.real is not supported"),
    (lambda a: a.__setitem__(0, 1), r"assigning into a traced array"),
    (lambda a: a.sum(initial=3), r"x\.sum with \['initial'\]"),
    (lambda a: a.max(where=a > 1), r"x\.max with \['where'\]"),
    (lambda a: a.sum(0, None, np.empty(1)), r"x\.sum with \['out'\]"),
])
def test_unsupported_methods_and_attributes_are_located_fuse_errors(target, func, message):
    # found by hunt-prog: x.std(), x.argmax(), x.reshape(), x[0] = ... raised a bare
    # AttributeError "'Proxy' object has no attribute ...", x.sum(initial=) a bare TypeError
    with pytest.raises(gpunb.CompileError, match=message) as info:
        gpunb.fuse(func)(np.arange(6.0))
    assert isinstance(info.value, TypeError) and info.value.loc.filename == __file__


def test_reduction_methods_take_numpys_parameters_and_round_is_np_round(target):
    x = np.arange(12.0).reshape(3, 4) - 5.5
    kept = gpunb.fuse(lambda a: a.sum(1, None, None, True))(x)  # axis, dtype, out, keepdims
    assert_same(kept, x.sum(1, None, None, True))
    assert_same(gpunb.fuse(lambda a: a.max(0, None, True))(x), x.max(0, None, True))
    assert_same(gpunb.fuse(lambda a: round(a))(x), np.round(x))
    seen = []
    gpunb.fuse(lambda a: seen.append((hasattr(a, "std"), hasattr(a, "_x"))) or a)(x)
    assert seen == [(False, False)]  # hasattr still answers on a traced array


def test_unsupported_code_is_a_located_compile_error(target):
    """What gpunb.fuse cannot compile is a gpunb CompileError (still a TypeError, as cupy's)
    naming the fused function's line and column with a caret, with only the user's frames."""
    import traceback

    @gpunb.fuse
    def normed(x):
        z = x * 2
        return np.cumsum(z) + 1  # <- unsupported

    with pytest.raises(gpunb.CompileError) as info:
        normed(np.ones(4, np.float32))
    error = info.value
    assert isinstance(error, TypeError)
    assert error.message == "gpunb.fuse: np.cumsum is not supported inside a fused function"
    assert error.hint.startswith("supported: numpy's ufuncs")
    line = normed.__wrapped__.__code__.co_firstlineno + 3  # (the decorator line is the first)
    assert (error.loc.filename, error.loc.line) == (__file__, line)
    text = str(error)
    assert f'File "{__file__}", line {line}, column 16:' in text
    assert "    return np.cumsum(z) + 1  # <- unsupported\n           ^~~~~~~~~~~~" in text
    frames = [f.filename for f in traceback.extract_tb(error.__traceback__)]
    assert not [f for f in frames if f.endswith(("trace.py", "graph.py"))]

    # an argument it cannot take: the line that called the fused function
    with pytest.raises(gpunb.CompileError) as info:
        gpunb.fuse(lambda a, b: a)(np.ones(2), "text")  # <- bad argument
    assert info.value.loc.line == sys._getframe().f_lineno - 1
    assert "neither an array nor a scalar" in info.value.message


def test_numpy_errors_are_numpy_errors(target):
    x = np.arange(6.0)
    with pytest.raises(ValueError, match="could not be broadcast"):
        gpunb.fuse(lambda a, b: a + b)(x, np.ones(4))
    with pytest.raises(np.exceptions.AxisError):
        gpunb.fuse(lambda a: a.sum(axis=1))(x)
    with pytest.raises(TypeError, match="boolean negative"):
        gpunb.fuse(lambda a: -a)(x > 2)
    with pytest.raises(IndexError):
        gpunb.fuse(lambda a: a[0, 0])(x)


# ---- kernels: ordinary gpunb kernels, memoised per source, on grids that fill the device ------


def test_fused_kernels_are_gpunb_kernels_memoised_per_source(target):
    fused = gpunb.fuse(kernel_name="masked_points")(mask_points.__wrapped__)
    a, b = np.ones((10, 3)), np.ones(10, bool)
    (kernel,) = fused.kernels(a, b)
    assert type(kernel).__name__ == "Dispatcher" and kernel.__name__ == "masked_points"
    assert fused.kernels(np.ones((500, 3)), np.ones(500, bool))[0] is kernel  # same source
    assert fused.kernels(np.ones((1, 3)), np.ones(1, bool))[0] is not kernel  # broadcast dim
    again = gpunb.fuse(kernel_name="masked_points")(mask_points.__wrapped__)
    assert again.kernels(a, b)[0] is kernel  # another function, the same generated source
    fused(a, b)
    fused(np.zeros((70, 3)), np.zeros(70, bool))
    compiled = [entry for entry in kernel.cache_info() if entry["target"] == target]
    assert len(compiled) == 1  # one specialisation serves every shape with this layout
    assert "masked_points" in repr(fused) and fused.__name__ == "mask_points"


def test_a_new_process_loads_fused_kernels_from_the_disk_cache(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, gpunb
        gpunb.set_target("cpu")
        fused = gpunb.fuse(lambda p, m: np.where(m[:, None], np.inf, p), kernel_name="cached")
        p, m = np.ones((5, 3)), np.array([True, False, True, False, True])
        assert fused(p, m)[1].tolist() == [1.0, 1.0, 1.0]
        event = fused.kernels(p, m)[0].cache_info()[0]["event"]
        print(event.kind, event.source)
    """)
    env = dict(os.environ, GPUNB_CACHE_DIR=str(tmp_path), GPUNB_NOTICES="0")
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           env=env, timeout=120) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr[-2000:] + runs[1].stderr[-2000:]
    assert runs[0].stdout.split() == ["miss", "None"]
    assert runs[1].stdout.split() == ["hit", "disk"]  # generated source, content-keyed cache


def test_grid_fills_the_device_not_the_input(target):
    fused = gpunb.fuse(lambda a: a * 2 + 1)
    fused(np.ones(100))
    assert fused.last_launches[0][1:] == (1, 256)  # 100 elements: one block is enough
    fused(np.ones(3_000_000))
    (name, grid, block), = fused.last_launches
    if target == "cpu":
        from gpunb.foundation import config

        assert grid == 4 * config.cpu_threads()
    else:
        from gpunb.backends.cuda import driver

        assert grid >= driver.current_device().multiprocessor_count
    assert grid < 3_000_000 // block  # a grid-stride loop, not a thread per element


# ---- PTX: what the GPU would run is accepted by ptxas ------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["inspected", "sm_80"])
def test_fused_kernels_ptx_is_accepted_by_ptxas(target, ptxas, arch):
    rng = np.random.default_rng(10)
    calls = [
        (mask_points, (values(np.float32, (64, 3), rng), rng.random(64) < 0.5)),
        (pairwise_distance, (rng.normal(size=(8, 3)), rng.normal(size=(9, 3)))),   # thread
        (rms_after_reduce, (rng.normal(size=(4, 600)).astype(np.float32), 2.0)),    # block
        (gpunb.fuse(lambda a: np.abs(a).max()), (rng.normal(size=6000),)),          # + finish
        (gpunb.fuse(one_of_each(["sqrt", "exp", "rint", "sign", "maximum", "fmod", "power",
                                 "logaddexp", "arctan2"])),
         (values(np.float16, (8, 1), rng), values(np.float16, (8, 1), rng), np.arange(9))),
    ]
    seen = set()
    for fused, args in calls:
        fused(*args)
        for kernel in fused.kernels(*args):
            if arch == "inspected":  # the inspector's PTX, for GPUNB_ARCH (sm_90 by default)
                ptx = kernel.inspect_ptx()
            else:
                ptx, _ = cuda.compile_ptx(kernel, kernel.signatures[0], cc=(8, 0))
            assert ".entry" in ptx
            ptxas(ptx, re.search(r"\.target (sm_\d+)", ptx).group(1))
            seen.add(kernel.__name__)
    assert {"mask_points", "pairwise_distance", "rms_after_reduce", "_lambda__finish"} <= seen


# ---- on a GPU: CuPy and device arrays, grids sized by the device -------------------------------


@pytest.fixture
def on_gpu():
    from gpunb.backends.cuda import driver

    gpunb.set_target("cuda")
    yield driver.current_device()
    gpunb.set_target(None)


@pytest.mark.gpu
def test_seed_on_the_gpu_fills_the_device(on_gpu):
    n = 4_000_000
    rng = np.random.default_rng(11)
    points = rng.random((n, 3))
    mask = rng.random(n) < 0.5
    expected = np.where(mask[:, np.newaxis], np.inf, points)
    got = mask_points(cuda.to_device(points), cuda.to_device(mask))
    assert not isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got.copy_to_host(), expected)
    (_, grid, block), = mask_points.last_launches
    assert on_gpu.multiprocessor_count <= grid < 3 * n // block  # full device, grid-stride loop
    np.testing.assert_array_equal(mask_points(points, mask), expected)  # numpy in, numpy out
    norms = gpunb.fuse(lambda p, m: np.where(m, 0.0, p * p).sum())(points[:, 0], mask)
    np.testing.assert_allclose(norms, np.where(mask, 0.0, points[:, 0] ** 2).sum(), rtol=1e-9)


@pytest.mark.gpu
def test_results_dropped_in_a_loop_stay_correct(on_gpu):
    # outputs come from the device's memory pool and go back to it without waiting for the GPU:
    # a result must not be handed out again while a queued kernel still writes it
    fused = gpunb.fuse(lambda a, k: a * k)
    x = cuda.to_device(np.arange(1_000_000, dtype=np.float32))
    kept = []
    for k in range(40):
        out = fused(x, np.float32(k))
        if k % 10 == 0:
            kept.append((k, out))
    for k, out in kept:
        np.testing.assert_array_equal(out.copy_to_host(), np.arange(1_000_000, dtype=np.float32)
                                      * np.float32(k))


@pytest.mark.gpu
def test_seed_on_cupy_arrays(on_gpu):
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng(12)
    points, mask = rng.random((100_000, 3)).astype(np.float32), rng.random(100_000) < 0.3
    got = mask_points(cupy.asarray(points), cupy.asarray(mask))
    assert isinstance(got, cupy.ndarray) and got.dtype == np.float32  # CuPy in, CuPy out
    np.testing.assert_array_equal(cupy.asnumpy(got), np.where(mask[:, None], np.inf, points))
    distances = pairwise_distance(cupy.asarray(points[:300]), cupy.asarray(points[:200]))
    expected = np.sqrt(((points[:300, None, :].astype(np.float64) - points[None, :200, :]) ** 2)
                       .sum(axis=-1))
    np.testing.assert_allclose(cupy.asnumpy(distances), expected, rtol=1e-5)


@pytest.mark.gpu
def test_torch_tensors_in_torch_tensors_out(on_gpu):
    torch = pytest.importorskip("torch")
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    got = gpunb.fuse(lambda a: np.sqrt(a) * 2)(x)
    assert isinstance(got, torch.Tensor) and got.is_cuda
    np.testing.assert_allclose(got.cpu().numpy(), np.sqrt(np.arange(1000.0)) * 2, rtol=1e-6)


NEGATIVE_NAN = -float("nan")


@gpunb.fuse
def sign_of_nan(x):
    return np.copysign(x, NEGATIVE_NAN)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_negative_nan_constant_keeps_its_sign(target, dtype):
    """The generated source wrote every NaN as math.nan, so copysign(x, -nan) came out positive."""
    check(sign_of_nan, np.ones(5, dtype))


@gpunb.fuse
def _inner_affine(x, y):
    return x * y + 1


@gpunb.fuse
def _outer_calls_fused(x, y):
    return np.sqrt(_inner_affine(x, y)) - np.where(x > 2, _inner_affine(y, y), 0)


def test_a_fused_function_calls_another_fused_function(target):
    """As in cupy.fuse, a fused function called while tracing is traced through (inlined)."""
    x = np.arange(6, dtype=np.float32)
    y = np.linspace(0.5, 3, 6, dtype=np.float32)
    expected = np.sqrt(x * y + 1) - np.where(x > 2, y * y + 1, 0)
    assert_same(_outer_calls_fused(x, y), expected)
    assert len(_outer_calls_fused.kernels(x, y)) == 1  # one kernel, no launch per inner call


def test_a_gpu_function_inside_a_fused_function_is_a_clear_error(target):
    @cuda.jit(device=True)
    def twice(v):
        return v * 2

    @gpunb.fuse
    def uses_device_function(x):
        return twice(x) + 1

    with pytest.raises(TypeError, match="gpunb.fuse: the GPU function 'twice' is not supported") \
            as info:
        uses_device_function(np.ones(3, np.float32))
    assert "plain Python function" in str(info.value)
