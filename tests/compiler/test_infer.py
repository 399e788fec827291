"""Type inference: numba's promotion rules, weak float and int literals, unification across
assignments and loops, annotations, builtin and math result types, device-function return types;
checked on the inferred types directly and through the public inspect_types()."""

# the helper functions below exist to be type-inferred: their locals are read by the tests
# ruff: noqa: F841, B007

import math

import numpy as np
import pytest

from gpunb import cuda
from gpunb.compiler.pipeline import infer_kernel
from gpunb.compiler.typed import VarKind
from gpunb.foundation import types as t


def binop_add(out, a, b):
    out[0] = a + b
    r = a + b  # noqa: F841


def infer_var(func, argtypes, name, device=False):
    typed = infer_kernel(func, tuple(argtypes), {}, device=device)
    return typed.type_of_name(name)


def _add(a, b):
    r = a + b
    return r


def _sub(a, b):
    r = a - b
    return r


def _mul(a, b):
    r = a * b
    return r


def _truediv(a, b):
    r = a / b
    return r


def _floordiv(a, b):
    r = a // b
    return r


def _pow(a, b):
    r = a ** b
    return r


def _lshift(a, b):
    r = a << b
    return r


def _and(a, b):
    r = a & b
    return r


def _lt(a, b):
    r = a < b
    return r


i8, i16, i32, i64 = t.int8, t.int16, t.int32, t.int64
u8, u32, u64 = t.uint8, t.uint32, t.uint64
f16, f32, f64 = t.float16, t.float32, t.float64
c64, c128 = t.complex64, t.complex128
b1 = t.boolean


@pytest.mark.parametrize("func,a,b,expected", [
    # numba: integer arithmetic is at least 64 bits, signedness kept
    (_add, i32, i32, i64), (_add, i8, i16, i64), (_add, u8, u8, u64), (_add, u32, u64, u64),
    # mixed signedness: numba's choose_result_int is signed when either operand is
    (_add, i32, u32, i64), (_add, i64, u64, i64), (_sub, u8, i8, i64),
    # ints and floats: numpy's rules
    (_add, i32, f32, f64), (_add, i16, f32, f32), (_add, i8, f16, f16), (_mul, f32, f32, f32),
    (_mul, f32, f64, f64), (_add, f32, c64, c64), (_add, f64, c64, c128), (_add, b1, b1, i64),
    # true division of ints is float64; floor division keeps the type
    (_truediv, i32, i32, f64), (_truediv, f32, f32, f32), (_truediv, f32, i32, f64),
    (_floordiv, i32, i32, i64), (_floordiv, f32, f32, f32), (_floordiv, u64, u64, u64),
    # powers: int ** int is an integer, float ** int keeps the float
    (_pow, i32, i32, i64), (_pow, f32, i64, f32), (_pow, f32, f32, f32), (_pow, i64, f64, f64),
    # shifts keep the left operand's signedness; bit ops follow integer promotion
    (_lshift, i32, i64, i64), (_lshift, u32, i64, u64), (_and, u64, i32, i64),
    (_and, b1, b1, b1), (_and, i32, u8, i64),
    (_lt, f32, i64, b1), (_lt, u64, i64, b1),
])
def test_binary_promotion(func, a, b, expected):
    typed = infer_kernel(func, (a, b), {}, device=True)
    assert typed.type_of_name("r") == expected
    assert typed.return_type == expected


def _weak(x, n):
    a = x * 2.0
    b = 1.5 + x
    c = x / 3.0 - 0.25
    d = x ** 0.5
    e = x * 2  # an int literal is int64: float32 * int64 is float64 (numba)
    f = 2.0 * 3.0  # two literals: float64
    g = x if n > 0 else 0.5
    h = max(x, 0.5)
    k = math.sqrt(x) + 1.0
    m = -2.0 * x
    return a


@pytest.mark.parametrize("name,expected", [("a", f32), ("b", f32), ("c", f32), ("d", f32),
                                           ("e", f64), ("f", f64), ("g", f32), ("h", f32),
                                           ("k", f32), ("m", f32)])
