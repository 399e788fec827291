"""What others can put in a cache directory (a shared cache's members without the key, a
damaged disk), beyond test_trust.py's forged entries.

JSON is data from such a file: whatever it holds - nesting deeper than Python's recursion limit
included - a lookup misses, a listing names the problem, a lock is judged unreadable; nothing
raises out of gpunb. Paths are theirs to swap: a symbolic link put where gpunb just made a
folder never redirects a chmod or a write."""

from __future__ import annotations

import os
import warnings

import pytest
from cache_support import SIGNATURE, TOOLCHAIN, fake_artifact, jit

from gpunb.cache import KernelCache, collect, keylock, toolchain_id

DEEP = b"[" * 100_000 + b"]" * 100_000  # json.loads: RecursionError, not ValueError
DEEP_LOCK = b"[" * 4000  # fits the 4 KiB a lock is read to

KERNEL = "def kern(out, x):\n    out[0] = x[0]\n"


def _stored(cells, cache_dir) -> tuple:
    cells.run(KERNEL)
    fp = collect(jit(cells.ns["kern"]))
    cache = KernelCache(str(cache_dir))
    artifact, pending = cache.lookup("kern", fp, SIGNATURE, {}, "cpu", "test-arch", TOOLCHAIN)
    assert artifact is None
    cache.store(pending, fake_artifact(fp), fp, 1.0)
    return fp, pending.key


def test_deeply_nested_entry_metadata_is_a_corrupt_miss(cells, tmp_path):
    """A body that its header vouches for (a private cache's own file: no MAC) nested too
    deeply for json.loads."""
    import json

    from gpunb.cache import store

    cache_dir = tmp_path / "c"
    fp, key = _stored(cells, cache_dir)
    header = {"body_blake2b": store.digest(DEEP), "format": store.FORMAT_VERSION, "key": key}
    (cache_dir / f"{key}.json").write_bytes(json.dumps(header).encode() + b"\n" + DEEP)
    cache = KernelCache(str(cache_dir))
    (info,) = cache.disk.entries()  # `python -m gpunb.cache status`, `%gpucache`
    assert info.key == key and "not JSON" in info.problem
    artifact, pending = cache.lookup("kern", fp, SIGNATURE, {}, "cpu", "test-arch", TOOLCHAIN)
    assert artifact is None and pending.changes[0].reason == "corrupt"
    cache.store(pending, fake_artifact(fp), fp, 1.0)  # rebuilt, and it serves again
    assert KernelCache(str(cache_dir)).lookup("kern", fp, SIGNATURE, {}, "cpu", "test-arch",
                                              TOOLCHAIN)[0] is not None


