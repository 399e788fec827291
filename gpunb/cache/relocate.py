"""Moves an artifact's source positions to where its functions are now.

Keys exclude file paths and line numbers, so a hit may come from a kernel compiled in another
file, or before blank lines were added above it. The code is identical, but the artifact's
`source_file`, line map, bounds-check and barrier sites point at the old place; this rewrites them
using the functions' (qualname, file, first line, last line) then and now. PTX text and cubin debug
info keep their original positions (they only exist with lineinfo/debug, whose keys include them).
"""

from __future__ import annotations

import dataclasses


def relocate(artifact, old_locations, new_locations):
    """The artifact with positions moved from `old_locations` to `new_locations`."""
    old = [tuple(loc) for loc in old_locations or ()]
    new = [tuple(loc) for loc in new_locations or ()]
    if not old or old == new or len(old) != len(new):
        return artifact
    # the same qualnames in the same order (same key => same call graph): pair them up
    moves = [(o[1], o[2], o[3], n[1], n[2] - o[2])
             for o, n in zip(old, new, strict=True) if o[0] == n[0]]
    if len(moves) != len(old):
        return artifact

    def site(entry):
        filename, line = entry[0], entry[1]
        for old_file, first, last, new_file, delta in moves:
            if filename == old_file and first <= line <= last:
                return (new_file, line + delta, *entry[2:])
        return entry

    def line_only(line: int) -> int:
        # the line map has no file names; the kernel's own lines are what the source view shows,
        # so its range wins, then a callee's when only one callee range holds the line
        _, first, last, _, delta = moves[0]
        if first <= line <= last:
            return line + delta
        deltas = {delta for _, first, last, _, delta in moves[1:] if first <= line <= last}
        return line + deltas.pop() if len(deltas) == 1 else line

    changes = {"error_sites": tuple(site(tuple(s)) for s in artifact.error_sites),
               "barrier_sites": tuple(site(tuple(s)) for s in artifact.barrier_sites),
               "access_sites": tuple(site(tuple(s)) for s in artifact.access_sites),
               "code_sites": tuple(site(tuple(s)) for s in artifact.code_sites),
               "line_map": tuple((line_only(line), ptx) if line else (line, ptx)
                                 for line, ptx in artifact.line_map)}
    if artifact.source_file == old[0][1] or not artifact.source_file:
        changes["source_file"] = new[0][1]
        changes["first_line"] = artifact.first_line + (new[0][2] - old[0][2])
    return dataclasses.replace(artifact, **changes)
