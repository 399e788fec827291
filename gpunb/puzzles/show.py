"""gpunb.puzzles.show(name, kernel): what each thread read and wrote, drawn before grading.

As in GPU-Puzzles, each block is a diagram: the global inputs on top, the block's shared arrays
below them, the outputs at the bottom, and for every thread (one colour each) a line
from each element it read to the element it wrote next - so a missing guard, a wrong index or a
value that never went through shared memory is visible at a glance. No values are judged: the
view runs the kernel once (CPU target, recording) at the puzzle's first size or the one given.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np

from gpunb.foundation.errors import GpunbError
from gpunb.puzzles.model import Puzzle

MAX_BLOCKS = 4  # blocks drawn (the rest are counted)
MAX_TOUCHES = 12  # accesses listed per thread in the text view
CELL = 22  # pixels per drawn element
GAP = 60  # pixels between the tiers of arrays
MAX_DRAWN = 256  # elements drawn per array (larger arrays show their first ones)


@dataclass
class Show:
    """The diagram of one launch: `repr` lists each thread's reads and writes, the notebook
    shows one SVG per block."""

    puzzle: Puzzle
    size: object
    launch: tuple
    trace: object = None
    error: str = ""

    def __repr__(self) -> str:
        head = (f"{self.puzzle.name} at size {self.size}, launch [{self.launch[0]}, "
                f"{self.launch[1]}]: what each thread read and wrote")
        if self.error:
            return f"{head}\nthe kernel failed:\n{self.error}"
        lines = [head]
        tpb = self.trace.log.threads_per_block()
        for block in self._blocks():
            lines.append(f"block {block}:")
            for gid in range(block * tpb, (block + 1) * tpb):
                lines.append("  " + self._thread_line(gid))
        hidden = self._block_count() - len(self._blocks())
        if hidden > 0:
            lines.append(f"... and {hidden} more blocks")
        return "\n".join(lines)

    def _block_count(self) -> int:
        return self.trace.threads // self.trace.log.threads_per_block()

    def _blocks(self) -> list[int]:
        return list(range(min(self._block_count(), MAX_BLOCKS)))

    def _thread_line(self, gid: int) -> str:
        touches = self.trace.touches(gid)
        name = self.trace.thread_name(gid).split(" of block ")[0]
        if not touches:
            return f"{name}: nothing"
        words = [f"{'wrote' if t.kind == 'write' else t.kind} {_label(t)}"
                 for t in touches[:MAX_TOUCHES]]
        more = f" ... and {len(touches) - MAX_TOUCHES} more" if len(touches) > MAX_TOUCHES \
            else ""
        return f"{name}: " + ", ".join(words) + more

    def _repr_html_(self) -> str:
        if self.error:
            return f"<pre>{html.escape(repr(self))}</pre>"
        parts = [f"<div style='font-family:monospace;font-size:12px'>"
                 f"{html.escape(repr(self).splitlines()[0])}</div>"]
        for block in self._blocks():
            parts.append(f"<div style='font-size:12px'>block {block}</div>"
                         + self._block_svg(block))
        hidden = self._block_count() - len(self._blocks())
        if hidden > 0:
            parts.append(f"<div>... and {hidden} more blocks</div>")
        parts.append("<div style='font-size:11px;color:#666'>one colour per thread; a line "
                     "joins an element a thread read to the element it wrote next; the number "
                     "in a cell is the thread that wrote it last</div>")
        return "<div>" + "".join(parts) + "</div>"

    def _block_svg(self, block: int) -> str:
        trace = self.trace
        tpb = trace.log.threads_per_block()
        mine = (trace.gid // tpb == block) & (trace.element >= 0)
        boxes, width, height = _layout(trace, _tiers(trace, self.puzzle.outputs))
        body = [_array_svg(trace, k, boxes[k], mine) for k in boxes]
        for gid in range(block * tpb, (block + 1) * tpb):
            body += _flow_lines(trace, gid, boxes)
        return (f'<svg width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg" '
                f'style="font:10px monospace">{"".join(body)}</svg>')


def _label(touch) -> str:
    index = ", ".join(str(i) for i in touch.index)
    where = " (shared)" if touch.memory == "shared" else ""
    return f"{touch.array}[{index}]{where}"


def _colour(gid: int) -> str:
    return f"hsl({(gid * 47) % 360},70%,45%)"


def _tiers(trace, outputs: tuple) -> list[list[int]]:
    """Array ids in three tiers: global inputs, shared arrays, outputs."""
    ins, shared, outs = [], [], []
    for k, name in enumerate(trace.array_names):
        if trace.is_shared_array(k):
            shared.append(k)
        elif name in outputs:
            outs.append(k)
        else:
            ins.append(k)
    return [c for c in (ins, shared, outs) if c]


def _grid_shape(shape: tuple) -> tuple[int, int]:
    if len(shape) <= 1:
        return 1, max(1, min(int(shape[0]) if shape else 1, MAX_DRAWN))
    cols = int(shape[-1])
    return max(1, min(int(np.prod(shape[:-1])), MAX_DRAWN // max(cols, 1))), cols


def _layout(trace, tiers) -> tuple[dict, int, int]:
    """Each array's box (x, y, rows, cols) and the SVG's size: inputs on top, shared arrays
    below them, outputs at the bottom, so the lines of a thread run downwards."""
    boxes, y, width = {}, 16, 0
    for tier in tiers:
        x, tallest = 10, 0
        for k in tier:
            rows, cols = _grid_shape(trace.array_shapes[k])
            boxes[k] = (x, y, rows, cols)
            x += cols * CELL + 30
            tallest = max(tallest, rows * CELL)
        width = max(width, x)
        y += tallest + GAP
    return boxes, width, y - GAP + 10


def _array_svg(trace, k: int, box: tuple, mine: np.ndarray) -> str:
    x, y, rows, cols = box
    name = html.escape(trace.array_names[k] + (" (shared memory)" if trace.is_shared_array(k)
                                               else ""))
    parts = [f'<text x="{x}" y="{y - 4}">{name}</text>']
    on = mine & (trace.array == k)
    writer = np.full(rows * cols, -1, np.int64)
    touched = np.zeros(rows * cols, bool)
    for r in np.flatnonzero(on):
        e = int(trace.element[r])
        if e < rows * cols:
            touched[e] = True
            if trace.kind[r] != 0:
                writer[e] = int(trace.gid[r])
    for e in range(rows * cols):
        cx, cy = x + (e % cols) * CELL, y + (e // cols) * CELL
        fill = "#e8f0fe" if touched[e] else "#fafafa"
        parts.append(f'<rect x="{cx}" y="{cy}" width="{CELL}" height="{CELL}" fill="{fill}" '
                     'stroke="#999"/>')
        if writer[e] >= 0:
            parts.append(f'<text x="{cx + 3}" y="{cy + 14}" fill="{_colour(writer[e])}">'
                         f'{writer[e]}</text>')
    return "".join(parts)


def _centre(box: tuple, element: int) -> tuple[float, float]:
    x, y, rows, cols = box
    return x + (element % cols) * CELL + CELL / 2, y + (element // cols) * CELL + CELL / 2


def _flow_lines(trace, gid: int, boxes: dict) -> list[str]:
    """A line from each element the thread read to the element it wrote next."""
    records = np.flatnonzero((trace.gid == gid) & (trace.array >= 0) & (trace.element >= 0))
    lines, pending = [], []
    for r in records:
        k, e = int(trace.array[r]), int(trace.element[r])
        box = boxes.get(k)
        if box is None or e >= box[2] * box[3]:
            continue
        if trace.kind[r] != 1:  # a read (or an atomic: read, then written below)
            pending.append(_centre(box, e))
        if trace.kind[r] != 0:
            tx, ty = _centre(box, e)
            for sx, sy in pending:
                if (sx, sy) != (tx, ty):
                    lines.append(f'<line x1="{sx:.0f}" y1="{sy:.0f}" x2="{tx:.0f}" '
                                 f'y2="{ty:.0f}" stroke="{_colour(gid)}" stroke-opacity="0.7"/>')
            pending = []
    return lines


def show(puzzle: Puzzle, kernel, size=None, seed: int = 0) -> Show:
    """Run `kernel` once at `size` (the puzzle's first size by default) and draw it."""
    from gpunb.puzzles.grading import cpu_kernel
    from gpunb.puzzles.trace import record

    size = puzzle.sizes[0] if size is None else size
    launch = puzzle.launch(size)
    try:
        dispatcher = cpu_kernel(kernel)
        args = puzzle.inputs(size, np.random.default_rng(seed))
        trace = record(dispatcher, launch[0], launch[1], [args[n] for n in puzzle.params],
                       puzzle.params)
    except GpunbError as err:
        return Show(puzzle, size, launch, error=str(err))
    return Show(puzzle, size, launch, trace)
