"""Racecheck's reports about asynchronous operations: a race in which one side is a TMA copy or
a wgmma (an agent of happens_before.py), and a generic write read by the async proxy without a
cuda.fence_proxy_async() in between. Both are AsyncCopyErrors at the user's line."""

from __future__ import annotations

import numpy as np

from gpunb.backends.cpu import abi
from gpunb.backends.cpu import happens_before as hb
from gpunb.backends.cpu.accesses import AccessLog, Race, block_xyz, race_error, thread_xyz

_WHAT = {hb.LOAD: "the TMA load", hb.STORE: "the TMA store", hb.WGMMA: "the cuda.wgmma.mma_async"}


def _role(site) -> str:
    return site[6] if len(site) > 6 else ""


def _element(log: AccessLog, rec) -> str:
    """The array and element a record touched, named as the kernel's own accesses name it."""
    site = log.sites[int(rec["site"])]
    _, index = log.where(rec)
    shown = "" if index is None else "[" + ", ".join(str(i) for i in index) + "]"
    return f"{_shared_name(log, rec) or site[3]}{shown}"


def _shared_name(log: AccessLog, rec) -> str:
    """The name of the shared array holding rec, from the plain accesses (`s[i] = ...`) made to
    it; '' when it has none (asynchronous operations name it by an expression)."""
    if int(rec["space"]) != abi.SPACE_SHARED:
        return ""
    address = int(rec["address"])
    arrays = [a for a in log.shared if a.start <= address]
    if not arrays:
        return ""
    arr = arrays[-1]
    recs = log.records
    # (a cluster's blocks reach each other's arrays: any block's accesses name it)
    same = True if log.clustered() else recs["block"] == rec["block"]
    inside = (recs["space"] == abi.SPACE_SHARED) & same & (recs["address"] >= arr.start)
    if arr.count:
        inside &= recs["address"] < arr.start + arr.count * arr.itemsize
    sites, counts = np.unique(recs["site"][inside], return_counts=True)
    plain = [(c, log.sites[s][3]) for s, c in zip(sites, counts, strict=True)
             if not _role(log.sites[s]) and log.sites[s][3].isidentifier()]
    return max(plain)[1] if plain else ""


def _thread_side(log: AccessLog, rec) -> str:
    site = log.sites[int(rec["site"])]
    who = thread_xyz(int(rec["thread"]), log.block)
    if _role(site) == "async_issue":
        return (f"the asynchronous copy into {_element(log, rec)} issued at line {site[1]} by "
                f"thread {who}")
    return f"{site[4]} of {_element(log, rec)} at line {site[1]} by thread {who}"


def _agent_side(log: AccessLog, agent: hb.Agent) -> str:
    site = log.sites[agent.site] if agent.site >= 0 else ("", 0)
    who = thread_xyz(agent.thread, log.block)
    by = f"warpgroup {agent.thread // hb.WARPGROUP}" if agent.kind == hb.WGMMA \
        else f"thread {who}"
    return f"{_WHAT[agent.kind]} issued at line {site[1]} by {by}"


def race_report(log: AccessLog, race: Race):
    """The error for a race found by accesses.find_race: an AsyncCopyError when a TMA copy or
    a wgmma is one side of it, else accesses.race_error's RaceError."""
    if race.order is not None and any(race.order.is_agent[i] for i in race.indices):
        return agent_race_error(log, race)
    return race_error(log, race)


def agent_race_error(log: AccessLog, race: Race):
    """An AsyncCopyError for a race with an asynchronous operation on at least one side."""
    from gpunb.foundation.errors import AsyncCopyError, SourceLocation

    order = race.order
    (i, rec_i), (j, rec_j) = zip(race.indices, (race.first, race.second), strict=True)
    agent_i, agent_j = order.agent(i), order.agent(j)
    block = block_xyz(int(rec_j["block"]), log.grid)
    if agent_i is not None and agent_j is not None:
        writer, reader = (agent_i, agent_j) if agent_i.kind == hb.LOAD else (agent_j, agent_i)
        message = (f"{_agent_side(log, writer)} writes {_element(log, rec_j)} in block {block} "
                   f"while {_agent_side(log, reader)} may still read it: nothing orders the "
                   "two")
        hint = ("release a stage (its 'empty' mbarrier) only after cuda.wgmma.wait_group has "
                "completed the wgmmas that read it, and wait on a load's mbarrier before a "
                "wgmma reads its tile")
        at = writer if writer.site >= 0 else reader
        site = log.sites[at.site]
    else:
        agent, rec, index = (agent_i, rec_j, j) if agent_i is not None else (agent_j, rec_i, i)
        site = log.sites[int(rec["site"])]
        before = index < agent.issue_at
        message, hint = _thread_message(log, agent, rec, before, block)
    homes = {int(log.home[k]) for k in race.indices
             if int(log.records["space"][k]) == abi.SPACE_SHARED}
    if len(homes) == 1 and homes != {int(rec_j["block"])} | {int(rec_i["block"])}:
        message += (f" (in the shared memory of block {block_xyz(homes.pop(), log.grid)}, "
                    "which the cluster's blocks share)")
    return AsyncCopyError(message, SourceLocation(site[0], site[1], site[2]), function=site[5],
                          hint=hint)


