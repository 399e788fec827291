"""The cache the dispatcher calls: lookup (memory, then disk) before compiling, store after.

Two calls so that a miss's event can carry the compile time:

    artifact, pending = cache.lookup(name, fingerprint, argtypes, options, target, arch)
    if artifact is None:
        try:
            artifact = compile(...)                               # timed by the caller
        except BaseException:
            cache.abandon(pending)                                # frees the key for others
            raise
        event = cache.store(pending, artifact, fingerprint, compile_ms)
    else:
        event = pending.event                                     # the hit, already recorded

A miss claims the key before returning - among the threads of this process, then across the
processes sharing the directory (a lock file) - and the caller compiles; store() or abandon()
frees it. When another thread or process holds it, lookup() waits for its result and returns it
as a hit with the time waited (compile_once.py).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import weakref

from gpunb.cache import provenance
from gpunb.cache.fingerprint import Dependency, FunctionFingerprint
from gpunb.cache.keys import explain_change, key_of, key_parts
from gpunb.cache.relocate import relocate
from gpunb.cache.store import FORMAT_VERSION as STORE_FORMAT
from gpunb.cache.store import CorruptEntry, DiskStore, FormatMismatch, MemoryStore, Untrusted
from gpunb.foundation.events import CacheChange, CacheEvent, CacheKind, CacheReason, CacheSource


class WrongKey(Exception):
    """An entry that verifies but was made for another key (copied or renamed)."""


class Lookup:
    """A lookup in progress: the key and its parts, and the reason of a miss (for store()).

    `event` is set on hits (already recorded) and by store() on misses. A plain slots class, not
    a dataclass: it is built on every lookup and imported on the disk-hit path of a new process.
    """

    __slots__ = ("key", "parts", "function", "signature", "target", "fingerprint", "changes",
                 "time_ms", "enabled", "started", "event", "waited_ms", "claim", "previous")

    def __init__(self, key: str, parts: dict, function: str, signature: str, target: str,
                 fingerprint: FunctionFingerprint, enabled: bool):
        self.key = key
        self.parts = parts
        self.function = function
        self.signature = signature
        self.target = target
        self.fingerprint = fingerprint
        self.changes: tuple = ()  # why it missed (CacheChange records); () on a hit
        self.time_ms = 0.0
        self.enabled = enabled
        self.started = time.time()
        self.event: CacheEvent | None = None
        self.waited_ms = 0.0  # part of time_ms spent waiting for another compile of the key
        self.claim = None  # compile_once.Compiling while this lookup's caller compiles the key
        # the key this caller's own code had for the signature (a live function recompiling),
        # which an explanation diffs against before the function name's latest entry
        self.previous: str | None = None

    def __repr__(self) -> str:
        why = self.changes[0].reason if self.changes else "hit"
        return f"<Lookup {self.function} {self.signature} {self.key[:12]} {why}>"


def _pointer(fingerprint: FunctionFingerprint, signature: str, target: str) -> str:
    """Names "this function's previous entry", which a miss is explained against: the module
    is part of it, so `k` of pkg/b.py is new, not `k` of pkg/a.py changed. Notebook cells all
    define their functions in `__main__`, so a cell's `k` is told against the last `k` of the
    same program: the notebook (or script) running as `__main__` is part of it too, or the
    first `k` of b.ipynb was explained against a.ipynb's `k` found in the shared disk cache."""
    module = getattr(fingerprint.py_func, "__module__", None) or ""
    if module == "__main__":
        module = f"__main__:{_main_program()}"
    return f"{module}\0{fingerprint.qualname}\0{signature}\0{target}"


def _main_program() -> str:
    """Which program `__main__` is: the notebook a Jupyter server started this kernel for (its
    path in JPY_SESSION_NAME, which jupyter_server sets and ipykernel shows as `__session__`),
    VS Code's notebook (`__vsc_ipynb_file__`), or the script run (`__main__.__file__`); empty
    in an interactive session nothing names (IPython in a terminal, a kernel started alone)."""
    session = os.environ.get("JPY_SESSION_NAME")
    if session:
        return session
    main = sys.modules.get("__main__")
    named = getattr(main, "__vsc_ipynb_file__", None) or getattr(main, "__file__", None)
    return named if isinstance(named, str) else ""


