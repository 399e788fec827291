"""The disk cache's trust model, attacked: forged entries, foreign owners, FIFOs, links, renames.

An attacker here writes a complete entry the way someone without gpunb's key would: another
kernel's code under the victim kernel's key, with that key's parts and every unkeyed checksum
recomputed, so only the trust model stands between it and a wrong result. The fake compiler's
"binary" is the fingerprint digest of the function it was made from, so a forged entry that got
loaded shows as the other kernel's digest. Where the tests run as root, the attacker is a second
uid (os.setuid in a forked child); elsewhere those tests are skipped and the permission-bit ones
(chmod) still run.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import threading
import traceback
import warnings

import pytest
from cache_support import SIGNATURE, TOOLCHAIN, fake_artifact, jit

from gpunb.cache import KernelCache, collect
from gpunb.cache.store import DiskStore, digest, encode_metadata, split_metadata
from gpunb.foundation.user_warnings import CacheDirWarning, UntrustedCacheWarning

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="a second uid needs root (os.setuid)")
ATTACKER, MEMBER, TEAM, KEYHOLDERS = 65534, 4242, 4300, 4301

VICTIM = "def kern(out, x):\n    out[0] = x[0]\n"
OTHER = "def kern(out, x):\n    out[0] = x[1] * 7\n"


@pytest.fixture
def open_dir():
    """A folder everyone may traverse (pytest's tmp_path is 0700 under root): the second uid
    must reach the cache directory inside it."""
    folder = tempfile.mkdtemp(prefix="gpunb-trust-")
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def as_user(uid: int, groups: list[int], action) -> None:
    """Run `action` in a forked child that is another user (uid, its groups).

    What the child may import lazily is imported first: here Python's own library lies under
    /root, which the second uid cannot read."""
    import codecs
    import shutil  # noqa: F401 - for the child
    import tempfile  # noqa: F401 - for the child

    from gpunb.cache import auth, keylock  # noqa: F401 - for the child

    codecs.lookup("ascii")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.setgroups(groups)
            os.setgid(groups[0])
            os.setuid(uid)
            action()
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the second user's action failed"


def _fingerprint(cells, text):
    cells.run(text)
    return collect(jit(cells.ns["kern"]))


def _cache(directory, **settings) -> KernelCache:
    """A fresh KernelCache (as a new process has) over `directory`, DiskStore settings given."""
    cache = KernelCache(str(directory))
    if settings:
        cache.disk = DiskStore(str(directory), 1 << 30, **settings)
    return cache


_last: list = [None]  # the cache of the latest _lookup: a miss is stored through it


def _lookup(directory, fp, **settings):
    cache = _last[0] = _cache(directory, **settings)
    return cache.lookup("kern", fp, SIGNATURE, {}, "cpu", "test-arch", TOOLCHAIN)


def _finish(pending, fp):
    """Store the compile that follows the latest _lookup's miss (the fake compiler's)."""
    return _last[0].store(pending, fake_artifact(fp), fp, 1.0)


def _store(directory, fp, **settings):
    artifact, pending = _lookup(directory, fp, **settings)
    assert artifact is None
    _finish(pending, fp)
    return pending.key


def forged_files(cells, tmp_path) -> tuple[str, dict]:
    """(victim key, {ext: bytes}): the victim kernel's entry carrying the other kernel's code,
    made as an attacker would (no key; every checksum right)."""
    private = tmp_path / "private"
    victim_fp, other_fp = _fingerprint(cells, VICTIM), _fingerprint(cells, OTHER)
    victim_key = _store(private, victim_fp)
    other_key = _store(private, other_fp)
    store = DiskStore(str(private), 1 << 30)
    victim, other = store.read(victim_key), store.read(other_key)
    return victim_key, _forgery(victim, other), victim_fp, other_fp


def _forgery(victim, other) -> dict:
    """{ext: bytes}: `other`'s code and metadata under `victim`'s key and key parts, every
    unkeyed checksum right - what anyone can write who can read gpunb's source."""
    body = dict(other.body, parts=victim.body["parts"])  # hashes to the victim's key
    files = {ext: data for ext, data in other.blobs.items() if data}
    body["blobs"] = {ext: {"size": len(data), "blake2b": digest(data)}
                     for ext, data in other.blobs.items()}
    files["json"] = encode_metadata(victim.key, body)
    return files


