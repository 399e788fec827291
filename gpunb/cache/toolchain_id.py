"""The toolchain part of cache keys: gpunb's compiler sources, LLVM, libdevice - found cheaply.

Asking llvmlite for its LLVM version imports llvmlite.binding (~30 ms) and finding libdevice runs
cuda-pathfinder (~30 ms): together twice the budget of a disk hit in a new process. So both answers
are remembered in `<cache dir>/toolchain.json`, each beside the (path, size, mtime_ns) of the file
it was read from; a stamp that still matches is trusted, any difference asks the tools again. Stat
data only decides whether to ask again, never what goes into a key.

The stamp decides key parts, so it is read as a private file whatever the cache's mode
(trust.py: owned by this user or root, writable by nobody else, a regular file), and only from a
directory the trust model accepts. In a shared cache each user keeps their own stamp
(`toolchain-<uid>.json`): their installations differ.
"""

from __future__ import annotations

import json
import os
import sys

from gpunb.cache.encode import blake2b

_STAMP = "toolchain.json"
_STAMP_LIMIT = 1 << 20
# the layers whose code decides what an artifact contains (types and layouts, inference and
# lowering, the backends' code generation)
_ARTIFACT_LAYERS = ("foundation", "compiler", "backends")


def _compiler_sources() -> tuple[str, list[str]]:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = []
    for layer in _ARTIFACT_LAYERS:
        for folder, dirs, files in os.walk(os.path.join(root, layer)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            paths.extend(os.path.join(folder, f) for f in sorted(files) if f.endswith(".py"))
    return root, paths


def compiler_digest(stamp: dict | None = None, changed: list | None = None) -> str:
    """Digest of gpunb's compiler sources: an edit to the compiler invalidates its artifacts.

    gpunb's version string alone would keep stale artifacts across development edits; the sources
    (foundation/, compiler/ and backends/: everything that decides what an artifact contains)
    are ~400 KB, ~3 ms to hash, so a stamp whose per-file (size, mtime_ns) all still match is
    trusted instead. A recomputed digest is written into `stamp` and `changed` gets True.
    """
    root, paths = _compiler_sources()
    stats = [_stat(p) for p in paths]
    found = (stamp or {}).get("compiler")
    if isinstance(found, dict) and found.get("stat") == stats:
        return str(found.get("value"))
    h = blake2b(digest_size=12)
    for path in paths:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        h.update(os.path.relpath(path, root).encode() + b"\0" + data + b"\0")
    value = h.hexdigest()
    if stamp is not None:
        stamp["compiler"] = {"stat": stats, "value": value}
        if changed is not None:
            changed.append(True)
    return value


def _toolchain():
    from gpunb.backends.cuda import toolchain  # imported only when a stamp is stale

    return toolchain


def _stat(path: str) -> list | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [path, st.st_size, st.st_mtime_ns]


def _stamp_name(shared: bool) -> str:
    if shared and hasattr(os, "geteuid"):
        return f"toolchain-{os.geteuid()}.json"
    return _STAMP


def _read_stamp(directory: str | None, shared: bool = False) -> dict:
    from gpunb.cache import trust

    if not directory or trust.directory_problem(directory, shared) is not None:
        return {}
    try:
        raw = trust.read_file(os.path.join(directory, _stamp_name(shared)), _STAMP_LIMIT,
                              private=True)
        data = trust.parse_json(raw) if raw else None
    except (OSError, ValueError, trust.Untrusted):
        return {}  # absent, damaged or someone else's: ask the tools (and write our own)
    return data if isinstance(data, dict) else {}


def _write_stamp(directory: str | None, data: dict, shared: bool = False) -> None:
    if not directory or not os.path.isdir(directory):
        return  # never creates the directory: the cache decides whether it may exist
    from gpunb.cache.files import atomic_write

    try:
        atomic_write(os.path.join(directory, _stamp_name(shared)),
                     json.dumps(data, sort_keys=True).encode())
    except OSError:
        pass  # a read-only cache directory: ask the tools next time


def _llvmlite_library() -> str | None:
    import importlib.util

    spec = importlib.util.find_spec("llvmlite")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = os.path.join(list(spec.submodule_search_locations)[0], "binding")
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
        if name.startswith("libllvmlite"):
            return os.path.join(folder, name)
    return None


def _remembered(stamp: dict, name: str, stat, compute) -> tuple[str, bool]:
    """(value, recomputed?) for one stamped fact."""
    found = stamp.get(name)
    if isinstance(found, dict) and stat is not None and found.get("stat") == stat:
        return str(found.get("value")), False
    value = compute()
    stamp[name] = {"stat": stat, "value": value}
    return value, True


def _libdevice_search_env() -> list:
    return [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), sys.prefix]


_identity_memo: dict = {}


def toolchain_identity(target: str, directory: str | None = None,
                       write: bool = True, shared: bool = False) -> dict[str, str]:
    """{gpunb, compiler, llvm[, libdevice]} for keys; memoised per process and stamped on disk.

    `write=False` (the cache is disabled) still reads a stamp but never writes one; `shared`:
    the directory is a shared cache (this user's own stamp there).
    """
    memo_key = (target, directory, shared)
    found = _identity_memo.get(memo_key)
    if found is not None:
        return dict(found)
    from gpunb.foundation.version import VERSION

    stamp = _read_stamp(directory, shared)
    changed: list = []  # a True for each fact asked again (the stamp is then rewritten)
    identity = {"gpunb": VERSION, "compiler": compiler_digest(stamp, changed)}
    if "llvmlite.binding" in sys.modules:
        identity["llvm"] = _toolchain().llvm_version()
    else:
        identity["llvm"], asked = _remembered(stamp, "llvm", _stat(_llvmlite_library() or ""),
                                              lambda: _toolchain().llvm_version())
        changed.append(asked)
    if target == "cuda":
        libdevice = stamp.get("libdevice")
        path = libdevice.get("stat", [None])[0] if isinstance(libdevice, dict) else None
        if isinstance(libdevice, dict) and libdevice.get("env") == _libdevice_search_env() \
                and path and libdevice.get("stat") == _stat(path):
            identity["libdevice"] = str(libdevice.get("value"))
        else:
            identity["libdevice"] = _toolchain().libdevice_hash()
            try:
                path = _toolchain().libdevice_path()
            except Exception:  # noqa: BLE001 - no libdevice: the hash says "none"
                path = ""
            stamp["libdevice"] = {"stat": _stat(path) if path else None,
                                  "env": _libdevice_search_env(), "value": identity["libdevice"]}
            changed.append(True)
    if write and any(changed):  # (comparing JSON dumps of the stamp cost a disk hit ~1 ms)
        _write_stamp(directory, stamp, shared)
    _identity_memo[memo_key] = identity
    return dict(identity)


def remembered_identity(target: str) -> dict[str, str] | None:
    """The identity toolchain_identity() found for `target` earlier in this process (it is the
    same whichever directory stamped it), or None: nothing is asked or read."""
    for (memo_target, _, _), identity in list(_identity_memo.items()):
        if memo_target == target:
            return dict(identity)
    return None


def host_arch() -> str:
    """The CPU target's arch as cache keys name it (the CPU backend's `cache_arch`)."""
    from gpunb.backends.cpu.backend import host_arch as backend_host_arch

    return backend_host_arch()
