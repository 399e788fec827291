"""Launch-config explorer: block size and dynamic shared memory -> grid, occupancy, limiter.

The numbers come from `gpunb.backends.cuda.occupancy` (the documented occupancy rules for an
arch, the driver's API on a GPU); this module only chooses what to ask and shows the answers.
`apply()` stores the choice on the kernel as `kernel.launch_config`, usable as
`kernel[kernel.launch_config]`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

from gpunb.notebook import render

TABLE_BLOCKS = (32, 64, 128, 192, 256, 384, 512, 768, 1024)


class LaunchChoice(NamedTuple):
    """`kernel[choice](...)` works: a 4-tuple (grid, block, stream, dynamic shared bytes)."""

    grid: int
    block: int
    stream: int = 0
    shared: int = 0


@dataclass(frozen=True, slots=True)
class OccupancyRow:
    """The occupancy facts of one block size, normalised from the runtime's answer."""

    block: int
    grid: int
    occupancy_pct: float
    active_warps: int
    max_warps: int
    active_blocks: int
    limiter: str
    source: str = "rules"  # "driver": blocks from cuOccupancyMaxActiveBlocksPerMultiprocessor


def normalise(result, block: int, grid: int) -> OccupancyRow:
    """Accept the runtime's result as a dict or an object; names vary little, so map them."""
    def get(*names, default=None):
        for name in names:
            if isinstance(result, dict) and name in result:
                return result[name]
            if hasattr(result, name):
                return getattr(result, name)
        return default

    occ = get("occupancy", "occupancy_fraction", "fraction", default=0.0)
    pct = get("occupancy_pct", "occupancy_percent", "percent", default=None)
    if pct is None:
        pct = occ * 100.0 if occ <= 1.0 else occ
    warps = get("active_warps", "active_warps_per_sm", "warps_per_sm", default=0)
    max_warps = get("max_warps", "max_warps_per_sm", default=0)
    blocks = get("active_blocks", "active_blocks_per_sm", "blocks_per_sm", default=0)
    limiter = get("limiter", "limited_by", "limit", default="?")
    return OccupancyRow(block, grid, round(float(pct), 1), int(warps), int(max_warps),
                        int(blocks), str(limiter))


