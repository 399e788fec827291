"""initcheck and atomics: cuda.atomic.exch writes without reading (it initialises a shared
element, as a store does); every other atomic reads the old value, so one on an element that no
thread wrote is reported, naming the atomic."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda

OPS = ("add", "sub", "max", "min", "nanmax", "nanmin", "exch", "inc", "dec", "and_", "or_",
       "xor", "cas")


@pytest.fixture(autouse=True)
def _cpu():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


@cuda.jit(racecheck=True)
def first_touch_by_atomic(out, op):
    s = cuda.shared.array(32, np.uint32)
    t = cuda.threadIdx.x
    v = np.uint32(t + 1)
    if op == 0:
        cuda.atomic.add(s, t, v)
    elif op == 1:
        cuda.atomic.sub(s, t, v)
    elif op == 2:
        cuda.atomic.max(s, t, v)
    elif op == 3:
        cuda.atomic.min(s, t, v)
    elif op == 4:
        cuda.atomic.nanmax(s, t, v)
    elif op == 5:
        cuda.atomic.nanmin(s, t, v)
    elif op == 6:
        cuda.atomic.exch(s, t, v)
    elif op == 7:
        cuda.atomic.inc(s, t, v)
    elif op == 8:
        cuda.atomic.dec(s, t, v)
    elif op == 9:
        cuda.atomic.and_(s, t, v)
    elif op == 10:
        cuda.atomic.or_(s, t, v)
    elif op == 11:
        cuda.atomic.xor(s, t, v)
    else:
        cuda.atomic.cas(s, t, np.uint32(0), v)
    cuda.syncthreads()
    out[t] = s[31 - t]


def test_exch_initialises_a_shared_element():
    out = np.zeros(32, np.uint32)
    first_touch_by_atomic[1, 32](out, OPS.index("exch"))
    np.testing.assert_array_equal(out, np.arange(32, 0, -1, dtype=np.uint32))


@pytest.mark.parametrize("name", [op for op in OPS if op != "exch"])
def test_every_other_atomic_reads_the_old_value(name):
    with pytest.raises(gpunb.InitcheckError) as info:
        first_touch_by_atomic[1, 32](np.zeros(32, np.uint32), OPS.index(name))
    text = str(info.value)
    assert f"cuda.atomic.{name} of s[0] (shared memory)" in text
    assert "only cuda.atomic.exch does not" in text
    assert info.value.loc.line == first_touch_by_atomic.py_func.__code__.co_firstlineno + 6 + \
        2 * OPS.index(name)


def test_an_atomic_after_a_write_is_clean():
    @cuda.jit(racecheck=True)
    def count(out):
        n = cuda.shared.array(1, np.int32)
        if cuda.threadIdx.x == 0:
            n[0] = 0
        cuda.syncthreads()
        cuda.atomic.add(n, 0, 1)
        cuda.syncthreads()
        out[cuda.threadIdx.x] = n[0]

    out = np.zeros(32, np.int32)
    count[1, 32](out)
    assert (out == 32).all()
