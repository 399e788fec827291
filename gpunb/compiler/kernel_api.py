"""The names of the kernel language (`cuda.threadIdx`, `cuda.shared.array`, `cuda.atomic.add`, ...).

Each is a marker object that carries its qualified name; the compiler recognises markers by that
name (tables in compiler/builtins/), so nothing is registered as a side effect of an import and a
cache hit needs none of this. Called on the host, a marker says it only works inside a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from gpunb.foundation import types as t


class KernelOnly:
    """A function or value that exists only inside GPU code."""

    __slots__ = ("_gpunb_intrinsic",)

    def __init__(self, qualname: str):
        self._gpunb_intrinsic = qualname

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"cuda.{self._gpunb_intrinsic.removeprefix('cuda.')} can only be used inside a GPU "
            "function (@cuda.jit or %%gpukernel)"
        )

    def __repr__(self) -> str:
        return f"<gpunb kernel intrinsic {self._gpunb_intrinsic}>"


class Dim3(KernelOnly):
    """threadIdx / blockIdx / blockDim / gridDim: `.x`, `.y`, `.z` inside kernels."""

    __slots__ = ("x", "y", "z")

    def __init__(self, qualname: str):
        super().__init__(qualname)
        self.x = KernelOnly(qualname + ".x")
        self.y = KernelOnly(qualname + ".y")
        self.z = KernelOnly(qualname + ".z")


class Namespace:
    """A group of intrinsics (`cuda.shared`, `cuda.atomic`, ...), itself a marker."""

    def __init__(self, qualname: str, names: list[str]):
        self._gpunb_intrinsic = qualname
        for name in names:
            setattr(self, name, KernelOnly(f"{qualname}.{name}"))

    def __repr__(self) -> str:
        return f"<gpunb kernel namespace {self._gpunb_intrinsic}>"


threadIdx = Dim3("cuda.threadIdx")
blockIdx = Dim3("cuda.blockIdx")
blockDim = Dim3("cuda.blockDim")
gridDim = Dim3("cuda.gridDim")
laneid = KernelOnly("cuda.laneid")
warpsize = KernelOnly("cuda.warpsize")

grid = KernelOnly("cuda.grid")
gridsize = KernelOnly("cuda.gridsize")
syncthreads = KernelOnly("cuda.syncthreads")
syncthreads_count = KernelOnly("cuda.syncthreads_count")
syncthreads_and = KernelOnly("cuda.syncthreads_and")
syncthreads_or = KernelOnly("cuda.syncthreads_or")
threadfence = KernelOnly("cuda.threadfence")
threadfence_block = KernelOnly("cuda.threadfence_block")
threadfence_system = KernelOnly("cuda.threadfence_system")
syncwarp = KernelOnly("cuda.syncwarp")

_WARP_AND_BITS = ["shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "all_sync",
                  "any_sync", "eq_sync", "ballot_sync", "match_any_sync", "match_all_sync",
                  "activemask", "lanemask_lt", "popc", "brev", "clz", "ffs", "fma", "cbrt", "selp",
                  "nanosleep", "literal_unroll", "ldca", "ldcg", "ldcs", "ldlu", "ldcv", "stcg",
                  "stcs", "stwb", "stwt"]
for _name in _WARP_AND_BITS:
    globals()[_name] = KernelOnly(f"cuda.{_name}")

shared = Namespace("cuda.shared", ["array"])
cg = Namespace("cuda.cg", ["this_grid", "this_thread_block", "this_cluster"])
fp16 = Namespace("cuda.fp16", ["hadd", "hsub", "hmul", "hdiv", "heq", "hne", "hgt", "hge", "hlt",
                               "hle", "hsin", "hcos", "hlog", "hlog10", "hlog2", "hexp", "hexp2",
                               "hsqrt", "hceil", "hfloor", "htrunc", "hrint", "habs", "hneg",
                               "hmax", "hmin", "hfma", "hrcp", "hrsqrt", "hexp10"])
# numba-cuda's cuda.bf16 (numba_cuda/numba/cuda/bf16.py's __all__): arithmetic, comparisons,
# conversions with rounding modes, bit casts and math on bfloat16
_BF16_INTS = ["int16", "uint16", "int32", "uint32", "int64", "uint64"]
BF16_NAMES = [
    "habs", "hadd", "hsub", "hmul", "hadd_rn", "hsub_rn", "hmul_rn", "hdiv", "hadd_sat",
    "hsub_sat", "hmul_sat", "hfma", "hfma_sat", "hneg", "hfma_relu",
    "heq", "hne", "hge", "hgt", "hle", "hlt", "hmax", "hmin", "hmax_nan", "hmin_nan", "hisinf",
    "hisnan", "hequ", "hneu", "hgeu", "hgtu", "hleu", "hltu",
    "float32_to_bfloat16", "float64_to_bfloat16", "bfloat16_to_float32",
    "bfloat16_to_int8_rz", "bfloat16_to_uint8_rz",
    "bfloat16_as_int16", "bfloat16_as_uint16", "int16_as_bfloat16", "uint16_as_bfloat16",
    "htrunc", "hceil", "hfloor", "hrint", "hsqrt", "hrsqrt", "hrcp", "hlog", "hlog2", "hlog10",
    "hcos", "hsin", "htanh", "htanh_approx", "hexp", "hexp2", "hexp10",
] + [f"float32_to_bfloat16_{mode}" for mode in ("rn", "rz", "rd", "ru")] + [
    name for ty in _BF16_INTS for mode in ("rn", "rz", "rd", "ru")
    for name in (f"{ty}_to_bfloat16_{mode}", f"bfloat16_to_{ty}_{mode}")]
bf16 = Namespace("cuda.bf16", BF16_NAMES)
bf16.bfloat16 = t.bfloat16
# the fp8 types (numba-cuda has them in numba.cuda._internal.cuda_fp8): constructors and
# conversions only
# cuda_fp8.h's raw conversions on storage bytes (compiler/builtins/fp8funcs.py)
fp8 = Namespace("cuda.fp8", ["cvt_float_to_fp8", "cvt_double_to_fp8", "cvt_bfloat16raw_to_fp8",
                             "cvt_float_to_e8m0", "cvt_double_to_e8m0",
                             "cvt_bfloat16raw_to_e8m0", "cvt_e8m0_to_bf16raw",
                             "cvt_fp8_to_halfraw"])
fp8.fp8_e5m2, fp8.fp8_e4m3, fp8.fp8_e8m0 = t.fp8_e5m2, t.fp8_e4m3, t.fp8_e8m0


class saturation_t:  # noqa: N801 - CUDA's __nv_saturation_t
    NOSAT = 0
    SATFINITE = 1


class fp8_interpretation_t:  # noqa: N801 - CUDA's __nv_fp8_interpretation_t
    E4M3 = 0
    E5M2 = 1


fp8.saturation_t, fp8.fp8_interpretation_t = saturation_t, fp8_interpretation_t
local = Namespace("cuda.local", ["array"])
const = Namespace("cuda.const", ["array_like"])
atomic = Namespace("cuda.atomic", ["add", "sub", "max", "min", "exch", "cas", "inc", "dec",
                                   "and_", "or_", "xor", "compare_and_swap", "nanmax", "nanmin"])

# tensor cores (compiler/builtins/tensorcore_*): nvcuda::wmma's names, and PTX-level mma.sync,
# ldmatrix / stmatrix and inline PTX
wmma = Namespace("cuda.wmma", ["fragment", "fill_fragment", "load_matrix_sync", "mma_sync",
                               "store_matrix_sync", "float_to_tf32", "matrix_a", "matrix_b",
                               "accumulator", "row_major", "col_major", "mem_row_major",
                               "mem_col_major"])
wmma.precision = Namespace("cuda.wmma.precision", ["tf32"])
wmma.tf32 = wmma.precision.tf32
_TENSOR_CORE = ["mma_sync", "ldmatrix", "stmatrix", "inline_ptx"]
for _name in _TENSOR_CORE:
    globals()[_name] = KernelOnly(f"cuda.{_name}")

KERNEL_NAMES = {
    "threadIdx": threadIdx, "blockIdx": blockIdx, "blockDim": blockDim, "gridDim": gridDim,
    "laneid": laneid, "warpsize": warpsize, "grid": grid, "gridsize": gridsize,
    "syncthreads": syncthreads, "syncthreads_count": syncthreads_count,
    "syncthreads_and": syncthreads_and, "syncthreads_or": syncthreads_or,
    "threadfence": threadfence, "threadfence_block": threadfence_block,
    "threadfence_system": threadfence_system, "syncwarp": syncwarp,
    "shared": shared, "local": local, "const": const, "atomic": atomic, "cg": cg, "fp16": fp16,
    "bf16": bf16, "fp8": fp8,
}
KERNEL_NAMES.update({name: globals()[name] for name in _WARP_AND_BITS})
KERNEL_NAMES.update({name: globals()[name] for name in _TENSOR_CORE}, wmma=wmma)


# ---- libdevice (gpunb.cuda.libdevice): declarations read from the bitcode, carried by the stubs --


class LibdeviceParam(NamedTuple):
    """One parameter of a libdevice function (numba-cuda's `arg`): an output when `is_ptr`, and
    then `ty` is the type pointed to."""

    name: str
    ty: t.Type
    is_ptr: bool


@dataclass(frozen=True, slots=True)
class LibdeviceDeclaration:
    """A libdevice function as its bitcode declares it (`__nv_sincos`: void(double, ptr, ptr))."""

    symbol: str  # "__nv_sincos"
    result: t.Type  # types.void for functions that return nothing
    params: tuple  # LibdeviceParam, in the bitcode's order

    @property
    def name(self) -> str:
        return self.symbol.removeprefix("__nv_")

    @property
    def inputs(self) -> tuple:
        """The types a kernel passes: every parameter that is not an output pointer."""
        return tuple(p.ty for p in self.params if not p.is_ptr)

    @property
    def returns(self) -> t.Type:
        return libdevice_result(self.result, self.params)


def libdevice_result(result: t.Type, params) -> t.Type:
    """What a call returns in a kernel (numba-cuda's create_signature): the return value, or a
    tuple of it (unless void) followed by every output pointer's pointee."""
    items = ([] if isinstance(result, t.NoneType) else [result]) + \
        [p.ty for p in params if p.is_ptr]
    if len(items) == 1:
        return items[0]
    return t.Tuple(tuple(items)) if items else t.void


class LibdeviceFunction(KernelOnly):
    """cuda.libdevice.NAME: a kernel-language function whose signature is its declaration."""

    __slots__ = ("declaration",)

    def __init__(self, declaration: LibdeviceDeclaration):
        super().__init__("cuda.libdevice." + declaration.name)
        self.declaration = declaration

    def __repr__(self) -> str:
        d = self.declaration
        args = ", ".join(f"{p.name}: {p.ty}" for p in d.params if not p.is_ptr)
        return f"<gpunb libdevice function {d.name}({args}) -> {d.returns}>"


# CUDA's built-in vector types (float32x4 & co, with C's aliases: float4, int2, uchar3, ...):
# constructors inside kernels, giving values with fields x, y, z, w (builtins/vectors.py)
VECTOR_BASES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float32", "float64")
_VECTOR_ALIASES = {"char": "int8", "short": "int16", "int": "int32", "long": "int64",
                   "longlong": "int64", "uchar": "uint8", "ushort": "uint16", "uint": "uint32",
                   "ulong": "uint64", "ulonglong": "uint64", "float": "float32",
                   "double": "float64"}


class VectorConstructor(KernelOnly):
    """cuda.float32x4 & co; `aliases` lists C's names for it (float4), as numba-cuda's."""

    __slots__ = ("aliases",)

    def __init__(self, qualname: str):
        super().__init__(qualname)
        self.aliases: list = []


VECTOR_TYPES = {f"{base}x{n}": VectorConstructor(f"cuda.{base}x{n}") for base in VECTOR_BASES
                for n in (1, 2, 3, 4)}
VECTOR_NAMES = dict(VECTOR_TYPES)  # and C's aliases, the same objects
for _alias, _base in _VECTOR_ALIASES.items():
    for _n in (1, 2, 3, 4):
        VECTOR_NAMES[f"{_alias}{_n}"] = VECTOR_TYPES[f"{_base}x{_n}"]
        VECTOR_TYPES[f"{_base}x{_n}"].aliases.append(f"{_alias}{_n}")


def intrinsic_name(obj) -> str | None:
    """The qualified kernel-language name of a marker object, or None."""
    name = getattr(obj, "_gpunb_intrinsic", None)
    return name if isinstance(name, str) else None
