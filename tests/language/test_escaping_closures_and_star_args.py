"""Inner functions passed to GPU functions as values (numba's "escaping" closures: a function
of its own, its captured variables bound to the constants they hold) and *args in device
functions and calls (numba's star-args of tuples). Adapted from numba-cuda's
test_make_function_to_jit_function.py; the Python functions themselves are the oracle."""

from __future__ import annotations

import cmath
import collections
import math

import numpy as np
import pytest

import gpunb
from gpunb import cuda

_global = 123


@cuda.jit
def consumer(func, *args):
    return func(*args)


@cuda.jit
def consumer2arg(func1, func2):
    return func2(func1)


def _run(py_impl, *args):
    """py_impl on the GPU (one thread, an int64 result), with the same arguments."""
    jitted = cuda.jit(py_impl)
    out = np.zeros(1, np.int64)
    if args:
        @cuda.jit
        def kernel(out, x):
            out[0] = jitted(x)
    else:
        @cuda.jit
        def kernel(out):
            out[0] = jitted()
    kernel[1, 1](out, *args)
    return out[0]


def _factories():
    def escape(consumer_func):
        def impl():
            def inner():
                return 10
            return consumer_func(inner)
        return impl

    def nested(consumer_func):
        def impl():
            def inner():
                return 10

            def innerinner(x):
                return x()
            return consumer_func(inner, innerinner)
        return impl

    def close_over_consts(consumer_func):
        def impl(x):
            y = 10

            def callinner(z):
                return y + z + _global
            return consumer_func(callinner, x)
        return impl

    def with_defaults(consumer_func):
        def impl():
            t = 12

            def inner(a, b, c, d1=123, d2=456):
                return d1 + d2 + 4 + t + a + b + c
            return consumer_func(inner, 1, 2, 3, 73) + consumer_func(inner, 1, 2, 3) + \
                inner(1, 2, 4)
        return impl

    def lambda_value(consumer_func):
        def impl(x):
            k = 3
            scale = lambda v: v * k  # noqa: E731
            return consumer_func(scale, x)
        return impl

    return [(escape, False), (nested, False), (close_over_consts, True), (with_defaults, False),
            (lambda_value, True)]


@pytest.mark.parametrize("factory, takes_arg", _factories(),
                         ids=lambda v: getattr(v, "__name__", ""))
def test_escaping_closures_compute_as_python(target, factory, takes_arg):
    two_args = factory.__name__ == "nested"
    gpu_consumer = consumer2arg if two_args else consumer
    expected = factory(gpu_consumer.py_func)(5) if takes_arg else \
        factory(gpu_consumer.py_func)()
    got = _run(factory(gpu_consumer), 5) if takes_arg else _run(factory(gpu_consumer))
    assert got == expected


def test_a_non_constant_capture_cannot_escape():
    def impl(x):
        z = x * 2

        def inner(v):
            return v + z
        return consumer(inner, x)

    with pytest.raises(gpunb.CompileError,
                       match="Cannot capture the non-constant value associated with variable "
                             "'z' in a function that may escape"):
        _run(impl, 3)


def test_a_capture_defined_twice_cannot_escape():
    def impl(c):
        if c:
            x = 3

            def inner(y):
                return y + x
            r = consumer(inner, 1)
        else:
            x = 6

            def inner(y):
                return y + x
            r = consumer(inner, 2)
        return r

    with pytest.raises(gpunb.CompileError, match="Cannot capture a constant value for variable "
                                                 "'x' as there are multiple definitions"):
        _run(impl, 1)


@cuda.jit(device=True)
def count_and_sum(*args):
    total = 0
    for v in args:
        total += v
    return len(args) * 1000 + total


@cuda.jit(device=True)
def count(*args):
    return len(args)


@cuda.jit(device=True)
def add3(a, b, c):
    return a + b + c


@cuda.jit
def star_args_kernel(out, x):
    t = (1, 2, 4)
    out[0] = add3(*t)
    out[1] = count()
    out[2] = count_and_sum(x, 5)
    out[3] = consumer(add3, x, *t[:2])


def test_star_args(target):
    out = np.zeros(4, np.int64)
    star_args_kernel[1, 1](out, 7)
    assert out.tolist() == [7, 0, 2012, 10]


def test_kernels_take_no_star_args():
    @cuda.jit
    def kernel(out, *rest):
        out[0] = 1

    with pytest.raises(gpunb.GpunbError, match="no \\*args|args"):
        kernel[1, 1](np.zeros(1), 1)


@cuda.jit(device=True)
def _counted_pair(counter):
    cuda.atomic.add(counter, 0, 1)
    return (3, 4)


_Pair = collections.namedtuple("_Pair", "x y")


@cuda.jit
def star_args_evaluated_once(out, counter):
    out[0] = add3(*_counted_pair(counter), 5)  # a GPU function
    out[1] = max(*_counted_pair(counter))  # a builtin
    p = _Pair(*_counted_pair(counter))  # a namedtuple class
    out[2] = p.x * 10 + p.y


def test_a_starred_call_is_evaluated_once(target):
    """numba evaluates `f(*g())` once: g's side effects happen once, whatever f is."""
    out = np.zeros(3, np.int64)
    counter = np.zeros(1, np.int64)
    star_args_evaluated_once[1, 1](out, counter)
    assert out.tolist() == [12, 4, 34] and counter[0] == 3


@cuda.jit
def star_args_into_builtins(out, z, t):
    w = complex(*cmath.polar(z[0]))  # numba-cuda's test_complex does this
    out[0] = w.real
    out[1] = w.imag
    out[2] = math.hypot(*t)
    out[3] = min(*t, 2.5)
    out[4] = float(*t[:1])


def test_star_args_into_builtins(target):
    out = np.zeros(5)
    z = np.array([3 - 4j])
    star_args_into_builtins[1, 1](out, z, (3.0, 4.0))
    r, phi = cmath.polar(z[0])
    np.testing.assert_allclose(out, [r, phi, 5.0, 2.5, 3.0], rtol=1e-12)


def test_star_args_of_a_non_tuple_is_a_compile_error():
    @cuda.jit
    def kernel(out, a):
        out[0] = max(*a)

    with pytest.raises(gpunb.CompileError, match=r"\*args needs a tuple in GPU code, got "
                                                 r"float64\[::1\]") as info:
        kernel[1, 1](np.zeros(1), np.zeros(3))
    assert "^" in str(info.value)
