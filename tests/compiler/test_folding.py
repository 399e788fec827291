"""Constant expressions are folded as CPython's compiler folds them, so kernels see the same
constants numba sees (numba compiles the folded bytecode): exact integer arithmetic, results past
64 bits refused ("Int value is too large" in numba), and the size limits of Python/ast_opt.c."""

import ast

import numpy as np
import pytest

from gpunb import CompileError, cuda
from gpunb.compiler.folding import fold_constants


def folded(source: str):
    tree = fold_constants(ast.parse(source, mode="eval"))
    return tree.body.value if isinstance(tree.body, ast.Constant) else None


@pytest.mark.parametrize("source,value", [
    ("-5", -5), ("-9223372036854775808", -(2**63)), ("(1 << 63) // 3", (1 << 63) // 3),
    ("(2**64 - 1) >> 60", 15), ("2**63 % 10", 8), ("~0", -1), ("not 0", True),
    ("2.0 * 3.0", 6.0), ("1 + 2.5", 3.5), ("7 // 2 * 3 - 1", 8),
])
def test_cpython_folds_these(source, value):
    assert folded(source) == value
    assert folded(source) == eval(source)  # noqa: S307 - the folded value is Python's


@pytest.mark.parametrize("source", [
    "1 / 0", "5 % 0",  # raising: left for run time, as CPython does
    "2 ** 200", "3 * (1 << 100) * (1 << 100)", "1 << 200",  # past ast_opt.c's 128-bit limit
])
def test_cpython_leaves_these_unfolded(source):
    assert folded(source) is None


def test_folding_keeps_locations():
    tree = fold_constants(ast.parse("x = 1 + 2", mode="exec"))
    node = tree.body[0].value
    assert isinstance(node, ast.Constant) and (node.lineno, node.col_offset) == (1, 4)
    assert node.end_col_offset == 9


@cuda.jit
def folded_constants(out):
    out[0] = (1 << 63) // 3
    out[1] = (2**64 - 1) >> 60
    out[2] = 2**63 % 10
    out[3] = -9223372036854775808 // 7


def test_kernels_see_the_folded_values(target):
    out = np.zeros(4, np.int64)
    folded_constants[1, 1](out)
    assert out.tolist() == [(1 << 63) // 3, 15, 8, -(2**63) // 7]


@cuda.jit
def too_large(out):
    out[0] = 2**64 + 5


def test_a_folded_value_past_64_bits_is_refused(target):
    with pytest.raises(CompileError, match="does not fit in 64 bits") as info:
        too_large[1, 1](np.zeros(1, np.int64))
    assert info.value.loc.line == too_large.py_func.__code__.co_firstlineno + 2


def test_numba_agrees():
    numba = pytest.importorskip("numba")

    @numba.njit
    def f():
        return (1 << 63) // 3, (2**64 - 1) >> 60, 2**63 % 10

    assert f() == ((1 << 63) // 3, 15, 8)
