"""`numba.cuda.typing.typeof`: the type of a Python value, looked up in gpunb.cuda."""

from __future__ import annotations

from .missing import gpunb_attr

typeof = gpunb_attr("numba.cuda.typing.typeof.typeof", "gpunb.cuda.typeof",
                    "gpunb.runtime.typeof.typeof")
