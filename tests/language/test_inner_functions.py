"""Inner functions and lambdas inside kernels and device functions, as numba(-cuda) supports them:
non-escaping `def`s and `name = lambda` bindings, closures over the enclosing function's variables
(read at the call), defaults and keywords, several returns, calls between inner functions and to
device functions, nesting. What numba refuses (escaping, recursion, nonlocal) is a CompileError
at the offending line. Expected values come from running the same Python functions on the host."""

from __future__ import annotations

import linecache
import math
import uuid

import numpy as np
import pytest

from gpunb import CompileError, cache, cuda

# ---- supported forms ---------------------------------------------------------------------------


@cuda.jit(device=True)
def plus_hundred(x):
    return x + 100.0


def _closure_defaults_keywords(out, a, c):
    i = cuda.grid(1)

    def piecewise(x, k=2.0):
        if x > 3.0:
            return x * k + c  # several returns; c read from the kernel
        return x - c

    f = lambda y: plus_hundred(piecewise(y)) * 2.0  # noqa: E731 - the form under test
    if i < out.size:
        out[i] = f(a[i]) + piecewise(a[i], k=3.0) + piecewise(k=0.5, x=a[i])


closure_defaults_keywords = cuda.jit(_closure_defaults_keywords)


def test_def_and_lambda_with_closure_defaults_and_keywords(target):
    a = np.linspace(-2.0, 9.0, 40)
    out = np.zeros_like(a)
    closure_defaults_keywords[2, 32](out, a, 0.75)

    def piecewise(x, k=2.0):
        return np.where(x > 3.0, x * k + 0.75, x - 0.75)

    expected = (piecewise(a) + 100.0) * 2.0 + piecewise(a, 3.0) + piecewise(a, 0.5)
    np.testing.assert_allclose(out, expected)


@cuda.jit
def captured_at_call(out):
    s = 1
    add_s = lambda x: x + s  # noqa: E731
    out[0] = add_s(10)
    s = 5  # a closure reads the variable when it is called, not when it was defined
    out[1] = add_s(10)
    for j in range(3):
        s = j * 100
        out[2 + j] = add_s(j)


def test_captured_variables_are_read_at_each_call(target):
    out = np.zeros(5, dtype=np.int64)
    captured_at_call[1, 1](out)
    assert out.tolist() == [11, 15, 0, 101, 202]


@cuda.jit
def siblings_and_nesting(out, x, n):
    i = cuda.grid(1)

    def total(v):
        return scale(v) + shift(v)  # `shift` is defined below, before total is called

    def scale(v):
        def inner_most(w):
            return w * n  # n: the kernel's argument, two scopes out
        return inner_most(v) + 1.0

    shift = lambda v: v - n  # noqa: E731

    def outer_of_two(v):
        def middle(w):
            def deepest(u):
                return total(u) + w  # calls a function of the kernel's scope
            return deepest(w * 2.0)
        return middle(v)

    if i < out.shape[0]:
        out[i, 0] = total(x[i])
        out[i, 1] = outer_of_two(x[i])


def test_inner_functions_call_each_other_and_nest(target):
    x = np.arange(16, dtype=np.float32) - 4.0
    out = np.zeros((16, 2), dtype=np.float32)
    siblings_and_nesting[1, 16](out, x, np.float32(3.0))

    def total(v):
        return (v * 3.0 + 1.0) + (v - 3.0)

    np.testing.assert_allclose(out[:, 0], total(x))
    np.testing.assert_allclose(out[:, 1], total(x * 2.0) + x)


@cuda.jit(device=True)
def clamp_sum(values, lo, hi):
    def clamp(v):
        return min(max(v, lo), hi)

    s = 0.0
    for k in range(values.shape[0]):
        s += clamp(values[k])
    return s


@cuda.jit
def rows_clamped(out, m, lo, hi):
    i = cuda.grid(1)

    def write(j, value):  # an inner function with no return value, storing into an argument
        out[j] = value

    if i < out.size:
        write(i, clamp_sum(m[i], lo, hi))


def test_inner_function_in_a_device_function_and_stores_through_arrays(target):
    rng = np.random.default_rng(3)
    m = rng.normal(size=(20, 7))
    out = np.zeros(20)
    rows_clamped[1, 32](out, m, -0.5, 0.8)
    np.testing.assert_allclose(out, np.clip(m, -0.5, 0.8).sum(axis=1))


@cuda.jit
def shared_reverse(out, x):
    tile = cuda.shared.array(32, dtype=np.float64)
    t = cuda.threadIdx.x

    def exchange(v):  # a barrier inside an inner function keeps its meaning
        tile[t] = v
        cuda.syncthreads()
        return tile[31 - t]

    out[t] = exchange(math.sqrt(x[t]))


def test_barrier_inside_an_inner_function(target):
    x = np.arange(32, dtype=np.float64)
    out = np.zeros(32)
    shared_reverse[1, 32](out, x)
    np.testing.assert_allclose(out, np.sqrt(x)[::-1])