def test_weak_float_literals(name, expected):
    assert infer_var(_weak, (f32, i64), name, device=True) == expected


def test_weak_float_literals_float64_input():
    for name in ("a", "b", "c", "d", "e", "f", "g", "h", "k", "m"):
        assert infer_var(_weak, (f64, i64), name, device=True) == f64, name


def _accumulate(x, n):
    s = 0
    for k in range(n):
        s += x[k]
    acc = 0.0
    for k in range(n):
        acc += x[k]
    count = 0
    for k in range(n):
        count += 1
    bits = 0
    for k in range(n):
        bits ^= n
    grow = 1
    while grow < 100:
        grow = grow * 2.5
    return s


@pytest.mark.parametrize("name,expected", [
    ("s", f64),  # int literal 0, then float32 added: float64 (numba)
    ("acc", f64),  # float64 literal accumulator (numba)
    ("count", i64),
    ("bits", i64),  # int64 literal ^ uint32: int64 (numba)
    ("grow", f64),  # loop-carried: settles to float64
])
def test_unification_across_assignments_and_loops(name, expected):
    """The loop-carried value (the loop header's phi, as numba's SSA makes it) settles to the
    join of the entry value and what the body assigns."""
    typed = infer_kernel(_accumulate, (t.Array(f32, 1, "C"), u32), {}, device=True)
    joined = {vt for var, vt in typed.definitions(name) if var.kind is VarKind.PHI}
    assert joined == {expected}


def _redefined(a, b, c, u):
    v = a
    w = v * b
    v = np.float64(v) * 3.0  # numba types each definition: w above stays float32
    q = 4611686018427387904
    if c:
        q = np.uint32(255)  # int64 literal joined with uint32: int64 (np.promote_types)
    r = -3
    if c > 5:
        r = u
    return w, v, q, r


def test_each_definition_has_its_own_type():
    typed = infer_kernel(_redefined, (f32, f32, i64, u32), {}, device=True)
    assert [vt for _, vt in typed.definitions("v")] == [f32, f64]
    assert typed.type_of_name("w") == f32
    assert [vt for _, vt in typed.definitions("q")] == [i64, u32, i64]
    assert [vt for _, vt in typed.definitions("r")] == [i64, u32, i64]
    assert typed.return_type == t.Tuple((f32, f64, i64, i64))


def _annotated(x):
    v: t.float32 = 0
    v += x
    w: np.int16 = 3
    return v, w


def test_annotated_assignment_declares_type():
    typed = infer_kernel(_annotated, (f32,), {}, device=True)
    assert typed.type_of_name("v") == f32
    assert typed.type_of_name("w") == i16
    assert typed.return_type == t.Tuple((f32, i16))


def _builtins(x, i, u):
    a = abs(i)
    b = abs(x)
    c = min(i, x)
    d = max(i, 3)
    e = round(x)
    f = round(x, 2)
    g = int(x)
    h = float(i)
    k = bool(i)
    m = len((1, 2))
    n = math.floor(x)  # numba-cuda (cudamath.py): float32 -> float32, unlike CPU numba
    p = math.sin(x)
    q = math.sin(i)
    r = math.isnan(x)
    s = divmod(i, 3)
    v = math.frexp(x)
    w = abs(1 + 2j)
    y = np.float32(i)
    z = np.uint8(u)
    return a


@pytest.mark.parametrize("name,expected", [
    ("a", i32), ("b", f32), ("c", f64), ("d", i64), ("e", i64), ("f", f32), ("g", i64),
    ("h", f64), ("k", b1), ("m", i64), ("n", f32), ("p", f32), ("q", f64), ("r", b1),
    ("s", t.Tuple((i64, i64))), ("v", t.Tuple((f32, i32))), ("w", f64), ("y", f32),
    ("z", u8),
])
def test_builtin_result_types(name, expected):
    assert infer_var(_builtins, (f32, i32, u64), name, device=True) == expected


