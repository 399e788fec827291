"""The disk store: entry layout, verification, corruption handling, degraded dirs, LRU pruning."""

from __future__ import annotations

import json
import os
import stat
import time
import warnings

import pytest
from cache_support import SIGNATURE, TOOLCHAIN, MiniDispatcher, fake_artifact, jit

from gpunb.cache import KernelCache, collect
from gpunb.cache.store import CacheDirWarning, DiskStore, split_metadata


def _stored(cells, cache_dir, text="def kern(out, x):\n    out[0] = x[0]\n", size=0):
    """(fingerprint, key) of a kernel stored into cache_dir through a KernelCache."""
    cells.run(text)
    fp = collect(jit(cells.ns["kern"]))
    kc = KernelCache(str(cache_dir))
    art, pending = kc.lookup("kern", fp, SIGNATURE, {}, "cpu", "test-arch", TOOLCHAIN)
    assert art is None
    kc.store(pending, fake_artifact(fp, size=size), fp, 1.0)
    return fp, pending.key


def _lookup_fresh(cache_dir, fp):
    return KernelCache(str(cache_dir)).lookup("kern", fp, SIGNATURE, {}, "cpu", "test-arch",
                                              TOOLCHAIN)


def test_entry_layout_and_permissions(cells, cache_dir):
    fp, key = _stored(cells, cache_dir)
    names = sorted(os.listdir(cache_dir))
    assert {f"{key}.json", f"{key}.bin", f"{key}.ptx"} <= set(names)
    assert not [n for n in names if n.startswith(".tmp-")]
    assert stat.S_IMODE(os.stat(cache_dir).st_mode) == 0o700
    header, body = split_metadata((cache_dir / f"{key}.json").read_bytes())
    body = json.loads(body)
    assert header["format"] == 2 and header["key"] == key and "mac" not in header
    assert body["function"] == "kern" and body["signature"] == SIGNATURE
    assert body["parts"]["toolchain"] == TOOLCHAIN and body["parts"]["arch"] == "test-arch"
    assert body["artifact"]["cooperative"] is False and "resources" in body["artifact"]
    assert set(body["blobs"]) == {"bin", "ptx", "ll", "s"} and "binary" not in body["artifact"]
    assert not {"ptx", "llvm_ir", "asm"} & set(body["artifact"])  # blobs, not metadata
    assert not (cache_dir / f"{key}.s").exists()  # the fake artifact has no assembly
    assert body["defined_at"].startswith("Cell In[")
    # no pickle anywhere: the JSON is plain data and the blobs are what the compiler produced
    assert (cache_dir / f"{key}.bin").read_bytes().startswith(fp.digest.encode())


@pytest.mark.parametrize("damage", ["truncate json", "truncate bin", "flip bin", "flip json",
                                    "missing ptx", "foreign json", "other version", "other key",
                                    "empty json", "binary garbage"])
