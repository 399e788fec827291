"""An AccessLog (the raw records of one recording launch) turned into an AccessMap.

Warp requests are reconstructed from the log: the k-th execution of a source line by each lane
of a warp is one request, as the hardware issues it. Sectors are 32-byte aligned pieces of
global memory; banks are 32 four-byte banks of shared memory (two lanes reading one word is a
broadcast, not a conflict).
"""

from __future__ import annotations

import numpy as np

from gpunb.backends.cpu import abi
from gpunb.backends.cpu.accesses import (
    AccessLog,
    copy_roles,
    find_pending_read,
    find_race,
    pending_read_error,
)
from gpunb.backends.cpu.async_races import find_missing_fence, missing_fence_error, race_report
from gpunb.jit.access_types import (
    BANK_BYTES,
    BANKS,
    SECTOR_BYTES,
    AccessMap,
    ArrayAccess,
    AsyncOverlap,
    LineBankConflicts,
    LineCoalescing,
)


def _group_ids(*columns) -> tuple[np.ndarray, int]:
    """A dense id per distinct row of the given columns (lexsort: faster than unique(axis=0))."""
    n = len(columns[0])
    if not n:
        return np.zeros(0, np.int64), 0
    cols = [np.asarray(c, np.int64) for c in columns]
    order = np.lexsort(tuple(reversed(cols)))
    change = np.zeros(n, bool)
    change[0] = True
    for c in cols:
        sorted_c = c[order]
        change[1:] |= sorted_c[1:] != sorted_c[:-1]
    ids = np.empty(n, np.int64)
    ids[order] = np.cumsum(change) - 1
    return ids, int(change.sum())


def _first_of_each(*columns) -> np.ndarray:
    """Indices of one row per distinct row of the given columns."""
    ids, n = _group_ids(*columns)
    first = np.full(n, len(ids), np.int64)
    np.minimum.at(first, ids, np.arange(len(ids)))
    return first


def _occurrence(block, thread, site) -> np.ndarray:
    """For each record, how many earlier records the same thread made at the same site."""
    n = len(block)
    order = np.lexsort((np.arange(n), site, thread, block))
    key = np.stack([block[order], thread[order], site[order]], axis=1)
    new = np.r_[True, (key[1:] != key[:-1]).any(axis=1)]
    starts = np.flatnonzero(new)
    run_start = starts[np.cumsum(new) - 1]
    out = np.empty(n, np.int64)
    out[order] = np.arange(n) - run_start
    return out


