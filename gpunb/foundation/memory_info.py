"""numba-cuda's MemoryInfo: what `current_context().get_memory_info()` returns on either target,
a (free, total) tuple whose fields are also named, as scripts read them (`info.free`)."""

from __future__ import annotations

from typing import NamedTuple


class MemoryInfo(NamedTuple):
    """Bytes of memory: `free` now and `total` (device memory on a GPU, host memory on the CPU
    target)."""

    free: int
    total: int