_caches: weakref.WeakSet = weakref.WeakSet()  # every KernelCache, for _after_fork_in_child


def _after_fork_in_child() -> None:
    for cache in list(_caches):
        cache._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class KernelCache:
    """Memory tier in front of a disk tier at one directory; see the module docstring."""

    def __init__(self, directory: str | None = None, max_bytes: int | None = None,
                 memory_entries: int = 512):
        from gpunb.foundation import config

        self.directory = directory or config.cache_dir()
        self.memory = MemoryStore(memory_entries)
        self.shared = config.cache_shared()
        self.disk = DiskStore(self.directory,
                              config.cache_max_bytes() if max_bytes is None else max_bytes,
                              shared=self.shared,
                              key_file=config.cache_key_file() if self.shared else None,
                              # a default directory is never created in a missing home
                              anchor=None if directory else config.cache_dir_anchor())
        self.latest: dict[str, str] = {}  # pointer -> key of the last entry stored or hit
        self.bodies: dict[str, dict] = {}  # key -> metadata body, for explanations
        self.pending: dict[str, Lookup] = {}
        self.claims = None  # compile_once.ThreadClaims, made on the first miss
        self._lock = threading.RLock()
        _caches.add(self)

    def _forked(self) -> None:
        """In a forked child: the threads that held keys (or the lock) are not there; waiting
        for them took the whole GPUNB_CACHE_WAIT_SECONDS (300 s) before compiling. A key
        the parent process is compiling is still waited for through its lock file."""
        self.claims = None
        self._lock = threading.RLock()

    # ---- lookup --------------------------------------------------------------------------------

    def key_for(self, fingerprint: FunctionFingerprint, argtypes: str, options: dict | None,
                target: str, arch: str, toolchain: dict | None = None) -> str:
        """The key lookup() would use, without looking anything up or recording an event.

        After a watch list fails, a dispatcher compares this with its specialisation's key: equal
        means nothing that shapes code changed (a rebinding to an equal value, a new epoch), so it
        keeps the specialisation and just takes the new watch list.
        """
        if toolchain is None:
            toolchain = self._toolchain(target, _enabled(options))
        return key_of(key_parts(fingerprint, str(argtypes), options, target, arch, toolchain))

    def _toolchain(self, target: str, enabled: bool) -> dict:
        """The toolchain part of keys. A disabled cache stores nothing, so its keys only compare
        specialisations within this process, where the toolchain cannot change: it skips the
        identity (hashing compiler sources and libdevice costs a new process ~60 ms unstamped)."""
        if not enabled:
            from gpunb.cache.toolchain_id import remembered_identity

            # known already (the cache was on earlier in this process): the real one, so that
            # `%gpucache off` keeps every live kernel's key and recompiles none of them
            known = remembered_identity(target)
            return known if known is not None else {"cache": "disabled"}
        from gpunb.cache.toolchain_id import toolchain_identity

        # an untrusted (or uncreatable) directory is not read at all, its stamp included
        return toolchain_identity(target, self.directory if self.disk.ready() else None,
                                  write=True, shared=self.shared)

    def lookup(self, func_name: str, fingerprint: FunctionFingerprint, argtypes: str,
               options: dict | None, target: str, arch: str,
               toolchain: dict | None = None, previous_key: str | None = None) -> tuple:
        """(artifact or None, Lookup). A hit is recorded at once; a miss by store().

        `previous_key`: the key of the caller's own code for this signature when it recompiles
        (its dependencies changed); what changed is told against it, not against the latest
        entry of any function of the same name (two live kernels `k` of different cells)."""
        started = time.perf_counter()
        signature = str(argtypes)
        enabled = _enabled(options)
        if toolchain is None:
            toolchain = self._toolchain(target, enabled)
        parts = key_parts(fingerprint, signature, options, target, arch, toolchain)
        key = key_of(parts)
        pending = Lookup(key, parts, func_name, signature, target, fingerprint, enabled)
        pending.previous = previous_key
        if not enabled:
            pending.changes = (CacheChange(CacheReason.DISABLED, text="disabled"),)
            return self._missed(pending, started)
        with self._lock:
            found = self.memory.get(key)
        if found is not None:
            return self._hit(pending, found[0], found[1], "memory", started), pending
        try:
            entry = self.disk.read(key)
            artifact = _artifact_from(key, entry) if entry is not None else None
        except FormatMismatch as exc:  # an older gpunb's entry: compiled again, no warning
            pending.changes = (_format_changed(key, exc),)
            return self._missed(pending, started)
        except CorruptEntry as exc:
            pending.changes = (_corrupt(f"corrupt entry {key}: {exc}"),)
            return self._missed(pending, started)
        except Untrusted as exc:
            pending.changes = (_untrusted(exc),)
            return self._missed(pending, started)
        except Exception as exc:  # noqa: BLE001 - verified JSON that is no artifact: corrupt too
            self.disk.remove([key])  # the files verify: only removing them lets a store rewrite
            what = "corrupt entry" if isinstance(exc, WrongKey) else "no artifact in entry"
            pending.changes = (_corrupt(f"{what} {key}: {exc}"),)
            return self._missed(pending, started)
        if artifact is None and self.disk.problem is not None:  # the directory is refused
            pending.changes = (_untrusted(self.disk.problem),)
            return self._missed(pending, started)
        if artifact is not None:
            return self._disk_hit(pending, key, artifact, entry, started), pending
        claim = self._claim(pending)
        if claim.found is not None:
            source, artifact, entry = claim.found
            if source == "memory":  # another thread of this process compiled it
                return self._hit(pending, artifact, entry, source, started), pending
            return self._disk_hit(pending, key, artifact, entry, started), pending
        changes = self._why_missed(pending)
        if claim.outcome == "timed out":
            changes.append(CacheChange(changes[0].reason, text=(
                f"waited {pending.waited_ms:.0f} ms for another compile of it, then compiled it "
                "here")))
        pending.changes = tuple(changes)
        return self._missed(pending, started)

    def _disk_hit(self, pending: Lookup, key: str, artifact, entry, started: float):
        self.disk.touch(key)
        with self._lock:
            self.memory.put(key, artifact, entry.body)
        return self._hit(pending, artifact, entry.body, "disk", started, entry.size)

    # ---- one compile per key, across threads and processes -----------------------------------

    def _claim(self, pending: Lookup):
        """Claim the key for this process's compile, or wait for the thread or the process
        that is compiling it (compile_once.py)."""
        from gpunb.cache.compile_once import Claim, ThreadClaims
        from gpunb.foundation import config

        wait_s = config.cache_wait_seconds()
        if wait_s <= 0:
            return Claim(None, None, 0.0, "compile")
        key = pending.key
        with self._lock:
            if self.claims is None:
                self.claims = ThreadClaims()
        started = time.monotonic()
        waited_ms = 0.0  # on another thread whose compile then failed
        while True:
            compiling, first = self.claims.enter(key)
            if first:
                break
            if compiling.owner == threading.get_ident():
                # this thread's own claim, never stored or abandoned (a caller that let a
                # compile error escape): take it over, never wait on ourselves
                pending.claim = compiling
                return Claim(compiling.lock, None, 0.0, "compile")
            finished = compiling.done.wait(max(0.0, started + wait_s - time.monotonic()))
            found = self._probe(key)
            waited_ms = pending.waited_ms = (time.monotonic() - started) * 1000.0
            if found is not None or not finished:
                return Claim(None, found, waited_ms, "found" if found is not None else "timed out")
            # its compile failed: claim the key again
        try:
            result = self._claim_across_processes(key, wait_s, config.cache_lock_stale_seconds())
        except BaseException:  # interrupted while waiting: no thread may wait on us
            self.claims.leave(key, compiling)
            raise
        pending.waited_ms = waited_ms + result.waited_ms
        if result.found is not None:
            self.claims.leave(key, compiling)  # waiting threads find the entry on disk
        else:
            compiling.lock = result.lock
            pending.claim = compiling
        return result

    def _claim_across_processes(self, key: str, wait_s: float, stale_s: float):
        from gpunb.cache.compile_once import Claim, claim

        if not self.disk.can_write():
            return Claim(None, None, 0.0, "compile")
        try:
            return claim(self.disk.lock_path(key), lambda: self._probe(key), wait_s, stale_s)
        except OSError as exc:  # read-only or full: one warning, then memory only
            self.disk.failed(exc, "taking a compile lock")  # (anything else: this key only)
            return Claim(None, None, 0.0, "compile")

    def _probe(self, key: str):
        """(source, artifact, entry or body) once someone stored `key`, else None."""
        with self._lock:
            found = self.memory.get(key)
        if found is not None:
            return "memory", found[0], found[1]
        try:
            entry = self.disk.read(key)
            return None if entry is None else ("disk", _artifact_from(key, entry), entry)
        except Exception:  # noqa: BLE001 - damaged or refused: its writer or we rebuild it
            return None

    def _release(self, pending: Lookup) -> None:
        compiling, pending.claim = pending.claim, None
        if compiling is not None:
            self.claims.leave(pending.key, compiling)

    def abandon(self, pending: Lookup | str) -> None:
        """The compile after a miss failed: free the key, so that a waiting process compiles it
        (and reports the same error) at once instead of after its wait."""
        with self._lock:
            if isinstance(pending, str):
                pending = self.pending.pop(pending, None)
            else:
                self.pending.pop(pending.key, None)
        if pending is not None:
            self._release(pending)

    def _hit(self, pending: Lookup, artifact, body: dict, source: str, started: float,
             size: int = 0):
        fp = pending.fingerprint
        artifact = relocate(artifact, body.get("locations"), fp.locations)
        pointer = _pointer(fp, pending.signature, pending.target)
        with self._lock:
            previous = pending.previous or self.latest.get(pointer)
            self.latest[pointer] = pending.key
            self.bodies[pending.key] = body
        # this process had other code for the function (a helper was redefined) and the new
        # code was in the cache already: the hit says what changed, as a miss would
        changes = self._why_changed(previous, pending) \
            if previous is not None and previous != pending.key else ()
        pending.time_ms = (time.perf_counter() - started) * 1000.0
        pending.event = _decided(pending, CacheKind.HIT, CacheSource(source), None, changes, 0.0,
                                 size or int(body.get("entry_bytes", 0)))
        return artifact

    def _why_changed(self, previous: str, pending: Lookup) -> tuple:
        """What differs from this process's previous entry of the function, and where the new
        code came from (a hit found it compiled already)."""
        body = self.body_of(previous)
        if body is None:
            return ()
        old_deps = [Dependency.from_json(d) for d in body.get("dependencies", ())]
        changes = explain_change(body.get("parts", {}), old_deps,
                                 str(body.get("code_digest", "")), pending.parts,
                                 pending.fingerprint)
        changes.append(CacheChange(changes[0].reason, text=(
            "its code for the new definition was in the cache already (compiled by another "
            "process sharing the cache, or for an earlier definition)")))
        return tuple(changes)

    def _missed(self, pending: Lookup, started: float) -> tuple:
        pending.time_ms = (time.perf_counter() - started) * 1000.0
        with self._lock:
            self.pending[pending.key] = pending
            while len(self.pending) > 256:
                self.pending.pop(next(iter(self.pending)))
        return None, pending

    def _why_missed(self, pending: Lookup) -> list[CacheChange]:
        """Diff against the previous entry of this function, signature and target."""
        pointer = _pointer(pending.fingerprint, pending.signature, pending.target)
        with self._lock:
            previous = pending.previous or self.latest.get(pointer)
        if previous is None:
            previous = self.disk.read_pointer(pointer)
        if previous is None:
            return [_NEW]
        if previous == pending.key:
            return [_NEW, _removed("its entry was removed (cache cleared or pruned)")]
        try:
            body = self._body(previous)
        except FormatMismatch as exc:  # the first lookup after an upgrade: nothing to diff
            return [_format_changed(previous, exc)]
        except (CorruptEntry, Untrusted):
            body = None
        if body is None:
            return [_NEW, _removed("the previous entry was removed (cache cleared or pruned)")]
        old_deps = [Dependency.from_json(d) for d in body.get("dependencies", ())]
        return explain_change(body.get("parts", {}), old_deps, str(body.get("code_digest", "")),
                              pending.parts, pending.fingerprint)

    def body_of(self, key: str) -> dict | None:
        """The metadata body of an entry (memory or disk), None if gone or unreadable."""
        try:
            return self._body(key)
        except (CorruptEntry, Untrusted):
            return None

    def _body(self, key: str) -> dict | None:
        """body_of, with the disk's CorruptEntry or Untrusted raised."""
        with self._lock:
            body = self.bodies.get(key)
            if body is None:
                found = self.memory.get(key)
                body = found[1] if found is not None else None
        if body is not None:
            return body
        return self.disk.read_meta(key)

    # ---- store ---------------------------------------------------------------------------------

    def store(self, pending: Lookup | str, artifact, fingerprint: FunctionFingerprint | None = None,
              compile_ms: float = 0.0) -> CacheEvent:
        """Keep a freshly compiled artifact (memory, then disk) and record the miss event."""
        if isinstance(pending, str):
            with self._lock:
                pending = self.pending.pop(pending)
        else:
            with self._lock:
                self.pending.pop(pending.key, None)
        fp = fingerprint or pending.fingerprint
        size = 0
        if pending.enabled:
            body = _body(pending, fp, artifact, compile_ms)
            pointer = _pointer(fp, pending.signature, pending.target)
            with self._lock:
                self.memory.put(pending.key, artifact, body)
                self.latest[pointer] = pending.key
                self.bodies[pending.key] = body
            try:
                if getattr(artifact, "disk_cache", True):
                    size = self.disk.write(pending.key, body, _blobs_of(artifact), pointer)
                    body["entry_bytes"] = size  # a later memory hit shows the entry's size
            finally:
                self._release(pending)  # after the entry is in place: waiters find it
        changes = pending.changes or (_NEW,)
        pending.event = _decided(pending, CacheKind.MISS, None, changes[0].reason, changes,
                                 float(compile_ms), size, fp)
        return pending.event

    def kept(self, function: str, fingerprint: FunctionFingerprint, signature: str, target: str,
             key: str, entry_bytes: int, time_ms: float) -> CacheEvent:
        """Record that a specialisation was kept: what it reads was rebound (or a notebook cell
        ran), the content is the same (a reformatted helper, an equal value), so nothing was
        rebuilt. Without this event a panel would still show the last miss."""
        pending = Lookup(key, {}, function, signature, target, fingerprint, True)
        pending.time_ms = time_ms
        return _decided(pending, CacheKind.HIT, CacheSource.MEMORY, CacheReason.RECHECKED,
                        (_RECHECKED,), 0.0, entry_bytes)

    # ---- maintenance ---------------------------------------------------------------------------

    def clear(self, name: str | None = None, module: str | None = None) -> int:
        """Remove the entries of one function (by name or qualname; with `module`, only those
        its module defined: `k` of pkg/a.py, not `k` of pkg/b.py), or all; the count removed."""
        with self._lock:
            removed = self.memory.remove_function(name, module)
            if name is None:
                self.latest.clear()
                self.bodies.clear()
        keys = [e.key for e in self.disk.entries()
                if name is None or (e.function == name or e.function.rpartition(".")[2] == name)
                and (module is None or e.module in ("", module))]
        return max(removed, self.disk.remove(keys) if keys else 0)

    def forget_memory(self) -> None:
        """Drop the memory tier (the next lookups read the disk, as a new process would)."""
        with self._lock:
            self.memory.items.clear()
            self.latest.clear()
            self.bodies.clear()


