"""Moves an artifact's source positions to where its functions are now.

Keys exclude file paths and line numbers, so a hit may come from a kernel compiled in another
file, or before blank lines were added above it or inside it. The code is identical, but the
artifact's `source_file`, line map, error, barrier and debugger sites point at the old place;
this rewrites them using the functions' (qualname, file, first line, last line, node positions)
then and now: a line moves where the node at that position moved (the same code has the same
nodes in the same order), else by its function's first line. PTX text and cubin debug info keep
their original positions (they only exist with lineinfo/debug, whose keys include them).
"""

from __future__ import annotations

import dataclasses


def relocate(artifact, old_locations, new_locations):
    """The artifact with positions moved from `old_locations` to `new_locations`."""
    old = [_location(loc) for loc in old_locations or ()]
    new = [_location(loc) for loc in new_locations or ()]
    if not old or old == new or len(old) != len(new):
        return artifact
    # the same qualnames in the same order (same key => same call graph): pair them up
    moves = [_Move(o, n) for o, n in zip(old, new, strict=True) if o[0] == n[0]]
    if len(moves) != len(old):
        return artifact

    def site(entry):
        filename, line = entry[0], entry[1]
        for move in moves:
            if filename == move.old_file and move.first <= line <= move.last:
                return (move.new_file, *move.position(line, entry[2]), *entry[3:]) \
                    if len(entry) > 2 else (move.new_file, move.line(line))
        return entry

    def line_only(line: int) -> int:
        # the line map has no file names; the kernel's own lines are what the source view shows,
        # so its range wins, then a callee's when only one callee range holds the line
        if moves[0].first <= line <= moves[0].last:
            return moves[0].line(line)
        lines = {m.line(line) for m in moves[1:] if m.first <= line <= m.last}
        return lines.pop() if len(lines) == 1 else line

    changes = {"error_sites": tuple(site(tuple(s)) for s in artifact.error_sites),
               "barrier_sites": tuple(site(tuple(s)) for s in artifact.barrier_sites),
               "access_sites": tuple(site(tuple(s)) for s in artifact.access_sites),
               "debug_sites": tuple(site(tuple(s)) for s in artifact.debug_sites),
               "debug_frames": tuple(site(tuple(f)) for f in artifact.debug_frames),
               "code_sites": tuple(site(tuple(s)) for s in artifact.code_sites),
               "line_map": tuple((line_only(line), ptx) if line else (line, ptx)
                                 for line, ptx in artifact.line_map)}
    if artifact.source_file == old[0][1] or not artifact.source_file:
        changes["source_file"] = new[0][1]
        changes["first_line"] = artifact.first_line + (new[0][2] - old[0][2])
    return dataclasses.replace(artifact, **changes)


def _location(loc) -> tuple:
    """(qualname, file, first line, last line, node positions) from an entry's JSON or a
    fingerprint; entries written before positions were kept have none."""
    loc = tuple(loc)
    positions = tuple(tuple(p) for p in loc[4]) if len(loc) > 4 else ()
    return (*loc[:4], positions)


class _Move:
    """Where one function's lines and columns are now."""

    __slots__ = ("old_file", "first", "last", "new_file", "delta", "by_position", "by_line")

    def __init__(self, old: tuple, new: tuple):
        self.old_file, self.first, self.last = old[1], old[2], old[3]
        self.new_file, self.delta = new[1], new[2] - old[2]
        self.by_position: dict = {}
        self.by_line: dict = {}
        if old[4] and len(old[4]) == len(new[4]):
            for (old_line, old_col), (new_line, new_col) in zip(old[4], new[4], strict=True):
                then, now = old[2] + old_line, new[2] + new_line
                self.by_position.setdefault((then, old_col), (now, new_col))
                self.by_line.setdefault(then, now)

    def line(self, line: int) -> int:
        return self.by_line.get(line, line + self.delta)

    def position(self, line: int, col) -> tuple:
        found = self.by_position.get((line, col))
        return found if found is not None else (self.line(line), col)
