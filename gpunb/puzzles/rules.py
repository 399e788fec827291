"""The checks a launch must pass beyond the right values, read from its Trace: integrity (data
races, uninitialised reads of shared memory and of outputs, accesses to memory an asynchronous
copy was filling) and the puzzle's method (every input read, global reads and writes per thread,
shared memory carrying the data, work per step, barriers, warp-collective operations,
coalescing, bank conflicts, the puzzle's own rule). Each check gives Findings with the hint for
that mistake; a Method's `hints` may replace a kind's hint for one puzzle.
"""

from __future__ import annotations

import numpy as np

from gpunb.puzzles.feedback import Finding
from gpunb.puzzles.method import FLOW_ANY, FLOW_BETWEEN
from gpunb.puzzles.model import SHARED_NONE, Puzzle


def integrity(puzzle: Puzzle, trace) -> list[Finding]:
    """Races, initcheck (shared memory and outputs) and pending asynchronous copies."""
    found = []
    race = trace.race()
    if race is not None:
        found.append(Finding("race", located(race), _race_hint(race, trace)))
    pending = trace.pending_copy()
    if pending is not None:
        found.append(Finding("pending_copy", located(pending), pending.hint or ""))
    unset = trace.uninitialised_shared()
    if unset is not None:
        found.append(Finding(
            "uninitialised", "initcheck: " + located(unset),
            "every shared element a thread reads must have been written by a thread of its "
            "block: threads past the end of the data still store their slot (0 for a sum), or "
            "the reads stay inside the written part. (The CPU target zero-fills shared "
            "memory, so the values may look right here; on a GPU they are garbage.)"))
    for name in puzzle.outputs:
        if name in puzzle.initial_outputs:
            continue
        record = trace.read_before_write(name)
        if record is not None:
            index = np.unravel_index(int(trace.element[record]),
                                     trace.array_shapes[trace.array_id(name)])
            shown = ", ".join(str(int(i)) for i in index)
            found.append(Finding(
                "uninitialised",
                f"initcheck: {trace.thread_name(int(trace.gid[record]))} read {name}[{shown}] "
                f"(line {int(trace.line[record])}) before any thread wrote it; puzzle "
                f"{puzzle.name!r} does not say what an output starts with (on a GPU: garbage)",
                "accumulate in a register (or in shared memory) and write the output once"))
    return found


def located(error) -> str:
    """An error's message, place and caret, without its hint (the Finding carries one)."""
    hint, error.hint = error.hint, None
    try:
        return error.render()
    finally:
        error.hint = hint


def _race_hint(race, trace) -> str:
    if not hasattr(race, "accesses"):  # a TMA copy or a wgmma is one side: its own hint
        return race.hint or ""
    (_, line1, _, block1), (_, line2, _, block2) = race.accesses
    if block1 != block2:
        return ("two blocks touch the same element and nothing orders blocks: give each "
                "element one writer (does the index use cuda.blockIdx?), or use cuda.atomic "
                "for a total that several blocks update")
    if line1 == line2 and trace.writers_of(race.array, race.index) > 1:
        return ("several threads update one element (x[k] += ...): their read-add-writes "
                "interleave and lose updates; use cuda.atomic.add, or give each element one "
                "thread")
    return (f"put a cuda.syncthreads() between the access at line {min(line1, line2)} and the "
            f"one at line {max(line1, line2)}: every thread of the block waits there (so not "
            "inside a branch only some threads take)")


def method(puzzle: Puzzle, size, trace) -> list[Finding]:
    """The puzzle's rules at this size, in the order a learner should fix them."""
    rules = puzzle.rules
    found = _unread_inputs(puzzle, trace, rules)
    found += _global_limits(puzzle, size, trace)
    found += _shared_flow(puzzle, trace, rules)
    for check in (_step_work, _barriers, _warp_ops, _atomics, _coalescing, _bank_conflicts,
                  _own_rule):
        finding = check(puzzle, size, trace, rules)
        if finding is not None:
            found.append(finding)
    return [Finding(f.kind, f.message, rules_hint(rules, f)) for f in found]


def rules_hint(rules, finding: Finding) -> str:
    return rules.hints.get(finding.kind, finding.hint) if rules.hints else finding.hint


def _unread_inputs(puzzle: Puzzle, trace, rules) -> list[Finding]:
    names = rules.must_read
    if names is None:
        names = [n for n in puzzle.params
                 if n not in puzzle.outputs and trace.array_id(n) >= 0]
    for name in names:
        unread = trace.unread_elements(name)
        if not len(unread):
            continue
        shape = trace.array_shapes[trace.array_id(name)]
        total = int(np.prod(shape))
        if len(unread) == total:
            what = f"no thread read any element of '{name}'"
        else:
            shown = ", ".join(f"{name}[{_index_text(np.unravel_index(k, shape))}]"
                              for k in unread[:4])
            what = (f"no thread read {shown}" + (f" ({len(unread)} of {total} elements of "
                                                 f"'{name}' unread)" if len(unread) > 4 else ""))
        return [Finding("unread_input", f"{what}; the outputs depend on every element",
                        "the inputs are drawn at random at every attempt, so the answer must be "
                        "computed from them: read every element the output depends on (a "
                        "hard-coded or partial answer cannot pass)")]
    return []


