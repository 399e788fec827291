"""Constant strings stored into numpy's fixed-width strings (types.CharSeq: `S12` bytes,
`<U12` UCS-4 code points), numba-cuda's test_const_string: the text is encoded at compile time,
cut to the width and padded with zeros, as numpy assigns it."""

from __future__ import annotations

from gpunb.foundation.types import CharSeq


def encode(ty: CharSeq, text: str | bytes) -> list[int]:
    """The characters of a constant stored into a `ty` (cut to its width, zero-padded); a
    ValueError says why the text does not fit the kind (non-ASCII text into bytes, bytes into
    unicode)."""
    if ty.kind == "S":
        if isinstance(text, str):
            if not text.isascii():
                raise ValueError(f"cannot store the non-ASCII string {text!r} into {ty} "
                                 "(bytes)")
            text = text.encode("ascii")
        codes = list(text)
    else:
        if isinstance(text, bytes):
            raise ValueError(f"cannot store bytes {text!r} into {ty} (a unicode string)")
        codes = [ord(c) for c in text]
    codes = codes[:ty.count]
    return codes + [0] * (ty.count - len(codes))
