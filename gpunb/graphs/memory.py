"""The memory a graph's launches and copies use, watched without keeping it alive.

A captured graph holds addresses, not arrays (a CUDA graph node holds its packed parameters; the
CPU target's replay holds the same). It must not keep the arrays alive - a graph would then pin
every buffer it ever saw - and must not replay into memory that was freed and perhaps handed to
a new array. So each argument's memory owner (runtime/capture.memory_owner: the allocation, the
root of a view chain) is held by a weak reference; when one dies, the next replay raises
GraphError naming the argument, until `update` gives that argument other memory. A torch
tensor's memory can also move or be freed while the tensor lives (resize_, set_, .data =, a
storage resized to 0): its address at the capture is compared at each replay too.
"""

from __future__ import annotations

import weakref

from gpunb.foundation.errors import GraphError
from gpunb.runtime.capture import memory_owner
from gpunb.runtime.torch_tensors import memory_address


class _Strong:
    """A reference to an owner that cannot be weakly referenced (kept alive: never freed)."""

    __slots__ = ("target",)

    def __init__(self, target):
        self.target = target

    def __call__(self):
        return self.target


class MemoryWatch:
    """Per (item, position) of a graph: the memory's owner, weakly, and what to call it."""

    def __init__(self):
        self._watched: dict = {}  # (item index, position) -> (reference, description)
        self._refs: dict = {}  # id(owner) -> its reference (one per owner, however often used)
        self._died = False  # set by a reference's callback: the next check looks
        self._addresses: dict = {}  # (item index, position) -> a tensor owner's data_ptr()

    def watch(self, key: tuple, value, description: str) -> None:
        """Watch the memory `value` uses as `key` (an item's position), called `description`."""
        owner = memory_owner(value)
        ref = self._refs.get(id(owner))
        if ref is None or ref() is not owner:
            ref = self._reference(owner)
        self._watched[key] = (ref, description)
        address = memory_address(owner)
        if address is None:
            self._addresses.pop(key, None)
        else:
            self._addresses[key] = address

    def forget(self, key: tuple) -> None:
        self._watched.pop(key, None)
        self._addresses.pop(key, None)

    def _reference(self, owner):
        key = id(owner)
        watch = weakref.ref(self)  # (a watch that is gone has nothing to mark)

        def died(_ref) -> None:
            found = watch()
            if found is not None:
                found._died = True
                if found._refs.get(key) is _ref:
                    del found._refs[key]

        try:
            ref = weakref.ref(owner, died)
        except TypeError:  # (ints, bytes, some foreign buffers)
            ref = _Strong(owner)
        self._refs[key] = ref
        return ref

    def check(self, action: str) -> None:
        """GraphError if memory a replay would use was freed (`action`: what was asked)."""
        if self._addresses:
            self._check_addresses(action)
        if not self._died:
            return
        dead = [description for ref, description in self._watched.values() if ref() is None]
        if not dead:
            self._died = False  # what died was replaced by updates
            return
        more = f" (and {len(dead) - 3} more)" if len(dead) > 3 else ""
        raise GraphError(f"{action}: the memory of {'; '.join(dead[:3])}{more} was freed after "
                         "the capture, so the graph would read or write memory that is no "
                         "longer that array's",
                         hint="keep the arrays a graph uses alive while you replay it (a "
                              "variable that holds them), give the graph new ones with "
                              "g.update(...), or capture again")

    def _check_addresses(self, action: str) -> None:
        """GraphError if a torch tensor's memory is no longer where it was captured."""
        moved = []
        for key, address in self._addresses.items():
            ref, description = self._watched[key]
            owner = ref()
            if owner is not None and memory_address(owner) != address:
                moved.append(description)
        if moved:
            more = f" (and {len(moved) - 3} more)" if len(moved) > 3 else ""
            raise GraphError(
                f"{action}: the memory of {'; '.join(moved[:3])}{more} moved after the capture "
                "(the tensor was resized to more elements, given other memory with set_ or "
                ".data =, or its storage freed), so the graph would read or write memory that "
                "is no longer that tensor's",
                hint="keep a graph's tensors where they are while you replay it (copy into them "
                     "with t.copy_(...) rather than replacing their memory), give the graph the "
                     "tensor again with g.update(...), or capture again")
