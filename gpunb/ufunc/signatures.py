"""Signatures of ufuncs: numba type signatures (strings or Signature objects) for vectorize and
guvectorize, and numpy gufunc layouts such as "(m,n),(n,p)->(m,p)"."""

from __future__ import annotations

import re

import numpy as np

from gpunb.foundation import types as t

_LAYOUT_GROUP = re.compile(r"\(\s*([A-Za-z_][A-Za-z_0-9]*(?:\s*,\s*[A-Za-z_][A-Za-z_0-9]*)*)?"
                           r"\s*,?\s*\)")


def type_signature(sig, what: str) -> t.Signature:
    """A Signature from "float32(float32, int32)", float32(float32, int32) or a tuple of
    argument types (no return type: guvectorize's spelling)."""
    from gpunb.jit.options import parse_signature

    return parse_signature(sig, f"{what} signature")


def dtype_of(ty: t.Type) -> np.dtype:
    return np.dtype(t.to_dtype(ty.dtype if isinstance(ty, t.Array) else ty))


def parse_layout(layout: str) -> tuple:
    """((input core dims per argument), (output core dims per argument)) of a gufunc layout.
    ValueError for text that is not one; NameError for an output dimension no input names
    (numba-cuda's errors)."""
    if not isinstance(layout, str) or "->" not in layout:
        raise ValueError(f"gufunc layout {layout!r} must look like '(m,n),(n)->(m)'")
    ins, outs = layout.replace(" ", "").split("->", 1)
    inputs, outputs = _groups(ins, layout), _groups(outs, layout)
    if not outputs:
        raise ValueError(f"gufunc layout {layout!r} names no output")
    known = {name for group in inputs for name in group}
    missing = sorted({name for group in outputs for name in group} - known)
    if missing:
        raise NameError(f"undefined output symbols: {','.join(missing)}")
    return tuple(inputs), tuple(outputs)


def _groups(text: str, layout: str) -> list:
    groups = []
    pos = 0
    while pos < len(text):
        match = _LAYOUT_GROUP.match(text, pos)
        if match is None:
            raise ValueError(f"bad token in gufunc layout {layout!r} at {text[pos:]!r}")
        names = match.group(1)
        groups.append(tuple(n.strip() for n in names.split(",")) if names else ())
        pos = match.end()
        if pos < len(text):
            if text[pos] != ",":
                raise ValueError(f"bad token in gufunc layout {layout!r} at {text[pos:]!r}")
            pos += 1
    return groups


__all__ = ["dtype_of", "parse_layout", "type_signature"]