def test_inner_function_kernels_give_ptx_that_ptxas_accepts(ptxas):
    ptx, _ = cuda.compile_ptx(siblings_and_nesting, "void(float32[:, ::1], float32[::1], float32)")
    ptxas(ptx)
    ptxas(cuda.compile_ptx(closure_defaults_keywords,
                           "void(float64[::1], float64[::1], float64)")[0])
    ptxas(cuda.compile_ptx(shared_reverse, "void(float64[::1], float64[::1])")[0])
    ptxas(cuda.compile_ptx(clamp_sum, "float64(float64[::1], float64, float64)",
                           device=True)[0])


# ---- refusals, as numba's ----------------------------------------------------------------------


def _define(text: str) -> dict:
    """Run source text the way a notebook cell runs (its text in linecache), as errors read it."""
    filename = f"<inner-functions-{uuid.uuid4().hex[:8]}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    ns = {"cuda": cuda, "np": np}
    exec(compile(text, filename, "exec"), ns)  # noqa: S102 - that is what a cell does
    return ns


def _compile_error(text: str, sig: str = "void(float64[::1])") -> CompileError:
    ns = _define(text)
    with pytest.raises(CompileError) as info:
        cuda.compile_ptx(ns["k"], sig)
    return info.value


REFUSED = {
    "returned": ("""
@cuda.jit(device=True)
def make():
    def f(x):
        return x
    return f

@cuda.jit
def k(out):
    out[0] = make()
""", "return f", "inner function 'f' is used as a value"),
    "stored": ("""
@cuda.jit
def k(out):
    f = lambda x: x + 1.0
    g = f
    out[0] = g(1.0)
""", "g = f", "inner function 'f' is used as a value"),
    "lambda passed": ("""
@cuda.jit(device=True)
def apply(fn, x):
    return x

@cuda.jit
def k(out):
    out[0] = apply(lambda v: v, 1.0)
""", "apply(lambda", "unsupported expression: Lambda"),
    "recursion": ("""
@cuda.jit
def k(out):
    def fact(n):
        if n <= 1:
            return 1.0
        return n * fact(n - 1)
    out[0] = fact(5)
""", "return n * fact(n - 1)", "recursive call of inner function 'fact'"),
    "mutual recursion": ("""
@cuda.jit
def k(out):
    def even(n):
        return True if n == 0 else odd(n - 1)
    def odd(n):
        return False if n == 0 else even(n - 1)
    out[0] = even(4)
""", "else even(n - 1)", "recursive call of inner function"),
    "nonlocal": ("""
@cuda.jit
def k(out):
    total = 0.0
    def add(v):
        nonlocal total
        total += v
    add(2.0)
    out[0] = total
""", "nonlocal total", "unsupported statement: Nonlocal"),
    "called before def": ("""
@cuda.jit
def k(out):
    out[0] = f(1.0)
    def f(x):
        return x
""", "out[0] = f(1.0)", "called before its definition"),
    "runtime default": ("""
@cuda.jit
def k(out):
    d = out[1]
    def f(x, y=d):
        return x + y
    out[0] = f(1.0)
""", "def f(x, y=d)", "must be a compile-time constant"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_numba_refuses_is_a_located_compile_error(case):
    text, line_text, message = REFUSED[case]
    err = _compile_error(text)
    assert message in err.message
    assert err.hint
    assert line_text in err.loc.source_line()
    rendered = str(err)
    assert line_text.strip() in rendered and "^" in rendered


def test_nonlocal_hint_says_what_to_do_instead():
    err = _compile_error(REFUSED["nonlocal"][0])
    assert "return the new value" in err.hint


def test_a_capture_shadowed_on_the_way_is_refused_not_miscompiled():
    """`g` calls `f`, which reads the kernel's `c`; g's own `c` would be passed instead."""
    err = _compile_error("""
@cuda.jit
def k(out):
    c = 1.0
    f = lambda x: x + c
    def g(x):
        c = 100.0
        return f(x) + c
    out[0] = g(1.0)
""")
    assert "rebinds 'c'" in err.message and "def g(x):" in err.loc.source_line()


# ---- the cache follows the inner function's body ----------------------------------------------

CACHED = """
@cuda.jit
def k(out, x):
    def inner(v):
        return v * {factor}
    out[cuda.threadIdx.x] = inner(x)
"""


@pytest.fixture
def disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUNB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GPUNB_CACHE", raising=False)
    monkeypatch.setattr(cache, "_default", [None])


def _launch(kernel) -> list:
    out = np.zeros(4)
    kernel[1, 4](out, 2.0)
    return out.tolist()


def _event(kernel):
    (info,) = kernel.cache_info()
    return info["event"]


def test_editing_an_inner_function_recompiles(target, disk_cache):
    first = _define(CACHED.format(factor="3.0"))["k"]
    assert _launch(first) == [6.0] * 4
    cache.default_cache().forget_memory()  # as a new process: only the disk entry is left
    edited = _define(CACHED.format(factor="5.0"))["k"]
    assert _launch(edited) == [10.0] * 4
    assert _event(edited).kind == "miss"
    cache.default_cache().forget_memory()
    again = _define(CACHED.format(factor="3.0"))["k"]
    assert _launch(again) == [6.0] * 4
    assert _event(again).source == "disk"  # the unchanged text is the same key
