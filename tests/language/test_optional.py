"""Optional values (issue 26): a variable that is None on one path and a value on another is
numba's types.Optional; `x is None` / `x is not None` test it at run time, and using it as a
value checks it is not None (numba's TypeError "expected float64, got None"). numba's CPU JIT
(`numba.njit`) runs the same function bodies as the oracle.
"""

from __future__ import annotations

import linecache
import uuid

import numba
import numpy as np
import pytest

from gpunb import cuda
from gpunb.compiler.pipeline import infer_kernel
from gpunb.compiler.typed import VarKind
from gpunb.foundation import types as t
from gpunb.foundation.errors import CompileError

BODIES = {
    "if_then_value": """
    v = None
    if x[0] > 0.0:
        v = x[0] * 2.0
    if v is not None:
        out[0] = v + 1.0
    else:
        out[0] = -1.0
""",
    "none_on_the_left": """
    v = None
    if x[0] > 0.0:
        v = x[0]
    out[0] = 5.0 if None is v else v
""",
    "running_max": """
    best = None
    for a in x:
        if best is None or a > best:
            best = a
    if best is not None:
        out[0] = best
""",
    "index_of_first_negative": """
    found = None
    for i in range(x.shape[0]):
        if x[i] < 0.0:
            found = i
            break
    if found is None:
        out[0] = -1.0
    else:
        out[0] = found * 10.0
""",
    "int_and_float_join": """
    v = None
    if x[0] > 1.0:
        v = 3
    elif x[0] > 0.0:
        v = 2.5
    if v is not None:
        out[0] = v
""",
    "copied_then_tested": """
    v = None
    if x[0] > 0.0:
        v = 7.0
    w = v
    if w is None:
        out[0] = 1.0
    else:
        out[0] = w * 3.0
""",
    "reassigned_to_none_in_a_loop": """
    v = 0.0
    for a in x:
        if a < 0.0:
            v = None
        elif v is not None:
            v = v + a
    out[0] = -2.0 if v is None else v
""",
    "optional_array": """
    v = None
    if x.shape[0] > 1:
        v = x[1:]
    if v is not None:
        out[0] = v[0] + v.shape[0]
""",
    "boolean_optional": """
    flag = None
    if x[0] > 0.0:
        flag = x[0] > 2.0
    if flag is not None and flag:
        out[0] = 1.0
""",
}

INPUTS = [np.array([3.0, 1.0, 4.0]), np.array([-1.5, 2.0, 6.0]), np.array([0.5, -2.0, 1.0]),
          np.zeros(0) + np.nan, np.array([1.5])]


def _define(body: str) -> object:
    text = f"def f(out, x):\n{body}"
    filename = f"<optional-{uuid.uuid4().hex[:8]}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    ns = {"np": np}
    exec(compile(text, filename, "exec"), ns)  # noqa: S102 - that is what a cell does
    return ns["f"]


def _inputs_for(case: str) -> list:
    # x[0] must exist except in the loops over x
    return [x for x in INPUTS if x.size or case in ("running_max", "reassigned_to_none_in_a_loop",
                                                    "index_of_first_negative")]


@pytest.mark.parametrize("case", sorted(BODIES))
def test_optional_matches_numba(case):
    f = _define(BODIES[case])
    kernel, oracle = cuda.jit(f, target="cpu"), numba.njit(f)
    for x in _inputs_for(case):
        expected, found = np.full(1, -7.0), np.full(1, -7.0)
        oracle(expected, x)
        kernel[1, 1](found, x)
        assert found[0] == expected[0], (case, x)


def test_the_join_is_typed_as_numba_types_it():
    """numba's SSA names the join of v's definitions v.2: OptionalType(float64) (int64 and
    float64 promote, then None makes it Optional); gpunb's phi at the same join agrees."""
    f = _define(BODIES["int_and_float_join"])
    oracle = numba.njit(f)
    oracle(np.zeros(1), np.ones(1))
    typemap = oracle.overloads[oracle.signatures[0]].type_annotation.typemap
    numba_joins = {str(vt) for name, vt in typemap.items() if name.split(".")[0] == "v" and
                   "Optional" in str(vt)}
    assert numba_joins == {"OptionalType(float64)"}
    typed = infer_kernel(f, (t.float64[::1], t.float64[::1]), {}, device=False)
    joined = {vt for var, vt in typed.definitions("v") if var.kind is VarKind.PHI}
    assert joined == {t.Optional(t.float64)}
    assert str(t.Optional(t.float64)) == "OptionalType(float64)"


