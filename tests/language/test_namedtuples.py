# Parts adapted from numba-cuda's numba_cuda/numba/cuda/tests/cudapy/test_array_args.py
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
"""namedtuple arguments: fields read by name in kernels; the names are part of the type;
namedtuples built in kernels and device functions (numba types calls of the class)."""

from __future__ import annotations

from collections import namedtuple
from typing import NamedTuple

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import CompileError
from gpunb.runtime.typeof import typeof

Point = namedtuple("Point", ("x", "y", "z"))
Reversed = namedtuple("Reversed", ("z", "y", "x"))


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target("auto")


def test_fields_by_name():
    @cuda.jit
    def f(r, p):
        r[0] = p.x
        r[1] = p.y
        r[2] = p.z
        r[3] = p[0]

    r = np.zeros(4)
    f[1, 1](r, Point(1, 2, 3.5))
    np.testing.assert_array_equal(r, [1, 2, 3.5, 1])
    f[1, 1](r, Reversed(1, 2, 3.5))  # same item types, other names: another specialisation
    np.testing.assert_array_equal(r, [3.5, 2, 1, 1])
    assert len(f.specializations) == 2


def test_names_are_part_of_the_type():
    assert typeof(Point(1, 2, 3)) != typeof((1, 2, 3))
    assert str(typeof(Point(1, 2, 3.0))) == "NamedTuple(x: int64, y: int64, z: float64)"
    assert typeof(Point(1, 2, 3)) != typeof(Reversed(1, 2, 3))


def test_unknown_field_is_a_compile_error():
    @cuda.jit
    def f(r, p):
        r[0] = p.w

    with pytest.raises(CompileError, match="has no attribute 'w'"):
        f[1, 1](np.zeros(1), Point(1, 2, 3))


class Config(NamedTuple):
    scale: float
    count: int = 3
    flag: bool = True


Pair = namedtuple("Pair", "first second", defaults=[7])


@cuda.jit(device=True)
def _config_from(a):
    return Config(a[0])


def test_built_in_kernels_and_device_functions():
    # numba's njit and numba-cuda build both kinds; gpunb used to say "Untyped global name"
    @cuda.jit
    def f(out, a):
        made = _config_from(a)
        named = Config(count=5, scale=2.0, flag=False)
        defaulted = Pair(1)
        holding = Pair(a, 2)
        out[0] = made.scale * made.count + made.flag
        out[1] = named.count + named.flag + named.scale
        out[2] = defaulted.first + defaulted.second
        out[3] = holding.first[1] + holding.second
        out[4] = len(holding)
        first, second = defaulted
        out[5] = first * 10 + second

    out = np.zeros(6)
    f[1, 1](out, np.array([1.5, 10.0]))
    np.testing.assert_array_equal(out, [1.5 * 3 + 1, 7, 8, 12, 2, 17])


def test_a_built_namedtuple_has_the_argument_type():
    @cuda.jit
    def f(out, p):
        q = Point(p.x + 1, p.y, p.z)
        out[0] = q.x + q.z

    out = np.zeros(1)
    f[1, 1](out, Point(1.0, 2.0, 3.0))
    assert out[0] == 5.0


@pytest.mark.parametrize("call, match", [("Config(1.0, 2, 3, 4)", "too many positional"),
                                         ("Config(count=1)", "missing a required argument"),
                                         ("Config(1.0, nope=2)", "unexpected keyword")])
def test_a_bad_construction_is_a_located_error(call, match):
    namespace = {"cuda": cuda, "Config": Config}
    exec(f"@cuda.jit\ndef f(out):\n    c = {call}\n", namespace)  # noqa: S102
    with pytest.raises(CompileError, match=match) as info:
        namespace["f"][1, 1](np.zeros(1))
    assert "its parameters are (scale, count=3, flag=True)" in str(info.value)
    assert info.value.loc is not None and info.value.loc.line == 3
