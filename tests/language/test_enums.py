"""Enum and IntEnum members in kernels, as numba types them: constants (Color.red, Color["red"]),
kernel arguments, values of conditional expressions and device-function results; ==, != and
`is` compare members of one class, another class is never equal; IntEnum members compute as
int64. Python itself is the oracle."""

from __future__ import annotations

import enum

import numpy as np
import pytest

import gpunb
from gpunb import cuda, int16


class Color(enum.Enum):
    red = 1
    green = 2
    blue = 3


class Planet(enum.Enum):
    EARTH = (5.976e24, 6.37814e6)
    MARS = (6.421e23, 3.3972e6)


class Shape(enum.IntEnum):
    circle = 2
    square = 500


class Code(enum.IntEnum):
    two = 2
    not_found = 404


def compare(a, b, out):
    out[0] = a == b
    out[1] = a != b
    out[2] = a is b
    out[3] = a is not b


compare_gpu = cuda.jit(compare)


@pytest.mark.parametrize("a, b", [(Color.red, Color.red), (Color.red, Color.blue),
                                  (Planet.EARTH, Planet.EARTH), (Planet.EARTH, Planet.MARS),
                                  (Shape.circle, Code.two), (Shape.circle, Shape.circle),
                                  (Color.green, Planet.MARS)])
def test_comparisons_as_python(target, a, b):
    got = np.zeros(4, np.bool_)
    expected = got.copy()
    compare_gpu[1, 1](a, b, got)
    compare(a, b, expected)
    assert got.tolist() == expected.tolist()


@cuda.jit(device=True)
def pick(flag):
    return Color.red if flag else Color["green"]


@cuda.jit
def constants_and_results(out, flag, x):
    out[0] = pick(flag) == Color.red
    out[1] = pick(not flag) is Color.green
    out[2] = x - Code.not_found if x > Shape.square else x + int16(Shape.circle)


def test_constants_device_results_and_int_enum_arithmetic(target):
    out = np.zeros(3, np.int64)
    constants_and_results[1, 1](out, True, 550)
    assert out.tolist() == [1, 1, 146]
    constants_and_results[1, 1](out, False, 300)
    assert out.tolist() == [0, 0, 302]


@cuda.jit
def ordered(out, a, b):
    out[0] = a < b


def test_enum_members_do_not_order():
    with pytest.raises(gpunb.CompileError, match="compare with ==, != and is"):
        ordered[1, 1](np.zeros(1, np.bool_), Color.red, Color.blue)


@cuda.jit
def by_bad_name(out):
    out[0] = Color["purple"] == Color.red


def test_an_unknown_member_name_is_a_compile_error():
    with pytest.raises(gpunb.CompileError, match="has no member 'purple'"):
        by_bad_name[1, 1](np.zeros(1, np.bool_))
