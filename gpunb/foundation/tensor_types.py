"""The tensor-core types of the kernel language (compiler/builtins/tensorcore_*): WMMA fragments."""

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
