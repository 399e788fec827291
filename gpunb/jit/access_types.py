"""What gpunb.access_map returns: per-array, per-line and per-thread views of one launch.

The launch runs once on the CPU target with access recording on (the instrumentation that
racecheck uses). The result says, per array, which thread read and wrote each element; per warp
request of a global-memory line, how many 32-byte sectors it needed (coalescing); per
shared-memory line, how many bank conflicts its requests had; per thread, how many global reads
and writes it made. Everything is numpy arrays and small frozen records with readable reprs;
`_repr_html_` draws each array as a grid coloured by thread for notebooks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SECTOR_BYTES = 32
BANKS = 32
BANK_BYTES = 4


@dataclass(frozen=True, slots=True)
class ArrayAccess:
    """One array's accesses. Element arrays have the array's shape; thread ids are global
    linear ids (block * threads_per_block + thread), -1 where no thread did it."""

    name: str  # parameter name, or the shared array's name in the kernel
    memory: str  # "global" or "shared" (shared: `block` says which block's copy is shown)
    shape: tuple
    reads: np.ndarray  # int64: how many reads of each element (atomics count as both)
    writes: np.ndarray  # int64
    first_reader: np.ndarray  # int64 thread id
    last_writer: np.ndarray  # int64 thread id
    readers: np.ndarray  # int64: how many distinct threads read each element
    writers: np.ndarray  # int64: how many distinct threads wrote each element
    block: int | None = None

    def __repr__(self) -> str:
        touched = int(((self.reads + self.writes) > 0).sum())
        return (f"<ArrayAccess {self.name} ({self.memory}) shape={self.shape}: "
                f"{int(self.reads.sum())} reads, {int(self.writes.sum())} writes, "
                f"{touched} of {int(np.prod(self.shape))} elements touched>")

    def _repr_html_(self) -> str:
        from gpunb.jit.access_html import array_html

        return array_html(self)


@dataclass(frozen=True, slots=True)
class LineCoalescing:
    """Global memory at one source line: warp requests and the 32-byte sectors they moved."""

    line: int
    array: str
    kind: str  # "read", "write" or "atomic"
    requests: int  # warp-level executions of the line
    sectors: int  # sectors moved, summed over requests
    ideal_sectors: int  # if every request read its bytes contiguously and aligned
    column: int = 0  # 0-based column of the access (a line can hold several)

    @property
    def sectors_per_request(self) -> float:
        return self.sectors / self.requests if self.requests else 0.0

    @property
    def efficiency(self) -> float:
        """ideal / actual sectors: 1.0 is perfectly coalesced."""
        return self.ideal_sectors / self.sectors if self.sectors else 1.0

    def __repr__(self) -> str:
        return (f"<line {self.line}:{self.column + 1} {self.kind} {self.array}: "
                f"{self.requests} requests, {self.sectors_per_request:.1f} sectors/request, "
                f"{self.efficiency:.0%} efficient>")


@dataclass(frozen=True, slots=True)
class LineBankConflicts:
    """Shared memory at one source line: per warp request, the wavefronts its banks needed."""

    line: int
    array: str
    kind: str
    requests: int
    wavefronts: int  # summed over requests; a conflict-free request needs 1
    max_ways: int  # worst request: distinct words in its busiest bank
    column: int = 0

    @property
    def conflicts(self) -> int:
        """Extra wavefronts caused by bank conflicts, summed over requests."""
        return self.wavefronts - self.requests

    def __repr__(self) -> str:
        return (f"<line {self.line}:{self.column + 1} {self.kind} {self.array}: "
                f"{self.requests} requests, {self.conflicts} bank conflicts "
                f"(worst {self.max_ways}-way)>")


@dataclass(frozen=True, slots=True)
class AsyncOverlap:
    """Asynchronous copies (cp.async, TMA loads) per block, and how much of the block's reading
    of shared memory went on while one of them was in flight - what a pipeline (double
    buffering) is for. Arrays are per block (linear block id)."""

    copied: np.ndarray  # int64: elements the block's asynchronous copies wrote
    shared_reads: np.ndarray  # int64: the kernel's own reads of shared memory
    overlapped: np.ndarray  # int64: of those, made while a copy of the block was in flight

    @property
    def fraction(self) -> float:
        """Overlapped reads / shared reads over the launch (0.0 when it read none)."""
        total = int(self.shared_reads.sum())
        return int(self.overlapped.sum()) / total if total else 0.0

    def __repr__(self) -> str:
        return (f"<AsyncOverlap: {int(self.copied.sum())} elements copied asynchronously; "
                f"{int(self.overlapped.sum())} of {int(self.shared_reads.sum())} shared reads "
                f"({self.fraction:.0%}) while a copy was in flight>")


@dataclass(frozen=True, slots=True)
class AccessMap:
    """What one launch did to memory (see the module docstring)."""

    kernel: str
    grid: tuple
    block: tuple
    arrays: dict  # name -> ArrayAccess
    global_reads: np.ndarray  # per thread (global linear id): element reads of global arrays
    global_writes: np.ndarray  # per thread: element writes of global arrays (atomics: both)
    coalescing: tuple  # LineCoalescing per global line
    bank_conflicts: tuple  # LineBankConflicts per shared line
    # the first race found, if any: a RaceError, or an AsyncCopyError for an access to memory
    # an asynchronous operation still owned (a copy filling it, a wgmma reading it)
    races: tuple = ()
    truncated: bool = False  # the log hit GPUNB_RECORD_LIMIT: counts are partial
    records: np.ndarray = field(default=None, repr=False)  # the raw log (see accesses.py)
    async_overlap: AsyncOverlap | None = None  # None when the kernel copied nothing async

    def __getitem__(self, name: str) -> ArrayAccess:
        return self.arrays[name]

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    def thread_counts(self, thread: int) -> tuple[int, int]:
        """(global reads, global writes) of one thread (global linear id)."""
        return int(self.global_reads[thread]), int(self.global_writes[thread])

    def __repr__(self) -> str:
        lines = [f"<AccessMap {self.kernel}[{self.grid}, {self.block}]"]
        lines += [f"  {a!r}" for a in self.arrays.values()]
        lines += [f"  {c!r}" for c in self.coalescing]
        lines += [f"  {c!r}" for c in self.bank_conflicts]
        if self.races:
            lines.append(f"  race: {self.races[0].message}")
        if self.truncated:
            lines.append("  (log truncated: counts are partial)")
        return "\n".join(lines) + ">"

    def _repr_html_(self) -> str:
        from gpunb.jit.access_html import map_html

        return map_html(self)

