"""An entry's metadata as an attacker (or a damaged disk) may leave it: bounded in size,
authenticated before it is parsed, the large texts (LLVM IR, host assembly) kept in blobs that
the metadata's digests cover, and an older format a plain miss.

A member of a shared cache without the key can put any file at `<key>.json`. Before anything in
it is believed - or parsed: json.loads of `[[],[],...]` costs ~20 bytes of memory per byte read -
the raw bytes must pass the cache's checks, and no more than a small cap is read at all."""

from __future__ import annotations

import json
import os
import tracemalloc
import warnings

import pytest
from cache_support import SIGNATURE, TOOLCHAIN, fake_artifact, jit

from gpunb.cache import KernelCache, auth, collect, store
from gpunb.cache.store import DiskStore, digest
from gpunb.foundation.user_warnings import CacheDirWarning, UntrustedCacheWarning

KERNEL = "def kern(out, x):\n    out[0] = x[0]\n"
# ~3 bytes of JSON per empty list, ~60 bytes of memory per list once parsed
COSTLY_JSON = b"[" + b"[]," * 1_000_000 + b"[]]"
HUGE_JSON = b"[" + b"[]," * 10_000_000 + b"[]]"  # 30 MB


def _cache(directory, shared: bool, key_file=None) -> KernelCache:
    cache = KernelCache(str(directory))
    cache.disk = DiskStore(str(directory), 1 << 30, shared=shared, key_file=key_file)
    return cache


def _setting(tmp_path, shared: bool) -> tuple:
    """(cache directory, key file or None): a private cache, or a team's (mode 2770, a key)."""
    folder = tmp_path / "c"
    folder.mkdir(mode=0o700)
    if not shared:
        return folder, None
    os.chmod(folder, 0o2770)
    key_file = tmp_path / "keys" / "cache.key"
    auth.generate(str(key_file))
    return folder, str(key_file)


def _stored(cells, folder, key_file, artifact_change=None) -> tuple:
    cells.run(KERNEL)
    fp = collect(jit(cells.ns["kern"]))
    cache = _cache(folder, key_file is not None, key_file)
    artifact, pending = cache.lookup("kern", fp, SIGNATURE, {}, "cpu", "test-arch", TOOLCHAIN)
    assert artifact is None
    made = fake_artifact(fp)
    if artifact_change:
        from dataclasses import replace

        made = replace(made, **artifact_change)
    cache.store(pending, made, fp, 1.0)
    return fp, pending.key


def _lookup(folder, key_file, fp):
    return _cache(folder, key_file is not None, key_file).lookup(
        "kern", fp, SIGNATURE, {}, "cpu", "test-arch", TOOLCHAIN)


def _peak_bytes(action) -> tuple:
    """(what `action` returned, the most memory Python held while it ran, in bytes)."""
    tracemalloc.start()
    try:
        result = action()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("shared", [False, True], ids=["private", "shared"])
def test_a_huge_metadata_file_is_refused_without_reading_it(cells, tmp_path, shared):
    """30 MB of JSON where an entry's metadata belongs (real metadata is tens of KB): a miss,
    rebuilt by the next store, and neither read nor parsed - the issue's 30 MB file held
    ~425 MB and ~13 s when it was."""
    folder, key_file = _setting(tmp_path, shared)
    fp, key = _stored(cells, folder, key_file)
    (folder / f"{key}.json").write_bytes(HUGE_JSON)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UntrustedCacheWarning)
        (artifact, pending), peak = _peak_bytes(lambda: _lookup(folder, key_file, fp))
    assert peak < 4 << 20, f"{peak} bytes held to refuse a 30 MB file"
    assert artifact is None and pending.changes[0].reason in ("corrupt", "untrusted")
    assert "limit" in pending.changes[0].text
    _cache(folder, shared, key_file).store(pending, fake_artifact(fp), fp, 1.0)
    assert _lookup(folder, key_file, fp)[0] is not None  # rebuilt, and it serves again


def test_an_unsigned_metadata_body_is_never_parsed(cells, tmp_path):
    """A member without the key writes metadata under the cap, with every unkeyed checksum
    right: refused as unsigned before its body is parsed (parsing it would hold ~60 MB)."""
    folder, key_file = _setting(tmp_path, shared=True)
    fp, key = _stored(cells, folder, key_file)
    header = {"body_blake2b": digest(COSTLY_JSON), "format": store.FORMAT_VERSION, "key": key}
    (folder / f"{key}.json").write_bytes(json.dumps(header).encode() + b"\n" + COSTLY_JSON)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UntrustedCacheWarning)
        (artifact, pending), peak = _peak_bytes(lambda: _lookup(folder, key_file, fp))
    assert artifact is None and pending.changes[0].subject == "not signed"
    assert peak < 3 * len(COSTLY_JSON), f"{peak} bytes held: the body was parsed"


