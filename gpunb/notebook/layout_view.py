"""The lane layout of a tensor-core instruction, drawn: which lane of the warp holds which element
of A, B and C (and, in each cell, which of its elements it is: a0, b3, c1 ...).

    from gpunb.notebook import tensorcore_layout   # (gpunb/notebook/layout_view.py)
    tensorcore_layout("m16n8k16", "float16")            # mma.sync: a static HTML view
    tensorcore_layout("m16n16k16", "float16", api="wmma")
    tensorcore_layout("ldmatrix", trans=True)            # ldmatrix .x4: who receives which element
    tensorcore_layout(...).widget()                      # with dropdowns (ipywidgets)

The data is the compiler's own (compiler/builtins/tensorcore_layouts), which the CPU target
executes and the GPU tests check against an H100.
"""

from __future__ import annotations

import html

from gpunb.compiler.builtins import tensorcore_layouts as tl

_KINDS = {"float16": "f16", "bfloat16": "bf16", "tf32": "tf32", "float32": "tf32", "int8": "s8",
          "uint8": "u8", "fp8_e4m3": "e4m3", "fp8_e5m2": "e5m2"}
_ACCUMULATOR = {"s8": "s32", "u8": "s32"}


def _color(lane: int) -> str:
    """A light colour per lane; lanes of one group (lane // 4) share a hue."""
    hue = (lane // 4) * 45 % 360
    light = 92 - 7 * (lane % 4)
    return f"hsl({hue}, 70%, {light}%)"


def _grid(title: str, layout: tuple, rows: int, cols: int, prefix: str, offset: int = 0) -> str:
    cells: dict = {}
    for lane, elems in enumerate(layout):
        for e, pos in enumerate(elems):
            cells.setdefault(pos, (lane, e))
    out = [f"<div style='display:inline-block;vertical-align:top;margin:0 12px 12px 0'>"
           f"<div style='font-weight:bold'>{html.escape(title)}</div>"
           "<table style='border-collapse:collapse;font:10px monospace'>"]
    out.append("<tr><td></td>" + "".join(f"<td style='color:#888;text-align:center'>{c}</td>"
                                         for c in range(cols)) + "</tr>")
    for r in range(rows):
        out.append(f"<tr><td style='color:#888;padding-right:4px'>{r}</td>")
        for c in range(cols):
            lane, e = cells[(r, c)]
            label = f"{prefix}{e + offset}"
            out.append(f"<td title='lane {lane}, {label}' style='background:{_color(lane)};"
                       f"border:1px solid #ccc;padding:1px 3px;text-align:center'>"
                       f"T{lane}<br><span style='color:#555'>{label}</span></td>")
        out.append("</tr>")
    out.append("</table></div>")
    return "".join(out)


class TensorCoreLayout:
    """The lane layout of one instruction; displays as HTML, `.text()` as plain text."""

    def __init__(self, shape: str = "m16n8k16", dtype: str = "float16", api: str = "mma",
                 trans: bool = False, num: int = 4):
        self.shape, self.dtype, self.api, self.trans, self.num = shape, dtype, api, trans, num
        if shape == "ldmatrix":
            return
        kind = _KINDS.get(dtype)
        table = tl.MMA_SYNC if api == "mma" else tl.WMMA
        if shape not in table or kind not in table[shape]:
            supported = tl.describe_mma_sync() if api == "mma" else tl.describe_wmma()
            raise ValueError(f"{api} has no {shape} with {dtype}; supported: {supported}")
        acc = _ACCUMULATOR.get(kind, "f32")
        self.op = tl.MmaOp(api, shape, kind, kind, acc, acc)

    def grids(self) -> list[tuple]:
        """(title, layout, rows, cols, element prefix, first element number) per operand."""
        if self.shape == "ldmatrix":
            out = []
            layout = tl.ldmatrix_map(self.num, self.trans)
            for matrix in range(self.num):
                per_lane = tuple(tuple((r, c) for i, r, c in elems if i == matrix)
                                 for elems in layout)
                out.append((f"matrix {matrix}: row r at the address of thread {8 * matrix} + r",
                            per_lane, 8, 8, "v", 2 * matrix))
            return out
        m, n, k = self.op.dims
        return [(f"A ({m} x {k})", self.op.layout("a"), m, k, "a"),
                (f"B ({k} x {n})", self.op.layout("b"), k, n, "b"),
                (f"C, D ({m} x {n})", self.op.layout("c"), m, n, "c")]

    def _repr_html_(self) -> str:
        if self.shape == "ldmatrix":
            head = (f"ldmatrix .x{self.num}{' .trans' if self.trans else ''}: lane T receives "
                    "the element as item vN of the tuple ldmatrix returns")
        else:
            name = "mma.sync" if self.api == "mma" else "wmma (frag.x[i])"
            head = f"{name} {self.shape}, {self.dtype}: T = lane, a/b/c + index = element"
        return f"<div><p>{html.escape(head)}</p>" + "".join(
            _grid(*g) for g in self.grids()) + "</div>"

    def text(self) -> str:
        """Plain text: for each operand, a grid of lane numbers."""
        lines = []
        for title, layout, rows, cols, *_ in self.grids():
            cells = {}
            for lane, elems in enumerate(layout):
                for pos in elems:
                    cells.setdefault(pos, lane)
            lines.append(title)
            lines += [" ".join(f"{cells[(r, c)]:2d}" for c in range(cols)) for r in range(rows)]
        return "\n".join(lines)

    def widget(self):
        """The view with dropdowns for the instruction, shape and element type (ipywidgets)."""
        import ipywidgets as w

        shapes = list(tl.MMA_SYNC) + list(tl.WMMA) + ["ldmatrix"]
        shape = w.Dropdown(options=shapes, value=self.shape, description="shape")
        dtype = w.Dropdown(options=list(_KINDS), value=self.dtype, description="dtype")
        out = w.HTML()

        def redraw(*_):
            api = "wmma" if shape.value in tl.WMMA else "mma"
            try:
                out.value = TensorCoreLayout(shape.value, dtype.value, api)._repr_html_()
            except ValueError as exc:
                out.value = f"<p>{html.escape(str(exc))}</p>"

        shape.observe(redraw, "value")
        dtype.observe(redraw, "value")
        redraw()
        return w.VBox([w.HBox([shape, dtype]), out])


def tensorcore_layout(shape: str = "m16n8k16", dtype: str = "float16", api: str = "mma",
                      trans: bool = False, num: int = 4) -> TensorCoreLayout:
    """The lane layout of mma.sync (api="mma"), WMMA (api="wmma") or ldmatrix (shape
    "ldmatrix"), for display in a notebook."""
    return TensorCoreLayout(shape, dtype, api, trans, num)
