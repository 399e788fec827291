"""C pointers as kernel types (numba's CPointer and voidptr): a typed pointer `int32*` indexes
like a 1-d array with no bounds (p[i], p[i] = v), and numba_support's carray/farray view one as an
array of a given shape; `void*` (voidptr) is only passed on. A launch passes a pointer as an
integer address (or a ctypes pointer), as numba-cuda's dispatcher takes them."""

from __future__ import annotations

from dataclasses import dataclass

from gpunb.foundation.types import Type


@dataclass(frozen=True, slots=True)
class Pointer(Type):
    """numba's CPointer(dtype); `dtype` None is void* (numba's voidptr)."""

    dtype: Type | None

    def __str__(self) -> str:
        return "void*" if self.dtype is None else f"{self.dtype}*"


class _CPointerKind(type):
    """numba's CPointer: CPointer(int32) makes a Pointer; isinstance asks if one is typed."""

    def __call__(cls, dtype: Type) -> Pointer:
        if not isinstance(dtype, Type):
            raise TypeError(f"CPointer needs a kernel type, got {dtype!r}")
        return Pointer(dtype)

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Pointer) and obj.dtype is not None


CPointer = _CPointerKind("CPointer", (), {"__doc__": "numba's typed C pointer type"})


voidptr = Pointer(None)


def pointer_address(value) -> int | None:
    """The address a launch passes for a pointer argument: an int, a ctypes pointer or void*
    (their address), a cffi pointer; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value & ((1 << 64) - 1)
    import ctypes

    if isinstance(value, ctypes.c_void_p):
        return value.value or 0
    if isinstance(value, ctypes._Pointer):
        return ctypes.cast(value, ctypes.c_void_p).value or 0
    if type(value).__module__.startswith("_cffi_backend"):
        import cffi

        return int(cffi.FFI().cast("uintptr_t", value))
    return None