def _index_text(index) -> str:
    return ", ".join(str(int(i)) for i in index)


def _global_limits(puzzle: Puzzle, size, trace) -> list[Finding]:
    access = trace.access
    for which, counts in (("reads", access.global_reads), ("writes", access.global_writes)):
        limit = puzzle.limit(which, size)
        if limit is None or not len(counts) or counts.max() <= limit:
            continue
        worst = int(np.argmax(counts))
        if which == "writes":
            hint = "write each output element once: accumulate in a register, store at the end"
        elif puzzle.shared == SHARED_NONE:
            hint = ("a thread reads only what its own output element needs (one thread per "
                    "element): is one thread doing several threads' work?")
        else:
            hint = "read each value once into shared memory and share it from there"
        return [Finding(
            f"global_{which}",
            f"thread {_numbered(trace, worst)} made {int(counts[worst])} global {which}; puzzle "
            f"{puzzle.name!r} allows at most {limit} per thread ({int((counts > limit).sum())} "
            "threads are over)", hint)]
    return []


def _numbered(trace, gid: int) -> str:
    """'2 (threadIdx (2, 0, 0), blockIdx (0, 0, 0))': the id the access map prints, and where."""
    name = trace.thread_name(gid)  # "thread (x, y, z) of block (x, y, z)"
    local, block = name[len("thread "):].split(" of block ")
    return f"{gid} (threadIdx {local}, blockIdx {block})"


def _shared_flow(puzzle: Puzzle, trace, rules) -> list[Finding]:
    if rules.shared_flow == FLOW_ANY:
        return []
    skipped = trace.writers_without_shared_reads(puzzle.outputs)
    if len(skipped):
        return [Finding(
            "shared_flow",
            f"{trace.thread_name(int(skipped[0]))} wrote its output without reading shared "
            f"memory first ({len(skipped)} threads did); puzzle {puzzle.name!r} passes the data "
            "through shared memory",
            "store the values in the shared array, cuda.syncthreads(), then compute the output "
            "from what you read back from shared memory (not from a register copy, not with "
            "shuffles)")]
    if rules.shared_flow != FLOW_BETWEEN:
        return []
    crossing = trace.shared_reads_from_others()
    # a block where one thread alone brought data into shared memory (a size-1 input: the
    # other threads store padding zeros at most) has nothing to share
    sharing = _blocks_writing(puzzle, trace) & (trace.shared_loaders() > 1)
    idle = np.flatnonzero(sharing & (crossing == 0))
    if len(idle):
        return [Finding(
            "shared_flow",
            f"in block {int(idle[0])} no thread read a value another thread stored in shared "
            f"memory; puzzle {puzzle.name!r} is about threads sharing what they loaded",
            "each thread loads its value(s) into shared memory; after cuda.syncthreads() the "
            "threads read their neighbours' values from there")]
    return []