def _cuda_values(x):
    a = cuda.threadIdx.x
    b = cuda.grid(1)
    c = cuda.grid(2)
    d = cuda.gridsize(3)
    e = cuda.laneid
    f = cuda.warpsize
    g = cuda.shared.array((4, 8), np.float32)
    h = cuda.local.array(3, t.int16)
    k = x.shape
    m = x.size
    n = x[0]
    p = x[1:]
    q = x.T
    x[0, 0] = 1


@pytest.mark.parametrize("name,expected", [
    ("a", i32), ("b", i64), ("c", t.Tuple((i64, i64))), ("d", t.Tuple((i64, i64, i64))),
    ("e", i32), ("f", i32), ("g", t.Array(f32, 2, "C")), ("h", t.Array(i16, 1, "C")),
    ("k", t.Tuple((i64, i64))), ("m", i64), ("n", t.Array(f64, 1, "C")),
    ("p", t.Array(f64, 2, "C")), ("q", t.Array(f64, 2, "F")),
])
def test_kernel_values(name, expected):
    assert infer_var(_cuda_values, (t.Array(f64, 2, "C"),), name) == expected


def _strided_view(x):
    row = x[0]
    col = x[:, 0]
    sub = x[::2]


@pytest.mark.parametrize("layout,name,expected", [
    ("C", "row", "C"), ("C", "col", "A"), ("C", "sub", "A"), ("F", "row", "A"), ("A", "row", "A"),
])
def test_view_layouts(layout, name, expected):
    arr = infer_var(_strided_view, (t.Array(f32, 2, layout),), name)
    assert arr.layout == expected and arr.dtype == f32


def _helper(a, b=2):
    return a * b, a


def test_device_function_return_types():
    typed = infer_kernel(_helper, (f32, i64), {}, device=True)
    assert typed.return_type == t.Tuple((f64, f32))  # float32 * int64 is float64
    typed = infer_kernel(_helper, (i32, i64), {}, device=True)
    assert typed.return_type == t.Tuple((i64, i32))


@cuda.jit(device=True)
def _callee(a, scale=2.0):
    return a * scale


@cuda.jit
def _caller(out, x):
    out[0] = _callee(x[0])
    out[1] = _callee(x[0], scale=3)


def test_callees_are_recorded_with_bound_defaults():
    typed = infer_kernel(_caller.py_func, (t.Array(f32, 1, "C"),) * 2, {})
    signatures = sorted(str(c.argtypes) for c in typed.callees)
    # the default 2.0 is bound at the call site as a float64 constant, the keyword 3 as int64
    assert signatures == [str((f32, f64)), str((f32, i64))]
    assert {c.return_type for c in typed.callees} == {f64}


@cuda.jit
def inspected(out, x):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i] * 2.0
        w = x[i] + i
        out[i] = v + w


def test_inspect_types_public_api(target):
    x = np.ones(8, np.float32)
    inspected[1, 8](np.zeros_like(x), x)
    text = inspected.inspect_types()
    assert "inspected" in text
    assert "i: int64" in text and "v: float32" in text and "w: float64" in text
    assert "v = x[i] * 2.0" in text  # the annotated source follows the variables


def test_numpy_float64_global_is_not_a_weak_literal(target):
    """np.float64 subclasses float, but a global of that type is typed float64 (as in numba):
    float32 * TWO_PI_F64 is float64. A Python float global stays weak, like a literal."""
    import numpy as np

    from gpunb import cuda

    @cuda.jit
    def scale(x, out):
        out[0] = NP_TWO_PI * x[0]
        out[1] = PY_TWO_PI * x[0]

    x = np.array([0.3], np.float32)
    out = np.zeros(2, np.float64)
    scale[1, 1](x, out)
    assert out[0] == NP_TWO_PI * np.float64(x[0])
    assert out[1] == np.float64(np.float32(PY_TWO_PI) * x[0])


NP_TWO_PI = __import__("numpy").float64(6.283185307179586)
PY_TWO_PI = 6.283185307179586
