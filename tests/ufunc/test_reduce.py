"""cuda.reduce / cuda.Reduce on every available target: sizes around block and grid boundaries
(0 and 1 included), every number dtype, init, res=, size=, stream=, host and device inputs.

Partly adapted from numba-cuda's tests/cudapy/test_reduction.py:
SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
SPDX-License-Identifier: BSD-2-Clause
"""

from __future__ import annotations

import numpy as np
import pytest

from gpunb import CompileError, cuda

sum_reduce = cuda.Reduce(lambda a, b: a + b)


@pytest.mark.parametrize("n", [1, 15, 16, 17, 127, 128, 129, 255, 256, 257, 1023, 1024, 1025,
                               1536, 34567, 1048576 + 1024 + 128])
def test_sum_sizes(target, n):
    A = np.arange(n, dtype=np.float64) + 1
    assert sum_reduce(A) == A.sum()


def test_empty_returns_init(target):
    A = np.arange(0, dtype=np.float64) + 1
    assert sum_reduce(A) == 0.0
    assert sum_reduce(cuda.to_device(A)) == 0.0
    assert sum_reduce(A, init=5) == 5.0


def test_prod_max_and_init(target):
    prod_reduce = cuda.reduce(lambda a, b: a * b)
    A = np.arange(64, dtype=np.float64) + 1
    np.testing.assert_allclose(prod_reduce(A, init=1), A.prod())
    max_reduce = cuda.Reduce(lambda a, b: max(a, b))
    A = np.arange(3717, dtype=np.float64) + 1
    assert max_reduce(A, init=0) == A.max()
    A = np.arange(10, dtype=np.float64) + 1
    assert sum_reduce(A, init=3) == A.sum() + 3


def test_result_on_device_size_and_stream(target):
    A = np.arange(10, dtype=np.float64) + 1
    got = cuda.to_device(np.zeros(1, dtype=np.float64))
    assert sum_reduce(A, res=got) is None
    assert got.copy_to_host()[0] == A.sum()
    assert sum_reduce(A, size=4) == A[:4].sum()
    stream = cuda.stream()
    assert sum_reduce(cuda.to_device(A, stream), stream=stream) == A.sum()


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32,
                                   np.uint64, np.float32, np.float64, np.complex64,
                                   np.complex128])
def test_dtypes(target, dtype):
    A = (np.arange(3000) % 7).astype(dtype)
    got = sum_reduce(A)
    assert got.dtype == dtype
    assert got == A.sum(dtype=dtype)


def test_def_function_and_bool(target):
    def both(a, b):
        return a and b

    all_reduce = cuda.reduce(both)
    flags = np.ones(1000, dtype=np.bool_)
    assert all_reduce(flags, init=True)
    flags[777] = False
    assert not all_reduce(flags, init=True)


def test_min_is_order_free(target):
    min_reduce = cuda.Reduce(lambda a, b: min(a, b))
    A = np.random.permutation(50_000).astype(np.int32) + 7
    assert min_reduce(A, init=1 << 30) == 7


def test_errors(target):
    with pytest.raises(TypeError, match="1-d arrays"):
        sum_reduce(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="outside the array"):
        sum_reduce(np.zeros(3), size=5)
    with pytest.raises(TypeError, match="init="):
        sum_reduce(np.zeros(3, np.int32), init="x")


def test_a_function_that_is_not_binary_is_refused_at_the_users_line():
    # found by hunt-prog: the error came from compiling the generated kernel ("bad call of
    # 'lambda_..': too many positional arguments", at the generated source's line)
    import gpunb

    for functor, takes in ((lambda a: a, "(a)"), (lambda a, b, c: a, "(a, b, c)")):
        with pytest.raises(gpunb.CompileError) as info:
            cuda.reduce(functor)  # <- the line
        assert f"cuda.reduce needs a function of two values, but '<lambda>' takes {takes}" \
            in str(info.value)
        assert info.value.loc.line == info.tb.tb_lineno
        assert "f(running_result, next_element)" in info.value.hint
    assert cuda.reduce(lambda a, b, c=1: a + b * c)(np.arange(4.0)) == 6.0  # defaults are fine


SCALE = 2


@pytest.mark.slow
def test_lambdas_read_globals_and_closures(target):
    offset = 1
    total = cuda.reduce(lambda a, b: a + b * (SCALE - 1) + (offset - 1))  # a + b, associative
    A = np.arange(1000, dtype=np.int64)
    assert total(A, init=7) == A.sum() + 7


def test_lambda_on_a_shared_line_is_found(target):
    first, second = cuda.reduce(lambda a, b: a + b), cuda.reduce(lambda a, b: a * b)
    A = np.arange(1, 6, dtype=np.float64)
    assert first(A) == 15.0 and second(A, init=1) == 120.0


def test_an_error_in_a_lambda_points_at_its_cell_line_and_column(target):
    # code run from a string (a notebook cell, exec): the error was reported in gpunb's own
    # rewrite of the lambda as a def ('<gpunb lambda ...>', line 5, `return a + b.foo`)
    cell = "x = 1\n\nr = cuda.reduce(lambda a, b: a + b.foo)\n"
    namespace = {"cuda": cuda}
    exec(compile(cell, "<cell 7>", "exec"), namespace)  # noqa: S102 - the cell's own text
    with pytest.raises(CompileError) as info:
        namespace["r"](np.arange(4.0))
    loc = info.value.loc
    assert (loc.filename, loc.line, loc.col) == ("<cell 7>", 3, cell.splitlines()[2].index("b.foo"))
    assert "r = cuda.reduce(lambda a, b: a + b.foo)" in str(info.value)