def test_using_none_as_a_value_raises_numba_type_error():
    f = _define("""
    v = None
    if x[0] > 5.0:
        v = 1.0
    out[0] = v + 1.0
""")
    with pytest.raises(TypeError, match="expected float64, got None"):
        numba.njit(f)(np.zeros(1), np.ones(1))
    with pytest.raises(TypeError, match="expected float64, got None") as info:
        cuda.jit(f, target="cpu")[1, 1](np.zeros(1), np.ones(1))
    assert "v + 1.0" in str(info.value)
    out = np.zeros(1)
    cuda.jit(f, target="cpu")[1, 1](out, np.full(1, 9.0))  # not None: no error
    assert out[0] == 2.0


def test_the_cuda_target_compiles_an_optional():
    ptx, _ = cuda.compile_ptx(_define(BODIES["running_max"]), "void(float64[::1], float64[::1])")
    assert ".entry" in ptx


@pytest.mark.gpu
def test_gpu_optional_per_thread():
    def kernel(out, x):
        i = cuda.grid(1)
        if i < out.shape[0]:
            best = None
            for j in range(i + 1):
                if x[j] > 0.0 and (best is None or x[j] < best):
                    best = x[j]
            out[i] = -1.0 if best is None else best

    x = np.array([-1.0, 4.0, -2.0, 3.0, 5.0, 1.0, -3.0, 2.0])
    out = np.zeros(8)
    cuda.jit(kernel)[1, 8](out, x)
    assert out.tolist() == [-1.0, 4.0, 4.0, 3.0, 3.0, 1.0, 1.0, 1.0]


