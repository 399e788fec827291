"""numba's type names as gpunb.types spells them: C aliases, domains, UniTuple/Tuple."""

from __future__ import annotations

import numpy as np

from gpunb import cuda, types  # types: numba.cuda.types (gpunb.cuda.types)


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


def test_tuple_types_are_sequences_like_numbas():
    pair = types.Tuple((types.float64, types.int32))
    triple = types.UniTuple(types.float32, 3)
    assert isinstance(triple, types.UniTuple) and not isinstance(pair, types.UniTuple)
    assert isinstance(pair, types.Tuple) and isinstance(triple, types.Tuple)
    assert len(pair) == 2 and pair[1] == types.int32 and list(triple) == [types.float32] * 3
    assert triple.dtype == types.float32 and triple.count == 3 and pair.types == pair.items
    assert bool(types.Tuple(()))  # a type is always true, even the empty tuple's
    assert types.float32[:] == types.Array(types.float32, 1, "A")  # Type.__getitem__ stays
