"""What a recording CPU-target launch logged: decoded records, where each one points, and races.

The generated code (instrument.py) appends raw records; this module gives them meaning: which
kernel argument or shared array an address belongs to and at which element, and whether two
accesses of different threads to one address are unordered (a data race).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpunb.backends.cpu import abi, fence_sync
from gpunb.compiler.builtins import atomics

RECORD_DTYPE = np.dtype(list(abi.RECORD_FIELDS))
assert RECORD_DTYPE.itemsize == abi.RECORD_SIZE


@dataclass(frozen=True, slots=True)
class ArgArray:
    """A kernel argument that is an array, as the launch passed it."""

    position: int  # argument number, 0-based
    data: int  # address of element 0
    shape: tuple
    strides: tuple  # bytes
    itemsize: int
    dtype: str

    def span(self) -> tuple[int, int]:
        lo = hi = self.data
        for n, s in zip(self.shape, self.strides, strict=True):
            if n == 0:
                return self.data, self.data
            lo += min(0, (n - 1) * s)
            hi += max(0, (n - 1) * s)
        return lo, hi + self.itemsize

    def index_of(self, address: int) -> tuple | None:
        """The element index at this address, or None when it is not an element's start."""
        offset = address - self.data
        # strides ordered from largest: peel one axis at a time (works for C, F and views)
        order = sorted(range(len(self.shape)), key=lambda k: -abs(self.strides[k]))
        out = [0] * len(self.shape)
        for k in order:
            s = self.strides[k]
            if s == 0:
                continue
            q = offset // s
            q = max(0, min(q, self.shape[k] - 1))
            out[k] = q
            offset -= q * s
        return None if offset != 0 else tuple(int(v) for v in out)


@dataclass(frozen=True, slots=True)
class SharedArray:
    """A static shared array of the kernel (or the dynamic area: start 0, unknown count)."""

    start: int  # byte offset in the block's shared memory
    count: int
    dtype: str
    itemsize: int


def decode_arguments(signature: str, params_address: int) -> list[ArgArray]:
    """The array arguments of a launch, read from its packed parameter slots."""
    import ctypes

    from gpunb.foundation import abi as slots_abi
    from gpunb.foundation import types as t
    from gpunb.foundation.signature_text import argument_types
    from gpunb.foundation.tensor_types import SIGNATURE_NAMES, TensorMap

    try:
        argtypes = argument_types(signature, SIGNATURE_NAMES)
    except TypeError:
        return []
    out = []
    slot = 0

    def value(k: int, ctype):
        pointer = ctypes.c_void_p.from_address(params_address + 8 * k).value
        return ctype.from_address(pointer).value

    for position, ty in enumerate(argtypes):
        n = len(slots_abi.param_slots(ty))
        if isinstance(ty, t.Array):
            data = value(slot, ctypes.c_void_p) or 0
            shape = tuple(value(slot + 1 + k, ctypes.c_int64) for k in range(ty.ndim))
            strides = tuple(value(slot + 1 + ty.ndim + k, ctypes.c_int64)
                            for k in range(ty.ndim))
            out.append(ArgArray(position, data, shape, strides, t.sizeof(ty.dtype), str(ty.dtype)))
        elif isinstance(ty, TensorMap):
            tensor = _tensor_of(value(slot, ctypes.c_uint64), ty)
            if tensor is not None:
                out.append(ArgArray(position, *tensor))
        slot += n
    return out


