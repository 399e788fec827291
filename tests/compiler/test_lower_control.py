"""Control flow and tuples in kernels: if/elif/else, range loops (1-3 args, negative and runtime
steps), while, break/continue, loop else, early return, ternaries, short-circuit and/or/not,
chained comparisons, augmented assignment, tuple pack/unpack/return; compared with Python."""

import numpy as np
import pytest

from gpunb import cuda, types

# ---- kernels --------------------------------------------------------------------------------


@cuda.jit
def classify(out, x):
    i = cuda.grid(1)
    if i >= x.size:
        return
    v = x[i]
    if v < -10:
        out[i] = 0
    elif v < 0:
        out[i] = 1
    elif v == 0:
        out[i] = 2
    else:
        out[i] = 3


@cuda.jit
def range_forms(out, n, start, stop, step):
    s = 0
    for k in range(n):
        s += k
    out[0] = s
    s = 0
    for k in range(start, stop):
        s += k
    out[1] = s
    s = 0
    c = 0
    for k in range(start, stop, step):  # step known only at run time, either sign
        s += k * (c + 1)
        c += 1
    out[2] = s
    out[3] = c
    s = 0
    for k in range(10, 0, -3):  # constant negative step
        s = s * 100 + k
    out[4] = s
    last = -99
    for k in range(stop, start, -1):
        last = k
    out[5] = last
    s = 0
    for k in range(stop - 1, start - 1, -2):
        s += k
    out[6] = s


def range_forms_expected(n, start, stop, step):
    out = [sum(range(n)), sum(range(start, stop))]
    s = c = 0
    for k in range(start, stop, step):
        s += k * (c + 1)
        c += 1
    out += [s, c]
    s = 0
    for k in range(10, 0, -3):
        s = s * 100 + k
    out.append(s)
    last = -99
    for k in range(stop, start, -1):
        last = k
    out.append(last)
    out.append(sum(range(stop - 1, start - 1, -2)))
    return out


@cuda.jit
def collatz(out, x):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        steps = 0
        while v != 1:
            if v % 2 == 0:
                v //= 2
            else:
                v = 3 * v + 1
            steps += 1
        out[i] = steps


@cuda.jit
def loop_control(out, x, limit):
    i = cuda.grid(1)
    if i < x.size:
        total = 0
        for k in range(x[i]):
            if k % 3 == 0:
                continue
            if total > limit:
                break
            total += k
        else:
            total = -total  # runs only when the loop did not break
        out[i, 0] = total
        j = 0
        found = -1
        while j < 10:
            if j * j == x[i]:
                found = j
                break
            j += 1
        else:
            found = -2
        out[i, 1] = found
        # nested loops: break leaves the inner loop only
        pairs = 0
        for a in range(4):
            for b in range(4):
                if b > a:
                    break
                if (a + b) % 2 == 1:
                    continue
                pairs += 1
        out[i, 2] = pairs


def loop_control_expected(v, limit):
    total = 0
    for k in range(v):
        if k % 3 == 0:
            continue
        if total > limit:
            break
        total += k
    else:
        total = -total
    found = -1
    j = 0
    while j < 10:
        if j * j == v:
            found = j
            break
        j += 1
    else:
        found = -2
    pairs = 0
    for a in range(4):
        for b in range(4):
            if b > a:
                break
            if (a + b) % 2 == 1:
                continue
            pairs += 1
    return [total, found, pairs]


@cuda.jit(device=True)
def first_negative(x, n):
    for k in range(n):
        if x[k] < 0:
            return k  # early return from inside a loop
    return -1


@cuda.jit
def early_returns(out, x):
    i = cuda.grid(1)
    if i >= out.size:
        return
    if i == 0:
        out[i] = first_negative(x, x.size)
        return
    out[i] = i * 10


@cuda.jit
def ternaries(out, x):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        out[i, 0] = v if v > 0 else -v
        out[i, 1] = 1.5 if v > 2 else v  # weak literal joins the float32 branch
        out[i, 2] = (v * 2 if v < -1 else v / 2) if v != 0 else 100.0


@cuda.jit(device=True)
def bump(counter, value):
    cuda.atomic.add(counter, 0, 1)
    return value


@cuda.jit
def short_circuit(out, counter, x):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        # the right operand runs only when the left does not decide (counted with atomics)
        if v > 0 and bump(counter, v) > 5:
            out[i, 0] = 1
        if v > 0 or bump(counter, v) < -5:
            out[i, 1] = 1
        if not (v > 0):
            out[i, 2] = 1
        out[i, 3] = v and 7  # value semantics of and/or, as in Python
        out[i, 4] = v or 7
        out[i, 5] = not v
        # i < x.size protects the access: and stops before the out-of-range index
        j = i + 1
        if j < x.size and x[j] > v:
            out[i, 6] = 1


