"""Device functions that fused kernels call where numpy's semantics differ from Python's.

Written in the kernel language and compiled with each fused kernel that uses them (the cache
fingerprints them like any device function). Arguments arrive already converted to the dtype of
numpy's loop; callers convert the result back to numpy's result dtype.
"""

from __future__ import annotations

import math

import numpy as np

from gpunb.jit.decorator import jit


@jit(device=True)
def maximum(a, b):
    # np.maximum: a NaN on either side wins (Python's max keeps the first argument)
    return a if (a >= b or a != a) else b


@jit(device=True)
def minimum(a, b):
    return a if (a <= b or a != a) else b


@jit(device=True)
def fmax(a, b):
    # np.fmax: NaN loses unless both are NaN
    return a if (a >= b or b != b) else b


@jit(device=True)
def fmin(a, b):
    return a if (a <= b or b != b) else b


@jit(device=True)
def sign_float(a):
    if a > 0:
        return 1.0
    if a < 0:
        return -1.0
    return a  # 0 stays 0, NaN stays NaN


@jit(device=True)
def sign_int(a):
    if a > 0:
        return 1
    if a < 0:
        return -1
    return 0


@jit(device=True)
def rint(a):
    # round half to even, like np.rint; infinities and NaN pass through
    if not math.isfinite(a):
        return a
    whole = np.floor(a)
    frac = a - whole
    if frac > 0.5 or (frac == 0.5 and whole % 2 != 0):
        whole += 1
    return whole


@jit(device=True)
def fmod_int(a, b):
    # C's truncated remainder (np.fmod on integers); 0 for a zero divisor, as numpy
    if b == 0:
        return a * 0
    r = a % b
    if r != 0 and (r < 0) != (a < 0):
        r -= b
    return r


@jit(device=True)
def left_shift(a, b):
    # numpy: shifting by a negative count or by at least the width gives 0
    if b < 0 or b >= 64:
        return a * 0
    return a << b


@jit(device=True)
def right_shift(a, b):
    if b < 0 or b >= 64:
        return a * 0 - 1 if a < 0 else a * 0
    return a >> b


@jit(device=True)
def reciprocal_int(a, of_zero):
    # C integer division 1 / a; for a == 0 numpy returns what x86 does for its dtype (of_zero)
    if a == 1:
        return 1
    if a == -1:
        return -1
    if a == 0:
        return of_zero
    return 0


@jit(device=True)
def signbit(a):
    return math.copysign(1.0, a) < 0


@jit(device=True)
def heaviside(x, h0):
    if x != x:
        return x
    if x < 0:
        return 0.0
    if x > 0:
        return 1.0
    return h0


@jit(device=True)
def logaddexp(x, y):
    if x == y:
        return x + math.log(2.0)  # log(2 e^x), exact for infinities of one sign
    d = x - y
    if d > 0:
        return x + math.log1p(math.exp(-d))
    if d <= 0:
        return y + math.log1p(math.exp(d))
    return d  # NaN


@jit(device=True)
def logaddexp2(x, y):
    if x == y:
        return x + 1
    d = x - y
    if d > 0:
        return x + math.log1p(math.exp2(-d)) / math.log(2.0)
    if d <= 0:
        return y + math.log1p(math.exp2(d)) / math.log(2.0)
    return d


@jit(device=True)
def power_by_scalar(x, y):
    # numpy's float power loop with a scalar exponent: sqrt for 0.5, x * x for 2, 1 / x for -1
    # (np.array([-inf]) ** 0.5 is nan, not pow's inf)
    if y == 2:
        return x * x
    if y == 0.5:
        return math.sqrt(x)
    if y == -1:
        return 1 / x
    return x ** y


HELPERS = {name: globals()[name] for name in (
    "maximum", "minimum", "fmax", "fmin", "sign_float", "sign_int", "rint", "fmod_int",
    "left_shift", "right_shift", "reciprocal_int", "signbit", "heaviside", "logaddexp",
    "logaddexp2", "power_by_scalar")}
