"""One recording launch of a puzzle kernel, decoded record by record for the grader and the show
view: who (thread, block) touched which array element, in which memory, how (read, write,
atomic), after how many barriers and warp-collective operations, in execution order.

The launch runs on the CPU target with access recording (gpunb.access_map's instrumentation).
Everything the CPU target can check about it is here: data races (global and shared memory),
reads of shared memory no thread of the block wrote (initcheck), reads of an output element
before any thread wrote it, and accesses to memory an asynchronous copy was still filling.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np

from gpunb.backends.cpu import abi
from gpunb.backends.cpu.accesses import (
    AccessLog,
    block_xyz,
    find_pending_read,
    find_race,
    find_uninitialised_read,
    initcheck_error,
    pending_read_error,
    thread_xyz,
)
from gpunb.backends.cpu.async_races import race_report
from gpunb.foundation.errors import RaceError
from gpunb.jit.access_stats import build_map, flat_indices
from gpunb.jit.access_types import AccessMap

READ, WRITE, ATOMIC = 0, 1, 2
_KINDS = {"read": READ, "write": WRITE, "atomic": ATOMIC}


@dataclass(frozen=True, slots=True)
class Touch:
    """One access, as a person reads it: thread `gid` read/wrote `array[index]`."""

    gid: int
    array: str
    memory: str  # "global" or "shared"
    index: tuple
    kind: str  # "read", "write" or "atomic"
    line: int


@dataclass(frozen=True)
class Trace:
    """The decoded log of one launch (columns are numpy arrays, one entry per record, in
    execution order) with the AccessMap built from it."""

    log: AccessLog
    access: AccessMap
    params: tuple  # the kernel's parameter names
    gid: np.ndarray  # global linear thread id
    kind: np.ndarray  # READ / WRITE / ATOMIC
    shared: np.ndarray  # bool: shared memory
    array: np.ndarray  # index into array_names, -1: not an argument or shared array
    element: np.ndarray  # flat element index inside that array, -1 when between elements
    bar: np.ndarray  # barriers the thread had passed
    warp: np.ndarray  # warp-collective operations the thread had passed
    line: np.ndarray
    array_names: tuple  # global arrays by parameter name, then shared arrays by their name
    array_shapes: tuple

    # ---- who and where ---------------------------------------------------------------------

    @property
    def threads(self) -> int:
        grid = self.log.grid
        return self.log.threads_per_block() * grid[0] * grid[1] * grid[2]

    def thread_name(self, gid: int) -> str:
        """'thread (x, y, z) of block (x, y, z)' for a global linear id."""
        block, local = divmod(int(gid), self.log.threads_per_block())
        return (f"thread {thread_xyz(local, self.log.block)} of block "
                f"{block_xyz(block, self.log.grid)}")

    def array_id(self, name: str) -> int:
        return self.array_names.index(name) if name in self.array_names else -1

    def is_shared_array(self, k: int) -> bool:
        return k >= 0 and self.array_names[k] not in self.params

    def touches(self, gid: int) -> list[Touch]:
        """Every access of one thread, in its order."""
        out = []
        for r in np.flatnonzero(self.gid == gid):
            k = int(self.array[r])
            if k < 0 or self.element[r] < 0:
                continue
            index = np.unravel_index(int(self.element[r]), self.array_shapes[k])
            out.append(Touch(int(gid), self.array_names[k],
                             "shared" if self.shared[r] else "global",
                             tuple(int(i) for i in index),
                             ("read", "write", "atomic")[int(self.kind[r])], int(self.line[r])))
        return out

    # ---- per-thread counts -----------------------------------------------------------------

    def per_thread(self, mask: np.ndarray) -> np.ndarray:
        """How many of the masked records each thread made."""
        return np.bincount(self.gid[mask], minlength=self.threads)

    def shared_reads(self) -> np.ndarray:
        return self.per_thread(self.shared & (self.kind != WRITE))

    def step_reads(self) -> np.ndarray:
        """Per thread: the most shared-memory reads it made between two barriers."""
        mask = self.shared & (self.kind != WRITE)
        out = np.zeros(self.threads, np.int64)
        if mask.any():
            keys = self.gid[mask] * (int(self.bar.max()) + 1) + self.bar[mask]
            counts = np.bincount(keys)
            owners = np.arange(len(counts)) // (int(self.bar.max()) + 1)
            np.maximum.at(out, owners, counts)
        return out

    def barriers(self) -> np.ndarray:
        """Per block: the barriers its threads had passed at their last access (a barrier after
        a block's last access changes nothing and is not counted)."""
        blocks = self.threads // self.log.threads_per_block()
        out = np.zeros(blocks, np.int64)
        np.maximum.at(out, self.gid // self.log.threads_per_block(), self.bar)
        return out

    def warp_ops(self) -> np.ndarray:
        """Per thread: warp-collective operations (shuffles, votes, syncwarp, tensor-core
        fragments) it had passed at its last access."""
        out = np.zeros(self.threads, np.int64)
        np.maximum.at(out, self.gid, self.warp)
        return out

    # ---- checks ----------------------------------------------------------------------------

    def race(self):
        """The error of the first data race (global or shared memory), or None: a RaceError,
        or an AsyncCopyError when a TMA copy or a wgmma is one side of it. (The access map's
        first entry may instead be a pending copy or a missing fence: pending_copy() reports
        the former, so the race is looked for on its own.)"""
        first = self.access.races[0] if self.access.races else None
        if first is None or isinstance(first, RaceError):
            return first
        race = find_race(self.log)
        return None if race is None else race_report(self.log, race)

    def uninitialised_shared(self):
        """An InitcheckError for the first read of shared memory no thread of the block had
        written, or None."""
        rec = find_uninitialised_read(self.log)
        return None if rec is None else initcheck_error(self.log, rec)

    def pending_copy(self):
        """An AsyncCopyError for an access to memory an asynchronous copy was filling, or None."""
        pair = find_pending_read(self.log)
        return None if pair is None else pending_read_error(self.log, pair)

    def read_before_write(self, name: str) -> int | None:
        """The record index of the first read of an element of global array `name` that no
        thread had written yet (atomics read too), or None."""
        k = self.array_id(name)
        idx = np.flatnonzero((self.array == k) & ~self.shared & (self.element >= 0))
        if not len(idx):
            return None
        _, first = np.unique(self.element[idx], return_index=True)
        firsts = idx[first]
        bad = firsts[self.kind[firsts] != WRITE]
        return int(bad.min()) if len(bad) else None

    def unread_elements(self, name: str) -> np.ndarray:
        """Flat indices of the elements of global array `name` no thread read."""
        k = self.array_id(name)
        size = int(np.prod(self.array_shapes[k])) if k >= 0 else 0
        seen = np.zeros(size, bool)
        mask = (self.array == k) & (self.kind != WRITE) & (self.element >= 0)
        seen[self.element[mask]] = True
        return np.flatnonzero(~seen)

    def writers_without_shared_reads(self, outputs: tuple) -> np.ndarray:
        """Global ids of threads that wrote an output element without having read shared
        memory before."""
        out_ids = [self.array_id(n) for n in outputs]
        writes = np.isin(self.array, out_ids) & ~self.shared & (self.kind != READ)
        reads = self.shared & (self.kind != WRITE)
        order = np.arange(len(self.gid))
        first_read = np.full(self.threads, len(order) + 1, np.int64)
        np.minimum.at(first_read, self.gid[reads], order[reads])
        first_write = np.full(self.threads, -1, np.int64)
        w = np.flatnonzero(writes)
        if len(w):
            first_write[self.gid[w][::-1]] = w[::-1]
        return np.flatnonzero((first_write >= 0) & (first_read > first_write))

    def writers_of(self, name: str, index: tuple) -> int:
        """How many threads wrote element `index` of array `name` (for a shared array: in the
        block that wrote it most)."""
        k = next((j for j, n in enumerate(self.array_names) if name in n.split("/")), -1)
        if k < 0 or not index:
            return 0
        flat = int(np.ravel_multi_index(tuple(int(i) for i in index), self.array_shapes[k]))
        mask = (self.array == k) & (self.element == flat) & (self.kind != READ)
        tpb = self.log.threads_per_block()
        writers = np.unique(self.gid[mask])
        if not self.is_shared_array(k) or not len(writers):
            return len(writers)
        return int(np.bincount(writers // tpb).max())

    def shared_loaders(self) -> np.ndarray:
        """Per block: how many of its threads read global memory and wrote shared memory (the
        threads that bring data in for others; a thread storing only padding zeros is not
        one)."""
        tpb = self.log.threads_per_block()
        wrote = self.per_thread(self.shared & (self.kind != READ)) > 0
        loaded = self.per_thread(~self.shared & (self.kind != WRITE)) > 0
        return (wrote & loaded).reshape(-1, tpb).sum(axis=1)

    def shared_reads_from_others(self) -> np.ndarray:
        """Per block: shared-memory reads of a value another thread of the block wrote."""
        tpb = self.log.threads_per_block()
        blocks = self.threads // tpb
        idx = np.flatnonzero(self.shared & (self.element >= 0))
        out = np.zeros(blocks, np.int64)
        if not len(idx):
            return out
        block = self.gid[idx] // tpb
        order = np.lexsort((idx, self.element[idx], self.array[idx], block))
        idx, block = idx[order], block[order]
        group = np.r_[True, (block[1:] != block[:-1]) |
                      (self.array[idx][1:] != self.array[idx][:-1]) |
                      (self.element[idx][1:] != self.element[idx][:-1])]
        position = np.arange(len(idx))
        group_start = np.maximum.accumulate(np.where(group, position, 0))
        # the last write strictly before each record, if it is in the record's group
        last_write = np.maximum.accumulate(np.where(self.kind[idx] != READ, position, -1))
        previous = np.r_[-1, last_write[:-1]]
        writer = np.where(previous >= group_start, self.gid[idx][np.maximum(previous, 0)], -1)
        crossing = (self.kind[idx] != WRITE) & (writer >= 0) & (writer != self.gid[idx])
        np.add.at(out, block[crossing], 1)
        return out


def record(dispatcher, grid, block, args: list, names: tuple | None = None) -> Trace:
    """Launch `dispatcher[grid, block](*args)` once with access recording and decode its log;
    arrays are named by `names` (the puzzle's parameters, whatever the kernel calls them) or by
    the kernel's own parameter names."""
    from gpunb.jit.access_map import record_launch

    log = record_launch(dispatcher[grid, block], *args)
    params = tuple(names or inspect.signature(dispatcher.py_func).parameters)
    return decode(log, params)


def decode(log: AccessLog, params: tuple) -> Trace:
    """The Trace of one AccessLog (see Trace)."""
    recs = log.records
    n = len(recs)
    tpb = log.threads_per_block()
    sites = log.sites
    site = recs["site"].astype(np.int64)
    kinds = np.array([_KINDS[s[4]] for s in sites] or [READ], np.int8)
    lines = np.array([s[1] for s in sites] or [0], np.int64)
    shared = recs["space"] == abi.SPACE_SHARED
    address = recs["address"].astype(np.int64)
    array = np.full(n, -1, np.int64)
    element = np.full(n, -1, np.int64)
    names: list[str] = []
    shapes: list[tuple] = []
    for arg in log.arguments:
        lo, hi = arg.span()
        inside = np.flatnonzero(~shared & (address >= lo) & (address < hi) & (array < 0))
        array[inside] = len(names)
        element[inside] = flat_indices(arg, address[inside])
        names.append(params[arg.position] if arg.position < len(params)
                     else f"arg{arg.position}")
        shapes.append(tuple(arg.shape))
    for sarr in log.shared:
        inside = shared & (address >= sarr.start) & (array < 0)
        if sarr.count:
            inside &= address < sarr.start + sarr.count * sarr.itemsize
        inside = np.flatnonzero(inside)
        used = sorted({sites[s][3] for s in site[inside]})
        array[inside] = len(names)
        element[inside] = (address[inside] - sarr.start) // max(sarr.itemsize, 1)
        names.append("/".join(used) or f"shared@{sarr.start}")
        shapes.append((max(sarr.count, int(element[inside].max()) + 1 if len(inside) else 0),))
    gid = recs["block"].astype(np.int64) * tpb + recs["thread"].astype(np.int64)
    return Trace(log, build_map(log, list(params)), params, gid, kinds[site], shared, array,
                 element, recs["bar_epoch"].astype(np.int64),
                 recs["warp_epoch"].astype(np.int64), lines[site], tuple(names), tuple(shapes))