def _blocks_writing(puzzle: Puzzle, trace) -> np.ndarray:
    tpb = trace.log.threads_per_block()
    ids = [trace.array_id(n) for n in puzzle.outputs]
    mask = np.isin(trace.array, ids) & ~trace.shared & (trace.kind != 0)
    out = np.zeros(trace.threads // tpb, bool)
    out[trace.gid[mask] // tpb] = True
    return out


def _step_work(puzzle, size, trace, rules) -> Finding | None:
    limit = rules.limit("max_step_reads", size)
    total_limit = rules.limit("max_shared_reads", size)
    for counts, allowed, what in ((trace.step_reads(), limit, "between two barriers"),
                                  (trace.shared_reads(), total_limit, "in all")):
        if allowed is None or not len(counts) or counts.max() <= allowed:
            continue
        worst = int(np.argmax(counts))
        return Finding(
            "step_work",
            f"{trace.thread_name(worst)} made {int(counts[worst])} shared-memory reads {what}; "
            f"puzzle {puzzle.name!r}'s method allows at most {allowed}",
            "that is one thread doing the work of many (a serial loop): in the stated method "
            "every thread does a little at each step, with cuda.syncthreads() between steps")
    return None


def _barriers(puzzle, size, trace, rules) -> Finding | None:
    low, high = rules.limit("min_barriers", size), rules.limit("max_barriers", size)
    if low is None and high is None:
        return None
    counts = trace.barriers()[_blocks_writing(puzzle, trace)]
    if not len(counts):
        return None
    if low is not None and counts.min() < low:
        return Finding(
            "barriers",
            f"a block passed {int(counts.min())} barriers (cuda.syncthreads) before its last "
            f"memory access; puzzle {puzzle.name!r}'s method needs at least {low}",
            "a barrier between writing shared memory and reading what other threads wrote, "
            "and one per step of the tree")
    if high is not None and counts.max() > high:
        return Finding(
            "barriers",
            f"a block passed {int(counts.max())} barriers; puzzle {puzzle.name!r}'s method "
            f"takes at most {high} (log2 of the block size steps, not one per element)",
            "halve (or double) the distance at every step, so the steps are log2(n), not n")
    return None


def _warp_ops(puzzle, size, trace, rules) -> Finding | None:
    high, low = rules.limit("max_warp_ops", size), rules.limit("min_warp_ops", size)
    counts = trace.warp_ops()
    if high is not None and len(counts) and counts.max() > high:
        worst = int(np.argmax(counts))
        if high == 0:
            return Finding(
                "warp_ops",
                f"{trace.thread_name(worst)} used warp-collective operations (shuffles, "
                f"votes, syncwarp); puzzle {puzzle.name!r} is solved with shared memory and "
                "cuda.syncthreads()",
                "move the values through the shared array instead of shuffles")
        return Finding(
            "warp_ops",
            f"{trace.thread_name(worst)} made {int(counts[worst])} warp-collective "
            f"operations; puzzle {puzzle.name!r}'s method takes at most {high}",
            "log2(32) = 5 shuffles fold or scan a warp; one shuffle per element is the "
            "quadratic algorithm")
    if low is not None:
        writers = trace.per_thread(np.isin(trace.array, [trace.array_id(n)
                                                          for n in puzzle.outputs])
                                   & (trace.kind != 0) & ~trace.shared) > 0
        short = np.flatnonzero(writers & (counts < low))
        if len(short):
            return Finding(
                "warp_ops",
                f"{trace.thread_name(int(short[0]))} wrote its output after "
                f"{int(counts[short[0]])} warp-collective operations; puzzle {puzzle.name!r}'s "
                f"method takes {low} (the warp's values are combined with shuffles)",
                "every lane takes part in every shuffle, offsets 16, 8, 4, 2, 1")
    return None


def _atomics(puzzle, size, trace, rules) -> Finding | None:
    limit = rules.limit("max_atomics_per_block", size)
    if limit is None:
        return None
    tpb = trace.log.threads_per_block()
    atomic = (trace.kind == 2) & ~trace.shared
    counts = np.bincount(trace.gid[atomic] // tpb, minlength=trace.threads // tpb)
    if not len(counts) or counts.max() <= limit:
        return None
    return Finding(
        "atomics",
        f"block {int(np.argmax(counts))} made {int(counts.max())} atomic operations on global "
        f"memory; puzzle {puzzle.name!r} allows at most {limit} per block",
        "atomics on one address serialise: combine within the block first (shared memory, "
        "shuffles or a ballot), then one thread per block (or per bin) updates global memory")


def _coalescing(puzzle, size, trace, rules) -> Finding | None:
    if rules.min_efficiency is None:
        return None
    for line in trace.access.coalescing:
        if line.efficiency + 1e-9 < rules.min_efficiency:
            return Finding(
                "coalescing",
                f"line {line.line} ({line.kind} {line.array}): {line.sectors_per_request:.1f} "
                f"sectors per warp request, {line.efficiency:.0%} of the bytes moved are used; "
                f"puzzle {puzzle.name!r} asks for at least {rules.min_efficiency:.0%}",
                "a warp's 32 threads differ in threadIdx.x: give it to the last (contiguous) "
                "index of the array, so neighbouring threads touch neighbouring addresses")
    return None


def _bank_conflicts(puzzle, size, trace, rules) -> Finding | None:
    limit = rules.limit("max_bank_conflicts", size)
    if limit is None:
        return None
    for line in trace.access.bank_conflicts:
        if line.conflicts > limit:
            return Finding(
                "bank_conflicts",
                f"line {line.line} ({line.kind} {line.array}, shared): {line.conflicts} bank "
                f"conflicts (worst {line.max_ways}-way); puzzle {puzzle.name!r} allows at most "
                f"{limit}",
                "32 banks of 4 bytes: a warp reading a column of a 32-wide tile hits one bank "
                "32 times; pad each row by one element, (TILE, TILE + 1)")
    return None


def _own_rule(puzzle, size, trace, rules) -> Finding | None:
    if rules.rule is None:
        return None
    message = rules.rule(trace, size)
    return Finding("method", message, rules.rule_hint) if message else None
