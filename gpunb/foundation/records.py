"""`record`: a frozen, slotted dataclass made at half the import cost, for modules on the cold path.

`@dataclass(frozen=True, slots=True)` compiles six generated methods from source text (init,
repr, eq, hash, setattr, delattr) - about 0.5-1 ms per class on CPython 3.11/3.12, and the
compiler's typed contract alone defines fifteen such classes that every first compile of a
process imports: benchmarks/library_costs.py times their modules' import at 10-20 ms more with
dataclasses, against a 50 ms cold-compile target. `record` lets dataclasses generate only what
must be specialised (__init__ and the frozen __setattr__/__delattr__) and gives __eq__, __hash__
and __repr__ as shared functions over the class's fields. The result is a real dataclass
(fields(), replace(), is_dataclass(), pickling, FrozenInstanceError) that compares, hashes and
prints as `@dataclass(frozen=True, slots=True)` does (tests/foundation/test_record_classes.py
checks each against it).
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter


def _getter(names: tuple):
    """obj -> the tuple of its named fields (what dataclasses compare and hash)."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names)


def record(cls=None, /, *, eq: bool = True):
    """`@record` / `@record(eq=False)`: as `@dataclass(frozen=True, slots=True[, eq=False])`."""

    def wrap(cls):
        made = dataclasses.dataclass(cls, frozen=True, slots=True, eq=False, repr=False)
        fields = dataclasses.fields(made)
        repr_names = tuple(f.name for f in fields if f.repr)
        if "__repr__" not in cls.__dict__:
            made.__repr__ = _make_repr(repr_names)
        if not eq:
            return made
        own = cls.__dict__
        if "__eq__" not in own:
            key = _getter(tuple(f.name for f in fields if f.compare))

            def __eq__(self, other):
                if other.__class__ is self.__class__:
                    return key(self) == key(other)
                return NotImplemented

            made.__eq__ = __eq__
        # dataclasses' rule for frozen classes: a __hash__ the class wrote itself stays
        explicit = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
        if not explicit:
            hash_key = _getter(tuple(f.name for f in fields
                                     if (f.compare if f.hash is None else f.hash)))

            def __hash__(self):
                return hash(hash_key(self))

            made.__hash__ = __hash__
        return made

    return wrap if cls is None else wrap(cls)


def _make_repr(names: tuple):
    def __repr__(self):
        parts = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({parts})"

    return __repr__


__all__ = ["record"]
