"""Device functions: @cuda.jit(device=True) and plain @cuda.jit functions called from kernels,
default and keyword arguments including omitted defaults (seed 001), nested calls, tuple
returns, declared signatures, functions defined after the kernel, arrays passed through."""

import numpy as np
import pytest

import gpunb
from gpunb import cuda

# ---- seed 001: an omitted optional argument in a GPU call must compile ------------------------


@cuda.jit(device=True)
def some_function(array, delta=1):
    array[0] += delta


@cuda.jit
def some_kernel(array):
    some_function(array)


@cuda.jit
def some_kernel_explicit(array):
    some_function(array, 5)
    some_function(array, delta=10)
    some_function(delta=100, array=array)


# ---- defaults and keywords --------------------------------------------------------------------

@cuda.jit(device=True)
def affine(x, scale=2.0, shift=1, clamp=False, limit=100.0):
    y = x * scale + shift
    if clamp and y > limit:
        y = limit
    return y


@cuda.jit
def call_forms(out, x):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        out[i, 0] = affine(v)
        out[i, 1] = affine(v, 3.0)
        out[i, 2] = affine(v, shift=-4)
        out[i, 3] = affine(v, 0.5, 2)
        out[i, 4] = affine(x=v, clamp=True, limit=5.0)
        out[i, 5] = affine(v, limit=1.0, clamp=True, scale=10.0)
        out[i, 6] = affine(v, 1.0, 0, True, 3.0)


def affine_ref(x, scale=2.0, shift=1, clamp=False, limit=100.0):
    y = x * scale + shift
    if clamp and y > limit:
        y = limit
    return y


# a plain @cuda.jit function becomes a device function when a kernel calls it
@cuda.jit
def plain_helper(a, b=3):
    return a * b + 1


@cuda.jit(device=True)
def nested(a, b=2):
    return plain_helper(a, b) + plain_helper(a)


@cuda.jit(device=True)
def stats(x, n):
    lo = x[0]
    hi = x[0]
    s = 0.0
    for k in range(n):
        v = x[k]
        lo = min(lo, v)
        hi = max(hi, v)
        s += v
    return lo, hi, s / n


@cuda.jit(device=True)
def fill_row(row, value, start=0):
    for k in range(start, row.size):
        row[k] = value + k


@cuda.jit
def uses_nested(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i, 0] = nested(i)
        out[i, 1] = nested(i, b=5)
        lo, hi, mean = stats(x, x.size)
        out[i, 2] = lo
        out[i, 3] = hi
        out[i, 4] = mean
        r = stats(x, 2)
        out[i, 5] = r[2]
        fill_row(out[i, 6:8], 1000.0)  # a view passed to a device function that writes
        fill_row(out[i, 8:11], -5.0, start=1)
        out[i, 11] = later_defined(i)


@cuda.jit("float64(float64, int32)", device=True)
def declared(x, n):
    return x * n


@cuda.jit
def uses_declared(out, a):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = declared(a[i], 3)  # int32 argument converted to the declared float64


@cuda.jit(device=True)
def later_defined(i):
    # resolved through globals at compile time: may be defined after the kernel that calls it
    return i * 1000


@cuda.jit(device=True)
def default_types(x, i=7, f=0.5, b=True, c=-3):
    return x + i + f + (1 if b else 0) + c


@cuda.jit
def call_default_types(out, x):
    i = cuda.grid(1)
    if i < x.size:
        out[i, 0] = default_types(x[i])
        out[i, 1] = default_types(x[i], b=False)
        out[i, 2] = default_types(x[i], 0, 0.0, False, 0)


# ---- tests ----------------------------------------------------------------------------------

def test_seed_001_omitted_default(target):
    a = np.zeros(1, np.int64)
    some_kernel[1, 1](a)
    assert a[0] == 1
    some_kernel_explicit[1, 1](a)
    assert a[0] == 116


def test_seed_001_float_array(target):
    a = np.zeros(1, np.float32)
    some_kernel[1, 1](a)
    assert a[0] == 1.0


def test_defaults_and_keywords(target):
    x = np.array([-2.0, 0.0, 1.5, 4.0], np.float32)
    out = np.zeros((4, 7), np.float32)
    call_forms[1, 4](out, x)
    for k, v in enumerate(x.tolist()):
        expected = [affine_ref(v), affine_ref(v, 3.0), affine_ref(v, shift=-4),
                    affine_ref(v, 0.5, 2), affine_ref(x=v, clamp=True, limit=5.0),
                    affine_ref(v, limit=1.0, clamp=True, scale=10.0),
                    affine_ref(v, 1.0, 0, True, 3.0)]
        np.testing.assert_allclose(out[k], expected, rtol=1e-6)


def test_nested_calls_views_tuples(target):
    x = np.array([3.0, -1.0, 4.0, 1.0], np.float64)
    out = np.zeros((3, 12), np.float64)
    uses_nested[1, 4](out, x)
    for i in range(3):
        assert out[i, 0] == (i * 2 + 1) + (i * 3 + 1)
        assert out[i, 1] == (i * 5 + 1) + (i * 3 + 1)
        assert out[i, 2:6].tolist() == [-1.0, 4.0, 7.0 / 4, 1.0]
        assert out[i, 6:11].tolist() == [1000.0, 1001.0, 0.0, -4.0, -3.0]
        assert out[i, 11] == i * 1000


