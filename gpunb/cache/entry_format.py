"""An entry's metadata file (`<key>.json`) and blobs: the format, written and checked.

The file is two lines: a small JSON header - format, key, the digest of the second line's raw
bytes and, in a shared cache, the MAC over that digest (auth.py) - and the JSON body, which lists
the size and digest of every blob (BLOBS). A reader checks the header against the body's raw
bytes (and the MAC) before it parses them, and reads no more than META_LIMIT bytes of the file:
whatever others put there costs a few MiB and no parsing. Format 1 (gpunb's first) was one JSON
document holding the artifact's texts, its MAC checked after the whole of it was parsed.
"""

from __future__ import annotations

import json

from gpunb.cache import trust
from gpunb.cache.encode import blake2b

FORMAT_VERSION = 2  # 1: one JSON document holding the artifact's texts, its MAC over the parse
BLOBS = ("bin", "ptx", "ll", "s")  # the files an entry may have besides its metadata
# Real metadata (the artifact's facts, key parts, dependencies, error and barrier sites) is tens
# of KB, ~0.6 MB for a large unrolled tensor-core GEMM with bounds checks; the texts that made
# entries 1-3 MB are blobs. Nothing past this is read, whatever the cache's size cap.
META_LIMIT = 8 << 20
_HEADER_LIMIT = 1024  # the first line: format, key, digest, MAC


class CorruptEntry(Exception):
    """An entry failed verification (what failed is the message)."""


class FormatMismatch(CorruptEntry):
    """An entry written in another cache format (`found`: its version, 1 for gpunb's first)."""

    def __init__(self, found):
        age = "an older" if isinstance(found, int) and found < FORMAT_VERSION else "another"
        super().__init__(f"written by {age} gpunb (cache format {found!r}, this one reads "
                         f"{FORMAT_VERSION})")
        self.found = found


def digest(data: bytes) -> str:
    return blake2b(data, digest_size=20).hexdigest()


def _canonical(body: dict) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def encode_metadata(key: str, body: dict, cache_key=None) -> bytes:
    """The metadata file of an entry: the header line (format, key, the body's digest and,
    with a shared cache's auth.CacheKey, its MAC), then the canonical JSON of `body`."""
    body_raw = _canonical(body)
    header = {"body_blake2b": digest(body_raw), "format": FORMAT_VERSION, "key": key}
    if cache_key is not None:
        from gpunb.cache import auth

        header["mac"] = auth.sign(cache_key, FORMAT_VERSION, key, header["body_blake2b"])
    return json.dumps(header, sort_keys=True, separators=(",", ":")).encode() + b"\n" + body_raw


def split_metadata(raw: bytes) -> tuple[dict, bytes]:
    """(the header, the body's raw bytes) of a metadata file; nothing checked but the shape
    of the header (CorruptEntry, or FormatMismatch for another format's file)."""
    end = raw.find(b"\n", 0, _HEADER_LIMIT)
    if end < 0:
        if raw.startswith(b'{"body":'):  # format 1: one document, its keys sorted
            raise FormatMismatch(1)
        raise CorruptEntry("metadata has no header line (truncated or overwritten)")
    try:
        header = trust.parse_json(raw[:end])
    except ValueError:
        raise CorruptEntry("metadata header is not JSON (truncated or overwritten)") from None
    if not isinstance(header, dict):
        raise CorruptEntry("metadata is not a gpunb cache entry")
    return header, raw[end + 1:]


def check_header(key: str, header: dict, body_raw: bytes) -> str:
    """The digest of the body's raw bytes, once the header says they are this key's body."""
    if header.get("format") != FORMAT_VERSION:
        raise FormatMismatch(header.get("format"))
    if header.get("key") != key:
        raise CorruptEntry("metadata belongs to another key")
    body_digest = digest(body_raw)
    if body_digest != header.get("body_blake2b"):
        raise CorruptEntry("metadata checksum mismatch")
    return body_digest


def parse_body(body_raw: bytes) -> dict:
    """The body of checked metadata, once it lists every blob with its size and digest."""
    try:
        body = trust.parse_json(body_raw)
    except ValueError:
        raise CorruptEntry("metadata is not JSON (truncated or overwritten)") from None
    if not isinstance(body, dict):
        raise CorruptEntry("metadata is not a gpunb cache entry")
    blobs = body.get("blobs")
    if not isinstance(blobs, dict) or any(
            not isinstance(blobs.get(ext), dict) or type(blobs[ext].get("size")) is not int
            or blobs[ext]["size"] < 0 or not isinstance(blobs[ext].get("blake2b"), str)
            for ext in BLOBS):
        raise CorruptEntry("metadata lists no blobs")
    return body