def plant(folder, key, files, mode=0o644) -> None:
    """Write the files (replacing what is there, as anyone who may write the folder can)."""
    for ext, data in files.items():
        path = os.path.join(folder, f"{key}.{ext}")
        if os.path.lexists(path):
            os.unlink(path)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, mode)


def _loaded_code(artifact) -> bytes:
    return artifact.binary[:32]


def test_the_forgery_is_real_when_planted_in_ones_own_cache(cells, tmp_path):
    """The control: the same files written by the user themselves load (the trust model, not
    a broken forgery, is what stops the attacks below)."""
    key, files, victim_fp, other_fp = forged_files(cells, tmp_path)
    own = tmp_path / "own"
    own.mkdir(mode=0o700)
    plant(own, key, files, mode=0o600)
    artifact, pending = _lookup(own, victim_fp)
    assert artifact is not None and _loaded_code(artifact) == other_fp.digest.encode()[:32]


@needs_root
def test_a_forged_entry_in_a_group_writable_directory_is_never_loaded(cells, tmp_path, open_dir):
    key, files, victim_fp, _ = forged_files(cells, tmp_path)
    shared = os.path.join(open_dir, "team-cache")
    os.mkdir(shared)
    os.chown(shared, 0, TEAM)
    os.chmod(shared, 0o2770)  # a team's cache on NFS, as README once suggested
    as_user(ATTACKER, [TEAM], lambda: plant(shared, key, files))
    assert os.stat(os.path.join(shared, f"{key}.bin")).st_uid == ATTACKER
    with pytest.warns(UntrustedCacheWarning) as caught:
        artifact, pending = _lookup(shared, victim_fp)
    assert artifact is None
    change = pending.changes[0]
    assert change.reason == "untrusted" and "writable by its group" in change.subject
    message = str(caught[0].message)
    assert shared in message and "chmod go-w" in message and "GPUNB_CACHE_SHARED" in message
    assert caught[0].filename == __file__  # the user's line, not gpunb's


@needs_root
def test_a_group_writable_directory_is_not_read_at_all(cells, tmp_path, open_dir):
    """Not even its toolchain stamp: a FIFO there would hang a reader."""
    from gpunb.cache import toolchain_id

    shared = os.path.join(open_dir, "team-cache")
    os.mkdir(shared)
    os.chmod(shared, 0o770)
    os.mkfifo(os.path.join(shared, "toolchain.json"))
    fp = _fingerprint(cells, VICTIM)
    cache = KernelCache(shared)
    with pytest.warns(UntrustedCacheWarning):
        assert not cache.disk.ready()
    # what KernelCache asks of toolchain_id, and toolchain_id on its own, with this directory
    assert _within(20, lambda: toolchain_id.toolchain_identity("cpu", None)), "hung"
    stamps = []
    assert _within(20, lambda: stamps.append(toolchain_id._read_stamp(shared))), "hung"
    assert stamps == [{}]
    artifact, pending = cache.lookup("kern", fp, SIGNATURE, {}, "cpu", "test-arch", TOOLCHAIN)
    assert artifact is None and pending.changes[0].reason == "untrusted"
    cache.store(pending, fake_artifact(fp), fp, 1.0)
    assert sorted(os.listdir(shared)) == ["toolchain.json"]  # nothing written there either


@needs_root
def test_foreign_owned_files_in_a_private_directory_are_never_loaded(cells, tmp_path):
    key, files, victim_fp, _ = forged_files(cells, tmp_path)
    private = tmp_path / "mine"
    private.mkdir(mode=0o700)
    plant(private, key, files, mode=0o666)
    for ext in files:
        os.chown(private / f"{key}.{ext}", ATTACKER, ATTACKER)
    with pytest.warns(UntrustedCacheWarning, match=f"owned by uid {ATTACKER}"):
        artifact, pending = _lookup(private, victim_fp)
    assert artifact is None and pending.changes[0].reason == "untrusted"
    assert pending.event is None or pending.event.kind == "miss"
    # the user's own compile replaces the refused files, and the next lookup hits its entry
    _finish(pending, victim_fp)
    artifact, pending = _lookup(private, victim_fp)
    assert _loaded_code(artifact) == victim_fp.digest.encode()[:32]
    assert os.stat(private / f"{key}.bin").st_uid == os.geteuid()


