"""What the compiler knows at compile time and no longer hands to LLVM to find out: reads of
variables whose definition is an exact integer constant (literal_unroll items, `j = 8 * p + 2`),
integer arithmetic on two constants, floor division and modulo by a constant divisor, and dead
branches of conditions on literal_unroll items. Each is checked against numba's njit (the same
function, numba's typing and arithmetic), and by the LLVM IR the lowering produces: the folds are
there so that a kernel full of index arithmetic (a GEMM epilogue) compiles fast."""

from __future__ import annotations

import ast

import numpy as np
import pytest
from numba import literal_unroll, njit

from gpunb import backends, cuda
from gpunb.backends.pipeline import compile as run_compile
from gpunb.compiler.ast_copy import copy_tree
from gpunb.foundation.events import Stage
from gpunb.foundation.types import float32, int64


def _constant_reads(out, a):
    base = 3
    j = base * 4 + 1  # 13: a folded read, a constant index
    out[0] = a[j]
    k = -1  # a negative constant index still wraps (numba's wraparound)
    out[1] = a[k]
    big = 4611686018427387904
    w = big * 4 // 4  # int64 wraps in the product: not Python's 2**62
    out[2] = w
    i = 0
    while i < 3:  # i's definitions in the loop are not constants (the phi reaches them)
        i = i + 1
        out[2 + i] = a[i] * 10 + i
    n = 0
    for p in literal_unroll((1, 2, 3)):
        n = n + p  # straight-line copies: n is 1, 3, 6
        out[5 + p] = a[n]
    m = 7
    if m > 5:
        m = m - 7  # the assignment in a branch: its read after the join is not constant
    out[9] = a[m]


def test_constant_reads_compute_what_njit_computes(target):
    a = np.arange(20, dtype=np.int64) * 3 + 1
    expected = np.zeros(10, np.int64)
    njit(_constant_reads)(expected, a)
    got = np.zeros(10, np.int64)
    cuda.jit(_constant_reads)[1, 1](got, a)
    assert got.tolist() == expected.tolist()
    assert expected[2] == 0  # the case the int64 check is for


def _divide(out, i, x):
    out[i, 0] = x // 7
    out[i, 1] = x % 7
    out[i, 2] = x // -7
    out[i, 3] = x % -7
    out[i, 4] = x // 1
    out[i, 5] = x % 1
    out[i, 6] = x // 128
    out[i, 7] = x % -128
    out[i, 8] = x // -9223372036854775808
    out[i, 9] = x % -9223372036854775808
    out[i, 10] = x // -1  # not a plain divisor: the checked path
    out[i, 11] = x % 2


_divide_on_gpu = cuda.jit(device=True)(_divide)
_divide_njit = njit(_divide)


@cuda.jit
def _divisions(out, a):
    i = cuda.grid(1)
    if i < a.size:
        _divide_on_gpu(out, i, a[i])


@njit
def _njit_divisions(out, a):
    for i in range(a.size):
        _divide_njit(out, i, a[i])


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint32])
def test_division_by_constants_matches_njit(target, dtype):
    info = np.iinfo(dtype)
    values = [info.min, info.min + 1, -129, -128, -9, -8, -7, -1, 0, 1, 6, 7, 8, 127, 128,
              info.max - 1, info.max]
    a = np.array([v for v in values if info.min <= v <= info.max], dtype)
    expected = np.zeros((a.size, 12), np.float64)
    _njit_divisions(expected, a)
    got = np.zeros((a.size, 12), np.float64)
    _divisions[1, 32](got, a)
    np.testing.assert_array_equal(got, expected)


WIDTHS = (0, 1, 2, 3)


def _pruned(out, acc):
    for p in literal_unroll(WIDTHS):
        j = 2 * p + 1
        if j < 5:  # decided per copy: p = 0, 1 take it, p = 2, 3 the else branch
            out[j] = acc[4 * j + 1]
        else:
            out[j] = acc[0] * 2.0


