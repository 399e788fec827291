"""numba's type names as gpunb.types spells them: C aliases, domains, UniTuple/Tuple."""

from __future__ import annotations

import numpy as np

from gpunb import cuda
from gpunb.foundation import types


def test_domains_and_aliases():
    assert types.int32 in types.signed_domain and types.uint8 in types.unsigned_domain
    assert types.integer_domain == types.signed_domain | types.unsigned_domain
    assert types.number_domain >= types.real_domain | types.complex_domain
    assert types.longlong is types.int64 and types.ulonglong is types.uint64
    assert types.intc is types.int32 and types.short is types.int16


def test_unituple_is_a_tuple_type():
    assert types.UniTuple(types.int32, 3) == types.Tuple((types.int32,) * 3)
    assert types.Tuple([types.int32, types.float64]) == types.Tuple((types.int32, types.float64))
    hash(types.Tuple([types.int32]))


def test_unituple_in_a_declared_signature():
    @cuda.jit(types.void(types.float64[::1], types.UniTuple(types.float64, 2)), target="cpu")
    def k(out, pair):
        out[0] = pair[0] + pair[1]

    out = np.zeros(1)
    k[1, 1](out, (1.5, 2.0))
    assert out[0] == 3.5
