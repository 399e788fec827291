"""Signature text is a cache-key part: two different argument types must never print alike.

gpunb/jit/slow_path.py keys a specialisation by `str(Signature)`, so a type whose text forgets
something (a record's offsets, a layout) lets one specialisation's code serve another's arguments.
Hypothesis draws types from small domains (so near-equal pairs are common) and checks that equal
text means equal types; the examples are the collisions found so far.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpunb.foundation import types as t
from gpunb.foundation.tensor_types import TensorMap
from gpunb.runtime.typeof import typeof

SCALARS = (t.boolean, t.int8, t.int16, t.int32, t.int64, t.uint8, t.uint16, t.uint32, t.uint64,
           t.float16, t.float32, t.float64, t.complex64, t.complex128, t.bfloat16, t.fp8_e5m2,
           t.fp8_e4m3, t.fp8_e8m0)
# field names that try to look like the text around them
NAMES = ("a", "b", "a: int8 @0, b", "x)", "a; size=1", "'a'", "", "int8")
# the Types that typeof() can return, or that can appear inside one
ARGUMENT_TYPES = {t.Boolean, t.Integer, t.Float, t.Complex, t.Array, t.Tuple, t.Record,
                  t.InlineArray, t.BFloat16, t.FP8, t.DateTime, t.CharSeq}  # and TensorMap
# compile-time only (an Optional is inferred inside a function; calls unwrap it)
NOT_ARGUMENTS = {t.NoneType, t.StringLiteral, t.Group, t.Optional}

# datetime64/timedelta64 of every unit numpy names, fixed-width byte and unicode strings
datetimes = st.builds(t.DateTime, st.sampled_from("Mm"),
                      st.sampled_from(("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "")))
charseqs = st.builds(t.CharSeq, st.sampled_from("SU"), st.integers(1, 4))
scalars = st.one_of(st.sampled_from(SCALARS), datetimes, charseqs)
inline_arrays = st.builds(t.InlineArray, scalars,
                          st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple))


def _records(field_types):
    fields = st.lists(st.tuples(st.sampled_from(NAMES), field_types, st.integers(0, 8)),
                      min_size=1, max_size=3).map(tuple)
    return st.builds(t.Record, fields, st.integers(1, 16), st.sampled_from((1, 4)))


records = st.recursive(_records(st.one_of(scalars, inline_arrays)),
                       lambda inner: _records(st.one_of(scalars, inline_arrays, inner)),
                       max_leaves=4)
arrays = st.builds(t.Array, st.one_of(scalars, records), st.integers(0, 3),
                   st.sampled_from("CFA"), st.booleans(), st.booleans())  # readonly, aligned
tensor_maps = st.builds(lambda dtype, box, swizzle: TensorMap(dtype, len(box), box, swizzle),
                        scalars, st.lists(st.sampled_from((1, 8, 64)), min_size=1,
                                          max_size=3).map(tuple), st.sampled_from((0, 64, 128)))
argument_types = st.recursive(
    st.one_of(scalars, arrays, records, tensor_maps),
    lambda inner: st.lists(inner, max_size=3).map(lambda items: t.Tuple(tuple(items))),
    max_leaves=6)


def _field(name, ty, offset):
    return (name, ty, offset)


PACKED = t.Record((_field("a", t.int8, 0), _field("b", t.float32, 1)), 5, 1)
ALIGNED = t.Record((_field("a", t.int8, 0), _field("b", t.float32, 4)), 8, 4)
TRICKY_NAME = t.Record((_field("a: int8 @0, b", t.int8, 0),), 1, 1)
TWO_FIELDS = t.Record((_field("a", t.int8, 0), _field("b: int8 @0", t.int8, 0)), 1, 1)


@settings(max_examples=400, deadline=None)
@given(argument_types, argument_types)
@example(t.Array(t.float32, 1, "C"), t.Array(t.float32, 1, "F"))
@example(t.Array(t.float32, 0, "C"), t.Array(t.float32, 0, "A"))
@example(t.Tuple((t.Array(t.float32, 0, "C"),)), t.Tuple((t.Array(t.float32, 0, "A"),)))
@example(TRICKY_NAME, TWO_FIELDS)
@example(PACKED, ALIGNED)
@example(t.Record((_field("v", t.InlineArray(t.float32, (3,)), 0),), 12, 4),
         t.Record((_field("v", t.InlineArray(t.float32, (1, 3)), 0),), 12, 4))
def test_equal_text_means_equal_types(a, b):
    if a != b:
        assert str(a) != str(b)
        assert str(t.Signature(t.void, (a,))) != str(t.Signature(t.void, (b,)))


def test_every_argument_type_is_generated():
    """A new Type must join the strategy above (or say why it never reaches a signature)."""
    defined = {obj for obj in vars(t).values()
               if isinstance(obj, type) and issubclass(obj, t.Type) and obj is not t.Type}
    assert defined == ARGUMENT_TYPES | NOT_ARGUMENTS


def _values():
    """What launches pass: numpy arrays of every layout, 0-d, records packed and aligned,
    sub-array fields, tuples of arrays and nested tuples, Python and numpy scalars."""
    base = np.zeros((4, 6), dtype=np.float32)
    yield from (base, np.asfortranarray(base), base[:, ::2], base[0], base[:, 0],
                np.zeros((), np.float32), np.zeros(3, np.float16), np.zeros(3, np.bool_),
                np.zeros(3, np.uint8), np.zeros(3, np.int8), np.zeros(3, np.complex64),
                np.zeros(3, np.complex128), np.zeros((1, 1), np.float32),
                np.zeros(3, "M8[s]"), np.zeros(3, "M8[ms]"), np.zeros(3, "m8[s]"),
                np.zeros(3, "S4"), np.zeros(3, "S1"), np.zeros(3, "U4"), np.zeros(3, "U1"))
    for dtype in (np.dtype([("a", "i1"), ("b", "f4")]),
                  np.dtype([("a", "i1"), ("b", "f4")], align=True),
                  np.dtype([("b", "i1"), ("a", "f4")]),
                  np.dtype([("a", "i1"), ("v", "f4", (3,))]),
                  np.dtype([("a", "i1"), ("v", "f4", (1, 3))]),
                  np.dtype([("a: int8 @0, b", "i1"), ("pad", "i1")]),
                  np.dtype({"names": ["a", "b", "pad"], "formats": ["i1", "i1", "i1"],
                            "offsets": [0, 0, 1]})):
        yield np.zeros(2, dtype)
    yield from (np.datetime64(1, "s"), np.timedelta64(1, "s"), np.timedelta64(1, "ms"))
    yield from (1, 1.0, True, 1j, np.float32(1), np.float16(1), np.uint64(1), np.int8(1))
    import ml_dtypes

    for name in ("bfloat16", "float8_e5m2", "float8_e4m3fn", "float8_e8m0fnu"):
        yield np.zeros(3, getattr(ml_dtypes, name))
        yield getattr(ml_dtypes, name)(1)
    yield from ((base, base), (base, (base,)), ((base, base),), (base[0], 1), (1, (1.0,)))


def test_every_launch_type_prints_apart():
    by_text: dict[str, t.Type] = {}
    for value in _values():
        ty = typeof(value)
        seen = by_text.setdefault(str(ty), ty)
        assert seen == ty, f"{ty!r} and {seen!r} both print as {ty}"


@pytest.mark.parametrize("ty, text", [
    (t.Array(t.float32, 2, "F"), "float32[::1, :]"),  # numba's spellings where they exist
    (t.Array(t.float32, 1, "C"), "float32[::1]"),
    (t.Array(t.float32, 0, "C"), "array(float32, 0d, C)"),
    (t.Array(t.float32, 1, "F"), "array(float32, 1d, F)"),
    (PACKED, "Record(a: int8 @0, b: float32 @1; size=5, align=1)"),
    (TRICKY_NAME, "Record('a: int8 @0, b': int8 @0; size=1, align=1)"),
])
def test_the_text_of_a_type(ty, text):
    assert str(ty) == text