def _llvm_ir(fn, argtypes) -> str:
    compiled = run_compile(fn, argtypes, {}, backends.get("cuda"), stop_after=Stage.LLVM,
                           arch=(9, 0))
    return str(compiled.builder.module)


def test_literal_unroll_items_are_constants_in_the_ir():
    text = _llvm_ir(_pruned, (float32[::1], float32[::1]))
    # the four copies' conditions decided at compile time, their indices constants: no
    # comparison, no wraparound select, one multiplication per else copy
    assert "icmp" not in text and "select" not in text, text
    assert text.count("fmul") == 2
    assert "i64 13" in text and "i64 5" in text  # acc[4 * 3 + 1], acc[4 * 1 + 1]


def test_literal_unroll_pruning_runs_the_taken_branches(target):
    out = np.zeros(8, np.float32)
    acc = np.arange(16, dtype=np.float32)
    cuda.jit(_pruned)[1, 1](out, acc)
    expected = np.zeros(8, np.float32)
    njit(_pruned)(expected, acc)
    assert out.tolist() == expected.tolist() == [0, 5, 0, 13, 0, 0, 0, 0]


MIXED = (1, 2.5, (3, 4))


def test_a_branch_that_types_only_for_its_item(target):
    # without the per-copy pruning, `MIXED[k][0]` would be typed for k = 0 (an int) too
    @cuda.jit
    def k(out):
        for k in literal_unroll((0, 1, 2)):
            if k == 2:
                out[k] = MIXED[k][0]
            else:
                out[k] = MIXED[k]

    out = np.zeros(3)
    k[1, 1](out)
    assert out.tolist() == [1.0, 2.5, 3.0]


def test_folds_take_back_a_read_a_loop_makes_variable():
    def loop(out):
        i = 0
        while i < 4:
            out[i] = 1.0
            i = i + 1

    text = _llvm_ir(loop, (float32[::1],))
    assert "icmp" in text  # the loop's test is not folded away (i is 0 only on entry)


def test_constant_divisor_needs_no_checks_in_the_ir():
    def div(out, x):
        out[0] = x // 16
        out[1] = x % 16

    text = _llvm_ir(div, (int64[::1], int64))
    assert "select" not in text.split("srem")[0]  # no divisor 0 / -1 checks before it
    assert text.count("sdiv") == 1 and text.count("srem") == 2


def test_ast_copy_keeps_positions_and_shares_only_leaves():
    tree = ast.parse("for k in t:\n    x = a[k] + 1.5\n    y = 'text'\n")
    body = tree.body[0].body
    body[0].note = "kept"  # an attribute a compiler pass left on a node
    copied = copy_tree(body)
    assert ast.dump(ast.Module(copied, []), include_attributes=True) == \
        ast.dump(ast.Module(body, []), include_attributes=True)
    assert copied[0].note == "kept"
    originals = {id(n) for s in body for n in ast.walk(s)}
    assert not any(id(n) in originals for s in copied for n in ast.walk(s)
                   if not isinstance(n, ast.expr_context))
    copied[0].value.right.value = 2.5  # changing the copy leaves the original alone
    assert body[0].value.right.value == 1.5


def test_ast_copy_survives_cycles_and_keeps_sharing():
    # a pass may leave an attribute pointing back into the tree: the copier recursed until
    # RecursionError ('too deeply nested to compile', seen in CI by test order); deepcopy's
    # memo semantics now: each node copied once, cycles and sharing kept
    tree = ast.parse("x = a + b\n")
    stmt = tree.body[0]
    stmt.value.back = stmt  # a cycle
    shared = stmt.value.left
    stmt.value.also = shared  # one node reached twice
    (made,) = copy_tree([stmt])
    assert made is not stmt and made.value.back is made
    assert made.value.also is made.value.left and made.value.left is not shared
