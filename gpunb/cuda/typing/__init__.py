"""numba.cuda.typing under gpunb: `signature(return_type, *args)` builds a signature object as
numba's does (`from gpunb.cuda.typing import signature`); `typeof` is in its own module."""

from __future__ import annotations

from gpunb.foundation.types import Signature, Type


def signature(return_type: Type, *args: Type) -> Signature:
    """The signature `return_type(*args)`, as numba.core.typing.signature makes it."""
    return return_type(*args)
