"""`kernel.cache_info()`: one record per specialisation, printed as a readable table.

The records stay plain dicts (function, target, signature, event, compile_ms, key), so code that
indexes them keeps working; the list they come in prints one line per specialisation
(`saxpy void(float32[::1], ...) cpu: hit (disk), compiled in 48.1 ms`) instead of dict reprs
with raw floats.
"""

from __future__ import annotations


class CacheInfo(list):
    """A list of cache records with a readable repr (terminal, IPython, notebook)."""

    def lines(self) -> list[str]:
        out = []
        for info in self:
            event = info.get("event")
            outcome = event.outcome if event is not None else "not looked up (cache off)"
            ms = float(info.get("compile_ms") or 0.0)
            compiled = f", compiled in {ms:.1f} ms" if ms else ""
            out.append(f"{info.get('function')} {info.get('signature')} {info.get('target')}: "
                       f"{outcome}{compiled}")
        return out

    def __repr__(self) -> str:
        return "\n".join(self.lines()) if self else "(no specialisation compiled yet)"

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(repr(self))
