"""The kernel launched last in this process, which CUDA errors surfacing at a later call name.

A launch stores its CUfunction's address in one word: the Python path through `note`, a native
launcher's machine code itself (it is given the word's `address`, backends/base.NativeLaunch).
Names come from the functions modules.py loads (one per function, bounded by what is loaded).
"""

from __future__ import annotations

import ctypes


class LastLaunch:
    """The last launched kernel's CUfunction address (`word`, at `address`) and its name."""

    def __init__(self):
        self.word = ctypes.c_uint64(0)
        self.address = ctypes.addressof(self.word)
        self._names: dict = {}  # function address -> kernel name (one per loaded function)

    def name_function(self, function_address: int, name: str) -> None:
        self._names[function_address] = name

    def note(self, function_address: int) -> None:
        self.word.value = function_address

    def clear(self) -> None:
        self.word.value = 0

    @property
    def kernel(self) -> str | None:
        """The name of the kernel launched last (None: none since the process or a reset)."""
        return self._names.get(self.word.value) if self.word.value else None