@cuda.jit
def chained(out, counter, x):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        out[i, 0] = -3 <= v < 4
        out[i, 1] = 0 < v > -2
        out[i, 2] = 1 < 2 < v <= 9 != v
        # the middle operand is evaluated once even though it is compared twice
        out[i, 3] = 0 <= bump(counter, v) < 5


@cuda.jit
def augmented(out_i, out_f, a, b, m):
    i = cuda.grid(1)
    if i < a.size:
        x = a[i]
        y = b[i]
        r = x
        r += y
        r -= 3
        r *= y
        r //= 4
        r %= 1000
        r **= 2
        r <<= 3
        r >>= 1
        r &= 0xFFFF
        r |= 0x10000
        r ^= 0x5555
        out_i[i, 0] = r
        f = 1.0 * x
        f /= 4
        f += 0.5
        f -= y
        f *= 2
        out_f[i] = f
        out_i[i, 1] = 5
        out_i[i, 1] += x  # array element targets
        out_i[i, 1] *= 2
        m[i % 4, 1] += 1  # a 2-d element, shared by several threads of one block, made safe below
        out_i[i, 2] = 0
        for k in range(3):
            out_i[i, 2] += k * x


@cuda.jit(device=True)
def minmax(a, b):
    if a < b:
        return a, b
    return b, a


@cuda.jit(device=True)
def three(x):
    return x, x * 2, (x + 1, x - 1)


@cuda.jit
def tuples(out, x, pair):
    i = cuda.grid(1)
    if i < x.size:
        a = x[i]
        b = x[(i + 1) % x.size]
        a, b = b, a  # swap through a tuple
        lo, hi = minmax(a, b)
        t = (lo, hi, lo + hi)
        u = t + (7,)
        first, second, (third, fourth) = three(a)
        p, q = pair
        acc = 0
        for item in t:  # loop over a homogeneous tuple
            acc += item
        out[i, 0] = lo
        out[i, 1] = hi
        out[i, 2] = t[2]
        out[i, 3] = len(u)
        out[i, 4] = u[-1]
        out[i, 5] = first + second * 10 + third * 100 + fourth * 1000
        out[i, 6] = p * q
        out[i, 7] = acc
        n, = x.shape
        out[i, 8] = n


# ---- tests ----------------------------------------------------------------------------------

def test_if_elif_else(target):
    x = np.array([-20, -10, -1, 0, 1, 50, -11], np.int64)
    out = np.full(x.size, -1, np.int64)
    classify[1, 32](out, x)  # threads beyond x.size return early
    assert out.tolist() == [0, 1, 1, 2, 3, 3, 0]


@pytest.mark.parametrize("n,start,stop,step", [
    (0, 0, 0, 1), (5, 2, 9, 1), (7, 2, 9, 3), (3, 9, 2, -1), (3, 9, 2, -2), (3, 20, -5, -7),
    (1, 5, 5, 2), (1, 5, 5, -2), (4, -3, 4, 2), (10, 9, 2, 4), (2, 2, 9, -1),
])
def test_range_forms(target, n, start, stop, step):
    out = np.zeros(7, np.int64)
    range_forms[1, 1](out, n, start, stop, step)
    assert out.tolist() == range_forms_expected(n, start, stop, step)


def test_while_loop(target):
    x = np.arange(1, 101, dtype=np.int64)
    out = np.zeros_like(x)
    collatz[2, 64](out, x)

    def steps(v):
        n = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            n += 1
        return n

    assert out.tolist() == [steps(v) for v in range(1, 101)]


def test_break_continue_else(target):
    x = np.array([0, 1, 4, 9, 10, 30, 49, 81, 100], np.int64)
    out = np.zeros((x.size, 3), np.int64)
    loop_control[1, 16](out, x, 50)
    assert out.tolist() == [loop_control_expected(int(v), 50) for v in x]


def test_early_return(target):
    x = np.array([3.0, 2.0, -1.0, -5.0], np.float32)
    out = np.zeros(6, np.int64)
    early_returns[1, 32](out, x)
    assert out.tolist() == [2, 10, 20, 30, 40, 50]
    x[:] = 1.0
    early_returns[1, 32](out, x)
    assert out[0] == -1


def test_ternaries(target):
    x = np.array([-3.0, -0.5, 0.0, 1.0, 2.5], np.float32)
    out = np.zeros((5, 3), np.float32)
    ternaries[1, 8](out, x)
    assert out[:, 0].tolist() == [3.0, 0.5, 0.0, 1.0, 2.5]
    assert out[:, 1].tolist() == [-3.0, -0.5, 0.0, 1.0, 1.5]
    assert out[:, 2].tolist() == [-6.0, -0.25, 100.0, 0.5, 1.25]


