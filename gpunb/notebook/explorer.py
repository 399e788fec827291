"""Launch-config explorer: block size and dynamic shared memory -> grid, occupancy, limiter.

The numbers come from `gpunb.backends.cuda.occupancy` (the documented occupancy rules for an
arch, the driver's API on a GPU); this module only chooses what to ask and shows the answers.
`apply()` stores the choice on the kernel as `kernel.launch_config`, usable as
`kernel[kernel.launch_config]`; a configuration that cannot launch on the chosen arch (no block
fits on an SM: too much shared memory, too many threads or registers) is shown as "will not
launch" with the reason, and `apply()` refuses it with a LaunchError.
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
        self.shared = int(shared)
        self.block = int(block or self.suggested_block or 256)
        self.shared = int(shared)
        self.applied: LaunchChoice | None = None
        self._widget = None
        from gpunb.notebook.widgets import StaticCopy

        # the static form shown beside the widget, re-sent on every change (widgets.py)
        self.static = StaticCopy(self._repr_mimebundle_)

    @property
    def suggested_block(self) -> int | None:
        """The block size with the most resident warps on the chosen arch (None: none fits)."""
        from gpunb.backends.cuda import occupancy

        static = int(self.resources.get("shared_bytes") or 0)
        limit = int(self.resources.get("max_threads_per_block") or 1024)
        try:
            best = occupancy.suggest_block_size(
                self.arch, int(self.resources.get("registers") or 0), static + self.shared,
                max_block_size=limit)
        except ValueError:
            return None
        return int(best["block_size"])

    def problem(self, row: OccupancyRow | None = None) -> str | None:
        """Why the current (or `row`'s) configuration cannot launch on the arch, else None."""
        from gpunb.backends.cuda import occupancy

        row = row or self.row()
        if row.active_blocks > 0:
            return None
        lim = occupancy.limits_for(self.arch)
        shared = int(self.resources.get("shared_bytes") or 0) + self.shared
        regs = int(self.resources.get("registers") or 0)
        if row.block > lim.max_threads_per_block:
            return (f"{row.block} threads per block; {lim.arch} allows at most "
                    f"{lim.max_threads_per_block}")
        if row.limiter == "shared_memory" or shared > lim.shared_per_block_optin:
            return (f"{shared:,} B of shared memory per block; {lim.arch} allows at most "
                    f"{lim.shared_per_block_optin:,} B")
        if row.limiter == "registers":
            return (f"{regs} registers/thread × {row.block} threads exceed {lim.arch}'s "
                    f"{lim.registers_per_block:,} registers per block")
        return f"no block of {row.block} threads fits on an SM of {lim.arch}"

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
        """Store the current choice on the kernel (`kernel.launch_config`) and return it;
        a LaunchError (nothing stored) when it cannot launch on the chosen arch."""
        problem = self.problem()
        if problem is not None:
            from gpunb.foundation.errors import LaunchError

            raise LaunchError(f"kernel '{self.dispatcher.__name__}' will not launch with block "
                              f"{self.block} and {self.shared:,} B of dynamic shared memory on "
                              f"{self.arch}: {problem}", function=self.dispatcher.__name__,
                              hint="choose a smaller block or less shared memory (Suggest picks "
                                   "the best block for this arch)")
        self.applied = self.choice()
        self.dispatcher.launch_config = self.applied
        if self._widget is not None:
            self._widget.refresh()
        else:
            self.static.update()
        return self.applied

    # ---- rendering ----------------------------------------------------------------------------

    def summary_html(self) -> str:
        r = self.row()
        problem = self.problem(r)
        if problem is not None:
            return (f"<div><b>{render.esc(self.dispatcher.__name__)}</b> on "
                    f"{render.esc(self.arch)}, block <b>{r.block}</b>, dynamic shared "
                    f'{self.shared:,} B → <span class="bad">will not launch</span>: '
                    f"{render.esc(problem)}</div>")
        return (f"<div><b>{render.esc(self.dispatcher.__name__)}</b> on "
                f"{render.esc(self.arch)}, n = {self.n:,}: grid <b>{r.grid:,}</b> × block "
                f"<b>{r.block}</b>, dynamic shared {self.shared} B → occupancy "
                f"<b>{r.occupancy_pct:g}%</b> ({r.active_warps}/{r.max_warps} warps/SM, "
                f"{r.active_blocks} blocks/SM), limited by <b>{render.esc(r.limiter)}</b> "
                f'<span class="muted">({_source(r, self.arch)})</span></div>')

    def table_rows(self) -> list[list]:
        return [[("▶ " if r.block == self.block else "") + str(r.block), f"{r.grid:,}",
                 f"{r.occupancy_pct:g}%" if r.active_blocks else "will not launch",
                 f"{r.active_warps}/{r.max_warps}", r.active_blocks, r.limiter]
                for r in self.rows()]

    def table_html(self) -> str:
        """Occupancy against block size on the chosen arch: a bar chart beside the table; the
        current block's row is marked (▶) and highlighted."""
        rows = self.rows()
        bars = []
        for r in rows:
            width = max(0.0, min(100.0, r.occupancy_pct))
            mark = ' style="outline:2px solid var(--jp-warn-color1,#c05621)"' \
                if r.block == self.block else ""
            label = f"{r.occupancy_pct:g}%" if r.active_blocks else "will not launch"
            bars.append(f'<div title="block {r.block}: {label}, limited by '
                        f'{render.esc(r.limiter)}"><span class="ln">{r.block}</span>'
                        f'<span class="gpunb-bar" style="width:{width * 1.6:.0f}px"{mark}>'
                        f"</span> {render.esc(label)}</div>")
        head = "".join(f"<th>{render.esc(h)}</th>" for h in self.HEADERS)
        best = ' class="best"'
        body = "".join(
            f"<tr{best if r.block == self.block else ''}>"
            + "".join(f"<td>{render.esc(c)}</td>" for c in cells) + "</tr>"
            for r, cells in zip(rows, self.table_rows(), strict=True))
        chart = f'<div class="gpunb-chart" style="flex:1 1 220px">{"".join(bars)}</div>'
        table = (f'<table class="gpunb-table" style="flex:1 1 320px"><tr>{head}</tr>{body}'
                 "</table>")
        return (f'<div class="muted">occupancy by block size on {render.esc(self.arch)}</div>'
                f'<div class="gpunb-split">{chart}{table}</div>')

    HEADERS = ("block", "grid", "occupancy", "warps/SM", "blocks/SM", "limiter")

    def _repr_html_(self) -> str:
        applied = (f"<div>applied: <code>{render.esc(self.applied)}</code></div>"
                   if self.applied else "")
        return render.wrap(self.summary_html()
                           + self.resources_html() + self.table_html() + applied)

    def resources_html(self) -> str:
        res = self.resources
        suggested = self.suggested_block
        return (f'<div class="muted">{res.get("registers", "?")} registers/thread, '
                f'{res.get("shared_bytes", 0)} B static shared, {res.get("local_bytes", 0)} B '
                f"local (spills); suggested block for {render.esc(self.arch)}: "
                f'{suggested if suggested is not None else "none fits"}</div>')

    def text(self) -> str:
        r = self.row()
        problem = self.problem(r)
        if problem is not None:
            head = (f"{self.dispatcher.__name__} on {self.arch}: block {r.block}, dynamic shared "
                    f"{self.shared} B: will not launch: {problem}")
        else:
            head = (f"{self.dispatcher.__name__} on {self.arch}, n={self.n}: grid {r.grid} x "
                    f"block {r.block}, occupancy {r.occupancy_pct:g}% ({r.active_warps}/"
                    f"{r.max_warps} warps/SM), limited by {r.limiter} "
                    f"({_source(r, self.arch)})")
        return head + "\n" + render.text_table(self.HEADERS, self.table_rows())

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(self.text())

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """The static forms (HTML and text); the live widget comes with `_ipython_display_`."""
        return {"text/plain": self.text(), "text/html": self._repr_html_()}

    def _ipython_display_(self) -> None:
        """In a notebook: the static copy, then the widget (widgets.show_live); elsewhere the
        static forms."""
        from gpunb.notebook.widgets import show_live

        show_live(self.static, self.widget)

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
    from gpunb.foundation.arch import parse_arch

    return parse_arch(config.default_arch()).name


def launch_explorer(dispatcher, n: int, signature=None, **kwargs) -> LaunchExplorer:
    """The explorer for `dispatcher` covering `n` threads (compiles for `signature` if needed).

    What it is given is checked here, at the caller's line: a bad kernel, size, block, shared
    memory or arch is a JitOptionError now, not a traceback when the notebook later displays
    the explorer."""
    check_explorer_arguments(dispatcher, n, kwargs)
    if signature is None and not dispatcher.specializations and \
            not dispatcher.declared_signatures:  # (the compile-time API's hint names inspect_asm)
        from gpunb.foundation.errors import CompileError, user_location

        raise CompileError(f"'{dispatcher.__name__}' has not been compiled yet: the explorer "
                           "needs its registers and shared memory", user_location(),
                           hint=f"launch it once, or pass its argument types: launch_explorer("
                                f"{dispatcher.__name__}, n, signature='void(float32[::1], "
                                "int32)')")
    return LaunchExplorer(dispatcher, n, signature, **kwargs)


def _count(value, smallest: int) -> bool:
    """Whether `value` is an integer (not a bool) of at least `smallest`."""
    import operator

    try:
        return not isinstance(value, bool) and operator.index(value) >= smallest
    except TypeError:
        return False


def check_explorer_arguments(dispatcher, n, kwargs: dict) -> None:
    """JitOptionError for what launch_explorer cannot show: something that is not a GPU kernel,
    a problem size or block that is not a positive integer, negative shared memory, an arch
    without an occupancy table."""
    from gpunb.backends.cuda import occupancy
    from gpunb.jit.options import JitOptionError, check_gpu_function, user_location

    check_gpu_function(dispatcher, "launch_explorer", kernel_only=True)
    wrong = [f"{what} is {hint}; got {value!r}" for what, value, smallest, hint in (
        ("n", n, 1, "the number of threads to cover, a positive integer"),
        ("block", 1 if kwargs.get("block") is None else kwargs["block"], 1,
         "threads per block, a positive integer"),
        ("shared", kwargs.get("shared", 0), 0, "dynamic shared memory in bytes, 0 or more"))
        if not _count(value, smallest)]
    if wrong:
        raise JitOptionError(f"launch_explorer: {'; '.join(wrong)}", user_location(),
                             hint="e.g. launch_explorer(saxpy, x.size, block=256)")
    chosen = kwargs.get("arch") or getattr(dispatcher, "inspection_arch", None) or default_arch()
    try:
        occupancy.limits_for(chosen)
    except ValueError as exc:
        raise JitOptionError(f"launch_explorer: arch {chosen!r}: {exc}", user_location(),
                             hint="pass one of them, e.g. arch='sm_90'") from None
