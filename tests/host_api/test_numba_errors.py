# Parts adapted from numba-cuda's numba_cuda/numba/cuda/tests/cudapy/test_errors.py,
# test_dispatcher.py, test_forall.py and test_device_func.py
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
"""The errors numba raises for misused kernels, raised by gpunb as typed gpunb errors that are
also numba's builtin exception classes (code catching TypeError/ValueError keeps working); and
numba's choice among explicit signatures."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import LaunchError
from gpunb.foundation.types import int32


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target("auto")


def noop(x):
    pass


def add_kernel(r, x, y):
    r[0] = x + y


def test_too_many_dims():
    kernfunc = cuda.jit(noop)
    with pytest.raises(ValueError, match=r"griddim must be a sequence of 1, 2 or 3 integers, "
                                         r"got \[1, 2, 3, 4\]"):
        kernfunc[(1, 2, 3, 4), (5, 6)]
    with pytest.raises(ValueError, match=r"blockdim must be a sequence of 1, 2 or 3 integers"):
        kernfunc[(1, 2), (3, 4, 5, 6)]


def test_non_integral_dims():
    kernfunc = cuda.jit(noop)
    with pytest.raises(TypeError, match=r"griddim must be a sequence of integers, got \[2.0\]"):
        kernfunc[2.0, 3]
    with pytest.raises(TypeError, match=r"blockdim must be a sequence of integers, got \[3.0\]"):
        kernfunc[2, 3.0]


@pytest.mark.parametrize("make", [lambda: cuda.jit("void(int32)")(noop), lambda: cuda.jit(noop)])
def test_unconfigured(make):
    with pytest.raises(ValueError, match="launch configuration was not specified") as info:
        make()(0)
    assert isinstance(info.value, LaunchError)


def test_forall_negative_work():
    with pytest.raises(ValueError, match="Can't create ForAll with negative task count"):
        cuda.jit(noop).forall(-1)


@pytest.mark.parametrize("config, found", [((1, 32, "s"), "str 's'"), ((1, 32, 1.5), "float"),
                                           ((1, 32, 0, "x"), "str 'x'"),
                                           ((1, 32, 0, 2.5), "float 2.5"),
                                           ((1, 32, 0, True), "bool")])
def test_bad_stream_or_shared_bytes_is_a_located_config_error(config, found):
    # numba refuses a stream that is not one with TypeError; gpunb's CPU target used to ignore
    # it, and a str byte count reached the backend's arithmetic as a raw TypeError
    kernfunc = cuda.jit(noop)
    with pytest.raises(TypeError, match=found) as info:
        kernfunc[config](np.zeros(1))
    assert isinstance(info.value, gpunb.LaunchError)
    assert info.value.loc is not None and info.value.loc.filename == __file__
    assert info.value.hint


def test_forall_non_integer_work():
    with pytest.raises(TypeError, match=r"task count must be an integer, got float") as info:
        cuda.jit(noop).forall(2.5)
    assert info.value.loc is not None and info.value.loc.filename == __file__
    with pytest.raises(TypeError, match="non-negative number of bytes"):
        cuda.jit(noop).forall(4, sharedmem="64")


def test_device_function_is_not_a_kernel():
    @cuda.jit(device=True)
    def f():
        pass

    with pytest.raises(RuntimeError, match="Cannot compile a device function as a kernel"):
        f[1, 1]()

    @cuda.jit(device=True)
    def foo(x, y):
        return x + y

    with pytest.raises(RuntimeError, match="Cannot inspect SASS of a device function"):
        foo.inspect_sass((int32, int32))


def test_explicit_signatures_same_type_class():
    f = cuda.jit(["(float64[::1], float32, float32)", "(float64[::1], float64, float64)"])(
        add_kernel)
    r = np.zeros(1)
    f[1, 1](r, np.float32(1), np.float32(2**-25))
    assert r[0] == 1.0
    f[1, 1](r, 1, 2**-25)  # int64, float64: (float64, float64) converts safely, numba picks it
    assert r[0] == 1.0000000298023224


def test_explicit_signatures_no_match_and_ambiguity():
    f = cuda.jit(["(int64[::1], int64, int64)", "(float64[::1], float64, float64)"])(add_kernel)
    with pytest.raises(TypeError, match="No matching definition"):
        f[1, 1](np.zeros(1, np.complex128), 1j, 1j)
    g = cuda.jit(["(float64[::1], float32, float64)", "(float64[::1], float64, float32)",
                  "(float64[::1], int64, int64)"])(add_kernel)
    with pytest.raises(TypeError, match="Ambiguous overloading") as info:
        g[1, 1](np.zeros(1), 1.0, 2.0)
    assert "int64" not in str(info.value).split("\n", 1)[1]  # only the two best are named


def test_debug_with_opt_warns_as_numba():
    import warnings

    from gpunb.foundation.errors import InvalidConfigWarning

    with pytest.warns(InvalidConfigWarning, match="not supported by CUDA"):
        cuda.jit(debug=True)
    with pytest.warns(InvalidConfigWarning, match="not supported by CUDA"):
        cuda.jit(debug=True, opt=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cuda.jit(debug=True, opt=False)
        cuda.jit()
    assert cuda.InvalidConfigWarning is InvalidConfigWarning
    assert issubclass(cuda.PerformanceWarning, UserWarning)


def test_a_signature_of_the_wrong_arity_names_both_sides():
    # said "'add_kernel' takes 3 arguments but 2 were given" with no hint
    with pytest.raises(gpunb.CompileError) as info:
        cuda.jit("void(float64[:], float64)")(add_kernel)
    text = str(info.value)
    assert "takes 3 arguments (r, x, y) but 2 were given (float64[:], float64)" in text
    assert "one type per parameter" in text
    assert info.value.loc is not None
