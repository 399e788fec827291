"""Cache provenance views: the `%gpucache status` table and `%gpucache explain NAME`.

Rows come from the kernels in the user's namespace (their specialisations and the cache decision
recorded on each) so the table says, per function and signature, hit or miss and why, compile
time, entry size and the cell that defined the function. A live panel re-renders after each cell.
"""

from __future__ import annotations

from gpunb.foundation import types as t
from gpunb.foundation.events import CacheEvent
from gpunb.notebook import render

HEADERS = ("function", "signature", "target", "last event", "why", "compile ms", "entry size",
           "defined in")


def find_kernels(namespace: dict) -> dict:
    """name -> Dispatcher for every GPU function bound in a namespace (the user's, usually),
    and `name: kernel` for each kernel a ufunc, reduction or fused function bound there
    compiled (their compiled_kernels())."""
    found = {}
    for name, value in list(namespace.items()):
        if name.startswith("_"):
            continue
        if getattr(type(value), "__gpunb_function__", False):
            found[name] = value
        elif not isinstance(value, type) and callable(getattr(type(value), "compiled_kernels",
                                                              None)):
            for kernel in value.compiled_kernels():
                found[f"{name}: {kernel.__name__}"] = kernel
    return found


def defined_in(dispatcher) -> str:
    from gpunb.foundation.errors import describe_filename

    code = getattr(dispatcher.py_func, "__code__", None)
    if code is None:
        return "?"
    return f"{describe_filename(code.co_filename)}, line {code.co_firstlineno}"


def describe_event(event: CacheEvent | None) -> tuple[str, str, str]:
    """(outcome, why, entry size) of one cache event, as the status table shows them."""
    if event is None:
        return "—", "not looked up (cache off or not compiled through the cache)", ""
    return event.outcome, event.why, _size(event.entry_bytes)


def _size(value: int | None) -> str:
    if value is None:
        return ""
    value = int(value)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024 or unit == "MiB":
            return f"{value} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(value)


def describe_failure(failure: tuple) -> str:
    """A failed compile (error type, message, location) in one line: the message's first line
    and where it points."""
    kind, message, loc = failure
    text = f"{kind}: {message.splitlines()[0] if message else ''}"
    return f"{text} ({loc.describe()})" if loc is not None else text


COMPILE_FAILED = "compile failed"
LAUNCH_FAILED = "launch failed"
NOT_COMPILED = "(launch failed before compiling)"


def failure_rows(name: str, dispatcher) -> list[list[str]]:
    """One row per argument types whose last compile failed (none succeeded since), and one for
    the function's last launch when it failed (jit/failures.py: before compiling - arguments,
    launch configuration - or after it - the driver, an out-of-bounds index) and none worked
    since."""
    rows = []
    compiled = set()  # (type, first line) of the compile failures: a launch's is not repeated
    for (target, argtypes), failure in list(getattr(dispatcher, "failed_compiles", {}).items()):
        signature = str(t.Signature(t.void, argtypes))
        compiled.add((failure[0], (failure[1] or "").split("\n")[0]))
        rows.append([name, signature, target, COMPILE_FAILED, describe_failure(failure), "", "",
                     defined_in(dispatcher)])
    launch = getattr(dispatcher, "failed_launch", None)
    if launch is not None and (launch.kind, launch.message) not in compiled:
        rows.append([name, launch.signature or NOT_COMPILED, launch.target, LAUNCH_FAILED,
                     launch.describe(), "", "", defined_in(dispatcher)])
    return rows


def callers_of(dispatcher, kernels: dict) -> list[str]:
    """The names of the kernels in `kernels` whose compiled code calls `dispatcher` (as a
    device function: their fingerprints list it as a dependency)."""
    code = getattr(dispatcher.py_func, "__code__", None)
    if code is None:
        return []
    where = (code.co_filename, code.co_firstlineno)
    out = []
    for name, kernel in kernels.items():
        if kernel is dispatcher:
            continue
        for spec in list(getattr(kernel, "specializations", {}).values()):
            fingerprint = getattr(spec, "fingerprint", None)
            deps = fingerprint.dependencies if fingerprint is not None else ()
            if any(d.kind == "gpu function" and (d.filename, d.line) == where for d in deps):
                out.append(name)
                break
    return out