REFUSED = {
    "none_an_array_and_a_float": ("""
    v = None
    if x[0] > 0.0:
        v = x
    elif x[0] < -1.0:
        v = 1.0
    out[0] = 1.0 if v is None else 2.0
""", "v is None", "and they meet here"),
    "two_optionals_compared_with_is": ("""
    v = None
    w = None
    if x[0] > 0.0:
        v = 1.0
        w = 2.0
    if v is w:
        out[0] = 1.0
""", "v is w", "only tests for None"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_is_a_located_compile_error(case):
    body, line_text, message = REFUSED[case]
    with pytest.raises(CompileError) as info:
        cuda.jit(_define(body), target="cpu")[1, 1](np.zeros(1), np.ones(1))
    err = info.value
    assert message in err.message
    assert err.hint
    assert line_text in err.loc.source_line()
    assert "^" in str(err)


def test_numba_refuses_the_join_too():
    # (numba accepts `v is w` on two Optionals but answers False even when both are None:
    # gpunb refuses it rather than copy that)
    with pytest.raises(numba.core.errors.TypingError):
        numba.njit(_define(REFUSED["none_an_array_and_a_float"][0]))(np.zeros(1), np.ones(1))


def test_the_readme_snippet_runs_as_written():
    """README's "None and Optional" snippet, pasted alone into a fresh namespace (CPU target)."""
    import re
    from pathlib import Path

    import gpunb

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("**None and Optional.**", 1)[1].split("\n**", 1)[0]
    (snippet,) = re.findall(r"```python\n(.*?)```", section, re.S)
    gpunb.set_target("cpu")
    try:
        exec(compile(snippet, "README.md (None and Optional)", "exec"),  # noqa: S102
             {"__name__": "__main__"})
    finally:
        gpunb.set_target(None)


PICKS = {
    "value_or_none": """
def pick(a):
    if a > 0.0:
        return a * 2.0
    return None
""",
    "optional_variable_returned": """
def pick(a):
    v = None
    if a > 1.0:
        v = a
    elif a > 0.0:
        v = 1
    return v
""",
    "none_first": """
def pick(a):
    if a <= 0.0:
        return None
    return 3
""",
    # falling off the end and a bare `return` return None too (numba's); gpunb returned an
    # unspecified value there, so `r is None` was False
    "falls_off_the_end": """
def pick(a):
    if a > 0.0:
        return a * 2.0
""",
    "bare_return": """
def pick(a):
    if a > 0.0:
        return a * 2.0
    return
""",
    "falls_off_a_loop": """
def pick(a):
    for k in range(4):
        if k * 1.0 >= a:
            return k
""",
}
CALLER = """
def f(out, x):
    for i in range(x.shape[0]):
        r = pick(x[i])
        out[i] = -1.0 if r is None else r
"""


def _with_device_function(case: str, wrap) -> object:
    """`f` calling `pick`, with pick compiled by `wrap` (numba.njit, or gpunb's device jit)."""
    text = PICKS[case] + CALLER
    filename = f"<optional-calls-{uuid.uuid4().hex[:8]}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    ns = {"np": np}
    exec(compile(text, filename, "exec"), ns)  # noqa: S102 - that is what a cell does
    ns["pick"] = wrap(ns["pick"])
    return ns["f"]


@pytest.mark.parametrize("case", sorted(PICKS))
def test_a_device_function_returning_none_or_a_value_returns_an_optional(case):
    x = np.array([2.5, -1.0, 0.5, 0.0, 4.0])
    expected, found = np.zeros(5), np.zeros(5)
    numba.njit(_with_device_function(case, numba.njit))(expected, x)
    f = _with_device_function(case, lambda g: cuda.jit(device=True)(g))
    cuda.jit(f, target="cpu")[1, 1](found, x)
    assert found.tolist() == expected.tolist()


def test_the_cuda_target_compiles_an_optional_return():
    f = _with_device_function("optional_variable_returned", lambda g: cuda.jit(device=True)(g))
    ptx, _ = cuda.compile_ptx(f, "void(float64[::1], float64[::1])")
    assert ".entry" in ptx


def _optional_across_a_barrier(out, x):
    """Each thread's Optional lives across cuda.syncthreads() (per thread in the CPU target's
    work-group loops, and in its coroutines)."""
    i = cuda.threadIdx.x
    shared = cuda.shared.array(8, np.float64)
    mine = None
    if x[i] > 0.0:
        mine = x[i]
    shared[i] = x[i]
    cuda.syncthreads()
    if mine is None:
        out[i] = -shared[(i + 1) % 8]
    else:
        out[i] = mine + shared[(i + 1) % 8]


@pytest.mark.parametrize("mode", ["workgroup", "coroutine"])
def test_an_optional_lives_across_a_barrier(mode):
    x = np.array([1.0, -2.0, 3.0, -4.0, 5.0, 0.0, 7.0, -8.0])
    out = np.zeros(8)
    cuda.jit(_optional_across_a_barrier, target="cpu", cpu_mode=mode)[1, 8](out, x)
    nxt = np.roll(x, -1)
    assert out.tolist() == np.where(x > 0.0, x + nxt, -nxt).tolist()


def _falls_off(a):
    if a > 0.0:
        return a * 2.0


def _uses_the_value(out, x):  # pick_value: bound per test (njit or a gpunb device function)
    for i in range(x.shape[0]):
        out[i, 0] = pick_value(x[i]) + 1.0  # noqa: F821 - a call's Optional as its value
        out[i, 1] = pick_value(x[i])  # noqa: F821 - stored as its value
        out[i, 2] = max(pick_value(x[i]), 3.0)  # noqa: F821


def test_an_optional_call_result_used_as_its_value(target):
    from types import FunctionType

    x = np.array([2.5, 0.5, 4.0])
    expected, found = np.zeros((3, 3)), np.zeros((3, 3))
    oracle = FunctionType(_uses_the_value.__code__, {"pick_value": numba.njit(_falls_off)})
    numba.njit(oracle)(expected, x)
    kernel = FunctionType(_uses_the_value.__code__,
                          {"pick_value": cuda.jit(device=True)(_falls_off)})
    cuda.jit(kernel)[1, 1](found, x)
    assert found.tolist() == expected.tolist()


def test_a_none_used_as_a_value_is_numbas_type_error():
    from types import FunctionType

    kernel = FunctionType(_uses_the_value.__code__,
                          {"pick_value": cuda.jit(device=True)(_falls_off)})
    with pytest.raises(TypeError, match="expected float64, got None"):
        cuda.jit(kernel, target="cpu", debug=True, opt=False)[1, 1](np.zeros((1, 3)),
                                                                   np.array([-1.0]))


def test_the_cuda_target_compiles_an_implicit_none_return(ptxas):
    from types import FunctionType

    kernel = FunctionType(_uses_the_value.__code__,
                          {"pick_value": cuda.jit(device=True)(_falls_off)})
    ptxas(cuda.compile_ptx(kernel, "void(float64[:, ::1], float64[::1])")[0])
    f = _with_device_function("falls_off_the_end", lambda g: cuda.jit(device=True)(g))
    ptxas(cuda.compile_ptx(f, "void(float64[::1], float64[::1])")[0])


@cuda.jit(device=True)
def _bump(a, i):
    if i < a.size:
        a[i] += 1
        return a[i]


def test_a_call_as_a_statement_keeps_its_optional(target):
    # its result is unused: a None there must not be numba's "expected float64, got None"
    @cuda.jit
    def kernel(a):
        _bump(a, 0)
        _bump(a, 10)  # falls off: None, discarded

    a = np.zeros(2)
    kernel[1, 1](a)
    assert a.tolist() == [1.0, 0.0]
