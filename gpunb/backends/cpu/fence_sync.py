"""Happens-before through cuda.threadfence() and atomics: the CUDA memory model's release and
acquire patterns, replayed by happens_before.py beside its mbarriers and barriers.

A fence followed (in its thread) by an atomic write releases what the thread knew at the fence:
the atomic's location keeps the join of every such release (each gpunb atomic reads and writes,
so every later atomic on it continues the release sequence; a plain store ends it). An atomic
read followed by a fence - or by a block barrier the thread passes, as the CUDA Programming
Guide's last-block sum relies on - acquires what the location held when it read. An atomic with
no fence before it releases nothing, and one whose reader neither fences nor passes a barrier
acquires nothing: the missing-fence bug stays a race. cuda.threadfence_block() releases to the
threads of its own block only. A compare-and-swap that did not swap only read.
"""

from __future__ import annotations

import numpy as np

from gpunb.backends.cpu import abi
from gpunb.compiler.builtins import atomics

READ, WRITE, RESET = 1, 2, 4  # what an access does for the replay (bits; 0: nothing)
# more threads than this releasing through fences make the vector clocks too wide to replay
MAX_PUBLISHERS = 2048


def plan(log, fence_kind: np.ndarray) -> tuple[np.ndarray, set]:
    """(per access record what it does for the replay, the (block, thread)s that release).

    An atomic's read matters (READ) when a fence or barrier of its thread comes after it; its
    write (WRITE) releases when a fence of its thread came before it and a read that matters
    follows at its location; a plain store at an atomic's location ends the location's
    release sequence (RESET). Everything else (most of a log) is skipped, and only releasing
    threads get a component of the vector clocks."""
    recs = log.records
    kinds = np.zeros(len(recs), np.int8)
    per_site = np.array([_site_kind(s) for s in log.sites] or [0], np.int8)
    site_kind = per_site[recs["site"]] if len(recs) else kinds
    atomic = (site_kind & READ) > 0
    if not atomic.any():
        return kinds, set()
    keys = location_keys(log)
    kinds[np.isin(keys, np.unique(keys[atomic])) & (site_kind == RESET)] = RESET
    sync = log.sync
    tpb = log.threads_per_block()
    gthread = recs["block"].astype(np.int64) * tpb + recs["thread"]
    fences = fence_kind == abi.SYNC_THREADFENCE
    fence_thread = sync["block"][fences].astype(np.int64) * tpb + sync["thread"][fences]
    n_threads = int(max(gthread.max(), fence_thread.max(initial=0))) + 1
    last_fence, first_fence = np.full(n_threads, -1, np.int64), np.full(n_threads, 1 << 62)
    np.maximum.at(last_fence, fence_thread, log.sync_at[fences])
    np.minimum.at(first_fence, fence_thread, log.sync_at[fences])
    block_epoch = np.zeros(int(recs["block"].max()) + 1, np.int64)
    np.maximum.at(block_epoch, recs["block"], recs["bar_epoch"])
    index = np.arange(len(recs))
    acquiring = atomic & ((last_fence[gthread] > index) |
                          (block_epoch[recs["block"]] > recs["bar_epoch"]))
    kinds[acquiring] |= READ
    if not acquiring.any():
        return kinds, set()
    _, loc = np.unique(keys, return_inverse=True)
    last_read = np.full(int(loc.max()) + 1, -1, np.int64)
    np.maximum.at(last_read, loc[acquiring], index[acquiring])
    releasing = ((site_kind & WRITE) > 0) & (first_fence[gthread] < index + 1) & \
        (last_read[loc] > index)
    kinds[releasing] |= WRITE
    return kinds, set(zip((gthread[releasing] // tpb).tolist(),
                          (gthread[releasing] % tpb).tolist(), strict=True))


def _site_kind(site: tuple) -> int:
    """READ | WRITE for an atomic (READ for a failed compare-and-swap), RESET for a store."""
    role = site[6] if len(site) > 6 else ""
    if site[4] == "atomic" and role.startswith(atomics.ROLE_PREFIX):
        return READ if role == atomics.CAS_FAILED_ROLE else READ | WRITE
    return RESET if site[4] == "write" else 0


def location_keys(log) -> np.ndarray:
    """One integer per record naming its memory location (shared: of its home block)."""
    recs = log.records
    return _numbers(recs["space"], log.home, recs["address"])


def _numbers(space: np.ndarray, home: np.ndarray, address: np.ndarray) -> np.ndarray:
    """A global address is a host pointer (positive); a shared one an offset in its block's
    shared memory (below 2**32): negative numbers, by block."""
    home, address = np.asarray(home, np.int64), np.asarray(address).astype(np.int64)
    return np.where(space == abi.SPACE_SHARED, -(home << 32) - address - 1, address)


class FenceSync:
    """The replay's state for fences and atomics: per location the releases it carries, per
    thread its latest fence's release and what its atomic reads saw that no fence or barrier
    has acquired yet (state.pending, which _Group.barrier completes)."""

    def __init__(self, log, kinds: np.ndarray):
        self.log, self.kinds = log, kinds
        self.keys = location_keys(log) if kinds.any() else np.zeros(0, np.int64)
        self.fenced: dict = {}  # (block, thread) -> (scope, clock released at its last fence)
        self.device: dict = {}  # location -> join of releases to every block
        self.local: dict = {}  # (location, block) -> join of threadfence_block releases

    def fence(self, state, who: tuple, scope: int, pos: int) -> None:
        """A fence: it completes the thread's pending acquisitions, then releases."""
        seen = state.pending.pop(who, None)
        if seen is not None:
            state.acquire(who, seen, pos)
        if ("t", *who) in state.comps:
            self.fenced[who] = (scope, state.release(who, pos))

    def access(self, state, index: int) -> None:
        """Access record `index` at an atomic location."""
        rec = self.log.records[index]
        kind, where = int(self.kinds[index]), int(self.keys[index])
        who = (int(rec["block"]), int(rec["thread"]))
        if kind == RESET:  # a plain store: later atomics no longer carry earlier releases
            self.device.pop(where, None)
            for key in [k for k in self.local if k[0] == where]:
                del self.local[key]
            return
        for seen in (self.device.get(where), self.local.get((where, who[0]))):
            if seen is not None and kind & READ:
                pending = state.pending.setdefault(who, np.zeros(state.width, np.int32))
                np.maximum(pending, seen, out=pending)
        if kind & WRITE and who in self.fenced:
            scope, clock = self.fenced[who]
            table, key = (self.local, (where, who[0])) if scope == abi.FENCE_BLOCK else \
                (self.device, where)
            if key not in table:
                table[key] = np.zeros(state.width, np.int32)
            np.maximum(table[key], clock, out=table[key])


def observed(a: np.ndarray, b: np.ndarray, f: dict, pairs_ordered) -> np.ndarray:
    """Elementwise, for unordered pairs of one location: whether the earlier one is an atomic
    that an atomic R read (directly or through later atomics: each reads the one before)
    before the other's thread, or something ordered before it, accessed the location - the
    PTX memory model's observation order. The last block's reset of the ticket counter
    (`count[0] = 0` after its own atomic) is no race with the other blocks' atomics. `f` is
    accesses.find_race's table of the candidate records, `pairs_ordered` its order."""
    out = np.zeros(len(a), bool)
    first, then = np.minimum(a, b), np.maximum(a, b)
    for n in np.flatnonzero(f["atomic"][first] & ~f["atomic"][then]).tolist():
        x, p = int(first[n]), int(then[n])
        if "atomics_at" not in f:
            f["location"] = _numbers(*f["location_keys"])
            atomic = np.flatnonzero(f["atomic"])
            f["atomics_at"] = {loc: atomic[f["location"][atomic] == loc]
                               for loc in np.unique(f["location"][atomic]).tolist()}
        readers = f["atomics_at"][int(f["location"][x])]
        readers = readers[(readers > x) & (readers < p)]
        if not len(readers):
            continue
        mine = f["who"][readers] == f["who"][p]
        out[n] = mine.any() or bool(pairs_ordered(readers, np.full(len(readers), p), f).any())
    return out