@pytest.mark.parametrize("mode", [0o666, 0o620])
def test_own_files_that_others_may_write_are_refused(cells, tmp_path, mode):
    key, files, victim_fp, _ = forged_files(cells, tmp_path)
    private = tmp_path / "mine"
    private.mkdir(mode=0o700)
    plant(private, key, files, mode=mode)
    with pytest.warns(UntrustedCacheWarning):
        artifact, pending = _lookup(private, victim_fp)
    assert artifact is None and pending.event is None
    assert "writable by" in pending.changes[0].subject
    assert pending.changes[0].text.startswith("untrusted: ")


def _within(seconds: float, action) -> bool:
    """Run `action` on a daemon thread; False if it did not finish in time (a hang)."""
    done = []
    thread = threading.Thread(target=lambda: done.append(action()), daemon=True)
    thread.start()
    thread.join(seconds)
    return bool(done)


@pytest.mark.parametrize("kind", ["fifo json", "fifo bin", "link to /dev/zero",
                                  "link inside the directory", "device", "socket"])
def test_special_files_are_never_opened(cells, tmp_path, kind):
    import socket

    fp_other = _fingerprint(cells, OTHER)
    fp = _fingerprint(cells, VICTIM)
    cache_dir = tmp_path / "c"
    key = _store(cache_dir, fp)
    other_key = _store(cache_dir, fp_other)
    target = cache_dir / f"{key}.{'bin' if kind == 'fifo bin' else 'json'}"
    target.unlink()
    keep = None
    if kind.startswith("fifo"):
        os.mkfifo(target)
    elif kind == "link to /dev/zero":
        os.symlink("/dev/zero", target)
    elif kind == "link inside the directory":
        os.symlink(cache_dir / f"{other_key}.json", target)
    elif kind == "device":
        if not IS_ROOT:
            pytest.skip("mknod needs root")
        os.mknod(target, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero's numbers
    else:
        keep = socket.socket(socket.AF_UNIX)
        short = tempfile.mkdtemp(prefix="s", dir="/tmp")  # AF_UNIX paths are short
        keep.bind(os.path.join(short, "s"))
        os.rename(os.path.join(short, "s"), target)
        os.rmdir(short)
    result = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _within(20, lambda: result.append(_lookup(cache_dir, fp))), f"{kind}: hung"
    artifact, pending = result[0]
    assert artifact is None and pending.changes[0].reason == "untrusted"
    assert "not a regular file" in pending.changes[0].subject
    assert [w for w in caught if issubclass(w.category, UntrustedCacheWarning)]
    # the next compile's store replaces it with a regular file, and the entry serves again
    _finish(pending, fp)
    assert stat.S_ISREG(os.lstat(target).st_mode)
    assert _lookup(cache_dir, fp)[0] is not None
    if keep is not None:
        keep.close()


def test_a_sparse_giant_is_refused_without_reading_it(cells, tmp_path):
    """A blob is read no further than the size its metadata lists: a corrupt miss, rebuilt."""
    fp = _fingerprint(cells, VICTIM)
    cache_dir = tmp_path / "c"
    key = _store(cache_dir, fp)
    with open(cache_dir / f"{key}.bin", "r+b") as f:
        f.truncate(1 << 40)  # a terabyte of holes
    artifact, pending = _lookup(cache_dir, fp)
    assert artifact is None and pending.changes[0].reason == "corrupt"
    assert f"{key}.bin is {1 << 40} bytes, over the size its metadata lists" in \
        pending.changes[0].text
    _finish(pending, fp)
    assert _lookup(cache_dir, fp)[0] is not None


def test_an_entry_copied_under_another_key_is_a_miss(cells, tmp_path):
    """Copy kernel B's files under kernel A's key and edit the key field: a miss, never B's
    code for A; the entry is rebuilt and serves A."""
    fp_a, fp_b = _fingerprint(cells, VICTIM), _fingerprint(cells, OTHER)
    cache_dir = tmp_path / "c"
    key_a, key_b = _store(cache_dir, fp_a), _store(cache_dir, fp_b)
    for ext in ("bin", "ptx"):
        shutil.copyfile(cache_dir / f"{key_b}.{ext}", cache_dir / f"{key_a}.{ext}")
    header, body = split_metadata((cache_dir / f"{key_b}.json").read_bytes())
    header["key"] = key_a
    (cache_dir / f"{key_a}.json").write_bytes(json.dumps(header).encode() + b"\n" + body)
    artifact, pending = _lookup(cache_dir, fp_a)
    assert artifact is None
    change = pending.changes[0]
    assert change.reason == "corrupt" and f"made for key {key_b}" in change.text
    _finish(pending, fp_a)
    artifact, _ = _lookup(cache_dir, fp_a)
    assert _loaded_code(artifact) == fp_a.digest.encode()[:32]


def test_a_directory_at_an_entry_path_is_repaired_and_costs_one_entry(cells, tmp_path):
    fp = _fingerprint(cells, VICTIM)
    cache_dir = tmp_path / "c"
    key = _store(cache_dir, fp)
    for ext in ("json", "bin"):
        os.unlink(cache_dir / f"{key}.{ext}")
        (cache_dir / f"{key}.{ext}" / "inner").mkdir(parents=True)
    artifact, pending = _lookup(cache_dir, fp)
    assert artifact is None and pending.changes[0].reason == "corrupt"
    assert "directory" in pending.changes[0].text
    event = _finish(pending, fp)
    assert event.entry_bytes > 0 and _last[0].disk.writable
    assert _lookup(cache_dir, fp)[0] is not None
    # and when the JSON's place is taken by a directory after a lookup, a store repairs it
    os.unlink(cache_dir / f"{key}.json")
    (cache_dir / f"{key}.json").mkdir()
    fp2 = _fingerprint(cells, OTHER)
    assert _store(cache_dir, fp2) and KernelCache(str(cache_dir)).disk.writable


def test_the_disk_tier_survives_its_directory_vanishing(cells, tmp_path):
    """One ENOENT (the directory removed under a running process) does not turn the disk tier
    off for the process: the next store makes the directory again."""
    cache_dir = tmp_path / "c"
    cache = KernelCache(str(cache_dir))
    fp = _fingerprint(cells, VICTIM)
    _, pending = cache.lookup("kern", fp, SIGNATURE, {}, "cpu", "test-arch", TOOLCHAIN)
    shutil.rmtree(cache_dir)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        event = cache.store(pending, fake_artifact(fp), fp, 1.0)
    assert event.entry_bytes > 0 and cache.disk.writable
    assert not [w for w in caught if issubclass(w.category, CacheDirWarning)]
    cache.forget_memory()
    artifact, pending = cache.lookup("kern", fp, SIGNATURE, {}, "cpu", "test-arch", TOOLCHAIN)
    assert artifact is not None and pending.event.source == "disk"


def test_a_transient_error_costs_one_entry_not_the_disk_tier(cells, tmp_path, monkeypatch):
    import errno

    from gpunb.cache import store

    cache_dir = tmp_path / "c"
    cache = KernelCache(str(cache_dir))
    fp = _fingerprint(cells, VICTIM)
    real = store.atomic_write
    failures = [OSError(errno.EIO, "Input/output error")]

    def flaky(*args, **kwargs):
        if failures:
            raise failures.pop()
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "atomic_write", flaky)
    _, pending = cache.lookup("kern", fp, SIGNATURE, {}, "cpu", "test-arch", TOOLCHAIN)
    with pytest.warns(CacheDirWarning, match="goes on"):
        assert cache.store(pending, fake_artifact(fp), fp, 1.0).entry_bytes == 0
    assert cache.disk.writable
    fp2 = _fingerprint(cells, OTHER)
    _, pending = cache.lookup("kern", fp2, SIGNATURE, {}, "cpu", "test-arch", TOOLCHAIN)
    assert cache.store(pending, fake_artifact(fp2), fp2, 1.0).entry_bytes > 0


