"""Happens-before of a recording launch beyond block barriers: mbarrier phases, TMA copies and
wgmma groups, as vector clocks over the log's synchronisation records (abi.SPACE_SYNC).

Block barriers order everything before them before everything after (the barrier epochs of
accesses.py). Within one barrier epoch, threads are ordered only through mbarriers: an arrive
releases what its thread did (and knows), a wait that returns acquires what every arrival of the
phases up to the one it observed released. Asynchronous operations are *agents* of their own,
not their issuing threads: a TMA copy acts with what its issuer knew when it issued it (its
writes, or a store's reads of its tile, lie between COPY_LAND and COPY_END records) and releases
its load on its mbarrier (complete_tx); a wgmma reads its operands with what its warpgroup knew
at the rendezvous and is acquired by each thread's wait_group that completes its group; a TMA
store is acquired by its issuer when it completes (the issuer's bulk wait). Vector clocks have
one component per thread that releases (arrives or issues a copy) and one per agent; knowledge
crosses a block barrier (the clock of every thread joins at it).

Thread-block clusters: the log is replayed per group - one block, or the blocks of one cluster,
whose threads synchronise with each other - in the group's execution order. A cluster barrier
arrive releases, its wait acquires the join of every arrival of that phase; a remote mbarrier
arrive (block_rank=) releases on the peer's mbarrier, and a multicast copy, one agent per
destination, completes on the destination's; mbarriers are named (block, offset)
(accesses.AccessLog decodes the records). Each block of a cluster has a component counting its
barrier epochs, so that a peer that acquires a clock knows which of the block's epochs are
behind it (the same-block epoch rule of accesses.py, carried across blocks).

Threadfences: a fence before an atomic write and an atomic read before a fence or barrier
order threads of any blocks (fence_sync.py); a launch that has them is replayed as one group,
the whole grid, each block with a component counting its barrier epochs.

Not modelled: ordering through warp synchronisation combined with mbarriers (a warp's
collectives order its own lanes only, by warp epochs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpunb.backends.cpu import abi, fence_sync

LOAD, STORE, WGMMA = 1, 2, 3  # agent kinds (TMA load, TMA store: async_tma's kinds; wgmma)
WARPGROUP = 128


@dataclass(frozen=True, slots=True)
class Agent:
    """An asynchronous operation: what it is, where it was issued, by which thread."""

    kind: int  # LOAD, STORE or WGMMA
    block: int
    thread: int  # the issuing thread (a wgmma: its warpgroup's first thread)
    site: int  # its access site (log.sites): the load's destination, the reads' operand
    issue_at: int  # access records before its issue
    bar: int  # the issuer's barrier epoch at the issue


@dataclass(slots=True)
class _Group:
    """One group's vector clocks while the log is replayed: a block, or a thread-block
    cluster's blocks (their threads synchronise through the cluster barrier, remote mbarrier
    arrivals and multicast copies). Threads are keyed (block, thread)."""

    comps: dict  # ("t", block, thread) / ("a", agent) / ("b", block) -> component index
    width: int
    known: dict = field(default_factory=dict)  # block -> what crossed its last barrier
    table: list = field(default_factory=list)  # rows: snapshots, barrier knowledge, agents
    rows: dict = field(default_factory=dict)  # (block, thread) -> current clock (np.int32)
    counts: dict = field(default_factory=dict)  # releasing (block, thread) -> releases so far
    releases: dict = field(default_factory=dict)  # releasing (block, thread) -> [position]
    epoch: dict = field(default_factory=dict)  # block -> its barrier epoch
    epoch_rows: dict = field(default_factory=dict)  # block -> [(epoch, table row)]
    snaps: dict = field(default_factory=dict)  # (block, thread) -> [(position, epoch, row)]
    bars: dict = field(default_factory=dict)  # (block, offset) -> [pending join, [phases]]
    cluster: dict = field(default_factory=dict)  # cluster barrier phase -> its arrivals' join
    agent_rows: dict = field(default_factory=dict)  # agent -> table row of its clock
    pending: dict = field(default_factory=dict)  # (block, thread) -> what its atomics saw
    zero: int = 0
    matrix: np.ndarray = None  # the table as one array, once replayed

    def block_known(self, blk: int) -> np.ndarray:
        if blk not in self.known:
            self.known[blk] = np.zeros(self.width, np.int32)
        return self.known[blk]

    def row(self, who: tuple) -> np.ndarray:
        if who not in self.rows:
            self.rows[who] = self.block_known(who[0]).copy()
        return self.rows[who]

    def add(self, clock: np.ndarray) -> int:
        self.table.append(clock.copy())
        return len(self.table) - 1

    def snapshot(self, who: tuple, at: int) -> None:
        self.snaps.setdefault(who, []).append((at, self.epoch.get(who[0], 0),
                                               self.add(self.row(who))))

    def acquire(self, who: tuple, clock: np.ndarray, at: int) -> None:
        np.maximum(self.row(who), clock, out=self.row(who))
        self.snapshot(who, at)

    def release(self, who: tuple, at: int) -> np.ndarray:
        """The thread's clock with its own component advanced (what it publishes now)."""
        self.releases.setdefault(who, []).append(at)
        self.counts[who] = self.counts.get(who, 0) + 1
        clock = self.row(who)
        clock[self.comps[("t", *who)]] = self.counts[who]
        return clock.copy()

    def barrier(self, blk: int, epoch: int) -> None:
        """Block `blk` passed a barrier into `epoch`: what its threads knew, every one knows
        (and, in a cluster, that its accesses before the epoch happened: its "b" component)."""
        if epoch <= self.epoch.get(blk, 0):
            return
        known = self.block_known(blk)
        for who in [w for w in self.rows if w[0] == blk]:
            np.maximum(known, self.rows.pop(who), out=known)
        # what a thread's atomic reads saw, the barrier acquires (fence_sync.py)
        for who in [w for w in self.pending if w[0] == blk]:
            np.maximum(known, self.pending.pop(who), out=known)
        if ("b", blk) in self.comps:
            known[self.comps[("b", blk)]] = epoch
        self.epoch[blk] = epoch
        self.epoch_rows.setdefault(blk, []).append((epoch, self.add(known)))


