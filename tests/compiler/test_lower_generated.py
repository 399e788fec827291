"""Hypothesis writes kernels: random int64 expression trees (arithmetic, floor division and modulo,
bit ops, shifts, powers, negation, abs/min/max, ternaries, comparisons) compiled from source and
compared exactly with Python evaluated under int64 wraparound.

CPython folds operations on constants before numba (and gpunb) see them, exactly and without
wraparound; so that every operator here is evaluated at run time, an operation whose operands are
all constants gets a run-time zero added to them (`z`, which is `a - a`). Folding itself is
tested in test_folding.py."""

import importlib.util
import itertools
import os
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_counter = itertools.count()
_workdir = tempfile.mkdtemp(prefix="gpunb-generated-")


def wrap(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


# An expression is (source text, evaluator over a dict of variable values).

def _var(name):
    return name, lambda env: env[name]


def _const(value):
    return _Const(f"({value})", lambda env: value)


class _Const(tuple):
    """An expression made of constants only (CPython would fold an operation on it)."""

    def __new__(cls, source, evaluate):
        return super().__new__(cls, (source, evaluate))


def _unfoldable(*operands):
    """The operands' sources, with a run-time zero added when all are constants."""
    if all(isinstance(o, _Const) for o in operands):
        return [(f"({o[0]} + z)", o[1]) for o in operands]
    return [tuple(o) for o in operands]


def _binary(op):
    def make(left, right):
        (ls, lf), (rs, rf) = _unfoldable(left, right)
        if op in ("+", "-", "*"):
            return f"({ls} {op} {rs})", lambda e: wrap(eval(f"{lf(e)} {op} {rf(e)}"))  # noqa: S307
        if op == "//":  # numba: INT64_MIN // -1 is 0 (int_divmod_signed)
            return f"({ls} // {rs})", lambda e: (
                0 if not rf(e) or (lf(e), rf(e)) == (INT64_MIN, -1) else wrap(lf(e) // rf(e)))
        if op == "%":
            return f"({ls} % {rs})", lambda e: (lf(e) % rf(e) if rf(e) else 0)
        if op in ("&", "|", "^"):
            fn = {"&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b}[op]
            return f"({ls} {op} {rs})", lambda e: fn(lf(e), rf(e))
        if op == "<<":
            return f"({ls} << ({rs} & 63))", lambda e: wrap(lf(e) << (rf(e) & 63))
        if op == ">>":
            return f"({ls} >> ({rs} & 63))", lambda e: lf(e) >> (rf(e) & 63)
        if op == "**":
            return f"({ls} ** ({rs} & 7))", lambda e: wrap(lf(e) ** (rf(e) & 7))
        if op == "min":
            return f"min({ls}, {rs})", lambda e: min(lf(e), rf(e))
        if op == "max":
            return f"max({ls}, {rs})", lambda e: max(lf(e), rf(e))
        if op == "ternary":
            return (f"({ls} if {ls} < {rs} else ({rs} - {ls}))",
                    lambda e: lf(e) if lf(e) < rf(e) else wrap(rf(e) - lf(e)))
        if op == "chain":
            return (f"(1 if {ls} <= {rs} != 0 else 2)",
                    lambda e: 1 if lf(e) <= rf(e) != 0 else 2)
        raise AssertionError(op)

    return make


def _unary(op):
    def make(inner):
        [(s, f)] = _unfoldable(inner)
        if op == "-":
            return f"(-{s})", lambda e: wrap(-f(e))
        if op == "~":
            return f"(~{s})", lambda e: ~f(e)
        if op == "abs":
            return f"abs({s})", lambda e: wrap(abs(f(e)))
        if op == "not":
            return f"(0 if not {s} else {s})", lambda e: 0 if not f(e) else f(e)
        raise AssertionError(op)

    return make


_BINARY = ["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "**", "min", "max", "ternary",
           "chain"]
_UNARY = ["-", "~", "abs", "not"]

_leaves = st.one_of(
    st.sampled_from(["a", "b", "c"]).map(_var),
    st.integers(-9, 9).map(_const),
    st.sampled_from([INT64_MIN, INT64_MAX, 2**32, -(2**31)]).map(_const),
)
expressions = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.builds(lambda op, a, b: _binary(op)(a, b), st.sampled_from(_BINARY), inner, inner),
        st.builds(lambda op, a: _unary(op)(a), st.sampled_from(_UNARY), inner),
    ),
    max_leaves=8,
)

_int64 = st.one_of(st.integers(INT64_MIN, INT64_MAX), st.integers(-20, 20))


def compile_kernel(source_expr: str):
    name = f"generated_{next(_counter)}"
    path = os.path.join(_workdir, f"{name}.py")
    with open(path, "w") as f:
        f.write("import math\n\nfrom gpunb import cuda\n\n\n@cuda.jit\n"
                "def kernel(out, xa, xb, xc):\n    i = cuda.grid(1)\n"
                "    a = xa[i]\n    b = xb[i]\n    c = xc[i]\n    z = a - a\n"
                f"    out[i] = {source_expr}\n")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kernel


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(expr=expressions, values=st.lists(st.tuples(_int64, _int64, _int64), min_size=1,
                                         max_size=8), narrow=st.booleans())
def test_generated_int64_expressions(target, expr, values, narrow):
    # int32 inputs: numba promotes every integer operation to int64, so Python's int64 results
    # hold for them too
    source, evaluate = expr
    kernel = compile_kernel(source)
    if narrow:
        # (abs(int32) stays int32 in numba: leave out INT32_MIN, whose abs wraps)
        values = [tuple(max((v + 2**31) % 2**32 - 2**31, -(2**31) + 1) for v in row)
                  for row in values]
    dtype = np.int32 if narrow else np.int64
    a, b, c = (np.array([v[k] for v in values], dtype) for k in range(3))
    out = np.zeros(len(values), np.int64)
    kernel[1, len(values)](out, a, b, c)
    expected = [evaluate({"a": int(x), "b": int(y), "c": int(z)}) for x, y, z in values]
    assert out.tolist() == [wrap(v) for v in expected], source


def test_generator_sanity():
    source, evaluate = _binary("//")(_var("a"), _const(-1))
    assert source == "(a // (-1))"
    assert evaluate({"a": INT64_MIN}) == 0  # numba's int_divmod_signed
    assert evaluate({"a": 7}) == -7
    source, _ = _binary("+")(_const(2), _const(-1))
    assert source == "(((2) + z) + ((-1) + z))"


@pytest.mark.parametrize("op", _BINARY)
def test_each_operator_once(target, op):
    source, evaluate = _binary(op)(_var("a"), _var("b"))
    kernel = compile_kernel(source)
    pairs = [(INT64_MIN, -1), (7, -3), (-7, 3), (0, 0), (INT64_MAX, 2), (5, 64), (-1, 63)]
    a = np.array([p[0] for p in pairs], np.int64)
    b = np.array([p[1] for p in pairs], np.int64)
    out = np.zeros(len(pairs), np.int64)
    kernel[1, len(pairs)](out, a, b, np.zeros_like(a))
    assert out.tolist() == [wrap(evaluate({"a": x, "b": y})) for x, y in pairs], source


# ---- float64 expressions: IEEE arithmetic and Python's // and % (numpy's for zero divisors) --

def _fvar(name):
    return name, lambda env: env[name]


def _fconst(value):
    return f"({value!r})", lambda env: np.float64(value)


def _fbinary(op):
    def make(left, right):
        ls, lf = left
        rs, rf = right
        fns = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide,
               "//": np.floor_divide, "%": np.mod}
        if op in fns:
            return f"({ls} {op} {rs})", lambda e: fns[op](lf(e), rf(e))
        if op == "min":  # Python's min keeps the first operand unless the second is smaller
            return f"min({ls}, {rs})", lambda e: rf(e) if rf(e) < lf(e) else lf(e)
        if op == "max":
            return f"max({ls}, {rs})", lambda e: rf(e) if rf(e) > lf(e) else lf(e)
        if op == "ternary":
            return (f"({ls} if {ls} <= {rs} else {rs} * 0.5)",
                    lambda e: lf(e) if lf(e) <= rf(e) else rf(e) * np.float64(0.5))
        raise AssertionError(op)

    return make


def _funary(op):
    def make(inner):
        s, f = inner
        if op == "-":
            return f"(-{s})", lambda e: -f(e)
        if op == "abs":
            return f"abs({s})", lambda e: np.abs(f(e))
        if op == "sqrt":
            return f"math.sqrt(abs({s}))", lambda e: np.sqrt(np.abs(f(e)))
        raise AssertionError(op)

    return make


_FBINARY = ["+", "-", "*", "/", "//", "%", "min", "max", "ternary"]
_FUNARY = ["-", "abs", "sqrt"]
_fleaves = st.one_of(
    st.sampled_from(["a", "b", "c"]).map(_fvar),
    st.sampled_from([0.0, -0.0, 0.1, 1.5, -3.0, 1e300, 7.0]).map(_fconst),
)
float_expressions = st.recursive(
    _fleaves,
    lambda inner: st.one_of(
        st.builds(lambda op, a, b: _fbinary(op)(a, b), st.sampled_from(_FBINARY), inner, inner),
        st.builds(lambda op, a: _funary(op)(a), st.sampled_from(_FUNARY), inner),
    ),
    max_leaves=6,
)
_float64 = st.floats(allow_nan=False, allow_infinity=False, width=64)


def _same_float(x, y) -> bool:
    if np.isnan(x) or np.isnan(y):
        return bool(np.isnan(x) and np.isnan(y))
    return x == y and np.signbit(x) == np.signbit(y)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(expr=float_expressions, values=st.lists(st.tuples(_float64, _float64, _float64),
                                               min_size=1, max_size=8))
def test_generated_float64_expressions(target, expr, values):
    if target == "cuda":
        pytest.skip("the GPU may contract a * b + c into an fma: not bit-exact with numpy")
    source, evaluate = expr
    kernel = compile_kernel(source)
    a, b, c = (np.array([v[k] for v in values], np.float64) for k in range(3))
    out = np.zeros(len(values), np.float64)
    kernel[1, len(values)](out, a, b, c)
    with np.errstate(all="ignore"):
        expected = [evaluate({"a": np.float64(x), "b": np.float64(y), "c": np.float64(z)})
                    for x, y, z in values]
    for got, want, row in zip(out.tolist(), expected, values, strict=True):
        assert _same_float(got, float(want)), (source, row, got, float(want))