class LaunchExplorer:
    """State (block size, dynamic shared bytes, problem size, arch) and the occupancy it gives."""

    def __init__(self, dispatcher, n: int, signature=None, arch: str | None = None,
                 block: int | None = None, shared: int = 0):
        self.dispatcher = dispatcher
        self.signature = signature
        self.n = int(n)
        self.resources = dispatcher.resource_usage(signature)
        self.arch = arch or getattr(dispatcher, "inspection_arch", None) or default_arch()
        suggestion = dispatcher.suggest_launch(self.n, signature)
        self.suggested_block = int(suggestion.get("block", 256))
        self.block = int(block or self.suggested_block)
        self.shared = int(shared)
        self.applied: LaunchChoice | None = None
        self._widget = None

    @property
    def grid(self) -> int:
        return max(1, -(-self.n // self.block))

    def row(self, block: int | None = None, shared: int | None = None) -> OccupancyRow:
        """Occupancy for a block size (default: the current one) on the chosen arch."""
        from gpunb.backends.cuda import occupancy

        block = int(block or self.block)
        shared = self.shared if shared is None else int(shared)
        static = int(self.resources.get("shared_bytes") or 0)
        result = occupancy.occupancy(self.arch, block, int(self.resources.get("registers") or 0),
                                     static + shared)
        row = normalise(result, block, max(1, -(-self.n // block)))
        blocks = self._driver_blocks(block, shared)
        if blocks is None:
            return row
        warps = blocks * -(-block // 32)
        return dataclasses.replace(row, active_blocks=blocks, active_warps=warps,
                                   occupancy_pct=round(100.0 * warps / row.max_warps, 1),
                                   source="driver")

    def _driver_blocks(self, block: int, shared: int) -> int | None:
        """Resident blocks per SM from the driver, when the kernel is loaded on this GPU's arch."""
        if self.arch != default_arch():
            return None
        for spec in self.dispatcher.specializations.values():
            if self.signature is not None and spec is not self.dispatcher.compile(self.signature):
                continue
            blocks = spec.backend.max_active_blocks_per_sm(spec.program, block, shared)
            if blocks is not None:  # the CPU backend has no device to ask
                return int(blocks)
        return None

    def rows(self) -> list[OccupancyRow]:
        limit = int(self.resources.get("max_threads_per_block") or 1024)
        return [self.row(b) for b in TABLE_BLOCKS if b <= limit]

    def choice(self) -> LaunchChoice:
        return LaunchChoice(self.grid, self.block, 0, self.shared)

    def apply(self) -> LaunchChoice:
        """Store the current choice on the kernel (`kernel.launch_config`) and return it."""
        self.applied = self.choice()
        self.dispatcher.launch_config = self.applied
        if self._widget is not None:
            self._widget.refresh()
        return self.applied

    # ---- rendering ----------------------------------------------------------------------------

    def summary_html(self) -> str:
        r = self.row()
        return (f"<div><b>{render.esc(self.dispatcher.__name__)}</b> on "
                f"{render.esc(self.arch)}, n = {self.n:,}: grid <b>{r.grid:,}</b> × block "
                f"<b>{r.block}</b>, dynamic shared {self.shared} B → occupancy "
                f"<b>{r.occupancy_pct:g}%</b> ({r.active_warps}/{r.max_warps} warps/SM, "
                f"{r.active_blocks} blocks/SM), limited by <b>{render.esc(r.limiter)}</b> "
                f'<span class="muted">({_source(r, self.arch)})</span></div>')

    def table_rows(self) -> list[list]:
        return [[("▶ " if r.block == self.block else "") + str(r.block), f"{r.grid:,}",
                 f"{r.occupancy_pct:g}%", f"{r.active_warps}/{r.max_warps}", r.active_blocks,
                 r.limiter] for r in self.rows()]

    HEADERS = ("block", "grid", "occupancy", "warps/SM", "blocks/SM", "limiter")

    def _repr_html_(self) -> str:
        regs = self.resources.get("registers", "?")
        applied = (f"<div>applied: <code>{render.esc(self.applied)}</code></div>"
                   if self.applied else "")
        return render.wrap(self.summary_html()
                           + f'<div class="muted">{regs} registers/thread, '
                             f'{self.resources.get("shared_bytes", 0)} B static shared; '
                             f"suggested block {self.suggested_block}</div>"
                           + render.table(self.HEADERS, self.table_rows()) + applied)

    def text(self) -> str:
        r = self.row()
        head = (f"{self.dispatcher.__name__} on {self.arch}, n={self.n}: grid {r.grid} x block "
                f"{r.block}, occupancy {r.occupancy_pct:g}% ({r.active_warps}/{r.max_warps} "
                f"warps/SM), limited by {r.limiter} ({_source(r, self.arch)})")
        return head + "\n" + render.text_table(self.HEADERS, self.table_rows())

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(self.text())

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        from gpunb.notebook.widgets import widget_bundle

        bundle = {"text/plain": self.text(), "text/html": self._repr_html_()}
        bundle.update(widget_bundle(self.widget))
        return bundle

    def widget(self):
        if self._widget is None:
            from gpunb.notebook.explorer_widget import LaunchExplorerWidget

            self._widget = LaunchExplorerWidget(self)
        return self._widget


def _source(row: OccupancyRow, arch: str) -> str:
    return "CUDA driver occupancy API" if row.source == "driver" else \
        f"documented occupancy rules for {arch}"


def default_arch() -> str:
    """The GPU's arch when one is usable, else GPUNB_ARCH (the PTX default)."""
    from gpunb.foundation import config

    try:
        from gpunb.backends.cuda import driver

        if driver.is_available():
            major, minor = driver.current_device().compute_capability
            return f"sm_{major}{minor}"
    except Exception:  # noqa: BLE001 - no driver, no bindings: fall back to the configured arch
        pass
    major, minor = config.default_arch()
    return f"sm_{major}{minor}"


def launch_explorer(dispatcher, n: int, signature=None, **kwargs) -> LaunchExplorer:
    """The explorer for `dispatcher` covering `n` threads (compiles for `signature` if needed)."""
    return LaunchExplorer(dispatcher, n, signature, **kwargs)
