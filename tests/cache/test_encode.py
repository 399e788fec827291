"""Value encodings (a cache-key part): two values the compiler would freeze differently must
never share a token. A hypothesis property over the kinds of constants kernels read."""

from __future__ import annotations

import struct

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpunb.cache.encode import encode

DTYPES = [np.dtype(c) for c in "?bBhHiIlLqQefdFD"] + [
    np.dtype([("a", "i1"), ("b", "f4")]), np.dtype([("a", "i1"), ("b", "f4")], align=True),
    np.dtype({"names": ["a", "b"], "formats": ["f4", "f4"], "offsets": [4, 0]}),
    np.dtype(("f4", (3,))), np.dtype(("i4", (3,)))]
NUMERIC = [d for d in DTYPES if d.fields is None and d.subdtype is None]


def _nan(sign: int, payload: int) -> float:
    bits = (sign << 63) | (0x7FF << 52) | (payload or 1)
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


floats = st.one_of(st.floats(allow_nan=False),
                   st.builds(_nan, st.integers(0, 1), st.integers(0, (1 << 52) - 1)))
python_scalars = st.one_of(st.booleans(), st.integers(-(2**70), 2**70), floats,
                           st.builds(complex, floats, floats))
numpy_scalars = st.builds(lambda dtype, raw: np.frombuffer(
    raw[:dtype.itemsize].ljust(dtype.itemsize, b"\0"), dtype)[0],
    st.sampled_from(NUMERIC), st.binary(min_size=16, max_size=16))
arrays = st.builds(lambda dtype, shape, raw: np.frombuffer(
    (raw * 64)[:dtype.itemsize * int(np.prod(shape))], dtype).reshape(shape),
    st.sampled_from(NUMERIC), st.sampled_from([(0,), (2,), (1, 2), (2, 1), ()]),
    st.binary(min_size=1, max_size=8))
constants = st.recursive(
    st.one_of(python_scalars, numpy_scalars, arrays, st.sampled_from(DTYPES), st.none()),
    lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=5)


def meaning(value):
    """What the compiler freezes: the type and every bit of the value (NaN sign and payload)."""
    if isinstance(value, tuple):
        return ("tuple", tuple(meaning(v) for v in value))
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, np.generic):
        return ("numpy", value.dtype.str, value.tobytes())
    if isinstance(value, np.dtype):
        return ("dtype", value, value.isalignedstruct, value.subdtype is not None and value.str)
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, complex):
        return ("complex", struct.pack("<2d", value.real, value.imag))
    return (type(value).__name__, value)


@settings(max_examples=500, deadline=None)
@given(constants, constants)
@example(float("nan"), -float("nan"))
@example(complex(0.0, float("nan")), complex(0.0, -float("nan")))
@example((1, 2.0), (1.0, 2))
@example(True, 1)
@example(0.0, -0.0)
@example(np.dtype(("f4", (3,))), np.dtype(("i4", (3,))))
@example(np.float32(1), np.int32(1))
@example(np.zeros((1, 2), np.float32), np.zeros((2, 1), np.float32))
def test_different_constants_never_share_a_token(a, b):
    if meaning(a) != meaning(b):
        assert encode(a, str) != encode(b, str)


@given(constants)
def test_equal_constants_share_a_token(a):
    """The other half: a rebinding to an equal value (a new object) keeps the key."""
    import copy

    assert encode(a, str) == encode(copy.deepcopy(a), str)


def test_namedtuple_classes_encode_their_fields_and_defaults():
    # kernels build namedtuples (`P(1)`), so a class's fields and defaults are compiled in: two
    # classes of one name that differ there must not share a token (a stale disk hit)
    from collections import namedtuple

    def gpu(_obj):
        return "gpu"

    first = namedtuple("P", "x y", defaults=[7])
    assert encode(first, gpu) == encode(namedtuple("P", "x y", defaults=[7]), gpu)
    assert encode(first, gpu) != encode(namedtuple("P", "x y", defaults=[9]), gpu)
    assert encode(first, gpu) != encode(namedtuple("P", "x y", defaults=[7.0]), gpu)
    assert encode(first, gpu) != encode(namedtuple("P", "x z", defaults=[7]), gpu)
    assert encode(first, gpu) != encode(namedtuple("P", "x y"), gpu)


def test_previews_of_numpy_scalars_name_the_dtype_once():
    """Explanations read `S: float32(1.5) -> float64(2.25)`; numpy 2's repr gave
    `float32(np.float32(1.5))`."""
    from gpunb.cache.encode import preview

    assert preview(np.float32(1.5)) == "float32(1.5)"
    assert preview(np.int8(-3)) == "int8(-3)"
    assert preview(np.bool_(True)) == "bool(True)"
