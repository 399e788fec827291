"""signature_text.argument_types: every argument type's text reads back as the same type."""

from __future__ import annotations

import numpy as np
import pytest

from gpunb.foundation import types as t
from gpunb.foundation.signature_text import argument_types
from gpunb.foundation.tensor_types import SIGNATURE_NAMES

REC = t.from_dtype(np.dtype([("x", np.float32), ("n", np.int32)]))
NESTED = t.from_dtype(np.dtype([("p", [("x", np.float32), ("n", np.int32)]),
                                ("v", np.float64, (3,)), ("weird name", np.int8)], align=True))

TYPES = [
    t.boolean, t.float64, t.complex64, t.bfloat16, t.Array(t.float32, 1, "C"),
    t.Array(t.float32, 2, "F"), t.Array(t.int8, 3, "A"),
    t.Array(t.float64, 1, "C", readonly=True), REC, t.Array(REC, 1, "C"),
    t.Array(NESTED, 2, "C"), t.Tuple((t.int64, t.float64)), t.Tuple((t.int32,)),
    t.Tuple((t.int64, t.float64), ("a", "b")), t.Array(t.DateTime("M", "s"), 1, "C"),
    t.Array(t.CharSeq("S", 4), 1, "C"), t.Tuple((t.Array(t.float32, 1, "C"), t.boolean)),
]


@pytest.mark.parametrize("ty", TYPES, ids=str)
def test_argument_text_reads_back(ty):
    text = f"void(float32[::1], {ty}, int64)"
    args = argument_types(text, SIGNATURE_NAMES)
    assert args == (t.Array(t.float32, 1, "C"), ty, t.int64)
    assert f"void({', '.join(map(str, args))})" == text


def test_unreadable_text_is_a_type_error():
    with pytest.raises(TypeError, match="cannot read signature"):
        argument_types("void(float32[::1], Mystery(3))", SIGNATURE_NAMES)