def _thread_message(log, agent: hb.Agent, rec, before: bool, block) -> tuple[str, str]:
    """(message, hint) for a thread's access racing with an agent."""
    side, op = _thread_side(log, rec), _agent_side(log, agent)
    if agent.kind == hb.LOAD:
        if before:
            return (f"{side} of block {block} is not ordered before {op}, which overwrites "
                    "it", "let the producer wait for the consumers' release of the stage "
                    "(an mbarrier arrive after their last access) before loading into it")
        if _role(log.sites[int(rec["site"])]) == "async_issue":  # a refill of the tile
            return (f"{side} of block {block} is not ordered after {op}, which writes it: "
                    "the two copies may land in either order",
                    "load into a stage again only after every block that reads it released "
                    "it: its consumers arrive on the producer's 'empty' mbarrier after their "
                    "last read (cuda.mbarrier.arrive(..., block_rank=r) from another block of "
                    "the cluster), and the producer waits on it")
        return (f"{side} of block {block} is not ordered after {op}, which writes it",
                "wait on the mbarrier the load completes (cuda.mbarrier.wait) before touching "
                "its tile")
    if before:
        return (f"{op} reads {_element(log, rec)}, and the {side.split(' of ')[0]} of it at "
                f"line {log.sites[int(rec['site'])][1]} by thread "
                f"{thread_xyz(int(rec['thread']), log.block)} of block {block} is not ordered "
                "before it", "finish writing the tile before the operation is issued: "
                "cuda.fence_proxy_async() then cuda.syncthreads() (or an mbarrier)")
    done = "cuda.wgmma.wait_group" if agent.kind == hb.WGMMA else "cuda.tma.wait_group_read"
    if _role(log.sites[int(rec["site"])]) == "async_issue":
        side = side.replace(" into ", f" of block {block} into ", 1) + " writes it"
    else:
        side += f" of block {block}"
    return (f"{side} while {op} may still read it (until the {done} that completes it)",
            f"wait with {done} before overwriting the operand, and release it to other "
            "threads (cuda.syncthreads() or an mbarrier arrive) only after that wait")


def find_missing_fence(log: AccessLog, order=None) -> tuple | None:
    """(agent, write record) of the first read by the async proxy (a TMA store's source, a
    wgmma operand) of shared memory whose last generic write before the operation's issue has
    no cuda.fence_proxy_async() by the writing thread between the write and the issue, or
    None. TMA loads write through the async proxy themselves and need no fence."""
    order = hb.build(log) if order is None else order
    if order is None or not order.is_agent.any():
        return None
    recs = log.records
    kinds = np.array([s[4] != "read" for s in log.sites] or [False])
    roles = np.array([(s[6] if len(s) > 6 else "") for s in log.sites] or [""])
    role = roles[recs["site"]]
    shared = recs["space"] == abi.SPACE_SHARED
    generic = shared & kinds[recs["site"]] & ~order.is_agent & (role != "async_issue")
    readers = np.flatnonzero(shared & order.is_agent & ~kinds[recs["site"]])
    if not len(readers):
        return None
    span = len(recs) + 1  # keys below order (block, address) first, then the record's place
    key = (log.home.astype(np.int64) << 32 | recs["address"].astype(np.int64)) * span
    writes = np.flatnonzero(generic)
    write_keys = np.sort(key[writes] + writes)
    issue = np.array([a.issue_at for a in order.agents], np.int64)[order.agent_of[readers]]
    # the last generic write of each reader's address before its operation was issued
    k = np.searchsorted(write_keys, key[readers] + issue, "left") - 1
    hit = (k >= 0) & (write_keys[np.maximum(k, 0)] // span == key[readers] // span)
    readers, issue = readers[hit], issue[hit]
    w = write_keys[k[hit]] % span
    # the writer's first fence after the write, if it came before the issue
    tpb = log.threads_per_block()
    fence_keys = np.sort(np.array([(blk * tpb + t) * span + at for (blk, t), ats in
                                   order.fences.items() for at in ats] or [-1], np.int64))
    who = (recs["block"][w].astype(np.int64) * tpb + recs["thread"][w]) * span
    f = np.minimum(np.searchsorted(fence_keys, who + w, "right"), len(fence_keys) - 1)
    fenced = (fence_keys[f] // span == who // span) & (fence_keys[f] % span > w) & \
        (fence_keys[f] % span <= issue)
    if fenced.all():
        return None
    first = int(np.argmin(np.where(fenced, np.iinfo(np.int64).max, readers)))
    return order.agent(int(readers[first])), recs[w[first]], recs[readers[first]]


def missing_fence_error(log: AccessLog, found: tuple):
    from gpunb.foundation.errors import AsyncCopyError, SourceLocation

    agent, write, read = found
    site = log.sites[int(write["site"])]
    op = _agent_side(log, agent)
    who = thread_xyz(int(write["thread"]), log.block)
    block = block_xyz(int(write["block"]), log.grid)
    return AsyncCopyError(
        f"{op} reads {_element(log, read)}, which thread {who} of block {block} wrote at line "
        f"{site[1]} with no cuda.fence_proxy_async() between the write and the operation: the "
        "async proxy (TMA, wgmma) may read the bytes from before the write",
        SourceLocation(site[0], site[1], site[2]), function=site[5],
        hint="call cuda.fence_proxy_async() after writing shared memory that TMA or wgmma "
             "reads, before the barrier (or mbarrier) that orders the write before the "
             "operation")