def test_temp_files_of_dead_writers_go_at_once(cells, tmp_path):
    import subprocess
    import sys

    from gpunb.cache import keylock

    fp = _fingerprint(cells, VICTIM)
    cache_dir = tmp_path / "c"
    _store(cache_dir, fp)
    pid = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                             capture_output=True, text=True, check=True).stdout)
    host, machine, _, started, _ = keylock.temp_prefix()[len(".tmp-"):].split("+")
    dead = cache_dir / f".tmp-{host}+{machine}+{pid}+{started}+x1y2z3"
    alive = cache_dir / f"{keylock.temp_prefix()}a1b2c3"
    elsewhere = cache_dir / f".tmp-otherhost+{machine}+{pid}+{started}+q1w2e3"
    for path in (dead, alive, elsewhere):
        path.write_bytes(b"half an entry")  # all fresh: no age rule applies
    DiskStore(str(cache_dir), 1 << 30).prune()
    assert not dead.exists() and alive.exists() and elsewhere.exists()


# ---- a shared cache: group write, authenticated entries ----------------------------------------

def _team_cache(open_dir) -> tuple[str, str]:
    """(a 2770 team directory, a key readable by the key holders' group only)."""
    from gpunb.cache import auth

    shared = os.path.join(open_dir, "team")
    os.mkdir(shared)
    os.chown(shared, 0, TEAM)
    os.chmod(shared, 0o2770)
    keys = os.path.join(open_dir, "keys")
    os.mkdir(keys, 0o755)
    key_file = os.path.join(keys, "cache.key")
    auth.generate(key_file)
    os.chown(key_file, 0, KEYHOLDERS)
    os.chmod(key_file, 0o440)
    return shared, key_file


