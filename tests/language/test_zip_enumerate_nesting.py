"""zip and enumerate nested in each other as numba types them (issue 26): zip(range(n),
enumerate(a)), enumerate(zip(...)), zip(zip(...), ...), enumerate(enumerate(...)), 2-d arrays'
rows, a bare `for p in enumerate(a)`. numba's CPU JIT (`numba.njit`) runs the same function
bodies as the oracle; a seeded generator builds nestings nobody wrote by hand.
"""

from __future__ import annotations

import linecache
import random
import uuid

import numba
import numpy as np
import pytest

from gpunb import cuda
from gpunb.foundation.errors import CompileError

X = np.arange(1.0, 8.0)  # 7 items
Y = np.arange(10.0, 15.0) * 0.5  # 5 items
M = np.arange(12.0).reshape(4, 3)  # 4 rows
N = 6

BODIES = {
    "zip_range_enumerate": """
    for i, (k, v) in zip(range(n), enumerate(x)):
        s = s * 1.5 + i * 100 + k * 10 + v
""",
    "zip_enumerate_with_start_array": """
    for (i, a), b in zip(enumerate(x, 3), y):
        s = s * 1.5 + i * a + b
""",
    "enumerate_zip": """
    for i, (a, b) in enumerate(zip(x, y), -2):
        s = s * 1.5 + i * a - b
""",
    "enumerate_enumerate": """
    for i, (j, v) in enumerate(enumerate(y, 5)):
        s = s * 1.5 + i * 7 + j + v
""",
    "zip_zip_range_step": """
    for (a, b), c in zip(zip(x, y), range(20, 2, -3)):
        s = s * 1.5 + a * c - b
""",
    "enumerate_target_not_unpacked": """
    for p in enumerate(x):
        s = s * 1.5 + p[0] * p[1]
""",
    "zip_of_one": """
    for (a,) in zip(y):
        s = s * 1.5 + a
""",
    "zip_enumerate_rows": """
    for (i, row), b in zip(enumerate(m), x):
        s = s * 1.5 + i * row[0] + row[2] * b
""",
    "zip_three_with_enumerate_range": """
    for a, (k, r), b in zip(x, enumerate(range(3, n + 10)), y):
        s = s * 1.5 + a * k + r - b
""",
    "break_continue_else": """
    for i, ((k, v), w) in enumerate(zip(enumerate(x), y)):
        if k == 1:
            continue
        if v * w > 20.0:
            s += 1000.0
            break
        s = s * 1.5 + i + v * w
    else:
        s -= 1.0
""",
    "empty_range_in_zip": """
    for i, (k, v) in zip(range(n, 0), enumerate(x)):
        s += i + k + v
    s += 0.25
""",
}


def _define(body: str, name: str = "f") -> dict:
    """A function over (out, x, y, m, n) with `body` in it; its text in linecache, as a notebook
    cell's is, so gpunb reads it back and errors show its line."""
    text = f"def {name}(out, x, y, m, n):\n    s = 0.0\n{body}    out[0] = s\n"
    filename = f"<zip-enumerate-{uuid.uuid4().hex[:8]}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    ns = {"np": np}
    exec(compile(text, filename, "exec"), ns)  # noqa: S102 - that is what a cell does
    return ns


def _both(body: str) -> tuple:
    """out[0] under numba's njit and under gpunb's CPU target, from one function."""
    f = _define(body)["f"]
    expected, found = np.zeros(1), np.zeros(1)
    numba.njit(f)(expected, X, Y, M, N)
    cuda.jit(f, target="cpu")[1, 1](found, X, Y, M, N)
    return expected[0], found[0]


@pytest.mark.parametrize("case", sorted(BODIES))
def test_nested_zip_enumerate_matches_numba(case):
    expected, found = _both(BODIES[case])
    assert found == expected


# ---- a seeded generator of nestings -----------------------------------------------------------

LEAVES = ("x", "y", "m", "range(n)", "range(2, 9, 2)", "range(n, -3, -2)")


def _iterable(rng: random.Random, depth: int, names: list, top: bool = False) -> tuple:
    """(iterable source, target pattern, value expressions bound by it): a leaf, or zip/enumerate
    of smaller ones (always at the top), each item bound to a fresh name."""
    kind = rng.choice(("zip", "enumerate") if top else ("leaf", "zip", "enumerate")) \
        if depth else "leaf"
    if kind == "leaf":
        leaf = rng.choice(LEAVES)
        name = f"v{len(names)}"
        names.append(name)
        value = f"({name}[0] - {name}[1])" if leaf == "m" else name
        return leaf, name, [value]
    if kind == "enumerate":
        inner, pattern, values = _iterable(rng, depth - 1, names)
        counter = f"v{len(names)}"
        names.append(counter)
        start = rng.choice(("", ", 4", ", -1"))  # numba takes no start= keyword
        return f"enumerate({inner}{start})", f"({counter}, {pattern})", [counter, *values]
    parts = [_iterable(rng, depth - 1, names) for _ in range(rng.randint(1, 3))]
    pattern = "(" + ", ".join(p[1] for p in parts) + ("," if len(parts) == 1 else "") + ")"
    return (f"zip({', '.join(p[0] for p in parts)})", pattern,
            [v for p in parts for v in p[2]])


def _generated_body(seed: int) -> str:
    rng = random.Random(seed)
    source, pattern, values = _iterable(rng, 3, [], top=True)
    mix = " + ".join(f"{(k % 5) + 1} * {v}" for k, v in enumerate(values))
    return f"    for {pattern} in {source}:\n        s = s * 0.75 + {mix}\n"