def test_damaged_entries_are_reported_removed_and_rebuilt(cells, cache_dir, damage):
    fp, key = _stored(cells, cache_dir)
    js, bin_ = cache_dir / f"{key}.json", cache_dir / f"{key}.bin"
    header, body = split_metadata(js.read_bytes())
    body = json.loads(body)

    def rewrite():
        js.write_bytes(json.dumps(header).encode() + b"\n" + json.dumps(body).encode())
    if damage == "truncate json":
        js.write_bytes(js.read_bytes()[: js.stat().st_size // 2])
    elif damage == "truncate bin":
        bin_.write_bytes(bin_.read_bytes()[:5])
    elif damage == "flip bin":
        data = bytearray(bin_.read_bytes())
        data[0] ^= 0xFF
        bin_.write_bytes(bytes(data))
    elif damage == "flip json":
        body["artifact"]["symbol"] = "evil"
        rewrite()
    elif damage == "missing ptx":
        os.unlink(cache_dir / f"{key}.ptx")
    elif damage == "foreign json":
        js.write_text(json.dumps({"hello": "world"}))
    elif damage == "other version":
        header["format"] = 99
        rewrite()
    elif damage == "other key":
        header["key"] = "0" * 40
        rewrite()
    elif damage == "empty json":
        js.write_bytes(b"")
    else:
        js.write_bytes(os.urandom(300))
    reason = "format changed" if damage == "other version" else "corrupt"
    art, pending = _lookup_fresh(cache_dir, fp)
    assert art is None and pending.changes[0].reason == reason and key in pending.changes[0].text
    assert not js.exists()  # removed
    event = KernelCache(str(cache_dir)).store(pending, fake_artifact(fp), fp, 1.0)
    assert event.kind == "miss" and event.reason == reason
    art, pending = _lookup_fresh(cache_dir, fp)
    assert art is not None and pending.event.source == "disk"


def test_a_stored_entry_is_never_rewritten_under_readers(cells, cache_dir):
    """Same key, same content: the first writer wins and later writers leave the files alone."""
    fp, key = _stored(cells, cache_dir)
    before = os.stat(cache_dir / f"{key}.bin").st_ino
    store = DiskStore(str(cache_dir), 1 << 30)
    body = store.read(key).body
    size = store.write(key, {k: v for k, v in body.items() if k != "blobs"},
                       {"bin": fp.digest.encode(), "ptx": f"// {fp.digest}\n".encode()})
    assert size > 0 and os.stat(cache_dir / f"{key}.bin").st_ino == before


def test_unwritable_dir_degrades_to_memory_with_one_warning(cells, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("GPUNB_CACHE_DIR", str(blocker / "cache"))
    kc = KernelCache()
    k = MiniDispatcher(cells.run("def kern(out, x):\n    out[0] = x[0]\n")["kern"], kc)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        k.launch()
        cells.run("def kern(out, x):\n    out[0] = x[1]\n")
        k2 = MiniDispatcher(cells.ns["kern"], kc)
        k2.launch()
    cache_warnings = [w for w in caught if issubclass(w.category, CacheDirWarning)]
    assert len(cache_warnings) == 1
    assert "in-memory cache only" in str(cache_warnings[0].message)
    assert k.event.kind == "miss" and k.event.entry_bytes == 0
    # memory still works: a third kernel with k's content hits memory
    cells.run("def kern(out, x):\n    out[0] = x[0]\n")
    k3 = MiniDispatcher(cells.ns["kern"], kc)
    k3.launch()
    assert k3.compiles == 0 and k3.event.source == "memory"


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root ignores permission bits")
def test_read_only_dir_serves_reads_and_warns_on_write(cells, cache_dir):
    fp, key = _stored(cells, cache_dir)
    os.chmod(cache_dir, 0o500)
    try:
        art, pending = _lookup_fresh(cache_dir, fp)
        assert art is not None
        cells.run("def kern(out, x):\n    out[0] = x[2]\n")
        with pytest.warns(CacheDirWarning):
            MiniDispatcher(cells.ns["kern"], KernelCache(str(cache_dir))).launch()
    finally:
        os.chmod(cache_dir, 0o700)


def test_world_writable_dir_is_not_trusted(cells, cache_dir):
    fp, key = _stored(cells, cache_dir)
    os.chmod(cache_dir, 0o777)
    try:
        with pytest.warns(CacheDirWarning, match="writable by everyone"):
            art, pending = _lookup_fresh(cache_dir, fp)
        assert art is None  # nothing is loaded from a directory others can write
        assert pending.changes[0].reason == "untrusted"
    finally:
        os.chmod(cache_dir, 0o700)


def test_lru_prune_keeps_recently_used_entries(cells, cache_dir, monkeypatch):
    keys = []
    fps = []
    for i in range(4):
        fp, key = _stored(cells, cache_dir, f"def kern(out, x):\n    out[0] = x[{i}]\n",
                          size=10_000)
        keys.append(key)
        fps.append(fp)
        stamp = 1_000_000 + i * 10  # distinct, increasing "last used" times
        os.utime(cache_dir / f"{key}.json", (stamp, stamp))
    one_entry = sum(os.path.getsize(cache_dir / f"{keys[0]}.{e}") for e in ("json", "bin", "ptx"))
    _lookup_fresh(cache_dir, fps[0])  # a disk hit touches the oldest entry: now the newest
    store = DiskStore(str(cache_dir), 1 << 30)
    removed = store.prune(int(one_entry * 2.5))
    assert removed == 2
    left = {e.key for e in store.entries()}
    assert left == {keys[0], keys[3]}


def test_store_prunes_to_the_configured_cap(cells, cache_dir, monkeypatch):
    monkeypatch.setenv("GPUNB_CACHE_MAX_BYTES", "40000")
    for i in range(6):
        _stored(cells, cache_dir, f"def kern(out, x):\n    out[0] = x[{i}] + 1\n", size=10_000)
    total = sum(e.size for e in DiskStore(str(cache_dir), 1).entries())
    assert 0 < total <= 40000


def test_leftovers_of_crashed_writers_are_cleaned(cells, cache_dir):
    fp, key = _stored(cells, cache_dir)
    orphan = "f" * 40
    (cache_dir / f"{orphan}.bin").write_bytes(b"half")
    tmp = cache_dir / ".tmp-dead"
    tmp.write_bytes(b"x")
    os.utime(tmp, (1, 1))
    DiskStore(str(cache_dir), 1 << 30).prune()
    assert not (cache_dir / f"{orphan}.bin").exists() and not tmp.exists()
    assert (cache_dir / f"{key}.json").exists()


def test_entries_list_metadata_and_flag_problems(cells, cache_dir):
    fp, key = _stored(cells, cache_dir)
    (cache_dir / ("e" * 40 + ".json")).write_text("{}")
    (cache_dir / "unrelated.txt").write_text("ignored")
    entries = {e.key: e for e in DiskStore(str(cache_dir), 1 << 30).entries()}
    assert set(entries) == {key, "e" * 40}
    assert entries[key].function == "kern" and entries[key].problem == ""
    assert entries[key].defined_at.startswith("Cell In[")
    assert entries["e" * 40].problem


def test_prune_removes_day_old_key_locks_and_keeps_the_writers_lock(cells, cache_dir):
    fp, key = _stored(cells, cache_dir)
    old, fresh = cache_dir / ("d" * 40 + ".lock"), cache_dir / ("e" * 40 + ".lock")
    old.write_text("{}")
    fresh.write_text("{}")
    day_ago = time.time() - 90_000
    os.utime(old, (day_ago, day_ago))
    os.utime(cache_dir / ".lock", (day_ago, day_ago))  # the writers' flock file: never removed
    DiskStore(str(cache_dir), 1 << 30).prune()
    assert not old.exists() and fresh.exists() and (cache_dir / ".lock").exists()
    assert (cache_dir / f"{key}.json").exists()


def test_an_artifact_marked_for_this_process_only_stays_out_of_the_disk(cells, cache_dir):
    """A GPU build that lost setmaxnreg (no usable ptxas: disk_cache=False) is served from
    memory in this process and rebuilt by the next, which may have a ptxas."""
    import dataclasses

    cells.run("def kern(out, x):\n    out[0] = x[0]\n")
    fp = collect(jit(cells.ns["kern"]))
    kc = KernelCache(str(cache_dir))
    _, pending = kc.lookup("kern", fp, SIGNATURE, {}, "cpu", "test-arch", TOOLCHAIN)
    kc.store(pending, dataclasses.replace(fake_artifact(fp), disk_cache=False), fp, 1.0)
    assert not [n for n in os.listdir(cache_dir) if n.startswith(pending.key)]
    art, _ = kc.lookup("kern", fp, SIGNATURE, {}, "cpu", "test-arch", TOOLCHAIN)
    assert art is not None and not art.disk_cache  # the memory tier has it
    assert _lookup_fresh(cache_dir, fp)[0] is None  # a new process compiles it again