@needs_root
def test_a_shared_cache_loads_the_entries_of_key_holders_only(cells, tmp_path, open_dir):
    shared, key_file = _team_cache(open_dir)
    fp = _fingerprint(cells, VICTIM)
    settings = {"shared": True, "key_file": key_file}
    # a member who holds the key compiles and stores: another user (root here) loads it
    as_user(MEMBER, [TEAM, KEYHOLDERS], lambda: _store(shared, fp, **settings))
    artifact, pending = _lookup(shared, fp, **settings)
    assert artifact is not None and pending.event.source == "disk"
    key = pending.key
    info = os.stat(os.path.join(shared, f"{key}.bin"))
    assert info.st_uid == MEMBER and info.st_gid == TEAM and stat.S_IMODE(info.st_mode) == 0o640
    # a member without the key replaces it with a forged one: refused, and rebuilt by a holder
    _, files, _, other_fp = forged_files(cells, tmp_path)
    as_user(ATTACKER, [TEAM], lambda: plant(shared, key, files, mode=0o664))
    with pytest.warns(UntrustedCacheWarning, match="not signed"):
        artifact, pending = _lookup(shared, fp, **settings)
    assert artifact is None and pending.changes[0].subject == "not signed"
    pending_key = pending.key
    _finish(pending, fp)
    artifact, _ = _lookup(shared, fp, **settings)
    assert pending_key == key and _loaded_code(artifact) == fp.digest.encode()[:32]


@needs_root
def test_without_the_key_a_member_neither_loads_nor_writes(cells, open_dir):
    shared, key_file = _team_cache(open_dir)
    fp = _fingerprint(cells, VICTIM)
    settings = {"shared": True, "key_file": key_file}
    _store(shared, fp, **settings)  # a key holder's entry

    def outsider():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            artifact, pending = _lookup(shared, fp, **settings)
            assert artifact is None and pending.changes[0].reason == "untrusted"
            assert "key file cannot be read" in pending.changes[0].subject
            fp2 = _fingerprint(cells, OTHER)
            artifact, pending = _lookup(shared, fp2, **settings)
            assert _finish(pending, fp2).entry_bytes == 0
        assert [w for w in caught if issubclass(w.category, UntrustedCacheWarning)]

    as_user(ATTACKER, [TEAM], outsider)
    assert len([n for n in os.listdir(shared) if n.endswith(".json")]) == 1


def test_a_key_file_others_can_read_is_refused(tmp_path):
    from gpunb.cache import auth

    path = tmp_path / "k"
    path.write_text("0123456789abcdef0123456789abcdef")
    os.chmod(path, 0o644)
    with pytest.raises(auth.Untrusted, match="open to others"):
        auth.load_key(str(path))
    os.chmod(path, 0o600)
    assert len(auth.load_key(str(path)).key_id) == 12
    path.write_text("short")
    with pytest.raises(auth.Untrusted, match="fewer than 16"):
        auth.load_key(str(path))


def test_a_shared_entry_signed_with_another_key_is_refused(cells, tmp_path):
    from gpunb.cache import auth

    shared = tmp_path / "team"
    shared.mkdir(mode=0o770)
    mine, theirs = tmp_path / "mine.key", tmp_path / "theirs.key"
    auth.generate(str(mine))
    auth.generate(str(theirs))
    fp = _fingerprint(cells, VICTIM)
    _store(shared, fp, shared=True, key_file=str(theirs))
    with pytest.warns(UntrustedCacheWarning, match="another key"):
        artifact, pending = _lookup(shared, fp, shared=True, key_file=str(mine))
    assert artifact is None
    assert _lookup(shared, fp, shared=True, key_file=str(theirs))[0] is not None


