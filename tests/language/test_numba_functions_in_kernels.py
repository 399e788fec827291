"""Programs written for numba-cuda, unchanged but for the import: numba's own @njit/@jit
functions called from kernels (compiled as device functions, as numba-cuda does), numba's type
objects in signatures and dtypes, `a, b, c = cuda.blockIdx, cuda.blockDim, cuda.threadIdx`.
numba's CPU JIT is the oracle: the same function called on the host gives the expected value."""

from __future__ import annotations

import math

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from numba import f4, f8, i4, njit, types  # noqa: E402 - after the numba check

import gpunb  # noqa: E402
from gpunb import cuda  # noqa: E402


@njit
def squared(x):
    return x * x


@numba.jit(nopython=True)
def hypot_plus_one(x, y):
    return math.sqrt(squared(x) + squared(y)) + 1.0


@numba.jit
def clipped(x, low=0.0, high=1.0):
    return min(max(x, low), high)


@cuda.jit
def apply_numba_functions(out, x, y):
    i = cuda.grid(1)
    if i < x.size:
        out[i, 0] = hypot_plus_one(x[i], y[i])
        out[i, 1] = clipped(x[i] / 10.0)
        out[i, 2] = clipped(x[i], high=3.0)


def test_numba_jit_functions_are_device_functions(target):
    x = np.linspace(-2.0, 25.0, 33)
    y = np.linspace(3.0, -4.0, 33)
    out = np.zeros((33, 3))
    apply_numba_functions[2, 32](out, x, y)
    expected = np.array([[hypot_plus_one(a, b), clipped(a / 10.0), clipped(a, high=3.0)]
                         for a, b in zip(x, y, strict=True)])
    np.testing.assert_allclose(out, expected, rtol=1e-15)


def test_numba_function_compiles_on_call_not_on_the_host():
    @njit
    def bad(x):
        return x.no_such_attribute

    @cuda.jit
    def kernel(out):
        out[0] = bad(1.0)

    with pytest.raises(gpunb.CompileError, match="no_such_attribute|no attribute"):
        kernel[1, 1](np.zeros(1))


@cuda.jit((f8[:], f8[:], i4))
def scale_numba_signature(out, x, n):
    a, b, c = cuda.blockIdx, cuda.blockDim, cuda.threadIdx
    i = a.x * b.x + c.x
    if i < n:
        out[i] = x[i] * 2


@cuda.jit(types.void(types.float32[::1], types.UniTuple(types.int32, 2)))
def store_tuple_sum(out, pair):
    out[0] = pair[0] + pair[1]


@cuda.jit(f8(f8, f4), device=True)
def multiply(a, b):
    return a * b


@cuda.jit
def call_declared(out, a, b):
    out[0] = multiply(a, b)


def test_numba_type_objects_in_signatures(target):
    x = np.arange(10.0)
    out = np.zeros(10)
    scale_numba_signature[2, 8](out, x, 10)
    np.testing.assert_array_equal(out, x * 2)
    assert str(scale_numba_signature.signatures[0][0]) == "float64[:]"
    o32 = np.zeros(1, np.float32)
    store_tuple_sum[1, 1](o32, (3, 4))
    assert o32[0] == 7
    o = np.zeros(1)
    call_declared[1, 1](o, 1.5, np.float32(2.0))
    assert o[0] == 3.0


def test_short_type_names_from_gpunb():
    from gpunb import b1, c16, f8, i4, u1

    assert (str(f8), str(i4), str(u1), str(b1), str(c16)) == \
        ("float64", "int32", "uint8", "bool", "complex128")
    assert str(gpunb.f4[:, ::1]) == "float32[:, ::1]"
    with pytest.raises(AttributeError):
        gpunb.no_such_name  # noqa: B018


@cuda.jit
def local_array_of_numba_dtype(out):
    tmp = cuda.local.array(4, dtype=numba.float32)
    for k in range(4):
        tmp[k] = k * 0.5
    out[0] = tmp[3]


def test_numba_dtype_for_local_arrays(target):
    out = np.zeros(1, np.float32)
    local_array_of_numba_dtype[1, 1](out)
    assert out[0] == np.float32(1.5)
    assert "float32" in local_array_of_numba_dtype.inspect_types()


@cuda.jit
def swap_and_ids(out, a, b):
    a, b = b, a  # items evaluated before any is stored
    bi, bd, ti = cuda.blockIdx, cuda.blockDim, cuda.threadIdx
    out[0] = a
    out[1] = b
    out[2] = bi.x * bd.x + ti.x


def test_unpacking_intrinsic_objects_and_swaps(target):
    out = np.zeros(3)
    swap_and_ids[1, 1](out, 1.0, 2.0)
    np.testing.assert_array_equal(out, [2.0, 1.0, 0.0])


def test_numba_cuda_monte_carlo_doc_example(target):
    """numba-cuda's Monte Carlo documentation example: the integrand is a @numba.jit function
    defined after the kernel that calls it (read from the enclosing scope at compile time)."""
    from gpunb.cuda.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float32

    nsamps = 20000

    @cuda.jit
    def mc_integrator_kernel(out, rng_states, lower_lim, upper_lim):
        size = len(out)
        gid = cuda.grid(1)
        if gid < size:
            samp = xoroshiro128p_uniform_float32(rng_states, gid)
            samp = samp * (upper_lim - lower_lim) + lower_lim
            y = func(samp)
            out[gid] = y

    @cuda.reduce
    def sum_reduce(a, b):
        return a + b

    def mc_integrate(lower_lim, upper_lim, nsamps):
        out = cuda.to_device(np.zeros(nsamps, dtype="float32"))
        rng_states = create_xoroshiro128p_states(nsamps, seed=42)
        mc_integrator_kernel.forall(nsamps)(out, rng_states, lower_lim, upper_lim)
        factor = (upper_lim - lower_lim) / (nsamps - 1)
        return sum_reduce(out) * factor

    @numba.jit
    def func(x):
        return 1.0 / x

    np.testing.assert_allclose(mc_integrate(1, 2, nsamps), math.log(2), atol=0.01)
    np.testing.assert_allclose(mc_integrate(2, 3, nsamps), math.log(1.5), atol=0.01)


@numba.jit("f8(f8, f8)")
def add_with_signature(a, b):
    return a + b


@cuda.jit
def call_signature_function(out):
    out[0] = add_with_signature(1.0, 2.0)


def test_numba_function_with_explicit_signature_is_cpu_only_as_in_numba_cuda():
    with pytest.raises(gpunb.CompileError, match="Untyped global name 'add_with_signature': "
                       "using cpu function on device"):
        call_signature_function[1, 1](np.zeros(1))
