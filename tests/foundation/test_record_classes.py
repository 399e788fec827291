"""`record` must behave as `@dataclass(frozen=True, slots=True)`: equality, hashing, repr,
immutability, fields/replace, pickling; eq=False keeps identity semantics."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from gpunb.foundation.records import record


@record
class Point:
    x: int
    y: int = 0
    tag: str = "p"


@dataclasses.dataclass(frozen=True, slots=True)
class PointDC:
    x: int
    y: int = 0
    tag: str = "p"


@record
class One:
    value: object


@record
class Empty:
    pass


@record(eq=False)
class Identity:
    name: str


@record
class WithHashOff:
    x: int
    note: str = dataclasses.field(default="", hash=False, compare=False, repr=False)


def test_equality_and_hash_follow_the_fields():
    assert Point(1, 2) == Point(1, 2) and Point(1, 2) != Point(1, 3)
    assert hash(Point(1, 2)) == hash(PointDC(1, 2)) == hash((1, 2, "p"))
    assert Point(1, 2) != PointDC(1, 2)  # another class: NotImplemented both ways
    assert (Point(1) == (1, 0, "p")) is False
    assert One([1]) == One([1])
    assert hash(One(5)) == hash((5,))
    assert Empty() == Empty() and hash(Empty()) == hash(())
    assert {Point(1, 2): "a"}[Point(1, 2)] == "a"


def test_field_options_respected():
    assert WithHashOff(1, "a") == WithHashOff(1, "b")
    assert hash(WithHashOff(1, "a")) == hash((1,))
    assert repr(WithHashOff(1, "a")) == "WithHashOff(x=1)"


def test_repr_as_dataclass():
    assert repr(Point(1, 2)) == repr(PointDC(1, 2)).replace("PointDC", "Point")
    assert repr(Point(1, tag="q")) == "Point(x=1, y=0, tag='q')"


def test_frozen_and_slotted():
    p = Point(1, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.x
    assert not hasattr(p, "__dict__")
    assert Point.__slots__ == ("x", "y", "tag")


def test_dataclass_api_works():
    p = Point(1, 2)
    assert dataclasses.is_dataclass(p)
    assert [f.name for f in dataclasses.fields(p)] == ["x", "y", "tag"]
    assert dataclasses.replace(p, y=5) == Point(1, 5)
    assert dataclasses.astuple(p) == (1, 2, "p")
    with pytest.raises(TypeError):
        Point()  # x is required


def test_pickle_round_trip():
    p = Point(1, 2, "z")
    assert pickle.loads(pickle.dumps(p)) == p


def test_eq_false_keeps_identity():
    a, b = Identity("k"), Identity("k")
    assert a != b and a == a
    assert hash(a) != hash(b) or a is b
    assert repr(a) == "Identity(name='k')"


@record
class OwnHash:
    x: int

    def __hash__(self):
        return 7


@record
class OwnEq:
    x: int

    def __eq__(self, other):
        return isinstance(other, OwnEq)


def test_methods_the_class_writes_stay():
    assert hash(OwnHash(1)) == 7 and OwnHash(1) == OwnHash(1) and OwnHash(1) != OwnHash(2)
    assert OwnEq(1) == OwnEq(2)
    assert hash(OwnEq(1)) == hash((1,))  # as dataclasses: __eq__ alone gets the field hash

