"""`numba.cuda.misc.special`: kernel-language helpers (literal_unroll), looked up in gpunb.cuda."""

from __future__ import annotations

from .missing import gpunb_attr

literal_unroll = gpunb_attr("numba.cuda.misc.special.literal_unroll", "gpunb.cuda.literal_unroll")
