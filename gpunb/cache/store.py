"""Cache entries in memory and on disk: atomic writes, verified reads, trusted files, LRU pruning.

One disk entry is `<key>.json`, its metadata, and its blobs: `<key>.bin` (cubin or host object),
`<key>.ptx`, `<key>.ll` (LLVM IR) and `<key>.s` (host assembly); an empty blob has no file. The
metadata's format is entry_format.py's: at most META_LIMIT bytes of it are read, its body's raw
bytes checked (and a shared cache's MAC) before they are parsed; each blob is read no further
than the size the metadata lists. Blobs are written first and the metadata last, each to a temp
file in the same directory and `os.replace`d, so a reader that finds the metadata finds its
blobs. Writers take an exclusive `flock` on `<dir>/.lock`, and never replace the blobs of an
entry that verifies (same key, same content: first writer wins); so 8 processes storing the same
key cannot interleave one's metadata with another's blobs. Readers take no lock; a failed
verification is confirmed under the lock before the entry is removed (it may have been a
concurrent prune or repair, not corruption). An entry of another format (an older gpunb's) is a
miss of its own kind, removed and rebuilt like a corrupt one.

Only what the trust model allows is read (trust.py): in a private cache, a directory and files of
this user that nobody else can write; in a shared one, entries whose MAC verifies with the team's
key (auth.py). A refused file raises `Untrusted` (the lookup's `miss (untrusted: why)`, one warning
per path); it is left alone, and the next write of that key replaces it.

`<key>.lock` files are the per-key compile locks of compile_once.py, not part of entries.

LRU: a disk hit touches the metadata's mtime (atime is unreliable under relatime/noatime mounts),
and pruning removes the least recently touched entries until the total is under 90% of the cap.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import threading
import time
from collections import OrderedDict, namedtuple

from gpunb.cache import trust
from gpunb.cache.encode import blake2b
from gpunb.cache.entry_format import (
    BLOBS,
    FORMAT_VERSION,
    META_LIMIT,
    CorruptEntry,
    FormatMismatch,
    check_header,
    digest,
    encode_metadata,
    parse_body,
    split_metadata,
)
from gpunb.cache.files import (
    atomic_write,
    atomic_write_at,
    clear_path,
    is_persistent,
    leftover_to_remove,
    open_folder,
)
from gpunb.cache.trust import NotAFile, TooLarge, Untrusted
from gpunb.cache.writers import TEMP_PREFIX
from gpunb.foundation.user_warnings import CacheDirWarning, UntrustedCacheWarning

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, writes stay atomic
    fcntl = None

# Held while a thread of this process holds the writers' flock, and taken before a fork: an
# flock belongs to the open file, which a child forked meanwhile shares; the child never closes
# it, so its own first store waited forever for itself (and the parent's next one for the
# child to exit).
_HOLDING_FLOCK = threading.RLock()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_HOLDING_FLOCK.acquire, after_in_parent=_HOLDING_FLOCK.release,
                        after_in_child=_HOLDING_FLOCK.release)

__all__ = ["BLOBS", "FORMAT_VERSION", "CacheDirWarning", "CorruptEntry", "DiskStore", "EntryInfo",
           "FormatMismatch", "MemoryStore", "StoredEntry", "Untrusted", "atomic_write", "digest",
           "encode_metadata", "split_metadata"]

_KEY = re.compile(r"^[0-9a-f]{40}$")
LOCK_SUFFIX = ".lock"  # `<key>.lock`: a process is compiling that key (keylock.py)
_POINTER_LIMIT = 64
_MIN_FILE_LIMIT = 64 << 20  # no blob is listed (or read) past max(the cache's size cap, this)
# what opening a path says when something other than a file is there (O_NOFOLLOW: a link)
_NOT_A_FILE = {errno.EISDIR, errno.ELOOP, errno.ENXIO}
_warned_dirs: set = set()  # (directory, what) of the warnings already given


# Records as namedtuples: immutable like frozen dataclasses, without their ~1 ms definition cost
# each on the disk-hit path of a new process.
StoredEntry = namedtuple("StoredEntry", "key body blobs size")
StoredEntry.__doc__ = "A verified disk entry: metadata body and blobs ({ext: bytes}, all of BLOBS)."
EntryInfo = namedtuple("EntryInfo", "key function signature target size last_used defined_at "
                                    "problem module", defaults=("", ""))
EntryInfo.__doc__ = ("One entry as listed by status/prune/clear (metadata only); last_used is "
                     "the JSON's mtime, touched on every disk hit; problem is non-empty when the "
                     "entry does not verify; module is the defining module's name ('' in entries "
                     "of older gpunbs).")


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

    def remove_function(self, name: str | None, module: str | None = None) -> int:
        keys = [k for k, (_, body) in self.items.items()
                if name is None or (body.get("function") == name or body.get("name") == name)
                and module in (None, body.get("module"))]
        for k in keys:
            del self.items[k]
        return len(keys)


class DiskStore:
    """The on-disk tier of one directory; degrades to "absent" (reads) / no-op (writes).

    `shared`: the directory may be written by others (trust.py); entries are then signed and
    verified with the key in `key_file`. `anchor`: a directory that must exist before this one
    is created (the home directory of a default cache directory: never created)."""

    def __init__(self, directory: str, max_bytes: int, shared: bool = False,
                 key_file: str | None = None, anchor: str | None = None):
        self.directory = directory
        self.max_bytes = max_bytes
        self.shared = shared
        self.key_file = key_file
        self.anchor = anchor
        self.writable = True
        self.trusted: bool | None = None  # None: not checked yet (or the directory is absent)
        self.problem: Untrusted | None = None  # why the directory is not trusted
        self._key = None  # shared caches: the auth.CacheKey, or the Untrusted saying why none

    # ---- paths and safety ----------------------------------------------------------------------

    def path(self, key: str, ext: str) -> str:
        return os.path.join(self.directory, f"{key}.{ext}")

    def lock_path(self, key: str) -> str:
        """Where a process compiling `key` holds its lock (keylock.py)."""
        return os.path.join(self.directory, f"{key}{LOCK_SUFFIX}")

    def can_write(self) -> bool:
        """The directory exists (created if need be), is trusted, and has not failed a write."""
        return self._ensure_dir()

    def ready(self) -> bool:
        """Whether the directory may be read: it exists (or was just created) and is trusted."""
        return self._ensure_dir() or self._is_trusted()

    def give_up(self, exc: OSError) -> None:
        """A write failed for good (read-only, full disk, no permission): memory only from now
        on, one warning. Any other error costs just the one write (see failed)."""
        self.writable = False
        self._warn_once(f"cannot write to {self.directory} ({exc.strerror or exc}); using the "
                        "in-memory cache only", "write")

    def failed(self, exc: OSError, what: str) -> None:
        """An operation on the directory failed: give up if it always will, else warn once per
        kind of error and go on (one ENOENT - the directory removed under us - is not the end
        of the disk tier)."""
        if is_persistent(exc):
            self.give_up(exc)
            return
        self._warn_once(f"{what} in {self.directory} failed ({exc.strerror or exc}); the disk "
                        "cache goes on", f"errno {exc.errno}")

    def _warn_once(self, message: str, what: str,
                   category: type[Warning] = CacheDirWarning) -> None:
        from gpunb.foundation.user_warnings import warn_user

        if (self.directory, what) not in _warned_dirs:
            _warned_dirs.add((self.directory, what))
            warn_user(f"gpunb cache: {message}", category)

    def warn_untrusted(self, exc: Untrusted) -> None:
        """One warning per refused path: what, why, and the fix."""
        self._warn_once(f"{exc.path}: {exc.why}; nothing there is loaded. Fix: {exc.fix}",
                        f"untrusted {exc.path}", UntrustedCacheWarning)

    def _is_trusted(self) -> bool:
        """Only a directory the trust model accepts (trust.py) holds code we will load."""
        if self.trusted is None:
            self.problem = trust.directory_problem(self.directory, self.shared)
            if self.problem is None and not os.path.isdir(self.directory):
                return False  # absent: nothing to read; not memoised, it may be created later
            self.trusted = self.problem is None
            if self.problem is not None:
                self.writable = False
                self.warn_untrusted(self.problem)
        return self.trusted

    def _ensure_dir(self) -> bool:
        if not self.writable:
            return False
        if self.anchor is not None and not os.path.isdir(self.anchor):
            self.writable = False
            self._warn_once(f"the home directory {self.anchor} does not exist, and gpunb does "
                            "not create it: the disk cache is off (memory only). Set "
                            "GPUNB_CACHE_DIR to a directory of yours, or HOME to your home",
                            "anchor")
            return False
        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
        except OSError as exc:
            self.writable = False
            self._warn_once(f"cannot create {self.directory} ({exc.strerror or exc}); using the "
                            "in-memory cache only", "create")
            return False
        return self._is_trusted()

    def cache_key(self):
        """The shared cache's auth.CacheKey; Untrusted when there is none to use."""
        if self._key is None:
            from gpunb.cache import auth
            from gpunb.foundation import config

            path = self.key_file or config.cache_key_file()
            try:
                self._key = auth.load_key(path)
            except Untrusted as exc:
                self._key = exc
        if isinstance(self._key, Untrusted):
            raise self._key
        return self._key

    def _file_mode(self) -> int | None:
        """A shared cache's files are readable where the directory is (its group): mode 0640
        in a 2770 directory. Private files stay 0600."""
        if not self.shared:
            return None
        try:
            return 0o600 | (os.stat(self.directory).st_mode & 0o044)
        except OSError:
            return None

    @contextlib.contextmanager
    def _locked(self):
        if fcntl is None:
            yield
            return
        path = os.path.join(self.directory, ".lock")
        with _HOLDING_FLOCK:
            try:
                fd = self._open_lock_file(path)
            except OSError as exc:
                if exc.errno not in _NOT_A_FILE:
                    raise
                clear_path(path)  # a directory or a link where the lock file belongs: again
                fd = self._open_lock_file(path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # closing releases the lock

    def _open_lock_file(self, path: str) -> int:
        flags = os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            return os.open(path, os.O_RDWR | flags, 0o644 if self.shared else 0o600)
        except PermissionError:  # a shared cache's lock file made by another member
            return os.open(path, os.O_RDONLY | flags)  # flock needs no write access

    # ---- reading -------------------------------------------------------------------------------

    def _read(self, key: str, ext: str, limit: int) -> bytes | None:
        """A file of an entry through the trust model (trust.read_file), never read past
        `limit` bytes; one larger, or a directory in its place, is a broken entry
        (CorruptEntry: removed and rebuilt)."""
        path = self.path(key, ext)
        try:
            return trust.read_file(path, limit, private=not self.shared)
        except TooLarge as exc:
            what = "the limit of entry metadata" if ext == "json" else "the size its metadata lists"
            raise CorruptEntry(f"{key}.{ext} is {exc.size} bytes, over {what} "
                               f"({limit} bytes)") from None
        except NotAFile as exc:
            if exc.kind == "directory":
                raise CorruptEntry(f"{key}.{ext} is a directory") from None
            raise
        except Untrusted:
            raise
        except OSError as exc:
            raise CorruptEntry(f"unreadable {key}.{ext} ({exc.strerror or exc})") from None

    def read_meta(self, key: str) -> dict | None:
        """The verified metadata body of an entry, None if absent; CorruptEntry if it fails,
        Untrusted if the trust model refuses it."""
        found = self._read_meta(key)
        return None if found is None else found[0]

    def _read_meta(self, key: str) -> tuple | None:
        """(verified body, size of the metadata file) or None; see read_meta."""
        if not self._is_trusted():
            return None
        raw = self._read(key, "json", META_LIMIT)
        if raw is None:
            return None
        header, body_raw = split_metadata(raw)
        body_digest = check_header(key, header, body_raw)
        if self.shared:  # authenticated before a byte of the body is parsed
            from gpunb.cache import auth

            auth.check(self.cache_key(), header.get("mac"), FORMAT_VERSION, key, body_digest,
                       self.path(key, "json"))
        return parse_body(body_raw), len(raw)

    def read(self, key: str) -> StoredEntry | None:
        """The verified entry, None if absent; CorruptEntry (after removing it) if it fails;
        Untrusted (left in place, with one warning) if the trust model refuses it."""
        try:
            return self._read_unlocked(key)
        except CorruptEntry as first:
            return self._confirm_corrupt(key, first)
        except Untrusted as exc:
            self.warn_untrusted(exc)
            raise

    def _read_unlocked(self, key: str) -> StoredEntry | None:
        found = self._read_meta(key)
        if found is None:
            return None
        body, size = found
        blobs = {}
        for ext in BLOBS:
            info = body["blobs"][ext]
            expected = info["size"]
            if expected == 0:
                blobs[ext] = b""  # an empty blob has no file
                continue
            if expected > max(self.max_bytes, _MIN_FILE_LIMIT):
                raise CorruptEntry(f"{key}.{ext} is listed at {expected} bytes, over the limit "
                                   "of a cache file")
            data = self._read(key, ext, expected)
            if data is None:
                raise CorruptEntry(f"missing {key}.{ext}")
            if len(data) != expected:
                raise CorruptEntry(f"{key}.{ext} is {len(data)} bytes, expected {expected}")
            if digest(data) != info["blake2b"]:
                raise CorruptEntry(f"{key}.{ext} checksum mismatch")
            blobs[ext] = data
            size += len(data)
        return StoredEntry(key, body, blobs, size)

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
        """Mark the entry used (LRU): its metadata file's mtime, never what a link there names."""
        with contextlib.suppress(OSError, NotImplementedError):
            os.utime(self.path(key, "json"), follow_symlinks=False)

    # ---- writing -------------------------------------------------------------------------------

    def write(self, key: str, body: dict, blobs: dict, pointer: str | None = None) -> int:
        """Store an entry (no-op if an identical key verifies): `blobs` maps each of BLOBS
        (those left out are empty) to its bytes. The entry's bytes, 0 if not stored."""
        if not self._ensure_dir():
            return 0
        try:
            meta, blobs = self._entry_files(key, body, blobs)
        except Untrusted as exc:  # a shared cache without its key
            self.warn_untrusted(exc)
            return 0
        if len(meta) > META_LIMIT:  # readers would refuse it: keep it in memory only
            self._warn_once(f"the entry of {body.get('function', key)} has {len(meta)} bytes of "
                            f"metadata, over the {META_LIMIT}-byte limit; it is kept in memory "
                            "only", f"metadata of {key}")
            return 0
        size = len(meta) + sum(len(data) for data in blobs.values())
        for attempt in (1, 2):
            try:
                return self._write_locked(key, meta, blobs, pointer, size)
            except OSError as exc:
                if isinstance(exc, FileNotFoundError) and attempt == 1 and self._ensure_dir():
                    continue  # the directory was removed under us: made again, once more
                self.failed(exc, "storing an entry")
                return 0
        return 0

    def _entry_files(self, key: str, body: dict, blobs: dict) -> tuple:
        """(the metadata's bytes, {ext: bytes} for every one of BLOBS)."""
        unknown = set(blobs) - set(BLOBS)
        if unknown:
            raise ValueError(f"not blobs of a cache entry: {sorted(unknown)}")
        blobs = {ext: bytes(blobs.get(ext, b"")) for ext in BLOBS}
        body = dict(body)
        body["blobs"] = {ext: {"size": len(data), "blake2b": digest(data)}
                         for ext, data in blobs.items()}
        return encode_metadata(key, body, self.cache_key() if self.shared else None), blobs

    def _write_locked(self, key: str, meta: bytes, blobs: dict, pointer: str | None,
                      size: int) -> int:
        mode = self._file_mode()
        with self._locked():
            try:
                existing = self._read_unlocked(key)
            except (CorruptEntry, Untrusted):
                existing = None  # replaced below: a key holder's write repairs a forged entry
            if existing is None:
                clear_path(self.path(key, "json"))  # never leave metadata over new blobs
                for ext, data in [*blobs.items(), ("json", meta)]:
                    path = self.path(key, ext)
                    if not data:
                        clear_path(path)  # an empty blob has no file
                        continue
                    _no_directory_at(path)  # rename replaces anything but a directory
                    atomic_write(path, data, mode)
            if pointer is not None:
                with contextlib.suppress(OSError):  # only explanations of misses read them
                    self.write_pointer(pointer, key)
            self._prune_locked(self.max_bytes)
        return existing.size if existing is not None else size

    # ---- "previous entry of this function" pointers --------------------------------------------

    def _pointer_path(self, pointer: str) -> str:
        name = blake2b(pointer.encode(), digest_size=16).hexdigest()
        return os.path.join(self.directory, "by-name", name)

    def write_pointer(self, pointer: str, key: str) -> None:
        """Point `pointer` at `key`: written through a descriptor of `by-name` opened without
        following links, so in a shared cache a member who swaps a symbolic link in for the
        folder - before, during or after it is made and given its group bits - redirects no
        chmod and no write (files.atomic_write_at)."""
        path = self._pointer_path(pointer)
        folder = os.path.dirname(path)
        try:
            folder_fd = open_folder(folder)
            made = False
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                raise
            clear_path(folder)  # a file or a link where the folder belongs, or nothing
            os.makedirs(folder, mode=0o700, exist_ok=True)
            folder_fd = open_folder(folder)  # raises if a link was swapped in since
            made = True
        try:
            if made and self.shared and hasattr(os, "fchmod"):
                # the team may write it as it writes the cache directory
                os.fchmod(folder_fd, os.stat(self.directory).st_mode & 0o2770)
            atomic_write_at(folder_fd, os.path.basename(path), key.encode(), self._file_mode())
        finally:
            os.close(folder_fd)

    def read_pointer(self, pointer: str) -> str | None:
        if not self._is_trusted():
            return None
        try:
            raw = trust.read_file(self._pointer_path(pointer), _POINTER_LIMIT,
                                  private=not self.shared)
        except (OSError, Untrusted):
            return None  # a pointer only explains a miss: a bad one explains nothing
        key = (raw or b"").decode("ascii", "replace").strip()
        return key if _KEY.match(key) else None

    # ---- listing, removing, pruning ------------------------------------------------------------

    def _remove_files(self, key: str) -> None:
        for ext in ("json",) + BLOBS:  # metadata first: no reader may find it without blobs
            clear_path(self.path(key, ext))

    def entries(self) -> list[EntryInfo]:
        if not self._is_trusted():
            return []
        out = []
        for item in _scandir(self.directory):
            stem, _, ext = item.name.partition(".")
            if ext != "json" or not _KEY.match(stem):
                continue
            try:
                st = item.stat(follow_symlinks=False)
                size = st.st_size + sum(_size(self.path(stem, e)) for e in BLOBS)
                body, problem = self.read_meta(stem) or {}, ""
            except CorruptEntry as exc:
                body, problem = {}, str(exc)
            except Untrusted as exc:
                body, problem = {}, f"untrusted: {exc.why}"
            except OSError:
                continue
            out.append(EntryInfo(stem, str(body.get("function", "?")),
                                 str(body.get("signature", "?")), str(body.get("target", "?")),
                                 size, st.st_mtime, str(body.get("defined_at", "")), problem,
                                 str(body.get("module", ""))))
        return out

    def remove(self, keys) -> int:
        if not self._ensure_dir():
            return 0
        with self._locked():
            for key in keys:
                with contextlib.suppress(OSError):
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
            with contextlib.suppress(OSError):
                st = item.stat(follow_symlinks=False)
                if name.startswith(TEMP_PREFIX):
                    if leftover_to_remove(name, st.st_mtime, now):  # its writer died mid-write
                        os.unlink(item.path)
                    continue
                stem, _, ext = name.partition(".")
                if f".{ext}" == LOCK_SUFFIX and _KEY.match(stem):  # not `.lock`, the flock
                    # a compiling holder touches its lock every few seconds; one untouched for
                    # a day was left by a crash on a key nobody looked up since
                    if now - st.st_mtime > 86400:
                        os.unlink(item.path)
                    continue
                if _KEY.match(stem) and ext in ("json",) + BLOBS:
                    group = groups.setdefault(stem, {"size": 0, "used": None})
                    group["size"] += st.st_size
                    if ext == "json":
                        group["used"] = st.st_mtime
        removed = 0
        for stem, group in list(groups.items()):
            if group["used"] is None:  # blobs without JSON: a crashed writer (we hold the lock)
                with contextlib.suppress(OSError):
                    self._remove_files(stem)
                del groups[stem]
        total = sum(g["size"] for g in groups.values())
        if total > max_bytes:
            for stem, group in sorted(groups.items(), key=lambda kv: kv[1]["used"]):
                if total <= max_bytes * 0.9:
                    break
                with contextlib.suppress(OSError):
                    self._remove_files(stem)
                total -= group["size"]
                removed += 1
        return removed


def _no_directory_at(path: str) -> None:
    """A directory where a file should be (left by a tool or a user) is removed: os.replace
    cannot put a file over it, and it would break this entry for good."""
    if os.path.isdir(path):
        clear_path(path)


def _scandir(directory: str) -> list:
    try:
        with os.scandir(directory) as it:
            return list(it)
    except OSError:
        return []


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0