@pytest.mark.parametrize("seed", range(32))
def test_generated_nestings_match_numba(seed):
    body = _generated_body(seed)
    expected, found = _both(body)
    assert found == pytest.approx(expected, rel=1e-12, abs=1e-12), body


# ---- what numba refuses, and what gpunb cannot loop over here ---------------------------------

REFUSED = {
    "zip_of_a_float": ("""
    for a, b in zip(x, 1.5):
        s += a * b
""", "zip(x, 1.5)", "cannot iterate over float64"),
    "float_start": ("""
    for (i, a), b in zip(enumerate(x, 1.5), y):
        s += i * a * b
""", "enumerate(x, 1.5)", "enumerate's start must be an integer"),
    "zip_keyword": ("""
    for a, b in zip(enumerate(x), y, strict=True):
        s += a[1] * b
""", "strict=True", "zip() in GPU code takes iterables and no keywords"),
    "enumerate_too_many_arguments": ("""
    for a, b in zip(enumerate(x, 1, 2), y):
        s += a[1] * b
""", "enumerate(x, 1, 2)", "enumerate() takes an iterable and an optional start"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_is_a_located_compile_error(case):
    body, line_text, message = REFUSED[case]
    f = _define(body)["f"]
    with pytest.raises(CompileError) as info:
        cuda.jit(f, target="cpu")[1, 1](np.zeros(1), X, Y, M, N)
    err = info.value
    assert message in err.message
    assert err.hint or "start" in message
    assert line_text in err.loc.source_line()
    rendered = str(err)
    assert "^" in rendered and line_text in rendered


@pytest.mark.parametrize("case", ["zip_of_a_float", "float_start", "zip_keyword",
                                  "enumerate_too_many_arguments"])
def test_numba_refuses_them_too(case):
    f = _define(REFUSED[case][0])["f"]
    # zip(..., strict=True) fails numba's zip template on an assertion: refused all the same
    with pytest.raises((numba.core.errors.TypingError, TypeError, AssertionError)):
        numba.njit(f)(np.zeros(1), X, Y, M, N)


@cuda.jit(target="cpu")
def _rows_dot_per_thread(out, m, w):
    """Each thread: its row's (counter, value) pairs zipped with w, across a barrier."""
    i = cuda.grid(1)
    shared = cuda.shared.array(4, np.float64)
    acc = 0.0
    if i < m.shape[0]:
        for j, ((k, v), c) in enumerate(zip(enumerate(m[i], 1), w)):  # noqa: B905 - kernel
            acc += (j + k) * v * c
        shared[i] = acc
    cuda.syncthreads()
    if i < m.shape[0]:
        out[i] = shared[i] + shared[(i + 1) % m.shape[0]]


def test_nested_zip_in_a_kernel_with_threads_and_a_barrier():
    w = np.array([1.0, -2.0, 0.5, 9.0])
    out = np.zeros(4)
    _rows_dot_per_thread[1, 4](out, M, w)
    per_row = [sum((j + j + 1) * M[r, j] * w[j] for j in range(3)) for r in range(4)]
    assert out.tolist() == [per_row[r] + per_row[(r + 1) % 4] for r in range(4)]


def _per_thread_zip(out, x, y):
    i = cuda.grid(1)
    if i < out.shape[0]:
        s = 0.0
        for (j, a), (b, r) in zip(enumerate(x, i), zip(y, range(i, 100, 3))):  # noqa: B905
            s = s * 0.5 + j * a + b - r
        out[i] = s


def _per_thread_expected(x, y, n):
    out = np.zeros(n)
    for i in range(n):
        s = 0.0
        for (j, a), (b, r) in zip(enumerate(x, i), zip(y, range(i, 100, 3), strict=False),
                                  strict=False):
            s = s * 0.5 + j * a + b - r
        out[i] = s
    return out


def test_the_cuda_target_compiles_nested_zip():
    ptx, _ = cuda.compile_ptx(_per_thread_zip, "void(float64[::1], float64[::1], float64[::1])")
    assert ".entry" in ptx


@pytest.mark.gpu
def test_gpu_nested_zip_enumerate_per_thread():
    out = np.zeros(64)
    cuda.jit(_per_thread_zip)[2, 32](out, X, Y)
    np.testing.assert_allclose(out, _per_thread_expected(X, Y, 64), rtol=1e-12)


def test_cpu_nested_zip_enumerate_per_thread():
    out = np.zeros(64)
    cuda.jit(_per_thread_zip, target="cpu")[2, 32](out, X, Y)
    np.testing.assert_allclose(out, _per_thread_expected(X, Y, 64), rtol=1e-12)


@cuda.jit(target="cpu")
def _checks_zip_enumerate(x, y, error):
    """numba-cuda's test_iterators form: the counter and both items agree with indexing."""
    count = 0
    for (i, xv), yv in zip(enumerate(x), y):  # noqa: B905 - kernel code
        if i != count or xv != x[i] or yv != y[i]:
            error[0] = 1 + count
        count += 1
    if count != len(x):
        error[0] = 100


def test_zip_enumerate_over_integer_arrays_as_numba_cuda_tests_it():
    error = np.zeros(1, np.int32)
    _checks_zip_enumerate[1, 1](np.asarray((10, 9, 8, 7, 6)), np.asarray((1, 2, 3, 4, 5)), error)
    assert error[0] == 0
