"""What a debug launch is asked to do: where to stop, which threads, what to trace.

Thread and block coordinates are checked against the launch here, so a thread outside the
launch is a clear DebuggerError before anything runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpunb.debugger.errors import DebuggerError


@dataclass(frozen=True, slots=True)
class DebugRequest:
    """breaks: (file or None for the kernel's own, line) pairs; thread/block: stop at those
    lines only in this thread / block (x, y, z); breakpoints: breakpoint() calls stop;
    stop_on_error: the first error stops at its thread and line (post-mortem); trace: record
    the lines of `trace_threads` (global thread ranges [lo, hi)) instead of stopping."""

    breaks: tuple = ()
    thread: tuple | None = None
    block: tuple | None = None
    breakpoints: bool = True
    stop_on_error: bool = True
    trace: bool = False
    trace_threads: tuple = ()
    trace_bytes: int = 64 << 20


def dim3(value, what: str) -> tuple:
    """(x, y, z) from an int, a tuple or "x,y,z" text; DebuggerError when it is none of them."""
    if isinstance(value, str):
        try:
            value = tuple(int(p) for p in value.replace("(", "").replace(")", "").split(",")
                          if p.strip())
        except ValueError:
            raise DebuggerError(f"{what} {value!r}: expected x[,y[,z]] (non-negative integers)",
                                hint=f"e.g. {what} 3,0,0") from None
    if isinstance(value, int):
        value = (value,)
    try:
        items = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise DebuggerError(f"{what} {value!r}: expected x[,y[,z]] (non-negative integers)",
                            hint=f"e.g. {what} 3,0,0") from None
    if not 1 <= len(items) <= 3 or any(v < 0 for v in items):
        raise DebuggerError(f"{what} {value!r}: expected 1 to 3 non-negative integers",
                            hint=f"e.g. {what} 3,0,0")
    return items + (0,) * (3 - len(items))


def check_inside(coords: tuple, extent: tuple, what: str, kernel: str) -> None:
    """A DebuggerError when `coords` is outside `extent` (the block or the grid)."""
    if any(c >= n for c, n in zip(coords, extent, strict=True)):
        where = "block" if what == "thread" else "grid"
        raise DebuggerError(f"{what} {coords} is outside the launch: the {where} of "
                            f"'{kernel}' is {extent}", function=kernel,
                            hint=f"choose a {what} with each index below {extent}")


def linear(coords: tuple, extent: tuple) -> int:
    x, y, z = coords
    return x + extent[0] * (y + extent[1] * z)


def unlinear(index: int, extent: tuple) -> tuple:
    x = index % extent[0]
    y = index // extent[0] % extent[1]
    return x, y, index // (extent[0] * extent[1])


THREADS_FORMS = ("expected 'all', 'block x,y,z', 'warp W' (of block 0), 'lo-hi' (linear "
                 "indices) or a thread x,y,z, several joined with ';'")


def check_threads_spec(threads: str) -> None:
    """DebuggerError (THREADS_FORMS) when a --threads spec cannot be read, whatever the launch:
    its ranges are checked against the launch's grid and block when it comes."""
    def coords(text: str) -> bool:
        parts = text.split(",")
        return len(parts) <= 3 and all(p.strip().isdigit() for p in parts)

    for part in (p.strip().lower() for p in threads.split(";") if p.strip()):
        word, _, rest = part.partition(" ")
        lo, dash, hi = part.partition("-")
        if part == "all" or word == "block" and coords(rest) or \
                word == "warp" and rest.strip().isdigit() or coords(part) or \
                dash and lo.strip().isdigit() and hi.strip().isdigit() and int(lo) <= int(hi):
            continue
        raise DebuggerError(f"threads {part!r}: {THREADS_FORMS}")


def trace_ranges(threads, grid: tuple, block: tuple, kernel: str) -> list[tuple[int, int]]:
    """[lo, hi) ranges of global thread indices from a --threads spec: "all", "block B",
    "warp W" (of block 0), thread tuples, "a-b" ranges of linear thread indices of block 0,
    or lists of those. Default: the first warp of block 0."""
    per_block = math.prod(block)
    total = per_block * math.prod(grid)
    if threads in (None, (), ""):
        return [(0, min(32, per_block))]
    if isinstance(threads, str):
        threads = [p.strip() for p in threads.split(";") if p.strip()]
    out = []
    for spec in threads:
        out.append(_one_range(spec, grid, block, per_block, total, kernel))
    return out


def _one_range(spec, grid, block, per_block, total, kernel) -> tuple[int, int]:
    if isinstance(spec, tuple) and len(spec) == 2 and all(isinstance(v, tuple) for v in spec):
        blk, thr = dim3(spec[0], "block"), dim3(spec[1], "thread")
        check_inside(blk, grid, "block", kernel)
        check_inside(thr, block, "thread", kernel)
        g = linear(blk, grid) * per_block + linear(thr, block)
        return g, g + 1
    if isinstance(spec, (tuple, list, int)):
        thr = dim3(spec, "thread")
        check_inside(thr, block, "thread", kernel)
        g = linear(thr, block)
        return g, g + 1
    text = str(spec).strip().lower()
    if text == "all":
        return 0, total
    word, _, rest = text.partition(" ")
    if word == "block":
        blk = dim3(rest, "block")
        check_inside(blk, grid, "block", kernel)
        start = linear(blk, grid) * per_block
        return start, start + per_block
    if word == "warp":
        if not rest.strip().isdigit():
            raise DebuggerError(f"threads {spec!r}: {THREADS_FORMS}", function=kernel)
        w = int(rest)
        if not 0 <= w * 32 < per_block:
            raise DebuggerError(f"warp {rest!r} is outside block 0 of '{kernel}' "
                                f"({per_block} threads: warps 0-{(per_block - 1) // 32})",
                                function=kernel)
        return w * 32, min(per_block, w * 32 + 32)
    if "-" in text and "," not in text:
        lo, _, hi = text.partition("-")
        if lo.strip().isdigit() and hi.strip().isdigit():
            a, b = int(lo), int(hi)
            if not a <= b < total:
                raise DebuggerError(f"threads {text!r}: expected lo-hi with lo <= hi < {total} "
                                    f"(the launch's threads)", function=kernel)
            return a, b + 1
    if not all(part.strip().isdigit() for part in text.split(",")):
        raise DebuggerError(f"threads {spec!r}: {THREADS_FORMS}", function=kernel)
    thr = dim3(text, "thread")
    check_inside(thr, block, "thread", kernel)
    g = linear(thr, block)
    return g, g + 1
