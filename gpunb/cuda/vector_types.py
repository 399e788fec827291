"""numba.cuda.vector_types under gpunb: `vector_types`, the table of CUDA's built-in vector
types by name (numba-cuda's VectorType objects: name, base_type, num_elements, attr_names and
user_facing_object, the `cuda.float32x4` constructor used in kernels)."""

from __future__ import annotations

from dataclasses import dataclass

from gpunb.compiler.kernel_api import VECTOR_TYPES
from gpunb.foundation import types as t


@dataclass(frozen=True)
class VectorType:
    name: str
    base_type: t.Type
    attr_names: tuple
    user_facing_object: object

    @property
    def num_elements(self) -> int:
        return len(self.attr_names)

    @property
    def aliases(self) -> list:
        return list(self.user_facing_object.aliases)


def _make(name: str) -> VectorType:
    base, count = name.rsplit("x", 1)
    return VectorType(name, t.TYPE_NAMES[base], ("x", "y", "z", "w")[:int(count)],
                      VECTOR_TYPES[name])


vector_types: dict = {name: _make(name) for name in VECTOR_TYPES}