def test_llvm_ir_and_host_assembly_are_blobs_and_the_metadata_stays_small(cells, tmp_path):
    """The big texts of an artifact live in `<key>.ll` and `<key>.s`, covered by the
    metadata's digests: a disk hit gives them back exactly, a changed byte is a corrupt miss."""
    folder, key_file = _setting(tmp_path, shared=False)
    llvm_ir = "; ModuleID = 'kern'\n" + "  %x = add i32 %a, %b ; \u00e9\n" * 60_000
    asm = "\tvaddps\t%ymm0, %ymm1, %ymm2\n" * 20_000
    fp, key = _stored(cells, folder, key_file, {"llvm_ir": llvm_ir, "asm": asm})
    assert os.path.getsize(folder / f"{key}.json") < 16 << 10
    assert (folder / f"{key}.ll").read_text("utf-8") == llvm_ir
    artifact, pending = _lookup(folder, key_file, fp)
    assert pending.event.source == "disk"
    assert artifact.llvm_ir == llvm_ir and artifact.asm == asm
    with open(folder / f"{key}.s", "r+b") as f:
        f.seek(100)
        f.write(b"X")
    artifact, pending = _lookup(folder, key_file, fp)
    assert artifact is None and pending.changes[0].reason == "corrupt"
    assert f"{key}.s" in pending.changes[0].text


def test_a_blob_is_read_no_further_than_its_listed_size(cells, tmp_path):
    """A terabyte of holes in `<key>.ll`: a corrupt miss at once (the metadata says how many
    bytes to expect), rebuilt by the next store."""
    folder, key_file = _setting(tmp_path, shared=False)
    fp, key = _stored(cells, folder, key_file, {"llvm_ir": "; ModuleID = 'kern'\n"})
    with open(folder / f"{key}.ll", "r+b") as f:
        f.truncate(1 << 40)
    (artifact, pending), peak = _peak_bytes(lambda: _lookup(folder, key_file, fp))
    assert artifact is None and pending.changes[0].reason == "corrupt"
    assert peak < 4 << 20
    _cache(folder, False).store(pending, fake_artifact(fp), fp, 1.0)
    assert _lookup(folder, key_file, fp)[0] is not None


def _older_format(folder, key) -> None:
    """Rewrite the entry at `key` as gpunb's first cache format held it: one JSON document,
    the artifact's texts inside it, the MAC (if any) inside it too."""
    header, body = store.split_metadata((folder / f"{key}.json").read_bytes())
    body = json.loads(body)
    for ext, field in (("ll", "llvm_ir"), ("s", "asm")):
        body["artifact"][field] = ""
        body["blobs"].pop(ext, None)
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    doc = {"format": 1, "key": key, "body_blake2b": digest(canonical), "body": body}
    if "mac" in header:
        doc["mac"] = header["mac"]
    (folder / f"{key}.json").write_text(json.dumps(doc, sort_keys=True))


@pytest.mark.parametrize("shared", [False, True], ids=["private", "shared"])
def test_an_entry_of_the_older_format_is_a_clean_miss(cells, tmp_path, shared):
    """An entry an earlier gpunb wrote: a miss that says so, with no warning, replaced by the
    next store; listings name it."""
    folder, key_file = _setting(tmp_path, shared)
    fp, key = _stored(cells, folder, key_file)
    _older_format(folder, key)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UntrustedCacheWarning)
        warnings.simplefilter("error", CacheDirWarning)
        (info,) = _cache(folder, shared, key_file).disk.entries()
        assert "older gpunb" in info.problem
        cache = _cache(folder, shared, key_file)
        artifact, pending = cache.lookup("kern", fp, SIGNATURE, {}, "cpu", "test-arch",
                                         TOOLCHAIN)
        assert artifact is None and "older gpunb" in pending.changes[0].text
        cache.store(pending, fake_artifact(fp), fp, 1.0)
        assert _lookup(folder, key_file, fp)[0] is not None


def test_a_previous_entry_of_the_older_format_explains_the_miss(cells, tmp_path):
    """After an upgrade the function's previous entry (found through its by-name pointer) is
    of the older format: the miss says the cache format changed, not that it was removed."""
    folder, key_file = _setting(tmp_path, shared=False)
    fp, key = _stored(cells, folder, key_file)
    _older_format(folder, key)
    cells.run("def kern(out, x):\n    out[0] = x[0] + 1\n")
    edited = collect(jit(cells.ns["kern"]))
    artifact, pending = _lookup(folder, key_file, edited)
    assert artifact is None
    assert [c.reason for c in pending.changes] == ["format changed"]


def test_metadata_over_the_limit_is_kept_in_memory_with_one_warning(cells, tmp_path,
                                                                    monkeypatch):
    """An entry readers would refuse is not written: one CacheDirWarning naming the function,
    and the process goes on from memory."""
    monkeypatch.setattr(store, "META_LIMIT", 512)
    folder, key_file = _setting(tmp_path, shared=False)
    cells.run(KERNEL)
    fp = collect(jit(cells.ns["kern"]))
    cache = _cache(folder, False)
    _, pending = cache.lookup("kern", fp, SIGNATURE, {}, "cpu", "test-arch", TOOLCHAIN)
    with pytest.warns(CacheDirWarning, match="the entry of kern has .* bytes of metadata, over "
                                             "the 512-byte limit; it is kept in memory only"):
        event = cache.store(pending, fake_artifact(fp), fp, 1.0)
    assert event.entry_bytes == 0 and not list(folder.glob("*.json"))
    artifact, pending = cache.lookup("kern", fp, SIGNATURE, {}, "cpu", "test-arch", TOOLCHAIN)
    assert artifact is not None and pending.event.source == "memory"
