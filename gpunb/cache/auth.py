"""Entries of a shared cache carry a MAC made with the team's key: no key, no code planted.

The MAC is keyed BLAKE2b-256 (RFC 7693's keyed mode, a MAC as strong as HMAC-SHA256, and the
hash the cache already uses, so a disk hit loads no OpenSSL) over the entry's format, its key
and the digest of its metadata body's raw bytes - which hold the size and digest of every blob,
so the MAC covers the whole entry. The store checks it before it parses those bytes (store.py).
A member of the cache's group without the key can delete or spoil entries of a directory they
can write (then a key holder's lookup misses and rebuilds them) but cannot make one that
verifies.

The key file holds at least 16 random bytes (`python -m gpunb.cache keygen PATH` makes one). It
must be a regular file that others cannot read or write and its group cannot write, in a
directory that only its owner can change (or a sticky one): whoever can replace the key can sign
code. Give read access to exactly those who may write entries (a group, mode 0440, or a copy in
each member's ~/.config/gpunb/cache.key, mode 0400).
"""

from __future__ import annotations

import os
import stat

from gpunb.cache.encode import blake2b
from gpunb.cache.trust import Untrusted, kind_of

try:
    from _operator import _compare_digest as _same  # hmac.compare_digest, without hashlib
except ImportError:  # pragma: no cover - other Python implementations
    from hmac import compare_digest as _same

ALGORITHM = "blake2b-256-keyed"
MIN_KEY_BYTES = 16
_MAX_KEY_BYTES = 4096


class CacheKey:
    """A loaded key: the secret (never printed) and a short public id naming it in entries."""

    __slots__ = ("secret", "key_id", "path")

    def __init__(self, secret: bytes, path: str):
        self.secret = secret
        self.key_id = blake2b(secret, digest_size=6, person=b"gpunb-key-id").hexdigest()
        self.path = path

    def __repr__(self) -> str:
        return f"<CacheKey {self.key_id} from {self.path}>"


def _setup_hint(path: str) -> str:
    return (f"make one with `python -m gpunb.cache keygen {path}` (or point GPUNB_CACHE_KEY_FILE "
            "at the team's key); README: \"Cache security\"")


def load_key(path: str) -> CacheKey:
    """The key in `path`; Untrusted when it is missing, too short, or others could read or
    replace it."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise Untrusted(path, "no key file for the shared cache", _setup_hint(path)) from None
    except OSError as exc:
        raise Untrusted(path, f"the key file cannot be read ({exc.strerror or exc})",
                        "ask for read access to the team's key, or use a private cache "
                        "(unset GPUNB_CACHE_SHARED)") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Untrusted(path, f"the key file is a {kind_of(st.st_mode)}",
                            _setup_hint(path))
        _check_key_permissions(path, st)
        raw = os.read(fd, _MAX_KEY_BYTES)
    finally:
        os.close(fd)
    raw = raw.strip()
    if len(raw) < MIN_KEY_BYTES:
        raise Untrusted(path, f"the key is {len(raw)} bytes, fewer than {MIN_KEY_BYTES}",
                        _setup_hint(path))
    return CacheKey(blake2b(raw, digest_size=32, person=b"gpunb-cache-key").digest(), path)


def _check_key_permissions(path: str, st: os.stat_result) -> None:
    if not hasattr(os, "geteuid"):
        return
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o007 or mode & 0o020:
        raise Untrusted(path, f"the key file is open to others (mode {mode:04o})",
                        f"chmod o-rwx,g-w {path}: only those who may write entries may read it")
    # the folder of the path as given (a link there can be repointed) and of the file it names
    for folder in dict.fromkeys((os.path.dirname(os.path.abspath(path)),
                                 os.path.dirname(os.path.realpath(path)))):
        try:
            parent = os.stat(folder)
        except OSError:
            continue
        if parent.st_mode & 0o022 and not parent.st_mode & stat.S_ISVTX:
            mode = stat.S_IMODE(parent.st_mode)
            raise Untrusted(path, f"the key's directory {folder} can be changed by others "
                                  f"(mode {mode:04o}): they could replace the key",
                            "keep the key in a directory only its owner can change "
                            f"(chmod go-w {folder})")


def _message(format_version: int, key: str, body_digest: str) -> bytes:
    return f"gpunb-cache-entry\0{format_version}\0{key}\0{body_digest}".encode()


def sign(cache_key: CacheKey, format_version: int, key: str, body_digest: str) -> dict:
    """The `mac` record of an entry."""
    value = blake2b(_message(format_version, key, body_digest), key=cache_key.secret,
                    digest_size=32).hexdigest()
    return {"alg": ALGORITHM, "key_id": cache_key.key_id, "value": value}


def check(cache_key: CacheKey, record, format_version: int, key: str, body_digest: str,
          path: str) -> None:
    """Untrusted unless `record` is this key's MAC of the entry."""
    fix = (f"remove it (rm {path[:-5]}.*): it was written without the cache key, or with "
           "another one; a key holder's next compile rewrites it")
    if not isinstance(record, dict) or record.get("alg") != ALGORITHM:
        raise Untrusted(path, "not signed", fix)
    if record.get("key_id") != cache_key.key_id:
        raise Untrusted(path, f"signed with another key ({record.get('key_id')!s:.16}, not "
                              f"{cache_key.key_id})", fix)
    expected = sign(cache_key, format_version, key, body_digest)["value"]
    value = record.get("value")
    if not isinstance(value, str) or not _same(value.encode(), expected.encode()):
        raise Untrusted(path, "bad signature", fix)


def generate(path: str) -> CacheKey:
    """Write a new random key to `path` (which must not exist), readable by its owner only."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        # one those given read access to the key can reach (/etc/gpunb for a team), whatever
        # the umask; only its owner may change it. The key is its owner's alone until then.
        os.makedirs(folder, mode=0o755)
        os.chmod(folder, 0o755)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    try:
        os.write(fd, os.urandom(32).hex().encode() + b"\n")
    finally:
        os.close(fd)
    return load_key(path)
