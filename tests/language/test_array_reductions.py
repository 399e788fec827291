"""Whole-array reductions in kernels (np.sum(a), a.sum(), mean, var, std, min, max, all, any, the
nan* forms, count_nonzero), compared with numba's own implementations (its CPU JIT: the same
arraymath code numba-cuda uses) on every dtype family, F-ordered and strided arrays, NaNs, and
literal_unroll over arrays of different shapes (the pattern of numba-cuda's
test_array_reductions, BSD-2-Clause, NVIDIA)."""

import numpy as np
import pytest

from gpunb import cuda

FUNCS = ["sum", "prod", "mean", "var", "std", "min", "max", "all", "any", "nanmin", "nanmax",
         "nansum", "nanprod", "nanmean", "count_nonzero"]


def _arrays():
    rng = np.random.default_rng(7)
    floats = rng.uniform(-2, 2, 12)
    with_nan = floats.copy()
    with_nan[[3, 7]] = np.nan
    return {
        "float64": floats,
        "float32": floats.astype(np.float32),
        "nan": with_nan,
        "all_nan": np.full(3, np.nan),
        "int32": rng.integers(-5, 6, 12).astype(np.int32),
        "uint8": rng.integers(0, 9, 12).astype(np.uint8),
        "bool": rng.random(12) < 0.5,
        "2d_F": np.asfortranarray(floats.reshape(3, 4)),
        "2d_strided": floats.reshape(3, 4)[:, ::2],
    }


@cuda.jit
def k_sum(out, a):
    out[0] = np.sum(a)


@cuda.jit
def k_prod(out, a):
    out[0] = np.prod(a)


@cuda.jit
def k_mean(out, a):
    out[0] = np.mean(a)


@cuda.jit
def k_var(out, a):
    out[0] = np.var(a)


@cuda.jit
def k_std(out, a):
    out[0] = np.std(a)


@cuda.jit
def k_min(out, a):
    out[0] = np.min(a)


@cuda.jit
def k_max(out, a):
    out[0] = np.max(a)


@cuda.jit
def k_all(out, a):
    out[0] = np.all(a)


@cuda.jit
def k_any(out, a):
    out[0] = np.any(a)


@cuda.jit
def k_nanmin(out, a):
    out[0] = np.nanmin(a)


@cuda.jit
def k_nanmax(out, a):
    out[0] = np.nanmax(a)


@cuda.jit
def k_nansum(out, a):
    out[0] = np.nansum(a)


@cuda.jit
def k_nanprod(out, a):
    out[0] = np.nanprod(a)


@cuda.jit
def k_nanmean(out, a):
    out[0] = np.nanmean(a)


@cuda.jit
def k_count_nonzero(out, a):
    out[0] = np.count_nonzero(a)


def _kernel(name: str):
    return globals()[f"k_{name}"]


@pytest.fixture(scope="module")
def numba():
    return pytest.importorskip("numba")


@pytest.mark.slow
@pytest.mark.parametrize("name", FUNCS)
def test_each_reduction_like_numba(target, numba, name):
    function = getattr(np, name)
    reference = numba.njit(lambda a: function(a))
    kernel = _kernel(name)
    for label, a in _arrays().items():
        if label == "bool" and name in ("var", "std", "nanmin", "nanmax", "nanmean", "min",
                                       "max", "prod", "nanprod"):
            continue
        want = reference(a)
        out = np.zeros(1, np.asarray(want).dtype)
        kernel[1, 1](out, a)
        got = out[0]
        if isinstance(want, float) and not np.isnan(want) and (label == "2d_F" or
                                                              target == "cuda"):
            # an ulp or two: numba versions sum an F-ordered array in different orders (0.68's
            # njit in memory order, as gpunb; the H200 host's numba in C order), and ptxas
            # contracts var's (x - mean) ** 2 sums into FMAs (5.222222222222224 for ...222)
            assert got == pytest.approx(want, rel=4 * np.finfo(np.float64).eps), (name, got)
            continue
        assert (np.isnan(got) and np.isnan(want)) or got == want, (name, label, got, want)


@cuda.jit
def methods(out, a):
    out[0] = a.sum()
    out[1] = a.mean()
    out[2] = a.max()
    out[3] = a.std()


def test_array_methods(target):
    a = np.arange(1.0, 7.0).reshape(2, 3)
    out = np.zeros(4)
    methods[1, 1](out, a)
    assert out.tolist() == [a.sum(), a.mean(), a.max(), a.std()]


CASES = (np.float64([1.0, 0.0, np.inf, np.nan]), np.float64([[1.0, 1.5], [np.inf, np.nan]]),
         np.int32([[0, 2], [3, 4]]), np.float64([[0.0, -0.0], [1.5, 0.0]])[::-1])


@cuda.jit
def unrolled(out):
    i = 0
    for case in cuda.literal_unroll(CASES):
        out[i, 0] = np.all(case)
        out[i, 1] = np.any(case)
        out[i, 2] = np.count_nonzero(case)
        i += 1


def test_literal_unroll_over_arrays_of_different_shapes(target):
    out = np.zeros((len(CASES), 3))
    unrolled[1, 1](out)
    expected = [[np.all(c), np.any(c), np.count_nonzero(c)] for c in CASES]
    assert out.tolist() == np.asarray(expected, np.float64).tolist()


@cuda.jit(debug=True, opt=False)
def empty_min(out, a):
    out[0] = np.min(a)


def test_min_of_an_empty_array_raises_value_error(target):
    with pytest.raises(ValueError, match="zero-size array"):
        empty_min[1, 1](cuda.to_device(np.zeros(1)), cuda.to_device(np.zeros(0)))


def test_reductions_assemble_for_the_gpu(ptxas):
    for kernel in (k_var, k_nanmax, methods):
        ptxas(kernel.inspect_ptx("void(float64[::1], float64[:, ::1])"), "sm_90")
    ptxas(unrolled.inspect_ptx("void(float64[:, ::1])"), "sm_90")


def _python_builtins_over_arrays(out, a):
    out[0] = sum(a)
    out[1] = max(a)
    out[2] = min(a)
    out[3] = max(a[1:])
    out[4] = sum(a[::2])


@pytest.mark.parametrize("values", [
    np.array([1.5, np.nan, 0.5], np.float32),  # a later NaN is skipped by max()/min()
    np.array([np.nan, 1.5, 0.25]),  # a leading NaN stays
    np.array([3, 1, 2], np.int32), np.array([True, False, True]), np.array([251, 7], np.uint8)],
    ids=["f32-nan-later", "f64-nan-first", "i32", "bool", "u8"])
def test_python_sum_max_min_of_a_1d_array(target, numba, values):
    # "max() needs real numbers, got float64[::1]": numba's builtins iterate the array
    expected, found = np.zeros(5), np.zeros(5)
    numba.njit(_python_builtins_over_arrays)(expected, values)
    cuda.jit(_python_builtins_over_arrays)[1, 1](found, values)
    np.testing.assert_array_equal(found, expected)


def test_python_max_of_an_empty_array_is_numbas_value_error():
    @cuda.jit(debug=True, opt=False, target="cpu")
    def largest(out, a):
        out[0] = max(a)

    with pytest.raises(ValueError, match=r"max\(\) arg is an empty sequence"):
        largest[1, 1](np.zeros(1), np.zeros(0))


def test_python_builtins_over_arrays_assemble(ptxas):
    from gpunb.foundation.types import float32, float64

    ptxas(cuda.compile_ptx(_python_builtins_over_arrays, (float64[::1], float32[::1]))[0])
