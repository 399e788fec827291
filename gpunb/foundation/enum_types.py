"""Enum and IntEnum members as kernel types (numba's EnumMember and IntEnumMember)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from gpunb.foundation.types import Integer, Type


@dataclass(frozen=True, slots=True)
class IntEnumMember(Integer):
    """A member of an IntEnum class (numba's IntEnumMember): an int64 in arithmetic and
    comparisons with numbers; `is` also compares classes."""

    enum_class: type = None

    def __str__(self) -> str:
        return f"IntEnum({self.enum_class.__qualname__})"


@dataclass(frozen=True, slots=True)
class EnumMember(Type):
    """A member of an Enum class (numba's EnumMember), held as its position in the class;
    it compares (==, !=, is) with members of its own class only."""

    enum_class: type

    def __str__(self) -> str:
        return f"Enum({self.enum_class.__qualname__})"

    def index_of(self, member) -> int:
        return list(self.enum_class).index(member)


def enum_type(value) -> Type | None:
    """The type of an Enum or IntEnum member, None for anything else."""
    if not isinstance(value, enum.Enum):
        return None
    cls = type(value)
    if isinstance(value, int):
        return IntEnumMember(64, True, cls)
    return EnumMember(cls)
