# Parts adapted from numba-cuda's numba_cuda/numba/cuda/tests/cudapy/test_array_args.py
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
"""namedtuple arguments: fields read by name in kernels; the names are part of the type."""

from __future__ import annotations

from collections import namedtuple

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
