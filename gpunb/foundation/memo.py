"""Memoising with functools.lru_cache where the key is not the arguments a result is made from,
and bounded memos of recently used entries where the key is an object's id().

`functools.lru_cache` keeps a bounded, least-recently-used set of results keyed by its arguments.
A compile for inspection is made from live objects (a Python function, options) but is the same
for the same content key; `ContentKeyed(key, make)` is an argument that hashes and compares as
`key` alone, so an lru_cache'd `lambda request: request.make()` keeps results by content.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

_MISSING = object()


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


class RecentlyUsed:
    """A memo that keeps the `limit` entries used last and forgets the least recently used one
    when a new one would exceed it (functools.lru_cache's policy, for memos whose key is not the
    arguments: an object's id(), whose entry holds the object so the id stays its own).

    A memo that cleared itself when full dropped every entry at once: the next lookups of a
    notebook's kernels all missed together."""

    __slots__ = ("_items", "limit")

    def __init__(self, limit: int):
        self._items: OrderedDict = OrderedDict()
        self.limit = limit

    def get(self, key: Hashable, default: Any = None) -> Any:
        items = self._items
        found = items.get(key, _MISSING)
        if found is _MISSING:
            return default
        items.move_to_end(key)
        return found

    def __setitem__(self, key: Hashable, value: Any) -> None:
        items = self._items
        items[key] = value
        items.move_to_end(key)
        if len(items) > self.limit:
            items.popitem(last=False)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        self._items.clear()
