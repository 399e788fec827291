"""Memoising with functools.lru_cache where the key is not the arguments a result is made from.

`functools.lru_cache` keeps a bounded, least-recently-used set of results keyed by its arguments.
A compile for inspection is made from live objects (a Python function, options) but is the same
for the same content key; `ContentKeyed(key, make)` is an argument that hashes and compares as
`key` alone, so an lru_cache'd `lambda request: request.make()` keeps results by content.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any


class ContentKeyed:
    """`make()` asked for under `key`: equal to any ContentKeyed of an equal key."""

    __slots__ = ("key", "make")

    def __init__(self, key: Hashable, make: Callable[[], Any]):
        self.key = key
        self.make = make

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ContentKeyed) and other.key == self.key