class Order:
    """Per access record of a log: its entity and what it is ordered after (see the module
    docstring). `ordered(i, js)` says, for record i and records js of the same group (block,
    or thread-block cluster), whether each pair is ordered by mbarriers, the cluster barrier or
    agents' completions (barrier and warp epochs between two threads' accesses of one block
    are accesses.py's)."""

    def __init__(self, log, agents: list, agent_of: np.ndarray, groups: dict, fences: dict,
                 grid_wide: bool = False):
        recs = log.records
        self.grid_wide = grid_wide
        tpb = log.threads_per_block()
        n_threads = tpb * int(np.prod(log.grid))
        self.log, self.agents, self.agent_of, self.fences = log, agents, agent_of, fences
        self.groups = groups
        gthread = recs["block"].astype(np.int64) * tpb + recs["thread"]
        self.is_agent = agent_of >= 0
        self.entity = np.where(self.is_agent, n_threads + agent_of, gthread)
        issue_bar = np.array([a.bar for a in agents] or [0], np.int64)
        self.bar = np.where(self.is_agent, issue_bar[np.maximum(agent_of, 0)],
                            recs["bar_epoch"])
        self._comp, self._ep, self._row, self._bcomp = self._per_record()
        width = max(g.matrix.shape[1] for g in groups.values())
        self.matrix = np.zeros((sum(len(g.matrix) for g in groups.values()), width), np.int32)
        offset = 0
        group_of = self.group(recs["block"])
        for key, state in groups.items():  # one table for all groups: rows move down
            self.matrix[offset:offset + len(state.matrix), :state.matrix.shape[1]] = state.matrix
            self._row[group_of == key] += offset
            offset += len(state.matrix)
        self._agent_kind = np.array([a.kind for a in agents] or [0], np.int64)
        self._agent_issue = np.array([a.issue_at for a in agents] or [0], np.int64)
        self._agent_thread = np.array([a.thread for a in agents] or [0], np.int64)

    def group(self, blocks: np.ndarray) -> np.ndarray:
        """The group whose replay holds each block: its cluster (log.group), or one group of
        the whole grid when threadfences order blocks (fence_sync.py)."""
        blocks = np.asarray(blocks, np.int64)
        return np.zeros_like(blocks) if self.grid_wide else self.log.group(blocks)

    def _per_record(self):
        """Per record: its entity's component (-1: none), its releases so far (its epoch as a
        releaser), the table row of the clock it acts with, and (a thread's record in a
        cluster) the component of its block's barrier epochs (-1: none)."""
        recs = self.log.records
        n = len(recs)
        comp, ep, row = np.full(n, -1, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
        bcomp = np.full(n, -1, np.int64)
        n_agents = max(len(self.agents), 1)
        blocks = np.unique(recs["block"]).astype(np.int64)
        blocks_of: dict = {}
        for blk, key in zip(blocks, self.group(blocks), strict=True):
            blocks_of.setdefault(int(key), []).append(int(blk))
        for key, state in self.groups.items():
            by_agent, agent_row = np.full(n_agents, -1, np.int64), np.zeros(n_agents, np.int64)
            for (kind, *who), index in state.comps.items():
                if kind == "a":
                    by_agent[who[0]] = index
            for agent, table_row in state.agent_rows.items():
                agent_row[agent] = table_row
            for blk in blocks_of.get(key, []):
                self._block_records(state, blk, by_agent, agent_row, (comp, ep, row, bcomp))
        return comp, ep, row, bcomp

    def _block_records(self, state, blk: int, by_agent, agent_row, out) -> None:
        """_per_record's values for the records of one block of a group."""
        comp, ep, row, bcomp = out
        recs = self.log.records
        mine = np.flatnonzero(recs["block"] == blk)
        threads = recs["thread"][mine].astype(np.int64)
        agents = self.agent_of[mine]
        by_thread = np.full(self.log.threads_per_block(), -1, np.int64)
        for (kind, *who), index in state.comps.items():
            if kind == "t" and who[0] == blk:
                by_thread[who[1]] = index
        own = agents < 0
        comp[mine] = np.where(own, by_thread[threads], by_agent[np.maximum(agents, 0)])
        if ("b", blk) in state.comps:
            bcomp[mine[own]] = state.comps[("b", blk)]
        epoch_rows = state.epoch_rows.get(blk, [])
        epochs = np.array([e for e, _ in epoch_rows] or [0], np.int64)
        epoch_row = np.array([r for _, r in epoch_rows] or [state.zero], np.int64)
        k = np.searchsorted(epochs, recs["bar_epoch"][mine], "right") - 1
        row[mine] = np.where(own, np.where(k >= 0, epoch_row[np.maximum(k, 0)], state.zero),
                             agent_row[np.maximum(agents, 0)])
        # each thread's own records, in order: its releases and acquisitions so far
        order = mine[own][np.argsort(threads[own], kind="stable")]
        sorted_threads = recs["thread"][order]
        releasers = {who[1] for who in state.releases if who[0] == blk}
        for thread in releasers | {who[1] for who in state.snaps if who[0] == blk}:
            lo, hi = np.searchsorted(sorted_threads, [thread, thread + 1])
            hit = order[lo:hi]
            if thread in releasers:
                ep[hit] = np.searchsorted(state.releases[(blk, thread)], hit, "right")
            snaps = state.snaps.get((blk, thread))
            if snaps:
                at, snap_epoch, rows = (np.array(v, np.int64) for v in zip(*snaps, strict=True))
                which = np.searchsorted(at, hit, "right") - 1
                ok = (which >= 0) & (snap_epoch[np.maximum(which, 0)] ==
                                     recs["bar_epoch"][hit])
                row[hit[ok]] = rows[np.maximum(which, 0)][ok]

    def ordered(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        """Elementwise, for records of one group each: whether x and y are ordered."""
        out = np.zeros(len(xs), bool)
        for a, b in ((xs, ys), (ys, xs)):  # a before b: b acts knowing a's release
            comp = self._comp[a]
            known = self.matrix[self._row[b], np.maximum(comp, 0)] > self._ep[a]
            out |= (comp >= 0) & known
            # (clusters) b knows that a's block passed a barrier after a's epoch
            bcomp = self._bcomp[a]
            later = self.matrix[self._row[b], np.maximum(bcomp, 0)] > self.bar[a]
            out |= (bcomp >= 0) & later
        return out | self._before_issue(xs, ys) | self._before_issue(ys, xs)

    def _before_issue(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        """Elementwise: thread access x comes before agent y's operation by a barrier of their
        block between them and its issue, or (a wgmma) as an access of its warpgroup before
        the rendezvous."""
        agent = np.maximum(self.agent_of[ys], 0)
        blocks = self.log.records["block"]
        both = ~self.is_agent[xs] & self.is_agent[ys] & (blocks[xs] == blocks[ys])
        rendezvous = (self._agent_kind[agent] == WGMMA) & (xs < self._agent_issue[agent]) & \
            (self.log.records["thread"][xs] // WARPGROUP == self._agent_thread[agent] //
             WARPGROUP)
        return both & ((self.bar[xs] < self.bar[ys]) | rendezvous)

    def agent(self, record_index: int) -> Agent | None:
        index = int(self.agent_of[record_index])
        return self.agents[index] if index >= 0 else None


def build(log) -> Order | None:
    """The Order of a log with synchronisation records, else None (barriers suffice); made
    once per log."""
    if "order" not in log.cache:
        log.cache["order"] = _build(log)
    return log.cache["order"]


def _build(log) -> Order | None:
    sync = log.sync
    if sync is None or not len(sync):
        return None
    value = sync["address"].astype(np.int64)
    kind = (value >> abi.SYNC_KIND_SHIFT) & 0xFF
    agents, brackets, issue = _agents(log, value, kind)
    agent_of = _agent_of_records(len(log.records), brackets)
    groups, fences = {}, {}
    fence_plan = _fence_plan(log, kind)
    if fence_plan:  # fences and atomics order any two threads: one replay of the whole grid
        blocks = np.unique(np.r_[sync["block"], log.records["block"]]).astype(np.int64)
        events = np.arange(len(sync))
        groups[0] = _replay(log, blocks, events, value, kind, agents, issue, fences,
                            fence_plan)
        return Order(log, agents, agent_of, groups, fences, grid_wide=True)
    if (kind == abi.SYNC_THREADFENCE).all():
        return None  # fences that order nothing here: barriers suffice, as without them
    sync_group = log.group(sync["block"])
    for key in np.unique(sync_group):
        events = np.flatnonzero(sync_group == key)
        blocks = np.unique(sync["block"][events]).astype(np.int64)
        groups[int(key)] = _replay(log, blocks, events, value, kind, agents, issue, fences)
    return Order(log, agents, agent_of, groups, fences)


def _fence_plan(log, kind: np.ndarray) -> tuple:
    """fence_sync.plan's (kinds, publishers) when threadfences and atomics order threads
    (else ()); past fence_sync.MAX_PUBLISHERS releasing threads, a warning and ()."""
    if not (kind == abi.SYNC_THREADFENCE).any():
        return ()
    kinds, publishers = fence_sync.plan(log, kind)
    if len(publishers) > fence_sync.MAX_PUBLISHERS:
        import warnings

        warnings.warn(f"racecheck of '{log.kernel}': {len(publishers)} threads publish through "
                      "cuda.threadfence() and atomics, more than racecheck follows "
                      f"({fence_sync.MAX_PUBLISHERS}); a race it reports between blocks may be "
                      "ordered by them: launch a smaller grid to check it", stacklevel=2)
        return ()
    return (kinds, publishers) if kinds.any() else ()


def _agents(log, value, kind) -> tuple:
    """The agents (in issue order), their [land, end) brackets of records, and for each agent
    key its index."""
    sync, at = log.sync, log.sync_at
    obj = value & 0xFFFFFFFF
    extra = value >> abi.SYNC_EXTRA_SHIFT
    agents, index, brackets = [], {}, []
    wg_ends = np.flatnonzero(kind == abi.SYNC_WGMMA_END)
    copy_ends = np.flatnonzero(kind == abi.SYNC_COPY_END)
    for k in np.flatnonzero((kind == abi.SYNC_COPY_ISSUE) | (kind == abi.SYNC_WGMMA_ISSUE)):
        blk, thread = int(sync["block"][k]), int(sync["thread"][k])
        is_copy = kind[k] == abi.SYNC_COPY_ISSUE
        what = int(extra[k]) if is_copy else WGMMA
        key = (blk, thread, int(obj[k]), "c" if is_copy else "w")
        index[key] = len(agents)
        agents.append(Agent(what, blk, thread, int(sync["site"][k]), int(at[k]),
                            int(sync["bar_epoch"][k])))
        if not is_copy:  # a wgmma's reads follow its issue record directly
            _bracket(brackets, at, k, wg_ends, index[key])
    for k in np.flatnonzero(kind == abi.SYNC_COPY_LAND):
        key = (int(sync["block"][k]), int(sync["thread"][k]), int(obj[k]), "c")
        if key in index:
            _bracket(brackets, at, k, copy_ends, index[key])
    return agents, brackets, index


def _bracket(brackets: list, at, k: int, ends: np.ndarray, agent: int) -> None:
    """The records between sync record k and the next of `ends` are the agent's (a landing or
    a wgmma's reads run without another thread between them)."""
    n = np.searchsorted(ends, k, "right")
    if n < len(ends):
        brackets.append((int(at[k]), int(at[ends[n]]), agent))


def _agent_of_records(n: int, brackets: list) -> np.ndarray:
    out = np.full(n, -1, np.int64)
    for start, end, agent in brackets:
        out[start:end] = agent
    return out


def _components(log, events, kind, agents, blocks, publishers: set) -> dict:
    """The group's clock components: each thread that releases (arrives on an mbarrier or at
    the cluster barrier, issues a copy, fences before an atomic write), each agent, and (a
    cluster, or the grid) each block's barriers."""
    sync = log.sync
    releasing = events[(kind[events] == abi.SYNC_MB_ARRIVE) |
                       (kind[events] == abi.SYNC_COPY_ISSUE) |
                       (kind[events] == abi.SYNC_CLUSTER_ARRIVE)]
    pairs = set(zip(sync["block"][releasing].astype(int).tolist(),
                    sync["thread"][releasing].astype(int).tolist(), strict=True)) | publishers
    comps = {("t", blk, t): k for k, (blk, t) in enumerate(sorted(pairs))}
    mine = set(int(b) for b in blocks)
    for a, agent in enumerate(agents):
        if agent.block in mine:
            comps[("a", a)] = len(comps)
    if len(blocks) > 1 or log.clustered():
        for blk in blocks:
            comps[("b", int(blk))] = len(comps)
    return comps


def _mbarrier_keys(log, events, obj) -> list:
    """Per event, the (block, offset) its object names as an mbarrier: in a cluster kernel the
    object is the offset from the recording thread's shared memory, signed (another block's
    mbarrier: a remote arrive, a multicast's complete_tx)."""
    blocks = log.sync["block"][events].astype(np.int64)
    offsets = obj[events]
    if log.clustered() and log.shared_stride > 0:
        signed = offsets - ((offsets & 0x80000000) << 1)
        ranks = log.rank(blocks) + signed // log.shared_stride
        blocks = log.peer_block(blocks, ranks)
        offsets = signed % log.shared_stride
    return list(zip(blocks.tolist(), offsets.tolist(), strict=True))


def _replay(log, blocks, events, value, kind, agents, issue, fences,
            grid_wide: tuple = ()) -> _Group:
    """Replay one group's synchronisation records in order (and, grid-wide, the accesses at
    atomics' locations between them: fence_sync.py): its clock table."""
    sync, at = log.sync, log.sync_at
    kinds, publishers = grid_wide or (np.zeros(0, np.int8), set())
    comps = _components(log, events, kind, agents, blocks, publishers)
    state = _Group(comps, max(len(comps), 1))
    state.zero = state.add(np.zeros(state.width, np.int32))
    obj, extra = value & 0xFFFFFFFF, value >> abi.SYNC_EXTRA_SHIFT
    done = (value >> abi.SYNC_DONE_BIT) & 1
    bar_keys = _mbarrier_keys(log, events, obj)
    barriers = sorted((pos, int(blk), epoch) for blk in blocks
                      for pos, epoch in _barriers(log, int(blk)))
    ctx = {"landing": None, "wg_agents": {}, "acquired": {}, "next_barrier": 0,
           "fences": fence_sync.FenceSync(log, kinds), "group": log.group}
    recs = log.records
    for n, k, index in _steps(at, events, np.flatnonzero(kinds)):
        # a sync record at `at` comes before access record `at`, a barrier just before the
        # first access record of its epoch
        pos = int(at[k]) if index < 0 else index + 1
        while ctx["next_barrier"] < len(barriers) and barriers[ctx["next_barrier"]][0] < pos:
            _, b_blk, epoch = barriers[ctx["next_barrier"]]
            state.barrier(b_blk, epoch)  # between the last event and this one
            ctx["next_barrier"] += 1
        if index >= 0:
            state.barrier(int(recs["block"][index]), int(recs["bar_epoch"][index]))
            ctx["fences"].access(state, index)
            continue
        blk = int(sync["block"][k])
        state.barrier(blk, int(sync["bar_epoch"][k]))
        _event(state, (blk, int(sync["thread"][k])), pos, int(kind[k]), bar_keys[n],
               (int(obj[k]), int(extra[k]), bool(done[k])), (agents, issue, fences, ctx))
    for _, b_blk, epoch in barriers[ctx["next_barrier"]:]:
        state.barrier(b_blk, epoch)
    state.matrix = np.array(state.table, np.int32)
    return state


def _steps(at, events, accesses: np.ndarray):
    """(n, sync record, -1) per event and (-1, -1, access record) per access of `accesses`,
    merged in execution order (sync record k lies just before access record at[k])."""
    keys = np.r_[2 * at[events].astype(np.int64) - 1, 2 * accesses.astype(np.int64)]
    order = np.argsort(keys, kind="stable")
    n_events = len(events)
    for m in order.tolist():
        if m < n_events:
            yield m, int(events[m]), -1
        else:
            yield -1, -1, int(accesses[m - n_events])


def _event(state: _Group, who: tuple, pos: int, what: int, bar_key: tuple, fields: tuple,
           env: tuple) -> None:
    """Replay one synchronisation record of thread `who` (block, thread)."""
    obj, extra, done = fields
    agents, issue, fences, ctx = env
    blk, thread = who
    if what == abi.SYNC_MB_INIT:
        state.bars[bar_key] = [np.zeros(state.width, np.int32), []]
    elif what in (abi.SYNC_MB_ARRIVE, abi.SYNC_MB_TX, abi.SYNC_MB_COMPLETE_TX):
        bar = state.bars.setdefault(bar_key, [np.zeros(state.width, np.int32), []])
        landing = ctx["landing"]
        if what == abi.SYNC_MB_ARRIVE:
            np.maximum(bar[0], state.release(who, pos), out=bar[0])
        elif what == abi.SYNC_MB_COMPLETE_TX and landing is not None:
            np.maximum(bar[0], state.table[state.agent_rows[landing]], out=bar[0])
        if done:
            bar[1].append(bar[0].copy())
    elif what == abi.SYNC_MB_WAIT:
        phases = state.bars.get(bar_key, [None, []])[1]
        if phases:  # the latest completed phase (its parity is the one waited for)
            state.acquire(who, phases[-1], pos)
    elif what == abi.SYNC_CLUSTER_ARRIVE:
        key = (int(ctx["group"](np.array([blk]))[0]), obj)  # a grid-wide replay: its cluster's
        phase = state.cluster.setdefault(key, np.zeros(state.width, np.int32))
        np.maximum(phase, state.release(who, pos), out=phase)
    elif what == abi.SYNC_CLUSTER_WAIT:
        key = (int(ctx["group"](np.array([blk]))[0]), obj)
        if key in state.cluster:  # every live thread's arrival for the phase came before
            state.acquire(who, state.cluster[key], pos)
    elif what == abi.SYNC_THREADFENCE:
        ctx["fences"].fence(state, who, obj, pos)
    elif what == abi.SYNC_COPY_ISSUE:
        a = issue[(blk, thread, obj, "c")]
        clock = state.release(who, pos)
        clock[state.comps[("a", a)]] = 1
        state.agent_rows[a] = state.add(clock)
    elif what == abi.SYNC_COPY_LAND:
        ctx["landing"] = issue.get((blk, thread, obj, "c"))
    elif what == abi.SYNC_COPY_END:
        landing = ctx["landing"]
        if landing is not None and agents[landing].kind == STORE:  # the issuer's wait
            state.acquire(who, state.table[state.agent_rows[landing]], pos)
        ctx["landing"] = None
    elif what == abi.SYNC_FENCE:
        fences.setdefault(who, []).append(pos)
    elif what == abi.SYNC_WGMMA_ISSUE:
        a = issue[(blk, thread, obj, "w")]
        group = thread // WARPGROUP
        clock = state.block_known(blk).copy()
        for (b, t), row in state.rows.items():
            if b == blk and t // WARPGROUP == group:
                np.maximum(clock, row, out=clock)
        clock[state.comps[("a", a)]] = 1
        state.agent_rows[a] = state.add(clock)
        ctx["wg_agents"].setdefault((blk, group), []).append((extra, a))
    elif what == abi.SYNC_WGMMA_WAIT:
        _acquire_wgmma(state, who, extra, ctx, pos)


def _barriers(log, blk: int) -> list:
    """(position, epoch) of the block's first access record in each new barrier epoch."""
    recs = log.records
    mine = np.flatnonzero(recs["block"] == blk)
    if not len(mine):
        return []
    epochs = np.maximum.accumulate(recs["bar_epoch"][mine].astype(np.int64))
    new = np.flatnonzero(np.r_[epochs[0] > 0, epochs[1:] > epochs[:-1]])
    return [(int(mine[n]), int(epochs[n])) for n in new]


def _acquire_wgmma(state: _Group, who: tuple, below: int, ctx: dict, pos: int) -> None:
    """wgmma.wait_group: the thread acquires its warpgroup's wgmmas of groups before `below`."""
    mine = ctx["wg_agents"].get((who[0], who[1] // WARPGROUP), [])
    start = ctx["acquired"].get(who, 0)
    stop = start
    while stop < len(mine) and mine[stop][0] < below:
        np.maximum(state.row(who), state.table[state.agent_rows[mine[stop][1]]],
                   out=state.row(who))
        stop += 1
    if stop > start:
        ctx["acquired"][who] = stop
        state.snapshot(who, pos)
