"""A diff view: a kernel's PTX or SASS against another version of it - the one shown before a
redefinition (of the kernel or of a device function it calls), or the code for another arch.

Compiler Explorer's diff, for the notebook: lines only on the left are removed, only on the right
added, runs of unchanged lines fold away. Debug directives (PTX `.loc`/`.file`, nvdisasm's
`//##` line markers) and SASS addresses and encodings are left out of the comparison, because
they change whenever the source moves and would drown the change in the code itself.

`diff_view(kernel)` after a redefinition compares with the definition the kernel's cell had
before (jit/versions keeps the last few definitions of every name and compiles one again on
demand), or - the kernel unchanged, a device function it calls redefined - with the kernel
compiled against that function's previous definition, or with what an inspector showed before
(every inspector shown in this session remembers its report, `remember`).
"""

from __future__ import annotations

import difflib
import re
from collections import OrderedDict

from gpunb.jit.report import KernelReport
from gpunb.notebook import render

TABS = ("ptx", "sass", "llvm")
CONTEXT = 3  # unchanged lines kept around each change
_KEEP_KEYS = 64
_history: OrderedDict = OrderedDict()  # (name, signature, arch) -> [KernelReport, ...]

_SASS_ADDRESS = re.compile(r"/\*[0-9a-f]{4,}\*/\s*")
_SASS_ENCODING = re.compile(r"\s*/\*\s*0x[0-9a-f]+\s*\*/")
_DEBUG = re.compile(r"^\s*(\.loc\b|\.file\b|//##|\.section\s+\.debug|\$L__tmp\d+:)")

_ADDED = "color-mix(in srgb,var(--jp-success-color1,#2f855a) 18%,transparent)"
_REMOVED = "color-mix(in srgb,var(--jp-error-color1,#c53030) 18%,transparent)"
STYLE = (f"<style>.gpunb .gpunb-diff td{{font-family:var(--jp-code-font-family,monospace);"
         f"font-size:12px;white-space:pre;padding:0 6px;border:none;vertical-align:top}}"
         f".gpunb .gpunb-diff td.add{{background:{_ADDED}}}"
         f".gpunb .gpunb-diff td.del{{background:{_REMOVED}}}"
         f".gpunb .gpunb-diff td.ln{{color:var(--jp-ui-font-color3,#999);user-select:none}}"
         f".gpunb .gpunb-diff tr.fold td{{color:var(--jp-ui-font-color2,#777);"
         f"font-style:italic}}</style>")


def remember(report: KernelReport) -> None:
    """Keep a shown report as the earlier version of later ones with the same name, signature
    and arch (two distinct versions each, for the 64 most recent kernels)."""
    key = (report.name, report.signature, report.arch)
    versions = _history.pop(key, [])
    if not versions or versions[-1].ptx != report.ptx or versions[-1].sass != report.sass:
        versions = [*versions, report][-2:]
    _history[key] = versions
    while len(_history) > _KEEP_KEYS:
        _history.popitem(last=False)


def previous_of(report: KernelReport, tab: str) -> KernelReport | None:
    """The latest remembered version whose `tab` differs from this report's."""
    for earlier in reversed(_history.get((report.name, report.signature, report.arch), [])):
        if _texts(earlier.section(tab), tab) != _texts(report.section(tab), tab):
            return earlier
    return None


def previous_definition(kernel, after: KernelReport, tab: str) -> tuple | None:
    """(report, what it was) of the newest earlier version of `kernel` whose `tab` differs from
    `after`'s, built for the same argument types and arch: an earlier definition of the kernel
    itself, else the kernel as it was before a GPU function it calls was last redefined (the
    callee's earlier definition put in its place). None if there is none."""
    from gpunb.foundation.errors import GpunbError

    mine = _texts(after.section(tab), tab)
    for build, label in _earlier_versions(kernel):
        try:
            report = build().inspect(after.signature, after.arch)
        except GpunbError:
            continue  # its parameters differ, or it never compiled: not comparable
        if _texts(report.section(tab), tab) != mine:
            return report, label
    return None


def _earlier_versions(kernel):
    """(make the dispatcher, label) of each earlier version, newest definition first."""
    from gpunb.jit import versions

    for definition in versions.earlier_definitions(kernel):
        yield (lambda d=definition: _revive(d)), f"previous definition ({definition.where})"
    func = kernel.py_func
    defined = versions.serial_of(kernel) or 0
    for name in _global_names(func.__code__):
        callee = func.__globals__.get(name)
        if callee is kernel or not getattr(type(callee), "__gpunb_function__", False):
            continue
        if (versions.serial_of(callee) or 0) < defined:
            continue  # redefined before the kernel was: the kernel never used the earlier one
        for definition in versions.earlier_definitions(callee)[:1]:
            yield ((lambda n=name, d=definition: _with_global(kernel, n, _revive(d))),
                   f"before {name} was redefined ({definition.where})")