def _tensor_of(descriptor: int, ty) -> tuple | None:
    """(data, shape, byte strides, itemsize, dtype) of the tensor a CPU-target TMA descriptor
    (runtime/tma.py's CPU_LAYOUT, at this address) copies from and to - so that a TMA copy's
    records (async_ops.py) are the descriptor argument's - or None for another layout."""
    import ctypes

    from gpunb.foundation import types as t

    def field(offset: int, ctype):
        return ctype.from_address(descriptor + offset).value

    if not descriptor or field(abi.TMAP_MAGIC, ctypes.c_uint32) != abi.TMAP_MAGIC_WORD:
        return None
    rank = field(abi.TMAP_RANK, ctypes.c_uint32)
    if not 1 <= rank <= 5:
        return None
    dims = [field(abi.TMAP_DIMS + 8 * d, ctypes.c_int64) for d in range(rank)]
    strides = [field(abi.TMAP_STRIDES + 8 * d, ctypes.c_int64) for d in range(rank)]
    return (field(abi.TMAP_ADDRESS, ctypes.c_uint64), tuple(reversed(dims)),
            tuple(reversed(strides)), t.sizeof(ty.dtype), str(ty.dtype))


def shared_arrays(layout: tuple, dynamic_bytes: int) -> list[SharedArray]:
    """The block's shared arrays in address order (the dynamic area first, as laid out)."""
    base = (dynamic_bytes + 15) // 16 * 16
    out = [SharedArray(0, dynamic_bytes, "dynamic", 1)] if dynamic_bytes else []
    for offset, count, dtype in layout:
        try:
            itemsize = np.dtype(dtype).itemsize
        except TypeError:
            itemsize = 1
        out.append(SharedArray(base + offset, count, dtype, itemsize))
    return out