def status_rows(namespace: dict) -> list[list[str]]:
    rows = []
    kernels = find_kernels(namespace)
    for name, dispatcher in kernels.items():
        infos = dispatcher.cache_info()
        failed = failure_rows(name, dispatcher)
        if not infos and not failed:
            callers = callers_of(dispatcher, kernels)
            if callers:
                what = f"(device function: compiled into {', '.join(callers)})"
            elif getattr(dispatcher, "device", False):
                what = "(device function: compiled into the kernels that call it)"
            else:
                what = "(not compiled: not launched or called from a launched kernel yet)"
            rows.append([name, what, "", "", "", "", "", defined_in(dispatcher)])
        for info in infos:
            outcome, why, size = describe_event(info.get("event"))
            rows.append([name, info.get("signature", ""), info.get("target", ""), outcome, why,
                         f"{float(info.get('compile_ms') or 0.0):.1f}", size,
                         defined_in(dispatcher)])
        rows.extend(failed)
    return rows


class CacheStatus:
    """A snapshot of `%gpucache status`: table as HTML (with hit/miss colour) and as text."""

    def __init__(self, namespace: dict, cache_dir: str = "", enabled: bool = True):
        self.rows = status_rows(namespace)
        self.cache_dir = cache_dir
        self.enabled = enabled

    def footer(self) -> str:
        state = "on" if self.enabled else "off"
        return f"cache {state}; directory: {self.cache_dir or '?'}"

    def text(self) -> str:
        if not self.rows:
            return "no GPU functions in this namespace yet\n" + self.footer()
        return render.text_table(HEADERS, self.rows) + "\n" + self.footer()

    def _repr_html_(self) -> str:
        rows = []
        for row in self.rows:
            cells = [render.esc(c) for c in row]
            css = "hit" if row[3].startswith("hit") else "miss" if row[3].startswith("miss") \
                else "bad" if row[3] in (COMPILE_FAILED, LAUNCH_FAILED) else ""
            if css:
                cells[3] = f'<span class="{css}">{cells[3]}</span>'
            rows.append(cells)
        body = render.table(HEADERS, rows, raw_html=True) if rows else \
            '<div class="muted">no GPU functions in this namespace yet</div>'
        return render.wrap(body + f'<div class="muted">{render.esc(self.footer())}</div>')

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(self.text())


class Explanation:
    """`%gpucache explain NAME`: the cache's account of a kernel (gpunb.cache.explain's text),
    shown as text or HTML."""

    def __init__(self, name: str, explained: str):
        self.name = name
        self.explained = explained

    def text(self) -> str:
        return self.explained

    def _repr_html_(self) -> str:
        return render.wrap(f"<div><b>why {render.esc(self.name)} was (re)compiled</b></div>"
                           f'<pre class="gpunb-code">{render.esc(self.text())}</pre>')

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(self.text())


class LiveCachePanel:
    """An HTML widget holding the status table, refreshed after every cell (while displayed),
    shown with its static copy (widgets.show_live), which follows every refresh."""

    def __init__(self, shell, status_factory):
        import ipywidgets as w

        from gpunb.notebook.widgets import StaticCopy

        self.status_factory = status_factory
        self._status = status_factory()
        self.static = StaticCopy(self._static_bundle)
        self.html = w.HTML(self._widget_html())
        shell_hooks = _hooks(shell)
        if shell_hooks is not None:
            shell_hooks.after_cell.append(self.refresh)

    def _static_bundle(self) -> dict:
        return {"text/plain": self._status.text(), "text/html": self._status._repr_html_()}

    def _widget_html(self) -> str:
        return self._status._repr_html_() + self.static.hide_rule()

    def refresh(self) -> bool:
        self._status = self.status_factory()
        self.html.value = self._widget_html()
        self.static.update()
        return True  # keep refreshing after later cells

    def _ipython_display_(self) -> None:
        from gpunb.notebook.widgets import show_live

        show_live(self.static, lambda: self.html)


def _hooks(shell):
    from gpunb.notebook import hooks_for

    return hooks_for(shell)
