"""Cache keys as a hash of named parts, and the explanation of a miss as a diff of those parts.

A key is blake2b over canonical JSON of: the function fingerprint digest, argument types, the
options that change code, target, arch and the toolchain identity. The parts are kept in every
entry, so a miss is explained by diffing them (and the dependency lists) against the previous
entry of the same function, signature and target.
"""

from __future__ import annotations

import json

from gpunb.cache.encode import blake2b
from gpunb.cache.fingerprint import Dependency, FunctionFingerprint
from gpunb.foundation.events import CacheChange, CacheReason

FORMAT_VERSION = 2  # 2: entries of store format 2 (an older gpunb keeps its own keys)

# Options at their documented defaults are dropped, so `jit()` and `jit(fastmath=False)` share keys.
_OPTION_DEFAULTS = {"fastmath": False, "lineinfo": False, "debug": False, "opt": True,
                    "max_registers": None, "boundscheck": False, "inline": None, "device": False,
                    "cpu_mode": "auto", "debugger": False}
_NOT_CODE = frozenset({"cache", "shared_memory_carveout"})  # options that never change code


def _json_value(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return [_json_value(v) for v in value]
    return str(value)


def effective_options(options: dict | None, target: str) -> dict:
    """The options that shape code, canonical: sorted, defaults dropped, env-driven ones added.

    On the CPU target GPUNB_BOUNDSCHECK (on unless 0) compiles bounds checks in
    (backends/cpu/backend.py), so it is folded into `boundscheck` here: an environment variable
    that changes code must change keys.
    """
    out = {}
    for name, value in (options or {}).items():
        if name in _NOT_CODE or (name in _OPTION_DEFAULTS and value == _OPTION_DEFAULTS[name]
                                 and type(value) is type(_OPTION_DEFAULTS[name])):
            continue
        out[str(name)] = _json_value(value)
    if target == "cpu":
        from gpunb.foundation import config

        # the CPU target checks bounds unless told not to (GPUNB_BOUNDSCHECK=0 or
        # boundscheck=False), and records accesses under GPUNB_RACECHECK=1 too
        given = (options or {}).get("boundscheck")
        out["boundscheck"] = bool((options or {}).get("debug")) or (
            given is not False and config.boundscheck())
        if config.racecheck() and (options or {}).get("racecheck") is not False:
            out["racecheck"] = True
        if not out.get("racecheck"):
            out.pop("racecheck", None)
        if "cpu_mode" not in out and config.cpu_mode() != "auto":
            out["cpu_mode"] = config.cpu_mode()
        if not config.cpu_interrupt_checks():  # kernels without stopping points (benchmarks)
            out["interrupt_checks"] = False
    return dict(sorted(out.items()))


def key_parts(fingerprint: FunctionFingerprint, argtypes: str, options: dict | None, target: str,
              arch: str, toolchain: dict) -> dict:
    """The named parts a key is hashed from (kept in the entry to explain later misses)."""
    opts = effective_options(options, target)
    parts = {"format": FORMAT_VERSION, "function": fingerprint.digest, "argtypes": str(argtypes),
             "options": opts, "target": str(target), "arch": str(arch),
             "toolchain": {str(k): _json_value(v) for k, v in sorted(toolchain.items())}}
    if opts.get("lineinfo") or opts.get("debug"):
        # debug info embeds file paths and line numbers in the binary: only then are they content
        parts["locations"] = [list(loc) for loc in fingerprint.locations]
    return parts


def key_of(parts: dict) -> str:
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return blake2b(text.encode(), digest_size=20).hexdigest()


def cache_key(fingerprint: FunctionFingerprint, argtypes: str, options: dict | None, target: str,
              arch: str, toolchain: dict) -> str:
    """Hex blake2b key of one specialisation: same content anywhere -> same key."""
    return key_of(key_parts(fingerprint, argtypes, options, target, arch, toolchain))


# ---- explaining a miss -------------------------------------------------------------------------

def explain_change(old_parts: dict, old_deps: list[Dependency], old_code: str,
                   new_parts: dict, fingerprint: FunctionFingerprint) -> list[CacheChange]:
    """Why `new_parts` differs from the previous entry's parts, most useful first."""
    changes = []
    if old_parts.get("function") != new_parts.get("function"):
        changes.extend(_dependency_changes(old_deps, old_code, fingerprint))
        if not changes:
            changes.append(CacheChange(
                CacheReason.CHANGED, fingerprint.qualname,
                f"changed: `{fingerprint.qualname}` or what it reads "
                f"(defined at {fingerprint.defined_at})", "function", fingerprint.defined_at))
    old_opts, new_opts = old_parts.get("options", {}), new_parts.get("options", {})
    for name in sorted(set(old_opts) | set(new_opts)):
        before = old_opts.get(name, _OPTION_DEFAULTS.get(name))
        after = new_opts.get(name, _OPTION_DEFAULTS.get(name))
        if before != after:
            changes.append(_was(CacheReason.OPTION_CHANGED, name, "option", before, after))
    if old_parts.get("arch") != new_parts.get("arch"):
        changes.append(_was(CacheReason.ARCH_CHANGED, "", "arch", old_parts.get("arch"),
                            new_parts.get("arch")))
    old_tools, new_tools = old_parts.get("toolchain", {}), new_parts.get("toolchain", {})
    for name in sorted(set(old_tools) | set(new_tools)):
        if old_tools.get(name) != new_tools.get(name):
            changes.append(_was(CacheReason.TOOLCHAIN_CHANGED, name, "tool", old_tools.get(name),
                                new_tools.get(name)))
    if old_parts.get("format") != new_parts.get("format"):
        changes.append(_was(CacheReason.FORMAT_CHANGED, "", "format", old_parts.get("format"),
                            new_parts.get("format")))
    if old_parts.get("locations") != new_parts.get("locations") and not changes:
        changes.append(CacheChange(CacheReason.CHANGED, "source location",
                                   "changed: source location (lineinfo/debug builds embed file "
                                   "and line)", "location"))
    return changes or [CacheChange(CacheReason.CHANGED, "", "changed: key parts differ")]


def _was(reason: CacheReason, subject: str, what: str, before, after) -> CacheChange:
    """`option changed: fastmath False -> True`, `arch changed: sm_80 -> sm_90`, ..."""
    name = f"{subject} " if subject else ""
    return CacheChange(reason, subject, f"{reason}: {name}{before} -> {after}", what,
                       before=str(before), after=str(after))


def _via(dep: Dependency) -> str:
    return f" (read via {' -> '.join(dep.via)})" if dep.via else ""


def _ident(dep: Dependency) -> tuple:
    """Parameters (defaults, annotations) and names read live in separate name spaces."""
    return (dep.via, dep.kind if dep.kind in ("default", "annotation") else "", dep.name)


def _changed(dep: Dependency, text: str, before: str = "", after: str = "") -> CacheChange:
    return CacheChange(CacheReason.CHANGED, dep.name, f"changed: {text}", dep.kind,
                       dep.defined_at, before, after)


def _dependency_changes(old_deps: list[Dependency], old_code: str,
                        fingerprint: FunctionFingerprint) -> list[CacheChange]:
    out = []
    if old_code and old_code != fingerprint.code_digest:
        out.append(CacheChange(CacheReason.CHANGED, fingerprint.qualname,
                               f"changed: source of `{fingerprint.qualname}` defined at "
                               f"{fingerprint.defined_at}", "source", fingerprint.defined_at))
    old = {_ident(d): d for d in old_deps}
    new = {_ident(d): d for d in fingerprint.dependencies}
    old_vias = {d.via for d in old_deps}
    new_vias = {d.via for d in fingerprint.dependencies}
    for ident, dep in new.items():
        before = old.get(ident)
        if before is None:
            if dep.via not in old_vias and dep.via:
                continue  # inside a callee that is new or edited: its own line says so
            out.append(_changed(dep, f"now reads {dep.label()} defined at {dep.defined_at}"
                                     f"{_via(dep)}", after=dep.value))
        elif dep.kind == "gpu function" and before.kind == "gpu function":
            if dep.code_digest != before.code_digest:
                out.append(_changed(dep, f"{dep.label()} defined at {dep.defined_at}{_via(dep)}"))
            elif dep.value != before.value:  # its jit options or declared signatures
                out.append(_changed(dep, f"options of {dep.label()} defined at {dep.defined_at}"
                                         f"{_via(dep)}: {before.value or 'jit()'} -> "
                                         f"{dep.value or 'jit()'}", before.value, dep.value))
        elif dep.digest != before.digest:
            values = f": {before.value} -> {dep.value}" if before.value or dep.value else ""
            out.append(_changed(dep, f"{dep.label()} defined at {dep.defined_at}{_via(dep)}"
                                     f"{values}", before.value, dep.value))
    for ident, dep in old.items():
        if ident not in new and (not dep.via or dep.via in new_vias):
            out.append(_changed(dep, f"no longer reads {dep.label()}{_via(dep)}",
                                before=dep.value))
    return out
