"""`numba.cuda._internal.cuda_bf16`: numba-cuda's generated binding of cuda_bf16.h, which its
public `numba.cuda.bf16` re-exports under shorter names. Tests import the CUDA spellings from
here (`nv_bfloat16`, `__hadd`, `htrunc`); each is gpunb.cuda.bf16's function of that meaning.
"""

from __future__ import annotations

from .missing import gpunb_attr

_HERE = "numba.cuda._internal.cuda_bf16"
# CUDA's name -> numba.cuda.bf16's name (numba_cuda/numba/cuda/bf16.py's import list)
_RENAMED = {"nv_bfloat16": "bfloat16", "__bfloat162float": "bfloat16_to_float32",
            "__float2bfloat16": "float32_to_bfloat16", "__double2bfloat16": "float64_to_bfloat16"}
_MATH = ("htrunc", "hceil", "hfloor", "hrint", "hsqrt", "hrsqrt", "hrcp", "hlog", "hlog2",
         "hlog10", "hcos", "hsin", "hexp", "hexp2", "hexp10", "htanh", "htanh_approx")
_INTRINSICS = ("habs", "hadd", "hsub", "hmul", "hadd_rn", "hsub_rn", "hmul_rn", "hdiv",
               "hadd_sat", "hsub_sat", "hmul_sat", "hfma", "hfma_sat", "hneg", "hfma_relu",
               "heq", "hne", "hge", "hgt", "hle", "hlt", "hmax", "hmin", "hmax_nan", "hmin_nan",
               "hisinf", "hisnan", "hequ", "hneu", "hgeu", "hgtu", "hleu", "hltu")


def _bf16(cuda_name: str, gpunb_name: str):
    return gpunb_attr(f"{_HERE}.{cuda_name}", f"gpunb.cuda.bf16.{gpunb_name}")


for _cuda, _ours in _RENAMED.items():
    globals()[_cuda] = _bf16(_cuda, _ours)
for _name in _MATH:
    globals()[_name] = _bf16(_name, _name)
for _name in _INTRINSICS:
    globals()[f"__{_name}"] = _bf16(f"__{_name}", _name)
