"""Cache entries in memory and on disk: atomic writes, verified reads, LRU pruning. No pickle.

One disk entry is `<key>.json` (metadata and the artifact's JSON, checksummed) + `<key>.bin` (cubin
or host object) + `<key>.ptx`. Blobs are written first and the JSON last, each to a temp file in
the same directory and `os.replace`d, so a reader that finds the JSON finds its blobs. Writers take
an exclusive `flock` on `<dir>/.lock`, and never replace the blobs of an entry that verifies (same
key, same content: first writer wins); so 8 processes storing the same key cannot interleave one's
JSON with another's blobs. Readers take no lock; a failed verification is confirmed under the lock
before the entry is removed (it may have been a concurrent prune or repair, not corruption).

`<key>.lock` files are the per-key compile locks of compile_once.py, not part of entries.

LRU: a disk hit touches the JSON's mtime (atime is unreliable under relatime/noatime mounts), and
pruning removes the least recently touched entries until the total is under 90% of the cap.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
import warnings
from collections import OrderedDict, namedtuple

from gpunb.cache.encode import blake2b

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, writes stay atomic
    fcntl = None

FORMAT_VERSION = 1
_KEY = re.compile(r"^[0-9a-f]{40}$")
_BLOBS = ("bin", "ptx")
LOCK_SUFFIX = ".lock"  # `<key>.lock`: a process is compiling that key (keylock.py)
_warned_dirs: set[str] = set()


class CorruptEntry(Exception):
    """An entry failed verification (what failed is the message)."""


class CacheDirWarning(UserWarning):
    """The cache directory cannot be used; the cache works in memory only."""


def digest(data: bytes) -> str:
    return blake2b(data, digest_size=20).hexdigest()


def _canonical(body: dict) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def atomic_write(path: str, data: bytes) -> None:
    """Write to a temp file in the same directory, then os.replace: readers see old or new.

    The temp name carries host and pid before mkstemp's random part (created O_EXCL): writers
    on several nodes of a shared filesystem never pick the same name (numba#7952)."""
    from gpunb.cache.keylock import host_tag

    folder = os.path.dirname(path)
    import tempfile  # writes only: a disk hit never pays for importing it

    fd, tmp = tempfile.mkstemp(prefix=f".tmp-{host_tag()}-{os.getpid()}-", dir=folder)  # 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# Records as namedtuples: immutable like frozen dataclasses, without their ~1 ms definition cost
# each on the disk-hit path of a new process.
StoredEntry = namedtuple("StoredEntry", "key body binary ptx size")
StoredEntry.__doc__ = "A verified disk entry: metadata body and blobs."
EntryInfo = namedtuple("EntryInfo", "key function signature target size last_used defined_at "
                                    "problem", defaults=("",))
EntryInfo.__doc__ = ("One entry as listed by status/prune/clear (metadata only); last_used is "
                     "the JSON's mtime, touched on every disk hit; problem is non-empty when the "
                     "entry does not verify.")


class MemoryStore:
    """key -> (artifact, body): the in-process tier, LRU-bounded by entry count."""

    def __init__(self, max_entries: int = 512):
        self.max_entries = max_entries
        self.items: OrderedDict = OrderedDict()

    def get(self, key: str):
        found = self.items.get(key)
        if found is not None:
            self.items.move_to_end(key)
        return found

    def put(self, key: str, artifact, body: dict) -> None:
        self.items[key] = (artifact, body)
        self.items.move_to_end(key)
        while len(self.items) > self.max_entries:
            self.items.popitem(last=False)

    def remove_function(self, name: str | None) -> int:
        keys = [k for k, (_, body) in self.items.items()
                if name is None or body.get("function") == name or body.get("name") == name]
        for k in keys:
            del self.items[k]
        return len(keys)


class DiskStore:
    """The on-disk tier of one directory; degrades to "absent" (reads) / no-op (writes)."""

    def __init__(self, directory: str, max_bytes: int):
        self.directory = directory
        self.max_bytes = max_bytes
        self.writable = True
        self.trusted: bool | None = None  # None: not checked yet

    # ---- paths and safety ----------------------------------------------------------------------

    def path(self, key: str, ext: str) -> str:
        return os.path.join(self.directory, f"{key}.{ext}")

    def lock_path(self, key: str) -> str:
        """Where a process compiling `key` holds its lock (keylock.py)."""
        return os.path.join(self.directory, f"{key}{LOCK_SUFFIX}")

    def can_write(self) -> bool:
        """The directory exists (created if need be), is ours, and has not failed a write."""
        return self._ensure_dir()

    def give_up(self, exc: OSError) -> None:
        """A write failed (read-only, full disk): memory only from now on, one warning."""
        self.writable = False
        self._warn_once(f"cannot write to {self.directory} ({exc.strerror or exc})")

    def _warn_once(self, message: str) -> None:
        if self.directory not in _warned_dirs:
            _warned_dirs.add(self.directory)
            warnings.warn(f"gpunb cache: {message}; using the in-memory cache only",
                          CacheDirWarning, stacklevel=4)

    def _is_trusted(self) -> bool:
        """Only a directory we own and others cannot write holds code we will load."""
        if self.trusted is None:
            try:
                st = os.stat(self.directory)
            except OSError:
                return False  # absent: nothing to read; not cached, it may be created later
            owned = not hasattr(os, "geteuid") or st.st_uid == os.geteuid()
            self.trusted = owned and not st.st_mode & 0o002
            if not self.trusted:
                self.writable = False
                self._warn_once(f"{self.directory} is not owned by this user or is world-writable")
        return self.trusted

    def _ensure_dir(self) -> bool:
        if not self.writable:
            return False
        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
        except OSError as exc:
            self.writable = False
            self._warn_once(f"cannot create {self.directory} ({exc.strerror or exc})")
            return False
        return self._is_trusted()

    @contextlib.contextmanager
    def _locked(self):
        if fcntl is None:
            yield
            return
        fd = os.open(os.path.join(self.directory, ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    # ---- reading -------------------------------------------------------------------------------

    def read_meta(self, key: str) -> dict | None:
        """The verified metadata body of an entry, None if absent; CorruptEntry if it fails."""
        if not self._is_trusted():
            return None
        try:
            with open(self.path(key, "json"), "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CorruptEntry(f"unreadable metadata ({exc.strerror or exc})") from None
        return _verify_meta(key, raw)

    def read(self, key: str) -> StoredEntry | None:
        """The verified entry, None if absent; CorruptEntry (after removing it) if it fails."""
        try:
            return self._read_unlocked(key)
        except CorruptEntry as first:
            return self._confirm_corrupt(key, first)

    def _read_unlocked(self, key: str) -> StoredEntry | None:
        body = self.read_meta(key)
        if body is None:
            return None
        blobs = {}
        size = os.path.getsize(self.path(key, "json")) if os.path.exists(self.path(key, "json")) \
            else 0
        for ext in _BLOBS:
            try:
                with open(self.path(key, ext), "rb") as f:
                    data = f.read()
            except OSError:
                raise CorruptEntry(f"missing {key}.{ext}") from None
            info = body["blobs"][ext]
            if len(data) != info["size"]:
                raise CorruptEntry(f"{key}.{ext} is {len(data)} bytes, expected {info['size']}")
            if digest(data) != info["blake2b"]:
                raise CorruptEntry(f"{key}.{ext} checksum mismatch")
            blobs[ext] = data
            size += len(data)
        try:
            ptx = blobs["ptx"].decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptEntry(f"{key}.ptx is not text") from None
        return StoredEntry(key, body, blobs["bin"], ptx, size)

    def _confirm_corrupt(self, key: str, first: CorruptEntry) -> StoredEntry | None:
        """Re-verify under the writers' lock; remove the entry only if it still fails."""
        if not self.writable or not os.path.isdir(self.directory):
            raise first
        try:
            with self._locked():
                try:
                    return self._read_unlocked(key)
                except CorruptEntry:
                    self._remove_files(key)
                    raise
        except OSError:
            raise first from None

    def touch(self, key: str) -> None:
        with contextlib.suppress(OSError):
            os.utime(self.path(key, "json"))

    # ---- writing -------------------------------------------------------------------------------

    def write(self, key: str, body: dict, binary: bytes, ptx: str,
              pointer: str | None = None) -> int:
        """Store an entry (no-op if an identical key verifies); entry bytes, 0 if not stored."""
        if not self._ensure_dir():
            return 0
        ptx_bytes = ptx.encode("utf-8")
        body = dict(body)
        body["blobs"] = {"bin": {"size": len(binary), "blake2b": digest(binary)},
                         "ptx": {"size": len(ptx_bytes), "blake2b": digest(ptx_bytes)}}
        doc = {"format": FORMAT_VERSION, "key": key, "body_blake2b": digest(_canonical(body)),
               "body": body}
        meta = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
        try:
            with self._locked():
                try:
                    existing = self._read_unlocked(key)
                except CorruptEntry:
                    existing = None
                if existing is None:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self.path(key, "json"))  # never leave JSON over new blobs
                    atomic_write(self.path(key, "bin"), binary)
                    atomic_write(self.path(key, "ptx"), ptx_bytes)
                    atomic_write(self.path(key, "json"), meta)
                if pointer is not None:
                    self.write_pointer(pointer, key)
                self._prune_locked(self.max_bytes)
            if existing is not None:
                return existing.size
            return len(meta) + len(binary) + len(ptx_bytes)
        except OSError as exc:
            self.give_up(exc)
            return 0

    # ---- "previous entry of this function" pointers --------------------------------------------

    def _pointer_path(self, pointer: str) -> str:
        name = blake2b(pointer.encode(), digest_size=16).hexdigest()
        return os.path.join(self.directory, "by-name", name)

    def write_pointer(self, pointer: str, key: str) -> None:
        path = self._pointer_path(pointer)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        atomic_write(path, key.encode())

    def read_pointer(self, pointer: str) -> str | None:
        if not self._is_trusted():
            return None
        try:
            with open(self._pointer_path(pointer), "rb") as f:
                key = f.read(64).decode("ascii", "replace").strip()
        except OSError:
            return None
        return key if _KEY.match(key) else None

    # ---- listing, removing, pruning ------------------------------------------------------------

    def _remove_files(self, key: str) -> None:
        for ext in ("json",) + _BLOBS:  # JSON first: no reader may find JSON without blobs
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path(key, ext))

    def entries(self) -> list[EntryInfo]:
        if not self._is_trusted():
            return []
        out = []
        for item in _scandir(self.directory):
            stem, _, ext = item.name.partition(".")
            if ext != "json" or not _KEY.match(stem):
                continue
            try:
                st = item.stat()
                size = st.st_size + sum(_size(self.path(stem, e)) for e in _BLOBS)
                body, problem = self.read_meta(stem) or {}, ""
            except CorruptEntry as exc:
                body, problem = {}, str(exc)
            except OSError:
                continue
            out.append(EntryInfo(stem, str(body.get("function", "?")),
                                 str(body.get("signature", "?")), str(body.get("target", "?")),
                                 size, st.st_mtime, str(body.get("defined_at", "")), problem))
        return out

    def remove(self, keys) -> int:
        if not self._ensure_dir():
            return 0
        with self._locked():
            for key in keys:
                self._remove_files(key)
        return len(keys)

    def prune(self, max_bytes: int | None = None) -> int:
        """Remove least recently used entries until under 90% of the cap; the count removed."""
        if not os.path.isdir(self.directory) or not self._ensure_dir():
            return 0
        with self._locked():
            return self._prune_locked(self.max_bytes if max_bytes is None else max_bytes)

    def _prune_locked(self, max_bytes: int) -> int:
        now = time.time()
        groups: dict[str, dict] = {}
        for item in _scandir(self.directory):
            name = item.name
            if name.startswith(".tmp-"):
                with contextlib.suppress(OSError):
                    if now - item.stat().st_mtime > 600:  # a writer that died mid-write
                        os.unlink(item.path)
                continue
            stem, _, ext = name.partition(".")
            if f".{ext}" == LOCK_SUFFIX and _KEY.match(stem):  # not `.lock`, the writers' flock
                with contextlib.suppress(OSError):
                    # a compiling holder touches its lock every few seconds; one untouched for
                    # a day was left by a crash on a key nobody looked up since
                    if now - item.stat().st_mtime > 86400:
                        os.unlink(item.path)
                continue
            if _KEY.match(stem) and ext in ("json",) + _BLOBS:
                with contextlib.suppress(OSError):
                    st = item.stat()
                    group = groups.setdefault(stem, {"size": 0, "used": None})
                    group["size"] += st.st_size
                    if ext == "json":
                        group["used"] = st.st_mtime
        removed = 0
        for stem, group in list(groups.items()):
            if group["used"] is None:  # blobs without JSON: a crashed writer (we hold the lock)
                self._remove_files(stem)
                del groups[stem]
        total = sum(g["size"] for g in groups.values())
        if total > max_bytes:
            for stem, group in sorted(groups.items(), key=lambda kv: kv[1]["used"]):
                if total <= max_bytes * 0.9:
                    break
                self._remove_files(stem)
                total -= group["size"]
                removed += 1
        return removed


def _verify_meta(key: str, raw: bytes) -> dict:
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise CorruptEntry("metadata is not JSON (truncated or overwritten)") from None
    if not isinstance(doc, dict) or "body" not in doc:
        raise CorruptEntry("metadata is not a gpunb cache entry")
    if doc.get("format") != FORMAT_VERSION:
        raise CorruptEntry(f"format version {doc.get('format')!r}, expected {FORMAT_VERSION}")
    if doc.get("key") != key:
        raise CorruptEntry("metadata belongs to another key")
    body = doc["body"]
    if not isinstance(body, dict) or digest(_canonical(body)) != doc.get("body_blake2b"):
        raise CorruptEntry("metadata checksum mismatch")
    blobs = body.get("blobs")
    if not isinstance(blobs, dict) or any(
            not isinstance(blobs.get(ext), dict) or not isinstance(blobs[ext].get("size"), int)
            for ext in _BLOBS):
        raise CorruptEntry("metadata lists no blobs")
    return body


def _scandir(directory: str) -> list:
    try:
        with os.scandir(directory) as it:
            return list(it)
    except OSError:
        return []


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
