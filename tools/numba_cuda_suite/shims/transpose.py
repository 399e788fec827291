"""`numba.cuda.kernels.transpose`: numba-cuda's library transpose, looked up in gpunb.cuda."""

from __future__ import annotations

from .missing import gpunb_attr

transpose = gpunb_attr("numba.cuda.kernels.transpose.transpose", "gpunb.cuda.transpose")
