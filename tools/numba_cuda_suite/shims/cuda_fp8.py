"""`numba.cuda._internal.cuda_fp8`: numba-cuda's generated binding of cuda_fp8.h (it has no
public fp8 module besides). The types are gpunb.cuda.fp8's; the `cvt_*` intrinsics and their
enums are looked up there too.
"""

from __future__ import annotations

from .missing import gpunb_attr

_HERE = "numba.cuda._internal.cuda_fp8"
_NAMES = ("fp8_e5m2", "fp8_e4m3", "fp8_e8m0", "cvt_float_to_fp8", "cvt_double_to_fp8",
          "cvt_bfloat16raw_to_fp8", "cvt_bfloat16raw_to_e8m0", "cvt_float_to_e8m0",
          "cvt_double_to_e8m0", "cvt_e8m0_to_bf16raw", "cvt_fp8_to_halfraw",
          "saturation_t", "fp8_interpretation_t")

for _name in _NAMES:
    globals()[_name] = gpunb_attr(f"{_HERE}.{_name}", f"gpunb.cuda.fp8.{_name}")
