"""inspect_types(): a typed function as text, each variable's type at each of its definitions."""

from __future__ import annotations

from gpunb.compiler.typed import TypedFunction, VarKind
from gpunb.foundation import types as t


def describe_types(typed: TypedFunction) -> str:
    """The signature, every variable with its type (one per definition where they differ, as
    numba types each definition), then the source with the types defined on each line."""
    lines = [f"{typed.name} {t.Signature(typed.return_type, typed.argtypes)}", "", "variables:"]
    names = list(dict.fromkeys(var.name for var, _ in sorted(
        typed.var_types.items(), key=lambda kv: _line(kv[0]))))
    for name in names:
        found = typed.definitions(name)
        kinds = list(dict.fromkeys(vt for _, vt in found))
        if len(kinds) == 1:
            lines.append(f"    {name}: {kinds[0]}")
            continue
        parts = [f"{vt} ({_where(var)})" for var, vt in found]
        lines.append(f"    {name}: {', '.join(parts)}")
    lines.append("")
    by_line: dict = {}
    for var, vt in typed.var_types.items():
        if var.kind is VarKind.DEF:
            by_line.setdefault(_line(var)[0], []).append(f"{var.name}: {vt}")
    src = typed.source
    last = getattr(src.tree, "end_lineno", None) or src.first_line
    for lineno in range(src.first_line, last + 1):
        text = src.line_text(lineno).rstrip("\n")
        note = by_line.get(lineno)
        lines.append(f"{lineno:5d}  {text}" + (f"    # {', '.join(note)}" if note else ""))
    for callee in typed.callees:
        lines.append("")
        lines.append(describe_types(callee))
    return "\n".join(lines)


def _line(var) -> tuple:
    return (getattr(var.site, "lineno", 0), getattr(var.site, "col_offset", 0))


def _where(var) -> str:
    line = _line(var)[0]
    if var.kind is VarKind.PHI:
        return f"joined at line {line}"
    if var.kind is VarKind.PARAM:
        return "argument"
    return f"line {line}"
