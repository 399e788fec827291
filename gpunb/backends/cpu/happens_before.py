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

Not modelled: ordering through warp synchronisation combined with mbarriers (a warp's
collectives order its own lanes only, by warp epochs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpunb.backends.cpu import abi

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
class _Block:
    """One block's vector clocks while the log is replayed."""

    comps: dict  # entity ("t", thread) / ("a", agent) -> component index
    known: np.ndarray  # what crossed the last barrier
    table: list = field(default_factory=list)  # rows: snapshots, barrier knowledge, agents
    rows: dict = field(default_factory=dict)  # thread -> current clock (np.int32)
    counts: dict = field(default_factory=dict)  # releasing thread -> releases so far
    releases: dict = field(default_factory=dict)  # releasing thread -> [position]
    epoch: int = 0
    epoch_rows: list = field(default_factory=list)  # (epoch, table row) of each barrier
    snaps: dict = field(default_factory=dict)  # thread -> [(position, epoch, table row)]
    bars: dict = field(default_factory=dict)  # mbarrier offset -> [pending join, [phases]]
    agent_rows: dict = field(default_factory=dict)  # agent -> table row of its clock
    zero: int = 0
    matrix: np.ndarray = None  # the table as one array, once replayed

    def row(self, thread: int) -> np.ndarray:
        if thread not in self.rows:
            self.rows[thread] = self.known.copy()
        return self.rows[thread]

    def add(self, clock: np.ndarray) -> int:
        self.table.append(clock.copy())
        return len(self.table) - 1

    def snapshot(self, thread: int, at: int) -> None:
        self.snaps.setdefault(thread, []).append((at, self.epoch, self.add(self.row(thread))))

    def release(self, thread: int, at: int) -> np.ndarray:
        """The thread's clock with its own component advanced (what it publishes now)."""
        self.releases.setdefault(thread, []).append(at)
        self.counts[thread] = self.counts.get(thread, 0) + 1
        clock = self.row(thread)
        clock[self.comps[("t", thread)]] = self.counts[thread]
        return clock.copy()

    def barrier(self, epoch: int) -> None:
        if epoch <= self.epoch:
            return
        for clock in self.rows.values():
            np.maximum(self.known, clock, out=self.known)
        self.rows = {}
        self.epoch = epoch
        self.epoch_rows.append((epoch, self.add(self.known)))


class Order:
    """Per access record of a log: its entity and what it is ordered after (see the module
    docstring). `ordered(i, js)` says, for record i and records js of the same block, whether
    each pair is ordered by mbarriers or agents' completions (barrier and warp epochs between
    two threads' accesses are accesses.py's)."""

    def __init__(self, log, agents: list, agent_of: np.ndarray, blocks: dict, fences: dict):
        recs = log.records
        tpb = log.threads_per_block()
        n_threads = tpb * int(np.prod(log.grid))
        self.log, self.agents, self.agent_of, self.fences = log, agents, agent_of, fences
        self.blocks = blocks
        gthread = recs["block"].astype(np.int64) * tpb + recs["thread"]
        self.is_agent = agent_of >= 0
        self.entity = np.where(self.is_agent, n_threads + agent_of, gthread)
        issue_bar = np.array([a.bar for a in agents] or [0], np.int64)
        self.bar = np.where(self.is_agent, issue_bar[np.maximum(agent_of, 0)],
                            recs["bar_epoch"])
        self._comp, self._ep, self._row = self._per_record()
        width = max(b.matrix.shape[1] for b in blocks.values())
        self.matrix = np.zeros((sum(len(b.matrix) for b in blocks.values()), width), np.int32)
        offset = 0
        for blk, state in blocks.items():  # one table for all blocks: rows move down
            self.matrix[offset:offset + len(state.matrix), :state.matrix.shape[1]] = state.matrix
            self._row[self.log.records["block"] == blk] += offset
            offset += len(state.matrix)
        self._agent_kind = np.array([a.kind for a in agents] or [0], np.int64)
        self._agent_issue = np.array([a.issue_at for a in agents] or [0], np.int64)
        self._agent_thread = np.array([a.thread for a in agents] or [0], np.int64)

    def _per_record(self):
        """Per record: its entity's component (-1: none), its releases so far (its epoch as a
        releaser) and the table row of the clock it acts with."""
        recs = self.log.records
        n = len(recs)
        comp, ep, row = np.full(n, -1, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
        n_agents = max(len(self.agents), 1)
        for blk, state in self.blocks.items():
            mine = np.flatnonzero(recs["block"] == blk)
            threads = recs["thread"][mine].astype(np.int64)
            agents = self.agent_of[mine]
            by_thread = np.full(self.log.threads_per_block(), -1, np.int64)
            by_agent, agent_row = np.full(n_agents, -1, np.int64), np.zeros(n_agents, np.int64)
            for (kind, who), index in state.comps.items():
                (by_agent if kind == "a" else by_thread)[who] = index
            for agent, table_row in state.agent_rows.items():
                agent_row[agent] = table_row
            own = agents < 0
            comp[mine] = np.where(own, by_thread[threads], by_agent[np.maximum(agents, 0)])
            epochs = np.array([e for e, _ in state.epoch_rows] or [0], np.int64)
            epoch_row = np.array([r for _, r in state.epoch_rows] or [state.zero], np.int64)
            k = np.searchsorted(epochs, recs["bar_epoch"][mine], "right") - 1
            row[mine] = np.where(own, np.where(k >= 0, epoch_row[np.maximum(k, 0)], state.zero),
                                 agent_row[np.maximum(agents, 0)])
            # each thread's own records, in order: its releases and acquisitions so far
            order = mine[own][np.argsort(threads[own], kind="stable")]
            sorted_threads = recs["thread"][order]
            for thread in set(state.releases) | set(state.snaps):
                lo, hi = np.searchsorted(sorted_threads, [thread, thread + 1])
                hit = order[lo:hi]
                if thread in state.releases:
                    ep[hit] = np.searchsorted(state.releases[thread], hit, "right")
                snaps = state.snaps.get(thread)
                if snaps:
                    at, snap_epoch, rows = (np.array(v, np.int64) for v in zip(*snaps, strict=True))
                    which = np.searchsorted(at, hit, "right") - 1
                    ok = (which >= 0) & (snap_epoch[np.maximum(which, 0)] ==
                                         recs["bar_epoch"][hit])
                    row[hit[ok]] = rows[np.maximum(which, 0)][ok]
        return comp, ep, row

    def ordered(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        """Elementwise, for records of one block each: whether x and y are ordered."""
        out = np.zeros(len(xs), bool)
        for a, b in ((xs, ys), (ys, xs)):  # a before b: b acts knowing a's release
            comp = self._comp[a]
            known = self.matrix[self._row[b], np.maximum(comp, 0)] > self._ep[a]
            out |= (comp >= 0) & known
        return out | self._before_issue(xs, ys) | self._before_issue(ys, xs)

    def _before_issue(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        """Elementwise: thread access x comes before agent y's operation by a barrier between
        them and its issue, or (a wgmma) as an access of its warpgroup before the rendezvous."""
        agent = np.maximum(self.agent_of[ys], 0)
        both = ~self.is_agent[xs] & self.is_agent[ys]
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
    blocks, fences = {}, {}
    for blk in np.unique(sync["block"]):
        events = np.flatnonzero(sync["block"] == blk)
        blocks[int(blk)] = _replay(log, int(blk), events, value, kind, agents, issue, fences)
    return Order(log, agents, agent_of, blocks, fences)


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


def _components(log, events, kind, agents, blk) -> dict:
    sync = log.sync
    releasing = sync["thread"][events[(kind[events] == abi.SYNC_MB_ARRIVE) |
                                      (kind[events] == abi.SYNC_COPY_ISSUE)]]
    comps = {("t", int(t)): k for k, t in enumerate(np.unique(releasing))}
    for a, agent in enumerate(agents):
        if agent.block == blk:
            comps[("a", a)] = len(comps)
    return comps


def _replay(log, blk, events, value, kind, agents, issue, fences) -> _Block:
    """Replay one block's synchronisation records in order: its clock table."""
    sync, at = log.sync, log.sync_at
    comps = _components(log, events, kind, agents, blk)
    state = _Block(comps, np.zeros(max(len(comps), 1), np.int32))
    state.zero = state.add(state.known)
    landing, wg_agents, acquired = None, {}, {}
    obj, extra = value & 0xFFFFFFFF, value >> abi.SYNC_EXTRA_SHIFT
    done = (value >> abi.SYNC_DONE_BIT) & 1
    barriers = _barriers(log, blk)
    next_barrier = 0
    for k in events:
        thread, pos, what = int(sync["thread"][k]), int(at[k]), int(kind[k])
        while next_barrier < len(barriers) and barriers[next_barrier][0] < pos:
            state.barrier(barriers[next_barrier][1])  # between the last event and this one
            next_barrier += 1
        state.barrier(int(sync["bar_epoch"][k]))
        if what == abi.SYNC_MB_INIT:
            state.bars[int(obj[k])] = [np.zeros_like(state.known), []]
            continue
        if what in (abi.SYNC_MB_ARRIVE, abi.SYNC_MB_TX, abi.SYNC_MB_COMPLETE_TX):
            bar = state.bars.setdefault(int(obj[k]), [np.zeros_like(state.known), []])
            if what == abi.SYNC_MB_ARRIVE:
                np.maximum(bar[0], state.release(thread, pos), out=bar[0])
            elif what == abi.SYNC_MB_COMPLETE_TX and landing is not None:
                np.maximum(bar[0], state.table[state.agent_rows[landing]], out=bar[0])
            if done[k]:
                bar[1].append(bar[0].copy())
        elif what == abi.SYNC_MB_WAIT:
            phases = state.bars.get(int(obj[k]), [None, []])[1]
            if phases:  # the latest completed phase (its parity is the one waited for)
                np.maximum(state.row(thread), phases[-1], out=state.row(thread))
                state.snapshot(thread, pos)
        elif what == abi.SYNC_COPY_ISSUE:
            a = issue[(blk, thread, int(obj[k]), "c")]
            clock = state.release(thread, pos)
            clock[comps[("a", a)]] = 1
            state.agent_rows[a] = state.add(clock)
        elif what == abi.SYNC_COPY_LAND:
            landing = issue.get((blk, thread, int(obj[k]), "c"))
        elif what == abi.SYNC_COPY_END:
            if landing is not None and agents[landing].kind == STORE:  # the issuer's wait
                np.maximum(state.row(thread), state.table[state.agent_rows[landing]],
                           out=state.row(thread))
                state.snapshot(thread, pos)
            landing = None
        elif what == abi.SYNC_FENCE:
            fences.setdefault((blk, thread), []).append(pos)
        elif what == abi.SYNC_WGMMA_ISSUE:
            a = issue[(blk, thread, int(obj[k]), "w")]
            group = thread // WARPGROUP
            clock = state.known.copy()
            for t, row in state.rows.items():
                if t // WARPGROUP == group:
                    np.maximum(clock, row, out=clock)
            clock[comps[("a", a)]] = 1
            state.agent_rows[a] = state.add(clock)
            wg_agents.setdefault(group, []).append((int(extra[k]), a))
        elif what == abi.SYNC_WGMMA_WAIT:
            _acquire_wgmma(state, thread, int(extra[k]), wg_agents, acquired, pos)
    for _position, epoch in barriers[next_barrier:]:
        state.barrier(epoch)
    state.matrix = np.array(state.table, np.int32)
    return state


def _barriers(log, blk: int) -> list:
    """(position, epoch) of the block's first access record in each new barrier epoch."""
    recs = log.records
    mine = np.flatnonzero(recs["block"] == blk)
    if not len(mine):
        return []
    epochs = np.maximum.accumulate(recs["bar_epoch"][mine].astype(np.int64))
    new = np.flatnonzero(np.r_[epochs[0] > 0, epochs[1:] > epochs[:-1]])
    return [(int(mine[n]), int(epochs[n])) for n in new]


def _acquire_wgmma(state, thread, below, wg_agents, acquired, pos) -> None:
    """wgmma.wait_group: the thread acquires its warpgroup's wgmmas of groups before `below`."""
    mine = wg_agents.get(thread // WARPGROUP, [])
    start = acquired.get(thread, 0)
    stop = start
    while stop < len(mine) and mine[stop][0] < below:
        np.maximum(state.row(thread), state.table[state.agent_rows[mine[stop][1]]],
                   out=state.row(thread))
        stop += 1
    if stop > start:
        acquired[thread] = stop
        state.snapshot(thread, pos)