def test_a_deeply_nested_toolchain_stamp_is_asked_again(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir(mode=0o700)
    (folder / "toolchain.json").write_bytes(DEEP)
    os.chmod(folder / "toolchain.json", 0o600)
    assert toolchain_id._read_stamp(str(folder)) == {}


def test_a_deeply_nested_compile_lock_names_no_holder(tmp_path):
    lock = tmp_path / f"{'a' * 40}.lock"
    lock.write_bytes(DEEP_LOCK)
    state = keylock.observe(str(lock))
    assert state is not None and keylock.holder_of(state) is None


def test_a_link_swapped_in_for_the_by_name_folder_is_never_chmodded(tmp_path, monkeypatch):
    """In a shared cache (mode 2770, no sticky bit) any member may replace `by-name`. A key
    holder who finds it missing makes it and gives it the directory's group bits; a member who
    puts a symbolic link there between the two steps must not get the key holder's own
    directory (~/.ssh, the key's folder) made group-writable, nor files written into it."""
    from gpunb.cache import store

    team = tmp_path / "team"
    team.mkdir()
    os.chmod(team, 0o2770)
    mine = tmp_path / "mine"
    mine.mkdir()
    os.chmod(mine, 0o700)
    real_clear = store.clear_path

    def clear_then_the_attacker_links(path):
        real_clear(path)
        if os.path.basename(path) == "by-name":
            os.symlink(mine, path)  # the member wins the race

    monkeypatch.setattr(store, "clear_path", clear_then_the_attacker_links)
    (team / "by-name").write_text("not a folder")  # the key holder's next pointer remakes it
    disk = store.DiskStore(str(team), 1 << 30, shared=True)
    try:
        disk.write_pointer("kern (float32[::1],) cpu", "a" * 40)
    except OSError:
        pass  # refusing is right; only the effects below matter
    assert oct(os.stat(mine).st_mode & 0o7777) == oct(0o700)
    assert os.listdir(mine) == []


@pytest.mark.parametrize("kind", ["directory", "link to a file", "dangling link", "fifo"])
def test_anything_but_a_file_at_the_writers_lock_is_replaced(cells, tmp_path, kind):
    """`<dir>/.lock`, the writers' flock: something else there (a tool's directory, a link a
    shared cache's member put there) costs no entry and no traceback - stores, clear and prune
    go on, and a link's target is never touched."""
    cache_dir = tmp_path / "c"
    _, key = _stored(cells, cache_dir)
    lock = cache_dir / ".lock"
    lock.unlink()
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    if kind == "directory":
        (lock / "inside").mkdir(parents=True)
    elif kind == "link to a file":
        os.symlink(outside, lock)
    elif kind == "dangling link":
        os.symlink(tmp_path / "nowhere", lock)
    else:
        os.mkfifo(lock)
    for ext in ("json", "bin", "ptx"):
        (cache_dir / f"{key}.{ext}").unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "storing an entry failed" either
        _stored(cells, cache_dir)
        disk = KernelCache(str(cache_dir)).disk
        assert [e.key for e in disk.entries()] == [key]
        assert disk.prune(1 << 30) == 0
        cache = KernelCache(str(cache_dir))
        assert cache.clear(None) >= 1 and disk.entries() == []
    assert outside.read_text() == "keep me" and not (tmp_path / "nowhere").exists()


def test_a_key_reached_through_a_link_others_can_replace_is_refused(tmp_path):
    """GPUNB_CACHE_KEY_FILE naming a symbolic link in a folder the team may write: any member
    can point the link at a key of their own (and sign entries with it), however safe the
    folder of the key it names today."""
    from gpunb.cache import auth

    safe = tmp_path / "safe"
    safe.mkdir(mode=0o700)
    auth.generate(str(safe / "cache.key"))
    team = tmp_path / "team"
    team.mkdir()
    os.chmod(team, 0o2770)
    os.symlink(safe / "cache.key", team / "cache.key")
    with pytest.raises(auth.Untrusted, match="can be changed by others"):
        auth.load_key(str(team / "cache.key"))
    assert auth.load_key(str(safe / "cache.key")).key_id  # the key itself is fine



def test_a_link_swapped_in_for_by_name_after_its_chmod_gets_no_pointer(tmp_path, monkeypatch):
    """The member's later chance: `by-name` replaced by a symbolic link after the key holder
    gave it its group bits and before the pointer is written. The pointer is written into the
    folder that was made and checked (by descriptor), never through the link."""
    from gpunb.cache import store

    team = tmp_path / "team"
    team.mkdir()
    os.chmod(team, 0o2770)
    mine = tmp_path / "mine"
    mine.mkdir()
    os.chmod(mine, 0o700)
    real_fchmod = os.fchmod

    def fchmod_then_the_attacker_links(fd, mode):
        real_fchmod(fd, mode)
        by_name = team / "by-name"
        if by_name.is_dir() and not by_name.is_symlink():
            os.rename(by_name, team / "by-name.moved")
            os.symlink(mine, by_name)  # the member wins the race

    monkeypatch.setattr(os, "fchmod", fchmod_then_the_attacker_links)
    disk = store.DiskStore(str(team), 1 << 30, shared=True)
    try:
        disk.write_pointer("kern (float32[::1],) cpu", "a" * 40)
    except OSError:
        pass  # refusing is right; only the effects below matter
    monkeypatch.undo()
    assert os.listdir(mine) == []
    assert oct(os.stat(mine).st_mode & 0o7777) == oct(0o700)


def test_touches_never_follow_a_link(cells, tmp_path):
    """A disk hit's touch of `<key>.json` and a compile lock's heartbeat: a symbolic link a
    member put there is touched itself (or not at all), never the file it names."""
    cache_dir = tmp_path / "c"
    _, key = _stored(cells, cache_dir)
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    os.utime(victim, (1_000_000, 1_000_000))
    entry = cache_dir / f"{key}.json"
    entry.unlink()
    os.symlink(victim, entry)
    KernelCache(str(cache_dir)).disk.touch(key)
    lock_path = cache_dir / f"{key}.lock"
    lock = keylock.acquire(str(lock_path), 30.0)
    try:
        lock_path.unlink()  # broken by someone, and a link put in its place
        os.symlink(victim, lock_path)
        lock.touch()
    finally:
        lock.release()
    assert os.stat(victim).st_mtime == 1_000_000


@pytest.mark.skipif(__import__("sys").version_info < (3, 11), reason="rmtree's dir_fd: 3.11")
def test_a_directory_at_a_pointer_is_replaced_by_the_pointer(tmp_path):
    from gpunb.cache import store

    disk = store.DiskStore(str(tmp_path / "c"), 1 << 30)
    disk.write_pointer("kern (float32[::1],) cpu", "a" * 40)
    path = disk._pointer_path("kern (float32[::1],) cpu")
    os.unlink(path)
    os.makedirs(os.path.join(path, "inner"))
    disk.write_pointer("kern (float32[::1],) cpu", "b" * 40)
    assert disk.read_pointer("kern (float32[::1],) cpu") == "b" * 40