@dataclass(frozen=True, slots=True)
class AccessLog:
    """The records of one launch and what they need to be read. Synchronisation records
    (abi.SPACE_SYNC: mbarrier phases, asynchronous copies and wgmma groups) are taken out of
    `records` into `sync`; `sync_at[i]` is how many access records came before sync record i."""

    records: np.ndarray  # RECORD_DTYPE, accesses only
    sites: tuple  # artifact.access_sites
    grid: tuple
    block: tuple
    arguments: tuple  # ArgArray
    shared: tuple  # SharedArray
    truncated: bool
    kernel: str
    sync: np.ndarray = None  # RECORD_DTYPE
    sync_at: np.ndarray = None  # int64
    cache: dict = field(default_factory=dict, compare=False)  # what is computed once per log
    # a cluster kernel's: its cluster dims, the bytes between two blocks' shared memories
    # (instrument.py records a shared address from the cluster's rank-0 block's), and per
    # record the block whose shared memory it touched (its own block for global memory)
    cluster: tuple = ()
    shared_stride: int = 0
    home: np.ndarray = None

    def __post_init__(self):
        if self.sync is None:
            is_sync = self.records["space"] == abi.SPACE_SYNC
            at = (np.cumsum(~is_sync) - ~is_sync)[is_sync] if is_sync.any() \
                else np.zeros(0, np.int64)
            object.__setattr__(self, "sync", self.records[is_sync])
            object.__setattr__(self, "sync_at", at.astype(np.int64))
            if is_sync.any():
                object.__setattr__(self, "records", self.records[~is_sync])
        if self.home is None:
            object.__setattr__(self, "home", self._decode_shared())

    def clustered(self) -> bool:
        """Whether blocks of this launch share memory and barriers (clusters of several)."""
        return bool(self.cluster) and int(np.prod(self.cluster)) > 1

    def _decode_shared(self) -> np.ndarray:
        """Per record the block whose shared memory it touched; a cluster kernel's shared
        addresses become offsets in that block's shared memory."""
        recs = self.records
        home = recs["block"].astype(np.int64)
        if not self.clustered() or not len(recs) or self.shared_stride <= 0:
            return home
        shared = recs["space"] == abi.SPACE_SHARED
        address = recs["address"][shared]
        home[shared] = self.peer_block(home[shared], address // self.shared_stride)
        recs["address"][shared] = address % self.shared_stride
        return home

    def rank(self, blocks: np.ndarray) -> np.ndarray:
        """Each block's rank in its cluster (x fastest, as %cluster_ctarank)."""
        xyz = block_xyz(np.asarray(blocks, np.int64), self.grid)
        cx, cy, cz = self.cluster
        return xyz[0] % cx + xyz[1] % cy * cx + xyz[2] % cz * cx * cy

    def peer_block(self, blocks: np.ndarray, ranks: np.ndarray) -> np.ndarray:
        """The block of rank `ranks` in the cluster of each of `blocks` (linear numbers)."""
        xyz = block_xyz(np.asarray(blocks, np.int64), self.grid)
        cx, cy, _ = self.cluster
        ranks = np.asarray(ranks, np.int64)
        at = [c - c % d + r for c, d, r in zip(xyz, self.cluster, (
            ranks % cx, ranks // cx % cy, ranks // (cx * cy)), strict=True)]
        return at[0] + self.grid[0] * (at[1] + self.grid[1] * at[2])

    def group(self, blocks: np.ndarray) -> np.ndarray:
        """The group (cluster) of each block: blocks of one group share shared memory and
        barriers; without clusters each block is its own."""
        blocks = np.asarray(blocks, np.int64)
        if not self.clustered():
            return blocks
        x, y, z = block_xyz(blocks, self.grid)
        cx, cy, cz = self.cluster
        across, down = self.grid[0] // cx, self.grid[1] // cy
        return x // cx + across * (y // cy + down * (z // cz))

    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    def where(self, rec) -> tuple:
        """(description of the memory, element index or None) of one record."""
        address = int(rec["address"])
        if int(rec["space"]) == abi.SPACE_SHARED:
            for arr in reversed(self.shared):
                if address >= arr.start:
                    return "shared", ((address - arr.start) // arr.itemsize,)
            return "shared", None
        for arg in self.arguments:
            lo, hi = arg.span()
            if lo <= address < hi:
                return f"argument {arg.position}", arg.index_of(address)
        return "global", None


def thread_xyz(linear: int, block: tuple) -> tuple:
    return (linear % block[0], linear // block[0] % block[1], linear // (block[0] * block[1]))


def block_xyz(linear: int, grid: tuple) -> tuple:
    return (linear % grid[0], linear // grid[0] % grid[1], linear // (grid[0] * grid[1]))


@dataclass(frozen=True, slots=True)
class Race:
    """Two unordered accesses to one address (`first` recorded before `second`); `indices`
    are their places in the log's records, `order` the happens-before used (None: barriers)."""

    first: np.void
    second: np.void
    indices: tuple = ()
    order: object = None


READ, WRITE, ATOMIC, ATOMIC_READ = 0, 1, 2, 3  # _site_kinds: ATOMIC_READ, a failed CAS


def _site_kinds(log: AccessLog) -> np.ndarray:
    """Per record: READ, WRITE, ATOMIC or ATOMIC_READ (a compare-and-swap that did not swap)."""
    site_kind = np.array([ATOMIC_READ if _role(s) == atomics.CAS_FAILED_ROLE else
                          {"write": WRITE, "atomic": ATOMIC}.get(s[4], READ)
                          for s in log.sites] or [0], np.int8)
    return site_kind[log.records["site"]]


def find_race(log: AccessLog, order=None) -> Race | None:
    """The first pair of conflicting, unordered accesses, or None.

    Two accesses conflict when different threads (or asynchronous operations, which act on
    their own: happens_before.py) touch one address, at least one writes, and they are not both
    atomic. They are ordered when a barrier separates them (same block, different barrier
    epochs), warp synchronisation does (same warp, different warp epochs), a grid sync does
    (different grid epochs), or mbarrier phases and the completion of asynchronous operations
    do (`order`, built from the log when not given). Candidate groups are found with numpy (an
    address touched by two of them with a write); only those are checked pair by pair, so clean
    kernels cost a few sorts.
    """
    from gpunb.backends.cpu import happens_before

    recs = log.records
    if len(recs) < 2:
        return None
    kind = _site_kinds(log)
    order = happens_before.build(log) if order is None else order
    # first drop every address only one thread touches (most of a clean kernel's log)
    loc_block = np.where(recs["space"] == abi.SPACE_SHARED, log.home, -1)
    who = recs["block"].astype(np.int64) * log.threads_per_block() + recs["thread"] \
        if order is None else order.entity
    keep = list(_candidates((recs["space"], loc_block, recs["address"]), who,
                            (kind == WRITE) | (kind == ATOMIC), kind >= ATOMIC))
    if not keep:
        return None
    subset = np.sort(np.concatenate(keep))
    race = _find_in(log, subset, kind[subset], order)
    if race is None:
        return None
    first, second = subset[race[0]], subset[race[1]]
    return Race(recs[first], recs[second], (int(first), int(second)), order)


def _find_in(log: AccessLog, subset: np.ndarray, kind: np.ndarray, order) -> tuple | None:
    """find_race on the records of candidate addresses: a pair of their indices, or None."""
    recs = log.records[subset]
    f = {"write": (kind == WRITE) | (kind == ATOMIC), "atomic": kind >= ATOMIC,
         "index": subset,
         "block": recs["block"].astype(np.int64),
         "thread": recs["thread"].astype(np.int64),
         "bar": recs["bar_epoch"].astype(np.int64), "wep": recs["warp_epoch"].astype(np.int64),
         "grid": recs["grid_epoch"].astype(np.int64),
         "space": recs["space"].astype(np.int64), "address": recs["address"]}
    f["gthread"] = f["block"] * log.threads_per_block() + f["thread"]
    f["group"] = log.group(f["block"]) if order is None else order.group(f["block"])
    f["warp"] = f["block"] * 64 + f["thread"] // 32
    f["order"] = order
    f["who"] = f["gthread"] if order is None else order.entity[subset]
    f["agent"] = np.zeros(len(subset), bool) if order is None else order.is_agent[subset]
    shared = f["space"] == abi.SPACE_SHARED
    location_block = np.where(shared, log.home[subset], -1)
    base_keys = (f["space"], location_block, f["address"])
    f["location_keys"] = base_keys  # (fence_sync.observed numbers them when it needs to)
    if order is not None:  # mbarriers and agents order across barrier epochs too: whole groups
        return _check_all(list(_candidates(base_keys, f["who"], f["write"], f["atomic"])), f)
    # within a block: same barrier epoch; a warp's own accesses also split by warp epoch
    single_warp = _per_group(base_keys + (f["block"], f["bar"]), f["warp"], "single")
    wep = np.where(single_warp, f["wep"], -1)
    found = []
    for keys, who in ((base_keys + (f["block"], f["bar"], wep), f["gthread"]),
                      ((f["space"], location_block, f["address"], f["grid"]), f["block"])):
        for idx in _candidates(keys, who, f["write"], f["atomic"]):
            race = _check_group(idx, f)
            if race is not None:
                found.append(race)
                break
    return min(found, key=lambda pair: pair[1]) if found else None


def _groups(keys: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order, starts, ends): records sorted by keys (then time), and each group's slice."""
    order = np.lexsort((np.arange(len(keys[0])),) + tuple(reversed(keys)))
    sorted_keys = [k[order] for k in keys]
    change = np.zeros(len(order), bool)
    change[0] = True
    for k in sorted_keys:
        change[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(change)
    return order, starts, np.r_[starts[1:], len(order)]


def _per_group(keys: tuple, values: np.ndarray, what: str) -> np.ndarray:
    """Per record: whether its group (by keys) holds one distinct value."""
    order, starts, ends = _groups(keys)
    v = values[order]
    lo, hi = np.minimum.reduceat(v, starts), np.maximum.reduceat(v, starts)
    out = np.empty(len(order), bool)
    out[order] = np.repeat(lo == hi, ends - starts)
    return out


def _candidates(keys: tuple, who: np.ndarray, write: np.ndarray, atomic: np.ndarray):
    """Record indices of each group with two `who`s, a write and a non-atomic access."""
    order, starts, ends = _groups(keys)
    w = who[order]
    several = np.minimum.reduceat(w, starts) != np.maximum.reduceat(w, starts)
    writes = np.add.reduceat(write[order].astype(np.int64), starts) > 0
    plain = np.add.reduceat((~atomic[order]).astype(np.int64), starts) > 0
    for g in np.flatnonzero(several & writes & plain):
        yield order[starts[g]:ends[g]]


SMALL_GROUP = 48  # address groups up to this size are checked as all their pairs at once


def _check_all(groups: list, f: dict):
    """The first (by its later record) unordered conflicting pair of any of these groups of
    records of one address each; small groups together, as arrays of all their pairs."""
    found = []
    by_size: dict = {}
    for idx in groups:
        if len(idx) <= SMALL_GROUP:
            by_size.setdefault(len(idx), []).append(idx)
        else:
            race = _check_group(idx, f)
            found += [race] if race is not None else []
    for n, same in by_size.items():
        stack = np.array(same)
        a = np.repeat(stack, n, axis=1).reshape(-1)
        b = np.tile(stack, (1, n)).reshape(-1)
        keep = f["write"][a] & (f["who"][a] != f["who"][b]) & ~(f["atomic"][a] & f["atomic"][b])
        a, b = a[keep], b[keep]
        bad = ~_pairs_ordered(a, b, f)
        bad[bad] = ~fence_sync.observed(a[bad], b[bad], f, _pairs_ordered)
        if bad.any():
            late = np.maximum(a[bad], b[bad])
            k = int(np.argmin(late))
            found.append(tuple(sorted((int(a[bad][k]), int(b[bad][k])))))
    return min(found, key=lambda pair: pair[1]) if found else None


def _pairs_ordered(a: np.ndarray, b: np.ndarray, f: dict) -> np.ndarray:
    """Elementwise: whether records a and b are ordered (barriers, warps, grid syncs, and
    f["order"]'s mbarriers and agents)."""
    same_block = f["block"][a] == f["block"][b]
    threads = ~f["agent"][a] & ~f["agent"][b]
    same_warp = f["warp"][a] == f["warp"][b]
    ordered = np.where(same_block, threads & ((f["bar"][a] != f["bar"][b]) |
                                              (same_warp & (f["wep"][a] != f["wep"][b]))),
                       f["grid"][a] != f["grid"][b])
    same_group = f["group"][a] == f["group"][b]  # a block, or a thread-block cluster
    if f["order"] is not None and same_group.any():
        near = np.flatnonzero(same_group)
        ordered[near] |= f["order"].ordered(f["index"][a[near]], f["index"][b[near]])
    return ordered


def _check_group(idx: np.ndarray, f: dict):
    """The first unordered conflicting pair among these records of one address, or None."""
    for w in idx[f["write"][idx]]:
        other = idx[f["who"][idx] != f["who"][w]]
        if not len(other):
            continue
        ordered = _pairs_ordered(np.full(len(other), w), other, f)
        bad = other[~ordered & ~(f["atomic"][other] & f["atomic"][w])]
        bad = bad[~fence_sync.observed(np.full(len(bad), w), bad, f, _pairs_ordered)]
        if len(bad):
            return tuple(sorted((int(w), int(bad[0]))))
    return None


def race_error(log: AccessLog, race: Race):
    """A RaceError naming both sites, threads, blocks, the array and the element."""
    from gpunb.foundation.errors import RaceError, SourceLocation

    first, second = race.first, race.second
    memory, index = log.where(second)
    s1, s2 = log.sites[int(first["site"])], log.sites[int(second["site"])]
    name = s2[3]
    where = "shared memory" if memory == "shared" else "global memory"
    home = int(log.home[race.indices[1]]) if race.indices else int(second["block"])
    if memory == "shared" and home != int(second["block"]):  # distributed shared memory
        where = f"shared memory of block {block_xyz(home, log.grid)}"
    shown = "" if index is None else "[" + ", ".join(str(i) for i in index) + "]"

    # global memory through two names (an array passed twice, overlapping views); shared
    # memory reached through two names is a cluster's (map_shared_rank), named by its block
    aliased = s1[3] != s2[3] and memory != "shared"

    def side(rec, site) -> str:
        t = thread_xyz(int(rec["thread"]), log.block)
        blk = block_xyz(int(rec["block"]), log.grid)
        through = f" through {site[3]}" if aliased else ""
        article = "an" if site[4][:1] in "aeiou" else "a"   # "an atomic", "a read"
        return f"{article} {site[4]}{through} at line {site[1]} by thread {t} of block {blk}"

    same_block = int(first["block"]) == int(second["block"])
    blocks = np.array([int(first["block"]), int(second["block"])])
    one_cluster = not same_block and log.clustered() and len(set(log.group(blocks))) == 1
    why = ("no cuda.syncthreads() between them" if same_block else
           "they are in different blocks of one cluster, and neither a cluster barrier nor "
           "an mbarrier phase orders them" if one_cluster else
           "they are in different blocks, which nothing orders")
    fenced = race.order is not None and race.order.grid_wide  # the kernel uses threadfences
    if same_block and race.order is not None and not fenced:
        why += ", nor an mbarrier phase that one arrived on and the other waited for"
    if fenced:
        release = ("cuda.threadfence() before an atomic write that the other side's atomic "
                   "saw (then a fence or barrier of its own)")
        why = f"{why}, nor a {release}" if same_block or one_cluster else \
            f"they are in different blocks, and no {release} orders them"
    msg = (f"data race on {name}{shown} ({where}): {side(second, s2)} and "
           f"{side(first, s1)}; {why}")
    accesses = tuple((site[4], site[1], thread_xyz(int(r["thread"]), log.block),
                      block_xyz(int(r["block"]), log.grid))
                     for r, site in ((first, s1), (second, s2)))
    hint = ("put cuda.syncthreads() between the write and the other thread's access, or use "
            "cuda.atomic.* when threads update one element" if same_block else
            "put cluster.sync() (or the writer's cluster.barrier_arrive() after the write and "
            "the reader's cluster.barrier_wait() before its access) between them" if one_cluster
            else
            "use cuda.atomic.* for elements that several blocks update")
    if fenced:
        hint = ("publish with cuda.threadfence() after the write and before the atomic that "
                "signals it; read after an atomic that saw the signal and a cuda.threadfence() "
                "(or cuda.syncthreads()) - or " + hint)
    if aliased:
        hint = (f"{s2[3]} and {s1[3]} are one memory here (an array passed twice, or "
                f"overlapping views of one): write the result to an array of its own; or {hint}")
    loc = SourceLocation(s2[0], s2[1], s2[2])
    return RaceError(msg, loc, hint=hint, function=s2[5], accesses=accesses, array=name,
                     index=index or ())


def find_uninitialised_read(log: AccessLog):
    """The first shared-memory record that read an element before any thread of its block
    wrote it (the log is in execution order), or None."""
    recs = log.records
    shared = np.flatnonzero(recs["space"] == abi.SPACE_SHARED)
    if not len(shared):
        return None
    kinds = np.array([_reads_old_value(s) for s in log.sites] or [True])
    key_block, key_addr = log.home[shared], recs["address"][shared]
    order = np.lexsort((shared, key_addr, key_block))
    first = np.r_[True, (key_block[order][1:] != key_block[order][:-1]) |
                  (key_addr[order][1:] != key_addr[order][:-1])]
    firsts = shared[order[first]]
    bad = firsts[kinds[recs["site"][firsts]]]
    return recs[int(bad.min())] if len(bad) else None


def _reads_old_value(site: tuple) -> bool:
    """Whether an access at this site reads the element: reads, and every atomic but exch
    (it writes without looking: the element is initialised after it, as after a store)."""
    return site[4] != "write" and _role(site) not in atomics.WRITE_ONLY_ROLES


def _role(site: tuple) -> str:
    return site[6] if len(site) > 6 else ""


def _what(site: tuple) -> str:
    """An access as a message names it: "read", "write", "cuda.atomic.add"..."""
    role = _role(site)
    if role.startswith(atomics.ROLE_PREFIX):
        name = role[len(atomics.ROLE_PREFIX):]
        return "cuda.atomic.cas" if role == atomics.CAS_FAILED_ROLE else f"cuda.atomic.{name}"
    return site[4]


def copy_roles(log: AccessLog) -> np.ndarray:
    """Per record: 1 for an asynchronous copy's issue record, 2 for its completion record, 0
    for every other access (the sites' roles, async_ops.py)."""
    roles = np.array([{"async_issue": 1, "async_done": 2}.get(s[6] if len(s) > 6 else "", 0)
                      for s in log.sites] or [0], np.int8)
    return roles[log.records["site"]] if len(log.records) else np.zeros(0, np.int8)


def find_pending_read(log: AccessLog) -> tuple | None:
    """(access, issue) records of the first read or write of memory an asynchronous copy
    (cp.async, TMA load) was still filling: between the copy's issue record and its completion
    record (async_ops.py writes both), in execution order, or None."""
    role = copy_roles(log)
    recs = log.records
    if not len(recs) or not (role == 1).any():
        return None
    loc_block = np.where(recs["space"] == abi.SPACE_SHARED, log.home, -1)
    order, starts, ends = _groups((recs["space"], loc_block, recs["address"]))
    delta = np.where(role == 1, 1, np.where(role == 2, -1, 0)).astype(np.int64)[order]
    running = np.cumsum(delta)
    before_group = np.repeat(np.r_[0, running[starts[1:] - 1]], ends - starts)
    pending = running - delta - before_group  # copies filling the address before each record
    bad = np.flatnonzero((role[order] == 0) & (pending > 0))
    if not len(bad):
        return None
    k = bad[np.argmin(order[bad])]  # the first such access in execution order
    issues = np.maximum.accumulate(np.where(role[order] == 1, np.arange(len(order)), -1))
    return recs[order[k]], recs[order[issues[k]]]


def pending_read_error(log: AccessLog, pair: tuple):
    from gpunb.foundation.errors import AsyncCopyError, SourceLocation

    access, issue = pair
    site, copy = log.sites[int(access["site"])], log.sites[int(issue["site"])]
    _, index = log.where(access)
    shown = "" if index is None else "[" + ", ".join(str(i) for i in index) + "]"
    who = thread_xyz(int(access["thread"]), log.block)
    issuer = thread_xyz(int(issue["thread"]), log.block)
    block = block_xyz(int(access["block"]), log.grid)
    if int(issue["block"]) != int(access["block"]):  # another block of the cluster's copy
        issuer = f"{issuer} of block {block_xyz(int(issue['block']), log.grid)}"
    return AsyncCopyError(
        f"{site[4]} of {site[3]}{shown} at line {site[1]} by thread {who} of block {block} "
        f"while the asynchronous copy issued at line {copy[1]} by thread {issuer} was still "
        "filling it; on a GPU it sees the old bytes, the new ones, or a mix",
        SourceLocation(site[0], site[1], site[2]), function=site[5],
        hint="complete the copy before touching its destination: cuda.cp_async.wait_group / "
             "wait_all (then cuda.syncthreads() for other threads), or for TMA wait on the "
             "mbarrier the copy completes")


def initcheck_error(log: AccessLog, rec):
    from gpunb.foundation.errors import InitcheckError, SourceLocation

    site = log.sites[int(rec["site"])]
    _, index = log.where(rec)
    shown = "" if index is None else "[" + ", ".join(str(i) for i in index) + "]"
    thread = thread_xyz(int(rec["thread"]), log.block)
    block = block_xyz(int(rec["block"]), log.grid)
    return InitcheckError(
        f"{_what(site)} of {site[3]}{shown} (shared memory) by thread {thread} of block "
        f"{block} before any thread of the block wrote it; on a GPU it holds whatever was "
        "there" + ("" if site[4] == "read" else
                   " (an atomic reads the old value; only cuda.atomic.exch does not)"),
        SourceLocation(site[0], site[1], site[2]), function=site[5],
        hint="write every shared element before reading it (then cuda.syncthreads())")