def test_short_circuit(target):
    x = np.array([-2, 0, 3, 9, 1], np.int64)
    out = np.zeros((5, 7), np.int64)
    counter = np.zeros(1, np.int64)
    short_circuit[1, 8](out, counter, x)
    # bump() ran for the 3 positive values in `and`, for the 2 non-positive ones in `or`
    assert counter[0] == 3 + 2
    assert out[:, 0].tolist() == [0, 0, 0, 1, 0]
    assert out[:, 1].tolist() == [0, 0, 1, 1, 1]
    assert out[:, 2].tolist() == [1, 1, 0, 0, 0]
    assert out[:, 3].tolist() == [int(v and 7) for v in x]
    assert out[:, 4].tolist() == [int(v or 7) for v in x]
    assert out[:, 5].tolist() == [int(not v) for v in x]
    assert out[:, 6].tolist() == [1, 1, 1, 0, 0]


def test_chained_comparisons(target):
    x = np.array([-5, -3, 0, 3, 4, 9, 10], np.int64)
    out = np.zeros((x.size, 4), np.int64)
    counter = np.zeros(1, np.int64)
    chained[1, 8](out, counter, x)
    assert counter[0] == x.size  # middle operand evaluated once per thread
    assert out[:, 0].tolist() == [int(-3 <= v < 4) for v in x]
    assert out[:, 1].tolist() == [int(0 < v > -2) for v in x]
    assert out[:, 2].tolist() == [int(1 < 2 < v <= 9 != v) for v in x]
    assert out[:, 3].tolist() == [int(0 <= v < 5) for v in x]


def test_augmented_assignment(target):
    a = np.array([5, -7, 100, 0, 33], np.int64)
    b = np.array([3, 2, -9, 1, 4], np.int64)
    out_i = np.zeros((5, 3), np.int64)
    out_f = np.zeros(5, np.float64)
    m = np.zeros((4, 2), np.int64)
    augmented[1, 1](out_i[:1], out_f[:1], a[:1], b[:1], m)  # one thread: no race on m
    augmented[1, 8](out_i, out_f, a, b, np.zeros((4, 2), np.int64))
    for k in range(5):
        x, y = int(a[k]), int(b[k])
        r = x
        r += y
        r -= 3
        r *= y
        r //= 4
        r %= 1000
        r **= 2
        r <<= 3
        r >>= 1
        r &= 0xFFFF
        r |= 0x10000
        r ^= 0x5555
        f = 1.0 * x
        f /= 4
        f += 0.5
        f -= y
        f *= 2
        assert out_i[k].tolist() == [r, (5 + x) * 2, 3 * x], k
        assert out_f[k] == f
    assert m.tolist() == [[0, 1], [0, 0], [0, 0], [0, 0]]


def test_tuples(target):
    x = np.array([4, 1, 9, 2], np.int64)
    out = np.zeros((4, 9), np.int64)
    tuples[1, 4](out, x, (3, 5))
    for i in range(4):
        a, b = int(x[(i + 1) % 4]), int(x[i])
        lo, hi = min(a, b), max(a, b)
        assert out[i].tolist() == [lo, hi, lo + hi, 4, 7,
                                   a + 2 * a * 10 + (a + 1) * 100 + (a - 1) * 1000, 15,
                                   2 * (lo + hi), 4]


PTX_CASES = [
    (classify, "void(int64[::1], int64[::1])"),
    (range_forms, "void(int64[::1], int64, int64, int64, int64)"),
    (collatz, "void(int64[::1], int64[::1])"),
    (loop_control, "void(int64[:, ::1], int64[::1], int64)"),
    (early_returns, "void(int64[::1], float32[::1])"),
    (ternaries, "void(float32[:, ::1], float32[::1])"),
    (short_circuit, "void(int64[:, ::1], int64[::1], int64[::1])"),
    (chained, "void(int64[:, ::1], int64[::1], int64[::1])"),
    (augmented, "void(int64[:, ::1], float64[::1], int64[::1], int64[::1], int64[:, ::1])"),
    (tuples, (types.int64[:, ::1], types.int64[::1], types.Tuple((types.int64, types.int64)))),
]


@pytest.mark.parametrize("kernel,sig", PTX_CASES, ids=[k.__name__ for k, _ in PTX_CASES])
def test_ptx(check_ptx, kernel, sig):
    check_ptx(kernel, sig)


# ---- assert: accepted as numba.cuda does, compiled to nothing -----------------------------------


@cuda.jit
def with_asserts(a):
    i = cuda.grid(1)
    assert i < a.size
    assert i >= 0, "negative thread index"
    assert a.size > 1000, "false, but never evaluated"  # as numba.cuda without debug checks
    a[i] = i + 1


def test_assert_is_accepted_and_a_no_op(target):
    a = np.zeros(4)
    with_asserts[1, 4](a)
    assert a.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_assert_ptx(check_ptx):
    check_ptx(with_asserts, "void(float64[::1])")


