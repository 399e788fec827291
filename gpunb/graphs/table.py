"""What a graph holds, as the inspector shows it: one row per node (kernel name, grid, block,
arguments; a copy's direction and size), as text (`repr(g)`) and HTML (a notebook's display).

gpunb's own launches and copies come from the graph's records, in capture order. On a GPU the
driver's graph is read too: nodes gpunb did not record (a CuPy or PyTorch operation issued on
the graph's stream inside the block) are listed after them with the driver's node type.
"""

from __future__ import annotations

import html

from gpunb.foundation.records import record
from gpunb.graphs import updates
from gpunb.runtime.capture import CapturedLaunch


@record
class GraphNode:
    """One node of a graph as the inspector lists it."""

    index: int
    kind: str  # "kernel", "copy", or the driver's node type for work gpunb did not record
    name: str  # the kernel's name, the copy's direction ("host to device", ...)
    grid: tuple = ()
    block: tuple = ()
    shared_bytes: int = 0
    arguments: tuple = ()  # "x: float32[::1] (1024,)" per argument of a kernel
    nbytes: int = 0  # a copy's size
    recorded: bool = True  # False: captured from the stream but not launched through gpunb


def graph_nodes(graph) -> tuple:
    """The graph's nodes (see the module docstring)."""
    out = []
    for item in graph._items:
        if isinstance(item, CapturedLaunch):
            out.append(GraphNode(len(out), "kernel", item.name, item.grid, item.block,
                                 item.shared_bytes, _arguments(item)))
        else:
            out.append(GraphNode(len(out), "copy", item.kind, nbytes=item.nbytes))
    if graph._state == "ready" and graph.target == "cuda":
        known = {item.node for item in graph._items if item.node}
        for node, kind, shape in graph._engine.driver_nodes():
            if node in known:
                continue
            grid, block, shared = shape if shape is not None else ((), (), 0)
            out.append(GraphNode(len(out), kind, "(not launched through gpunb)", grid, block,
                                 shared, recorded=False))
    return tuple(out)


def _arguments(launch: CapturedLaunch) -> tuple:
    names = updates.parameter_names(launch)
    described = []
    for name, ty, shape in zip(names, launch.spec.argtypes, launch.shapes, strict=False):
        described.append(f"{name}: {ty}" + (f" {shape}" if shape else ""))
    return tuple(described)


def _state_line(graph) -> str:
    launches = len(graph._launches)
    copies = len(graph._items) - launches
    what = f"{launches} launch{'es' if launches != 1 else ''}, {copies} " \
           f"cop{'ies' if copies != 1 else 'y'}"
    state = {"ready": "", "capturing": ", capturing", "closed": ", closed"}.get(
        graph._state, f", capture failed: {graph._failure}")
    return f"gpunb graph on the {graph.target} target: {what}{state}"


def _dim(dim: tuple) -> str:
    return "(" + ", ".join(str(n) for n in dim) + ")" if dim else ""


def _rows(graph) -> list:
    rows = []
    for node in graph.nodes:
        if node.kind == "copy":
            rows.append((str(node.index), "copy", node.name, "", "", f"{node.nbytes} bytes"))
        else:
            rows.append((str(node.index), node.kind, node.name, _dim(node.grid),
                         _dim(node.block), ", ".join(node.arguments)))
    return rows


HEADER = ("#", "node", "name", "grid", "block", "arguments")


def text_table(graph) -> str:
    rows = _rows(graph)
    if not rows:
        return f"<{_state_line(graph)}>"
    widths = [max(len(row[k]) for row in [HEADER, *rows]) for k in range(5)]
    lines = [_state_line(graph)]
    for row in [HEADER, *rows]:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) +
                     "  " + row[5])
    return "\n".join(line.rstrip() for line in lines)


def html_table(graph) -> str:
    head = "".join(f"<th style='text-align:left'>{html.escape(h)}</th>" for h in HEADER)
    body = "".join("<tr>" + "".join(f"<td><code>{html.escape(c)}</code></td>" for c in row) +
                   "</tr>" for row in _rows(graph))
    return (f"<div class='gpunb-graph'><b>{html.escape(_state_line(graph))}</b>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")
