"""Self-recursive device functions, as numba-cuda compiles them: with a declared signature, an
implicit one (the return type from the base case), defined in a closure; runaway recursion and a
return type that never settles are errors with numba's wording. Usecases adapted from
numba-cuda's recursion_usecases.py (BSD-2-Clause, NVIDIA)."""

import numpy as np
import pytest

from gpunb import CompileError, cuda


@cuda.jit("i8(i8)", device=True)
def fib1(n):
    if n < 2:
        return n
    return fib1(n - 1) + fib1(n - 2)


def make_fib2():
    @cuda.jit("i8(i8)", device=True)
    def fib2(n):
        if n < 2:
            return n
        return fib2(n - 1) + fib2(n - 2)

    return fib2


fib2 = make_fib2()


@cuda.jit(device=True)
def fib3(n):
    if n < 2:
        return n
    return fib3(n - 1) + fib3(n - 2)


@cuda.jit(device=True)
def runaway_self(x):
    return runaway_self(x)


@cuda.jit(device=True)
def growing_tuple(x):
    if x == 0:
        return (1,)
    return (growing_tuple(x - 1), 1)


@cuda.jit(device=True)
def recursive_with_barrier(n):
    cuda.syncthreads()
    if n == 0:
        return 0
    return recursive_with_barrier(n - 1)


def fib_kernel(cfunc):
    @cuda.jit
    def kernel(r, x):
        r[0] = cfunc(x[0])

    return kernel


@pytest.mark.parametrize("cfunc", [fib1, fib2, fib3], ids=["global_explicit_sig",
                                                           "inner_explicit_sig",
                                                           "global_implicit_sig"])
def test_fibonacci(target, cfunc):
    kernel = fib_kernel(cfunc)
    r = np.zeros(1, np.int64)
    kernel[1, 1](r, np.asarray([10], np.int64))
    assert r[0] == 55
    assert "call" in kernel.inspect_ptx()  # a real call, not an unrolled one


def test_runaway_recursion_is_a_located_error(target):
    # a declared signature compiles at decoration (as numba does): the error comes there
    with pytest.raises(CompileError, match="cannot type infer runaway recursion") as info:
        @cuda.jit("void()")
        def kernel():
            runaway_self(1)

    assert info.value.loc.line == runaway_self.py_func.__code__.co_firstlineno + 2


def test_a_return_type_that_never_settles_is_an_error(target):
    with pytest.raises(CompileError, match="does not converge"):
        @cuda.jit("void()")
        def kernel():
            growing_tuple(100)



def test_barrier_in_recursion_on_the_cpu_target():
    @cuda.jit(target="cpu")
    def kernel(r):
        r[0] = recursive_with_barrier(3)

    with pytest.raises(CompileError, match="barrier"):
        kernel[1, 1](np.zeros(1, np.int64))


@cuda.jit(device=True)
def fill_down(a, n):  # a recursive procedure: no value returned, no explicit return
    if n >= 0:
        a[n] = n
        fill_down(a, n - 1)


@cuda.jit(device=True)
def fill_up(a, n):  # a bare `return` as the base case
    if n == a.size:
        return
    a[n] = 2 * n
    fill_up(a, n + 1)


@cuda.jit
def fill_both(a, b):
    fill_down(a, a.size - 1)
    fill_up(b, 0)


def test_recursive_procedures(target):
    a, b = np.zeros(5), np.zeros(4)
    fill_both[1, 1](a, b)
    assert a.tolist() == [0, 1, 2, 3, 4] and b.tolist() == [0, 2, 4, 6]


def test_growing_tuple_does_not_converge():
    # numba-cuda's test_growing_return_tuple: its message, not "runaway recursion"
    @cuda.jit(device=True)
    def make_list(n):
        if n <= 0:
            return None
        return (n, make_list(n - 1))

    with pytest.raises(CompileError, match="does not converge"):
        @cuda.jit("void()")
        def kernel():
            make_list(100)


@cuda.jit(device=True)
def fact_or_none(n):
    if n > 1:
        return n * fact_or_none(n - 1)
    if n >= 0:
        return 1
    # falls off the end: None (numba's Optional), for a negative n


def test_recursion_beside_an_implicit_none_return(target):
    # the recursive call, met before the value returns, was typed None ("unsupported operand
    # types for *: int64 and none"); numba types it as the Optional the function returns
    # (numba.njit of the same source: 120 for 5, None for -3)
    @cuda.jit
    def kernel(out, x):
        for i in range(x.size):
            r = fact_or_none(x[i])
            out[i] = -1 if r is None else r

    x = np.array([5, 0, -3, 1], np.int64)
    out = np.zeros(4, np.int64)
    kernel[1, 1](out, x)
    assert out.tolist() == [120, 1, -1, 1]


# ---- mutual recursion without signatures, as numba's njit types it ------------------------------

@cuda.jit(device=True)
def is_even(n):
    if n == 0:
        return True
    return is_odd(n - 1)


@cuda.jit(device=True)
def is_odd(n):
    if n == 0:
        return False
    return is_even(n - 1)


@cuda.jit(device=True)
def grows(n):  # the recursive call comes before any return that does not recurse
    if n > 0:
        return doubles(n - 1) + 1
    return 0