_NEW = CacheChange(CacheReason.NEW, text="new")
_RECHECKED = CacheChange(CacheReason.RECHECKED, text="what it reads was rebound or redefined; the "
                                                     "content is unchanged")


def _removed(text: str) -> CacheChange:
    return CacheChange(CacheReason.NEW, text=text)


def _corrupt(text: str) -> CacheChange:
    return CacheChange(CacheReason.CORRUPT, text=text)


def _format_changed(key: str, exc: FormatMismatch) -> CacheChange:
    return CacheChange(CacheReason.FORMAT_CHANGED, "", f"format changed: entry {key} was {exc}",
                       "format", before=str(exc.found), after=str(STORE_FORMAT))


def _untrusted(exc: Untrusted) -> CacheChange:
    """`miss (untrusted: owned by uid 1001)`: the why as subject, path and fix in the text."""
    return CacheChange(CacheReason.UNTRUSTED, exc.why, f"untrusted: {exc}", "cache entry",
                       exc.path)


def _decided(pending: Lookup, kind: CacheKind, source: CacheSource | None,
             reason: CacheReason | None, changes: tuple, compile_ms: float, size: int,
             fingerprint: FunctionFingerprint | None = None) -> CacheEvent:
    """The one place cache decisions become events: built, logged and published."""
    fp = fingerprint or pending.fingerprint
    return provenance.record(CacheEvent(
        pending.function, pending.signature, pending.target, kind, source, reason,
        tuple(changes), pending.time_ms, compile_ms, pending.key, size, fp.defined_at,
        pending.started, pending.waited_ms))