def _global_names(code) -> list[str]:
    """Names a function's code (and the code nested in it) reads as globals, in order."""
    names = list(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names.extend(_global_names(const))
    return list(dict.fromkeys(names))


def _with_global(kernel, name: str, value):
    """A dispatcher of `kernel`'s code that sees `value` as the global `name` (in a copy of its
    globals: the user's namespace is not touched)."""
    import types

    from gpunb.jit.dispatcher import Dispatcher

    func = kernel.py_func
    namespace = dict(func.__globals__)
    namespace[name] = value
    variant = types.FunctionType(func.__code__, namespace, func.__name__, func.__defaults__,
                                 func.__closure__)
    variant.__qualname__ = func.__qualname__
    return Dispatcher(variant, device=kernel.device, target=kernel.requested_target,
                      inspection_arch=kernel.inspection_arch,
                      signatures=list(kernel.declared_signatures), _eager=False,
                      **dict(kernel.options))


def _revive(definition):
    """The dispatcher of an earlier definition: the same object while it lives, else a new one
    built from its function and options (compiled on demand, not kept)."""
    alive = definition.dispatcher()
    if alive is not None:
        return alive
    from gpunb.jit.dispatcher import Dispatcher

    return Dispatcher(definition.py_func, device=definition.device, target=definition.target,
                      inspection_arch=definition.inspection_arch,
                      signatures=list(definition.signatures), _eager=False,
                      **dict(definition.options))


def comparable(text: str, tab: str) -> list[tuple[int, str]]:
    """(line number in the tab, text) of the lines a diff compares: no debug directives or blank
    lines; SASS without addresses and encodings."""
    out = []
    for number, line in enumerate((text or "").splitlines(), start=1):
        if _DEBUG.match(line):
            continue
        if tab == "sass":
            line = _SASS_ENCODING.sub("", _SASS_ADDRESS.sub("", line))
        line = line.rstrip()
        if line.strip():
            out.append((number, line))
    return out


def _texts(text: str, tab: str) -> list[str]:
    return [line for _, line in comparable(text, tab)]


def diff_view(kernel, against=None, *, signature=None, arch: str | None = None,
              tab: str = "ptx") -> DiffView:
    """`kernel`'s PTX (tab="sass": SASS, "llvm": LLVM IR) against `against`: an arch ("sm_80"),
    another kernel or KernelReport, or (None) the version shown before the last redefinition."""
    from gpunb.foundation.errors import CompileError

    if tab not in TABS:
        raise CompileError(f"diff_view compares one of {', '.join(TABS)}, not {tab!r}",
                           hint="diff_view(kernel, 'sm_80', tab='sass')")
    from gpunb.jit.options import check_gpu_function

    if not isinstance(kernel, KernelReport):
        check_gpu_function(kernel, "diff_view")
    if against is not None and not isinstance(against, (KernelReport, str)):
        check_gpu_function(against, "diff_view")
    after = kernel if isinstance(kernel, KernelReport) else kernel.inspect(signature, arch)
    names = (after.arch, after.arch)
    if against is None:
        names = ("shown before", "now")
        found = None if isinstance(kernel, KernelReport) else \
            previous_definition(kernel, after, tab)
        if found is not None:
            before, label = found
            names = (label, "now")
        else:
            before = previous_of(after, tab)
        if before is None:
            raise CompileError(
                f"no earlier version of {after.name}'s {tab.upper()} for {after.arch}: the "
                "kernel was not redefined, and no other version was shown in this session",
                hint=f"redefine it (run its cell again, edited), show it (kernel.inspect()) "
                f"before you redefine a device function it calls, or compare with another "
                f"arch: diff_view({after.name}, 'sm_80')")
    elif isinstance(against, str):
        before = kernel.inspect(signature, against) if not isinstance(kernel, KernelReport) \
            else None
        if before is None:
            raise CompileError("an arch to compare with needs the kernel, not its report",
                               hint=f"diff_view({after.name}, '{against}')")
        names = (against, after.arch)
    else:
        before = against if isinstance(against, KernelReport) else against.inspect(signature,
                                                                                    arch)
        names = (f"{before.name} for {before.arch}", f"{after.name} for {after.arch}")
    return DiffView(before, after, tab, names)


class DiffView:
    """Two reports' code for one tab, compared line by line (HTML side by side, text unified)."""

    def __init__(self, before: KernelReport, after: KernelReport, tab: str = "ptx",
                 names: tuple[str, str] | None = None):
        self.before, self.after, self.tab = before, after, tab
        self.names = names or (f"{before.name} for {before.arch}", f"{after.name} for "
                                                                    f"{after.arch}")
        left, right = comparable(before.section(tab), tab), comparable(after.section(tab), tab)
        self.left_numbers, self.left = [n for n, _ in left], [text for _, text in left]
        self.right_numbers, self.right = [n for n, _ in right], [text for _, text in right]
        self.opcodes = difflib.SequenceMatcher(None, self.left, self.right,
                                               autojunk=False).get_opcodes()

    @property
    def added(self) -> int:
        return sum(j2 - j1 for op, _, _, j1, j2 in self.opcodes if op in ("insert", "replace"))

    @property
    def removed(self) -> int:
        return sum(i2 - i1 for op, i1, i2, _, _ in self.opcodes if op in ("delete", "replace"))

    def summary(self) -> str:
        if not self.added and not self.removed:
            what = "no difference"
        else:
            what = f"+{self.added} −{self.removed} line(s)"
        return (f"{self.tab.upper()} of {self.after.name} {self.after.signature}, "
                f"{self.names[0]} → {self.names[1]}: {what}")

    def text(self) -> str:
        lines = difflib.unified_diff(self.left, self.right, self.names[0], self.names[1],
                                     n=CONTEXT, lineterm="")
        return self.summary() + "\n" + "\n".join(lines)

    def rows(self) -> list[tuple]:
        """(kind, left number, left text, right number, right text) - numbers as in the tab, 0
        where a side has no line - with unchanged runs longer than 2 * CONTEXT + 1 folded into
        one ("fold", count, "", 0, "") row."""
        rows: list[tuple] = []
        for op, i1, i2, j1, j2 in self.opcodes:
            if op == "equal":
                pairs = list(zip(range(i1, i2), range(j1, j2), strict=True))
                if len(pairs) > 2 * CONTEXT + 1:
                    head, tail = pairs[:CONTEXT], pairs[-CONTEXT:]
                    head = head if rows else []  # no context before the first change
                    tail = tail if i2 < len(self.left) or j2 < len(self.right) else []
                    pairs_shown = [*head, None, *tail]
                else:
                    pairs_shown = pairs
                for pair in pairs_shown:
                    if pair is None:
                        hidden = len(pairs) - len(head) - len(tail)
                        rows.append(("fold", hidden, "", 0, ""))
                    else:
                        i, j = pair
                        rows.append(("equal", self.left_numbers[i], self.left[i],
                                     self.right_numbers[j], self.right[j]))
                continue
            left = list(range(i1, i2))
            right = list(range(j1, j2))
            for k in range(max(len(left), len(right))):
                i = left[k] if k < len(left) else None
                j = right[k] if k < len(right) else None
                rows.append((op, self.left_numbers[i] if i is not None else 0,
                             self.left[i] if i is not None else "",
                             self.right_numbers[j] if j is not None else 0,
                             self.right[j] if j is not None else ""))
        return rows

    def _repr_html_(self) -> str:
        body = []
        for kind, ln, left, rn, right in self.rows():
            if kind == "fold":
                body.append(f'<tr class="fold"><td></td><td colspan="3">… {ln} unchanged '
                            "line(s)</td></tr>")
                continue
            lcls = "del" if kind in ("delete", "replace") and ln else ""
            rcls = "add" if kind in ("insert", "replace") and rn else ""
            body.append(f'<tr><td class="ln">{ln or ""}</td><td class="{lcls}">'
                        f'{render.esc(left)}</td><td class="ln">{rn or ""}</td>'
                        f'<td class="{rcls}">{render.esc(right)}</td></tr>')
        head = (f"<tr><th></th><th>{render.esc(self.names[0])}</th><th></th>"
                f"<th>{render.esc(self.names[1])}</th></tr>")
        table = (f'<div class="gpunb-code" style="max-height:520px"><table class="gpunb-diff">'
                 f"{head}{''.join(body)}</table></div>")
        return render.wrap(STYLE + f"<div><b>{render.esc(self.summary())}</b></div>" + table)

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(self.text())