@cuda.jit(device=True)
def doubles(n):
    if n > 0:
        return grows(n - 1) * 2
    return 1


@cuda.jit(device=True)
def int_then_float(n):  # int64 assumed first; the cycle makes it float64
    if n <= 0:
        return 1
    return float_side(n - 1) * 2


@cuda.jit(device=True)
def float_side(n):
    if n <= 0:
        return 0.5
    return int_then_float(n - 1) + 1


@cuda.jit(device=True)
def three_a(n):
    if n <= 0:
        return 0
    return three_b(n - 1) + 1


@cuda.jit(device=True)
def three_b(n):
    return three_c(n) * 3


@cuda.jit(device=True)
def three_c(n):
    return three_a(n) - 1


def mutual_kernel(out, n):
    out[0] = is_even(n)
    out[1] = is_odd(n)
    out[2] = grows(n)
    out[3] = doubles(n)
    out[4] = int_then_float(n)
    out[5] = float_side(n)
    out[6] = three_a(n)


def test_mutual_recursion_matches_numba(target):
    from numba import njit

    kernel = cuda.jit(mutual_kernel)
    names = ("is_even", "is_odd", "grows", "doubles", "int_then_float", "float_side", "three_a")
    g = mutual_kernel.__globals__
    cycle = names + ("three_b", "three_c")
    gpu = {name: g[name] for name in cycle}
    for n in (0, 1, 6, 7):
        out = np.zeros(7)
        kernel[1, 1](out, n)
        # the values Python gives (numba's njit gives float_side(1) as 2.0's bits read as an
        # int64, 4.6e18: its own mutual-recursion type-change bug, numba-cuda skips that test)
        g.update({name: f.py_func for name, f in gpu.items()})
        try:
            want = [float(g[name](n)) for name in names]
        finally:
            g.update(gpu)
        assert list(out) == want, n
    # the return types numba's njit infers for the cycle, entered where gpunb's kernel does
    ns = {fn.py_func.__name__: njit(fn.py_func) for fn in (int_then_float, float_side, grows,
                                                            doubles)}
    saved = {name: g[name] for name in ns}
    g.update(ns)
    try:
        ns["int_then_float"](3)
        ns["grows"](3)
    finally:
        g.update(saved)
    types = {name: str(ns[name].nopython_signatures[0].return_type)
             for name in ("int_then_float", "float_side", "grows", "doubles")}
    assert types == {"int_then_float": "float64", "float_side": "float64", "grows": "int64",
                     "doubles": "int64"}


@cuda.jit(device=True)
def head_of_cycle(n):  # int64 from its base case, float64 once the cycle is typed
    if n <= 0:
        return 1
    x = passes_through(n - 1)
    y = calls_the_cycle(n - 1)  # typed after passes_through, on the same assumption
    return x * 0.5 + y


@cuda.jit(device=True)
def passes_through(n):
    return head_of_cycle(n)


@cuda.jit(device=True)
def calls_the_cycle(n):
    return passes_through(n)


def test_a_function_reusing_one_typed_on_an_assumption_is_typed_again(target):
    # calls_the_cycle used passes_through's int64 typing, made on head_of_cycle's first
    # assumption: kept, it stored a double into an i64 (an internal compiler error)
    @cuda.jit
    def kernel(out, n):
        out[0] = head_of_cycle(n)
        out[1] = calls_the_cycle(n)

    def python(n):
        return 1 if n <= 0 else python(n - 1) * 1.5

    out = np.zeros(2)
    for n in range(5):
        kernel[1, 1](out, n)
        assert list(out) == [python(n), python(n)], n


def test_mutual_recursion_is_a_real_call_in_ptx(ptxas):
    from gpunb.foundation.types import float64, int64

    ptx, _ = cuda.compile_ptx(mutual_kernel, (float64[::1], int64))
    assert "call" in ptx
    ptxas(ptx)


def test_a_cycle_entered_where_no_return_ends_it_is_runaway_as_in_numba(target):
    # numba's njit: three_a(3) compiles (its base case types the cycle), three_b(3) first
    # says 'cannot type infer runaway recursion'; gpunb's kernels alike
    @cuda.jit
    def kernel(out, n):
        out[0] = three_b(n)

    with pytest.raises(CompileError, match="cannot type infer runaway recursion") as info:
        kernel[1, 1](np.zeros(1), 3)
    assert info.value.loc.line == three_b.py_func.__code__.co_firstlineno + 2


def test_mutual_runaway_recursion_is_a_located_error(target):
    @cuda.jit(device=True)
    def ping(n):
        return pong(n) + 1

    @cuda.jit(device=True)
    def pong(n):
        return ping(n) * 2

    @cuda.jit
    def kernel(out):
        out[0] = ping(3)

    with pytest.raises(CompileError, match="cannot type infer runaway recursion") as info:
        kernel[1, 1](np.zeros(1, np.int64))
    assert info.value.loc.line == ping.py_func.__code__.co_firstlineno + 2


@pytest.mark.gpu
def test_mutual_recursion_on_the_gpu():
    import gpunb

    gpunb.set_target("cuda")
    try:
        test_mutual_recursion_matches_numba("cuda")
    finally:
        gpunb.set_target(None)