def _enabled(options: dict | None) -> bool:
    from gpunb.foundation import config

    return config.cache_enabled() and (options or {}).get("cache", True) is not False


def _artifact_from(key: str, entry):
    """The entry's artifact, once the entry is shown to be what `key` names: its parts (the
    content, types, options, target and toolchain it was made from) hash to `key`. An entry
    copied or renamed under another key fails here - a miss, never another kernel's code."""
    from gpunb.foundation.artifact import KernelArtifact

    parts = entry.body.get("parts")
    if not isinstance(parts, dict):
        raise WrongKey("it lists no key parts")
    made_for = key_of(parts)
    if made_for != key:
        raise WrongKey(f"it was made for key {made_for} (copied or renamed)")
    data = dict(entry.body["artifact"])
    for ext, field in _TEXT_BLOBS:
        data[field] = entry.blobs[ext].decode("utf-8")
    return KernelArtifact.from_json_dict(data, entry.blobs["bin"])


# the artifact's texts, each a blob of its entry (store.BLOBS): the metadata stays small
_TEXT_BLOBS = (("ptx", "ptx"), ("ll", "llvm_ir"), ("s", "asm"))


def _blobs_of(artifact) -> dict:
    blobs = {ext: (getattr(artifact, field) or "").encode("utf-8") for ext, field in _TEXT_BLOBS}
    blobs["bin"] = artifact.binary
    return blobs


def _body(pending: Lookup, fp: FunctionFingerprint, artifact, compile_ms: float) -> dict:
    data = artifact.to_json_dict()
    for _, field in _TEXT_BLOBS:
        data.pop(field, None)  # stored as blobs
    return {
        "function": pending.function, "qualname": fp.qualname, "signature": pending.signature,
        "module": getattr(fp.py_func, "__module__", None) or "",
        "target": pending.target, "arch": pending.parts.get("arch"), "parts": pending.parts,
        "code_digest": fp.code_digest, "defined_at": fp.defined_at,
        "dependencies": [d.to_json() for d in fp.dependencies],
        "locations": [list(loc) for loc in fp.locations],
        "created": time.time(), "compile_ms": float(compile_ms),
        "artifact": data,
    }