def flat_indices(arg, addresses: np.ndarray) -> np.ndarray:
    """Element flat (C-order) index of each address inside `arg`, -1 if between elements."""
    offset = addresses - arg.data
    index = np.zeros((len(addresses), len(arg.shape)), np.int64)
    for k in sorted(range(len(arg.shape)), key=lambda k: -abs(arg.strides[k])):
        s = arg.strides[k]
        if s == 0:
            continue
        q = np.clip(offset // s, 0, arg.shape[k] - 1)
        index[:, k] = q
        offset = offset - q * s
    flat = np.ravel_multi_index(index.T, arg.shape) if arg.shape else np.zeros(len(offset),
                                                                               np.int64)
    return np.where(offset == 0, flat, -1)


def _array_access(name, memory, shape, flat, gid, kinds, order_index, block=None):
    size = int(np.prod(shape)) if shape else 1
    reads = np.zeros(size, np.int64)
    writes = np.zeros(size, np.int64)
    is_read = kinds != "write"
    is_write = kinds != "read"
    np.add.at(reads, flat[is_read], 1)
    np.add.at(writes, flat[is_write], 1)
    first_reader = np.full(size, -1, np.int64)
    last_writer = np.full(size, -1, np.int64)
    # records are in time order per block; take the first read and the last write seen
    r = np.flatnonzero(is_read)[::-1]
    first_reader[flat[r]] = gid[r]
    w = np.flatnonzero(is_write)
    last_writer[flat[w]] = gid[w]
    readers = np.zeros(size, np.int64)
    writers = np.zeros(size, np.int64)
    for mask, out in ((is_read, readers), (is_write, writers)):
        if mask.any():
            f, g = flat[mask], gid[mask]
            np.add.at(out, f[_first_of_each(f, g)], 1)
    shape = tuple(shape)
    return ArrayAccess(name, memory, shape, reads.reshape(shape), writes.reshape(shape),
                       first_reader.reshape(shape), last_writer.reshape(shape),
                       readers.reshape(shape), writers.reshape(shape), block)


def build_map(log: AccessLog, names: list) -> AccessMap:
    recs = log.records
    tpb = log.threads_per_block()
    n_threads = tpb * log.grid[0] * log.grid[1] * log.grid[2]
    sites = log.sites
    kind_of_site = np.array([s[4] for s in sites] or ["read"])
    kinds = kind_of_site[recs["site"]] if len(recs) else np.zeros(0, "<U6")
    block = recs["block"].astype(np.int64)
    thread = recs["thread"].astype(np.int64)
    site = recs["site"].astype(np.int64)
    gid = block * tpb + thread
    address = recs["address"].astype(np.int64)
    shared = recs["space"] == abi.SPACE_SHARED
    arrays = {}
    owner = np.full(len(recs), -1, np.int64)  # argument position of each global record
    flat_all = np.full(len(recs), -1, np.int64)
    for arg in log.arguments:
        lo, hi = arg.span()
        inside = ~shared & (address >= lo) & (address < hi) & (owner < 0)
        idx = np.flatnonzero(inside)
        flat = flat_indices(arg, address[idx])
        keep = flat >= 0
        idx, flat = idx[keep], flat[keep]
        owner[idx] = arg.position
        flat_all[idx] = flat
        name = names[arg.position] if arg.position < len(names) else f"arg{arg.position}"
        arrays[name] = _array_access(name, "global", arg.shape, flat, gid[idx], kinds[idx],
                                     idx)
    shared_owner = np.full(len(recs), -1, np.int64)
    for k, sarr in enumerate(log.shared):
        inside = shared & (address >= sarr.start) & (owner < 0) & (shared_owner < 0)
        if sarr.count:
            inside &= address < sarr.start + sarr.count * sarr.itemsize
        shared_owner[inside] = k
        idx = np.flatnonzero(inside & (log.home == 0))  # block 0's memory, by any block
        if not len(idx) or not sarr.count:
            continue
        used = {sites[s][3] for s in site[idx]}
        name = "/".join(sorted(used))
        flat = (address[idx] - sarr.start) // sarr.itemsize
        arrays[name] = _array_access(name, "shared", (sarr.count,), flat, gid[idx], kinds[idx],
                                     idx, block=0)
    is_global = owner >= 0
    global_reads = np.bincount(gid[is_global & (kinds != "write")], minlength=n_threads)
    global_writes = np.bincount(gid[is_global & (kinds != "read")], minlength=n_threads)
    occurrence = _occurrence(block, thread, site) if len(recs) else np.zeros(0, np.int64)
    warp = thread // 32
    # per argument position (index -1, not an argument, is the extra last slot)
    n_pos = max([arg.position for arg in log.arguments] + [0]) + 2
    itemsize = np.ones(n_pos, np.int64)
    base = np.zeros(n_pos, np.int64)
    for arg in log.arguments:
        itemsize[arg.position] = arg.itemsize
        # sectors counted from each array's start, as if allocated like cudaMalloc
        # (256-aligned): numpy's own alignment of a host array says nothing about the GPU
        base[arg.position] = arg.span()[0]
    relative = address - base[owner]
    coalescing = _coalescing(log, is_global & ~_bulk(sites, site), block, warp, site,
                             occurrence, relative, owner, itemsize)
    banks = _bank_conflicts(log, shared & (shared_owner >= 0), block, warp, site, occurrence,
                            address)
    return AccessMap(log.kernel, log.grid, log.block, arrays, global_reads, global_writes,
                     coalescing, banks, _first_race(log), log.truncated, recs,
                     _async_overlap(log, shared, kinds, block, n_threads // max(tpb, 1)))


def _first_race(log: AccessLog) -> tuple:
    """The first access to memory an asynchronous operation still owned, else the first data
    race, else the first generic write the async proxy read without a fence, as a one-element
    tuple (empty when there is none): what racecheck would raise."""
    pending = find_pending_read(log)
    if pending is not None:
        return (pending_read_error(log, pending),)
    race = find_race(log)
    if race is not None:
        return (race_report(log, race),)
    unfenced = find_missing_fence(log)
    return (missing_fence_error(log, unfenced),) if unfenced is not None else ()


def _async_overlap(log: AccessLog, shared, kinds, block, n_blocks: int) -> AsyncOverlap | None:
    """Per block: elements copied asynchronously, the kernel's reads of shared memory, and
    those made while a copy of the block was in flight (between its issue and completion
    records, in execution order: a recording launch runs its threads on one host thread)."""
    role = copy_roles(log)
    if not len(role) or not (role == 1).any():
        return None
    delta = np.where(role == 1, 1, np.where(role == 2, -1, 0)).astype(np.int64)
    order = np.lexsort((np.arange(len(block)), block))
    running = np.cumsum(delta[order])
    starts = np.r_[0, np.flatnonzero(block[order][1:] != block[order][:-1]) + 1]
    before = np.repeat(np.r_[0, running[starts[1:] - 1]], np.diff(np.r_[starts, len(order)]))
    in_flight = np.empty(len(block), bool)
    in_flight[order] = running - delta[order] - before > 0
    reads = shared & (kinds == "read") & (role == 0)
    return AsyncOverlap(np.bincount(block[role == 1], minlength=n_blocks),
                        np.bincount(block[reads], minlength=n_blocks),
                        np.bincount(block[reads & in_flight], minlength=n_blocks))


def _site_label(log, s) -> tuple:
    entry = log.sites[s]
    return entry[1], entry[3], entry[4], entry[2]


def _bulk(sites, site: np.ndarray) -> np.ndarray:
    """Per record: whether a TMA copy made it (the TMA unit moves a box in bulk: no warp
    requests to coalesce)."""
    bulk = np.array([len(s) > 6 and s[6] in (abi.ROLE_TMA_SOURCE, abi.ROLE_TMA_DEST)
                     for s in sites] or [False])
    return bulk[site] if len(site) else np.zeros(0, bool)


def _coalescing(log, mask, block, warp, site, occurrence, address, owner, itemsize) -> tuple:
    idx = np.flatnonzero(mask)
    if not len(idx):
        return ()
    req, n_req = _group_ids(block[idx], warp[idx], site[idx], occurrence[idx])
    sector = address[idx] // SECTOR_BYTES
    array = owner[idx]
    first = _first_of_each(req, array, sector)
    sectors_per_req = np.bincount(req[first], minlength=n_req)
    lanes_per_req = np.bincount(req, minlength=n_req)
    req_site = np.zeros(n_req, np.int64)
    req_site[req] = site[idx]
    req_size = np.zeros(n_req, np.int64)
    req_size[req] = itemsize[owner[idx]]
    ideal = -(-(lanes_per_req * req_size) // SECTOR_BYTES)
    out = []
    for s in np.unique(req_site):
        on = req_site == s
        line, array, kind, col = _site_label(log, int(s))
        out.append(LineCoalescing(line, array, kind, int(on.sum()),
                                  int(sectors_per_req[on].sum()), int(ideal[on].sum()), col))
    return tuple(sorted(out, key=lambda c: (c.line, c.column, c.kind)))


def _bank_conflicts(log, mask, block, warp, site, occurrence, address) -> tuple:
    idx = np.flatnonzero(mask)
    if not len(idx):
        return ()
    req, n_req = _group_ids(block[idx], warp[idx], site[idx], occurrence[idx])
    word = address[idx] // BANK_BYTES
    bank = word % BANKS
    keep = _first_of_each(req, bank, word)
    per_bank, _ = _group_ids(req[keep], bank[keep])
    ways_per_bank = np.bincount(per_bank)
    bank_req = np.zeros(len(ways_per_bank), np.int64)
    bank_req[per_bank] = req[keep]
    ways = np.zeros(n_req, np.int64)
    np.maximum.at(ways, bank_req, ways_per_bank)
    req_site = np.zeros(n_req, np.int64)
    req_site[req] = site[idx]
    out = []
    for s in np.unique(req_site):
        on = req_site == s
        line, array, kind, col = _site_label(log, int(s))
        out.append(LineBankConflicts(line, array, kind, int(on.sum()), int(ways[on].sum()),
                                     int(ways[on].max()), col))
    return tuple(sorted(out, key=lambda c: (c.line, c.column, c.kind)))
