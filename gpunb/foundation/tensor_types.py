"""The tensor-core types of the kernel language: WMMA fragments (compiler/builtins/tensorcore_*)
and TMA tensor maps (compiler/builtins/tma.py, runtime/tma.py)."""

from __future__ import annotations

from dataclasses import dataclass

from gpunb.foundation.types import Type


@dataclass(frozen=True, slots=True)
class Fragment(Type):
    """A WMMA fragment (nvcuda::wmma::fragment<use, m, n, k, T, layout>): a warp-wide tile, each
    lane holding `num_elements` elements of it. The value refers to the fragment's storage, so
    load/mma/store and `frag.x[i] = v` update it in place, as the C++ reference arguments do."""

    use: str  # "matrix_a" | "matrix_b" | "accumulator"
    m: int
    n: int
    k: int
    kind: str  # "f16" "bf16" "tf32" "s8" "u8" "f32" "s32" (compiler/builtins/tensorcore_layouts)
    layout: str | None = None  # "row_major" | "col_major" (multiplicands only)
    num_elements: int = 0

    def __str__(self) -> str:
        tail = f", {self.layout}" if self.layout else ""
        return f"wmma.fragment({self.use}, {self.m}, {self.n}, {self.k}, {self.kind}{tail})"


@dataclass(frozen=True, slots=True)
class TensorMap(Type):
    """A TMA tensor-map descriptor (`cuda.tma.descriptor(array, box, swizzle)`): the array's
    element type and rank, the box it copies (numpy order, outermost first) and the swizzle in
    bytes (0, 32, 64 or 128). Passed to a kernel by value; box and swizzle are part of the type
    so that a copy into a shared tile of the wrong shape is a compile-time error."""

    dtype: Type
    ndim: int
    box: tuple
    swizzle: int = 0

    def __post_init__(self):
        if len(self.box) != self.ndim:  # the text prints the box only: it must say the rank
            raise ValueError(f"a TensorMap of {self.ndim} dimensions has a box of "
                             f"{len(self.box)}: {self.box}")

    def __str__(self) -> str:
        box = ", ".join(str(b) for b in self.box)
        return f"TensorMap({self.dtype}, box=({box}), swizzle={self.swizzle})"


def _tensor_map_of_text(dtype: Type, box, swizzle: int = 0) -> TensorMap:
    box = tuple(box) if isinstance(box, tuple) else (box,)  # one dimension prints "box=(16)"
    return TensorMap(dtype, len(box), box, swizzle)


# the constructors that read back what TensorMap.__str__ writes in a compiled kernel's
# signature text (types.parse_signature(text, SIGNATURE_NAMES): the CPU target's access logs)
SIGNATURE_NAMES = {"TensorMap": _tensor_map_of_text}