def test_keygen_cli_writes_a_private_key(tmp_path, capsys):
    from gpunb.cache.__main__ import main

    path = tmp_path / "sub" / "cache.key"
    assert main(["keygen", str(path)]) == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o400
    assert "GPUNB_CACHE_SHARED=1" in capsys.readouterr().out
    assert main(["keygen", str(path)]) == 1  # never overwrites a key


# ---- the attack end to end: a CPU-target host object planted by another user ----------

KERNEL_TIMES = """
from gpunb import cuda


@cuda.jit
def kern(out, x):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] * {factor}
"""


def _worker(cache_dir, src, spec: str) -> dict:
    import subprocess
    import sys
    from pathlib import Path

    here = Path(__file__).resolve().parent
    env = dict(os.environ, GPUNB_CACHE_DIR=str(cache_dir), GPUNB_TARGET="cpu",
               GPUNB_NOTICES="0", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([str(here.parents[1]), str(here)]))
    env.pop("GPUNB_CACHE", None)
    proc = subprocess.run([sys.executable, str(here / "real_worker.py"), str(src), spec],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1]), proc.stderr


@needs_root
@pytest.mark.slow
def test_planted_host_code_never_runs(tmp_path, open_dir):
    src = tmp_path / "src"
    src.mkdir()
    (src / "twice.py").write_text(KERNEL_TIMES.format(factor=2.0))
    (src / "thrice.py").write_text(KERNEL_TIMES.format(factor=3.0))
    private = tmp_path / "private"
    victim, _ = _worker(private, src, "twice:kern")
    other, _ = _worker(private, src, "thrice:kern")
    store = DiskStore(str(private), 1 << 30)
    files = _forgery(store.read(victim["key"]), store.read(other["key"]))
    expected = [2.0 * i for i in range(16)]

    own = tmp_path / "own"  # control: planted by the user themselves, the forgery runs
    own.mkdir(mode=0o700)
    plant(own, victim["key"], files, mode=0o600)
    shutil.copy(private / "toolchain.json", own / "toolchain.json")
    result, _ = _worker(own, src, "twice:kern")
    assert result["outcome"] == "hit (disk)" and result["out"] == [3.0 * i for i in range(16)]

    team = os.path.join(open_dir, "team")  # a group-writable directory, another member
    os.mkdir(team)
    os.chown(team, 0, TEAM)
    os.chmod(team, 0o2770)
    as_user(ATTACKER, [TEAM], lambda: plant(team, victim["key"], files))
    result, stderr = _worker(team, src, "twice:kern")
    assert result["out"] == expected and result["outcome"].startswith("miss (untrusted: ")
    assert "UntrustedCacheWarning" in stderr and team in stderr

    mine = tmp_path / "mine"  # a private directory holding another user's 0666 files
    mine.mkdir(mode=0o700)
    plant(mine, victim["key"], files, mode=0o666)
    for ext in files:
        os.chown(mine / f"{victim['key']}.{ext}", ATTACKER, ATTACKER)
    result, _ = _worker(mine, src, "twice:kern")
    assert result["out"] == expected
    assert result["outcome"] == f"miss (untrusted: owned by uid {ATTACKER}, not by you (uid 0) " \
                                "or root)"
    result, _ = _worker(mine, src, "twice:kern")  # rebuilt by the user: a plain hit now
    assert result["outcome"] == "hit (disk)" and result["out"] == expected


@needs_root
def test_two_key_holders_share_one_cache_without_warnings(cells, open_dir):
    """Members of the team (not root) write, lock and read each other's entries."""
    shared, key_file = _team_cache(open_dir)
    settings = {"shared": True, "key_file": key_file}
    first, second = _fingerprint(cells, VICTIM), _fingerprint(cells, OTHER)

    def member(store_fp, load_fp):
        def act():
            os.umask(0o022)  # a common umask: the cache's modes must not depend on it
            with warnings.catch_warnings():
                warnings.simplefilter("error", CacheDirWarning)
                _store(shared, store_fp, **settings)
                if load_fp is not None:
                    artifact, pending = _lookup(shared, load_fp, **settings)
                    assert artifact is not None and pending.event.source == "disk"
        return act

    as_user(MEMBER, [TEAM, KEYHOLDERS], member(first, None))
    as_user(MEMBER + 1, [TEAM, KEYHOLDERS], member(second, first))
    names = os.listdir(shared)
    assert len([n for n in names if n.endswith(".json")]) == 2
    assert stat.S_IMODE(os.stat(os.path.join(shared, "by-name")).st_mode) & 0o070 == 0o070
