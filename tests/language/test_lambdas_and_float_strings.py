"""Lambdas as GPU functions (numba compiles them; their source is their line) and float("nan") /
float("inf") constants in kernels."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import CompileError
from gpunb.foundation.types import int32


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target("auto")


def test_lambda_device_function_runs():
    square = cuda.jit(device=True)(lambda v: v * v)

    @cuda.jit
    def k(out):
        out[0] = square(3.0)

    out = np.zeros(1)
    k[1, 1](out)
    assert out[0] == 9.0


def test_lambda_picked_among_several_on_one_line():
    plus_one, plus_two = (lambda a: a + 1), (lambda a: a + 2)
    ptx, resty = cuda.compile(plus_two, int32(int32))
    assert "add.s32" in ptx and ", 2;" in ptx and resty == int32
    ptx, _ = cuda.compile(plus_one, int32(int32))
    assert ", 1;" in ptx


def test_lambda_compile_ptx_and_abi_name():
    assert ".target sm_90a" in cuda.compile_ptx(lambda: None, (), cc=(9, 0, "a"))[0]
    ptx, _ = cuda.compile(lambda x: x, int32(int32), abi_info={"abi_name": "lambda_fn"})
    assert "lambda_fn(" in ptx
    ptx, _ = cuda.compile(lambda x: x, int32(int32))
    assert ".func  (.param .b32 func_retval0) _lambda_(" in ptx  # a PTX-safe name


def test_float_of_string_constants():
    @cuda.jit
    def k(out):
        out[0] = float("nan")
        out[1] = float("inf")
        out[2] = float("-inf")
        out[3] = float(" 1.5 ")

    out = np.zeros(4)
    k[1, 1](out)
    assert math.isnan(out[0]) and out[1] == math.inf and out[2] == -math.inf and out[3] == 1.5


def test_float_of_a_bad_string_is_a_compile_error():
    @cuda.jit
    def k(out):
        out[0] = float("one")

    with pytest.raises(CompileError, match="could not convert string to float: 'one'"):
        k[1, 1](np.zeros(1))