def test_declared_signature_converts_arguments(target):
    a = np.array([1.5, -2.0], np.float64)
    out = np.zeros(2, np.float64)
    uses_declared[1, 2](out, a)
    assert out.tolist() == [4.5, -6.0]


def test_default_values_of_every_kind(target):
    x = np.array([1.0, 10.0], np.float64)
    out = np.zeros((2, 3), np.float64)
    call_default_types[1, 2](out, x)
    for k, v in enumerate(x.tolist()):
        assert out[k].tolist() == [v + 7 + 0.5 + 1 - 3, v + 7 + 0.5 - 3, v]


def test_device_function_cannot_be_launched():
    with pytest.raises(gpunb.LaunchError, match="device function"):
        affine[1, 1]


def test_gpu_function_cannot_be_called_from_python():
    with pytest.raises(gpunb.LaunchError, match=r"plain_helper\[grid, block\]"):
        plain_helper(1, 2)


PTX_CASES = [
    (some_kernel, "void(int64[::1])"),
    (some_kernel_explicit, "void(int64[::1])"),
    (call_forms, "void(float32[:, ::1], float32[::1])"),
    (uses_nested, "void(float64[:, ::1], float64[::1])"),
    (uses_declared, "void(float64[::1], float64[::1])"),
    (call_default_types, "void(float64[:, ::1], float64[::1])"),
]


@pytest.mark.parametrize("kernel,sig", PTX_CASES, ids=[k.__name__ for k, _ in PTX_CASES])
def test_ptx(check_ptx, kernel, sig):
    check_ptx(kernel, sig)


def test_ptx_device_functions(check_ptx):
    check_ptx(some_function, "void(int64[::1], int64)", device=True)
    check_ptx(affine, "(float64, float64, int64, boolean, float64)", device=True)


# ---- None defaults and `is None`, resolved at compile time as numba prunes the branch ----------


@cuda.jit(device=True)
def optional_offset(x, offset=None):
    if offset is None:
        return x
    return x + offset


@cuda.jit(device=True)
def optional_scale(x, scale=None, bias=None):
    y = x if scale is None else x * scale
    if bias is not None:
        y += bias
    if not (bias is None):  # noqa: E714 - the `not` form is what this tests
        y += 100.0
    if scale:  # None is falsy
        y += 1000.0
    return y


@cuda.jit(device=True)
def forward_none(x, extra=None):
    given = extra is not None
    return optional_offset(x, extra) + given


@cuda.jit
def call_optional(out):
    out[0] = optional_offset(1.0)
    out[1] = optional_offset(1.0, 2.0)
    out[2] = optional_offset(1.0, None)
    out[3] = optional_offset(1.0, offset=5)
    out[4] = optional_scale(2.0)
    out[5] = optional_scale(2.0, 3.0)
    out[6] = optional_scale(2.0, bias=0.5)
    out[7] = optional_scale(2.0, None, 0.25)
    out[8] = forward_none(4.0)
    out[9] = forward_none(4.0, 0.5)


def test_none_defaults_and_is_none(target):
    """As Python runs the same functions (the branch on None is decided at compile time)."""
    out = np.zeros(10)
    call_optional[1, 1](out)
    py = [f.py_func for f in (optional_offset, optional_scale)]
    expected = [py[0](1.0), py[0](1.0, 2.0), py[0](1.0, None), py[0](1.0, offset=5),
                py[1](2.0), py[1](2.0, 3.0), py[1](2.0, bias=0.5), py[1](2.0, None, 0.25),
                py[0](4.0) + 0, py[0](4.0, 0.5) + 1]
    assert out.tolist() == expected


@cuda.jit
def is_with_values(out, a):
    out[0] = a[0] is a[1]


def test_is_between_values_is_a_clear_error():
    gpunb.set_target("cpu")
    try:
        with pytest.raises(gpunb.CompileError, match="only tests for None"):
            is_with_values[1, 1](np.zeros(1), np.zeros(2))
    finally:
        gpunb.set_target(None)


def test_none_defaults_ptx(check_ptx):
    check_ptx(call_optional, "void(float64[::1])")


# numba types a device function with the literal types of constants passed to it, so a branch on
# a literal flag is pruned before typing (upstream test_atomics' `if neg_idx:` guards code that
# only types for some argument types)
@cuda.jit(device=True)
def index_pair(ary, flag):
    pair = (cuda.threadIdx.x, np.uint64(cuda.threadIdx.y))
    if flag:
        pair = (pair[0] % ary.shape[0], pair[1] % ary.shape[1])  # uint64 % int64 is float64
    ary[pair] += 1


@cuda.jit
def literal_flag(ary):
    index_pair(ary, False)


@cuda.jit
def runtime_flag(ary, flag):
    index_pair(ary, flag)


def test_literal_argument_prunes_a_branch_that_would_not_type(target):
    ary = np.zeros((2, 3), np.int32)
    literal_flag[1, (2, 3)](ary)
    assert (ary == 1).all()


def test_runtime_argument_still_types_both_branches():
    with pytest.raises(gpunb.CompileError, match="must be an integer"):
        runtime_flag[1, (2, 3)](np.zeros((2, 3), np.int32), False)