# ---- zip over ranges and 1-d arrays -----------------------------------------------------------


@cuda.jit
def zip_loops(out, a, b, n, step):
    s = 0
    for x, y in zip(range(3), range(10, 13)):  # noqa: B905 - kernel code, as users write it
        s += x * y
    out[0] = s
    s = 0
    for i, v in zip(range(n), a):  # noqa: B905
        s += i * v
    out[1] = s
    s = 0
    for x, v, w in zip(range(20, -20, step), a, b):  # noqa: B905
        s += x * v - w
    out[2] = s
    s = 0
    for pair in zip(b, range(100, 0, -7)):  # noqa: B905
        s += pair[0] * pair[1]
    out[3] = s
    s = 0
    for x, y in zip(range(n), range(n, 0, -1)):  # noqa: B905
        if x == 5:
            break
        s += x - y
    else:
        s = -1000
    out[4] = s
    s = 0
    for _x, _y in zip(range(0), a):  # noqa: B905
        s += 1
    else:
        s += 7
    out[5] = s


def zip_loops_reference(a, b, n, step):
    z = zip  # the loops below are the kernel's, read by Python
    out = [sum(x * y for x, y in z(range(3), range(10, 13)))]
    out.append(sum(i * int(v) for i, v in z(range(n), a)))
    out.append(sum(x * int(v) - int(w) for x, v, w in z(range(20, -20, step), a, b)))
    out.append(sum(int(p) * q for p, q in z(b, range(100, 0, -7))))
    s = 0
    for x, y in z(range(n), range(n, 0, -1)):
        if x == 5:
            break
        s += x - y
    else:
        s = -1000
    out.append(s)
    out.append(7)
    return out


@pytest.mark.parametrize("n,step", [(4, -3), (9, -1), (0, -5), (12, 4), (3, 1)])
def test_zip_over_ranges_and_arrays(target, n, step):
    a = np.arange(1, 9, dtype=np.int64)
    b = np.arange(30, 40, dtype=np.int64)
    out = np.zeros(6, np.int64)
    zip_loops[1, 1](out, a, b, n, step)
    assert out.tolist() == zip_loops_reference(a, b, n, step)


def test_zip_ptx(check_ptx):
    check_ptx(zip_loops, "void(int64[::1], int32[:], float64[::1], int64, int64)")


def _forever_loops_with_else(a):
    i = 0
    while True:
        i += 1
        if i > a[1]:
            break
    else:  # never runs: `while True` ends only by break
        i = 100
    a[0] = i
    for j in range(3):
        while 1:
            if j == 1:
                break
            a[2] += 1
            break
        else:
            a[2] = 99


def test_else_of_a_forever_while_is_never_run(target):
    # inference never typed that else (it cannot run), but lowering emitted it: an internal
    # compiler error (KeyError on its first expression)
    from numba import njit

    got, expected = np.array([0, 5.0, 0]), np.array([0, 5.0, 0])
    cuda.jit(_forever_loops_with_else)[1, 1](got)
    njit(_forever_loops_with_else)(expected)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, [6, 5, 2])


def test_else_of_a_forever_while_ptx(check_ptx):
    check_ptx(_forever_loops_with_else, (types.float64[:],))


def _never_loops(a):
    while False:
        a[0] = undefined_name  # noqa: F821 - Python's compiler drops this body
    else:
        a[1] = 2
    while 0:
        cuda.syncthreads()
    a[2] = 3


def test_a_while_false_body_is_dropped_as_python_drops_it(target):
    # numba never sees it (CPython's compiler removes it); gpunb typed it: a NameError
    from numba import njit

    got, expected = np.zeros(3), np.zeros(3)
    cuda.jit(_never_loops)[1, 1](got)
    njit(_never_loops)(expected)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, [0, 2, 3])


def test_a_while_false_ptx(check_ptx):
    check_ptx(_never_loops, (types.float64[:],))


@cuda.jit(device=True)
def _returns_on_both_branches(a, b):
    if a:
        if b:
            return 1
        else:
            return 2
        return b * 3  # dead: both branches above returned (inference does not type it)
    return 0


@cuda.jit
def _call_both_branches(out, a, b):
    out[0] = _returns_on_both_branches(a, b)


def test_code_after_an_if_whose_branches_all_return_is_dead_not_a_crash(ptxas):
    """It was lowered into a block nothing reaches, its expressions untyped: an internal
    compiler error (KeyError on the node) instead of a kernel."""
    out = np.zeros(1, np.int64)
    for a, b, expect in ((1, 1, 1), (1, 0, 2), (0, 1, 0)):
        _call_both_branches[1, 1](out, a, b)
        assert out[0] == expect
    ptxas(_call_both_branches.inspect_asm((types.int64[::1], types.int64, types.int64)))
