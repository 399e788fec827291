"""Compile once across real processes sharing one cache directory (CPU target, real compiler).

Every worker is a fresh process (lock_worker.py); nothing is shared but the directory. Workers of
one test print READY once imported and then wait for a go-file, so that they look up together.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from gpunb.cache.store import DiskStore

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
WORKER = HERE / "lock_worker.py"

KERNEL = """
    from gpunb import cuda

    @cuda.jit
    def kern(out, x):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] * {factor} + 1.0
"""


def _expected(factor: float) -> list[float]:
    return [i * factor + 1.0 for i in range(16)]


def _env(cache_dir: Path, **settings: str) -> dict:
    env = dict(os.environ)
    env.update(GPUNB_CACHE_DIR=str(cache_dir), GPUNB_TARGET="cpu", GPUNB_NOTICES="0",
               PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH")))))
    for name in ("GPUNB_CACHE", "GPUNB_CACHE_WAIT_SECONDS", "GPUNB_CACHE_LOCK_STALE_SECONDS"):
        env.pop(name, None)
    env.update(settings)
    return env


def _source(tmp_path: Path, factor: float, name: str = "k") -> Path:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / f"{name}.py").write_text(textwrap.dedent(KERNEL.format(factor=factor)))
    return src


def _start(cache_dir: Path, *args: str, preexec_fn=None, **settings: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(WORKER), *map(str, args)],
                            env=_env(cache_dir, **settings), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn)


def _ready_then_go(procs: list[subprocess.Popen], go: Path) -> None:
    for proc in procs:
        line = proc.stdout.readline()
        assert line.strip() == "READY", line + proc.stderr.read()
    go.touch()


def _results(proc: subprocess.Popen, timeout: float = 120) -> list[dict]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def _leftovers(cache_dir: Path) -> list[str]:
    return [n for n in os.listdir(cache_dir)
            if n.startswith(".tmp-") or (n.endswith(".lock") and n != ".lock")]


def _verified_entries(cache_dir: Path) -> list[str]:
    store = DiskStore(str(cache_dir), 1 << 30)
    entries = store.entries()
    assert not [e for e in entries if e.problem]
    assert all(store.read(e.key) is not None for e in entries)  # every checksum holds
    return [e.key for e in entries]


def test_six_processes_compile_a_new_kernel_once(tmp_path):
    src, cache_dir, go = _source(tmp_path, 7.0), tmp_path / "cache", tmp_path / "go"
    procs = [_start(cache_dir, "run", src, "--go", go, "k:kern") for _ in range(6)]
    _ready_then_go(procs, go)
    results = [r for proc in procs for r in _results(proc)]
    kinds = sorted((r["kind"], r["source"]) for r in results)
    assert kinds == [("hit", "disk")] * 5 + [("miss", None)]
    assert all(r["out"] == _expected(7.0) for r in results)
    waited = sorted(r["waited_ms"] for r in results if r["kind"] == "hit")
    print("\nwaited ms:", [round(w) for w in waited])
    assert waited[-1] > 0  # at least one looked up while the compile ran (all do, as a rule)
    assert all(r["outcome"] == f"hit (disk, waited {r['waited_ms']:.0f} ms)"
               for r in results if r["kind"] == "hit" and r["waited_ms"])
    assert _verified_entries(cache_dir) == [results[0]["key"]]
    assert _leftovers(cache_dir) == []


def test_without_waiting_every_process_compiles_and_the_entry_stays_whole(tmp_path):
    """GPUNB_CACHE_WAIT_SECONDS=0: concurrent writers of one key leave one verified entry."""
    src, cache_dir, go = _source(tmp_path, 5.0), tmp_path / "cache", tmp_path / "go"
    procs = [_start(cache_dir, "run", src, "--go", go, "k:kern", GPUNB_CACHE_WAIT_SECONDS="0")
             for _ in range(3)]
    _ready_then_go(procs, go)
    results = [r for proc in procs for r in _results(proc)]
    assert all(r["out"] == _expected(5.0) for r in results)
    assert all(r["reason"] != "corrupt" and r["waited_ms"] == 0 for r in results)
    assert sum(r["kind"] == "miss" for r in results) > 1  # nothing coordinated them
    assert len(_verified_entries(cache_dir)) == 1 and _leftovers(cache_dir) == []


def test_a_holder_killed_mid_compile_is_taken_over_without_waiting_for_staleness(tmp_path):
    src, cache_dir, go = _source(tmp_path, 3.0), tmp_path / "cache", tmp_path / "go"
    holder = _start(cache_dir, "hold", src, "k:kern")
    try:
        assert holder.stdout.readline().startswith("HOLDING"), holder.stderr.read()
        # stale 60 s: only the same-machine pid check can free them quickly
        waiters = [_start(cache_dir, "run", src, "--go", go, "k:kern",
                          GPUNB_CACHE_LOCK_STALE_SECONDS="60") for _ in range(3)]
        _ready_then_go(waiters, go)
        time.sleep(1.0)
        assert all(w.poll() is None for w in waiters)  # waiting for the live holder
        killed = time.monotonic()
        holder.kill()  # SIGKILL mid-compile; not reaped yet (a zombie) while they notice
        results = [r for w in waiters for r in _results(w)]
        after_kill = time.monotonic() - killed
    finally:
        holder.kill()
        holder.wait()
    print(f"\nwaited ms: {[round(r['waited_ms']) for r in results]}; "
          f"done {after_kill:.2f} s after the kill")
    assert sorted(r["kind"] for r in results) == ["hit", "hit", "miss"]
    assert all(r["out"] == _expected(3.0) for r in results)
    assert max(r["waited_ms"] for r in results) >= 300  # some waited on the live holder
    assert after_kill < 20  # far below the 60 s stale time and the 300 s wait
    assert len(_verified_entries(cache_dir)) == 1 and _leftovers(cache_dir) == []


def _key_of(tmp_path: Path, src: Path) -> str:
    """The kernel's key, learnt in a scratch cache directory."""
    proc = _start(tmp_path / "scratch-cache", "run", src, "k:kern")
    return _results(proc)[0]["key"]


def test_a_lock_left_by_a_vanished_node_is_taken_over_after_the_stale_time(tmp_path):
    src, cache_dir = _source(tmp_path, 4.0), tmp_path / "cache"
    key = _key_of(tmp_path, src)
    cache_dir.mkdir(mode=0o700)
    (cache_dir / f"{key}.lock").write_text(json.dumps(
        {"host": "node-gone", "machine": "b/p", "pid": 12345, "started": "1", "nonce": "0" * 16}))
    (result,) = _results(_start(cache_dir, "run", src, "k:kern",
                                GPUNB_CACHE_LOCK_STALE_SECONDS="1"))
    print(f"\nwaited {result['waited_ms']:.0f} ms for a stale time of 1 s")
    assert result["kind"] == "miss" and result["reason"] == "new"
    assert 1000 <= result["waited_ms"] < 6000
    assert result["out"] == _expected(4.0)
    assert _leftovers(cache_dir) == []


def test_a_live_holder_keeps_its_lock_and_a_waiter_that_times_out_compiles(tmp_path):
    """The heartbeat crosses processes: stale 0.5 s but the waiter waits its full 1.5 s."""
    src, cache_dir = _source(tmp_path, 6.0), tmp_path / "cache"
    holder = _start(cache_dir, "hold", src, "k:kern", GPUNB_CACHE_LOCK_STALE_SECONDS="0.5")
    try:
        assert holder.stdout.readline().startswith("HOLDING"), holder.stderr.read()
        (result,) = _results(_start(cache_dir, "run", src, "k:kern",
                                    GPUNB_CACHE_WAIT_SECONDS="1.5",
                                    GPUNB_CACHE_LOCK_STALE_SECONDS="0.5"))
        assert holder.poll() is None
    finally:
        holder.kill()
        holder.wait()
    assert result["kind"] == "miss" and result["waited_ms"] >= 1500
    assert "then compiled it here" in result["detail"]
    assert result["out"] == _expected(6.0)


def _without_dac_override() -> None:
    """In a root child: drop the capabilities that let root write a read-only directory."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_a_read_only_directory_warns_once_and_kernels_work(tmp_path):
    src, cache_dir = _source(tmp_path, 2.0), tmp_path / "cache"
    for factor, name in ((8.0, "k8"), (9.0, "k9")):
        _source(tmp_path, factor, name)
    (first,) = _results(_start(cache_dir, "run", src, "k:kern"))
    before = sorted(os.listdir(cache_dir))
    os.chmod(cache_dir, 0o500)
    try:
        root = hasattr(os, "geteuid") and os.geteuid() == 0
        proc = _start(cache_dir, "run", src, "k:kern", "k8:kern", "k9:kern",
                      preexec_fn=_without_dac_override if root else None)
        out, err = proc.communicate(timeout=120)
    finally:
        os.chmod(cache_dir, 0o700)
    assert proc.returncode == 0, err
    results = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [(r["kind"], r["source"]) for r in results] == [("hit", "disk"), ("miss", None),
                                                           ("miss", None)]
    assert [r["out"] for r in results] == [_expected(2.0), _expected(8.0), _expected(9.0)]
    assert results[0]["key"] == first["key"]
    assert err.count("CacheDirWarning") == 1 and "in-memory cache only" in err, err
    assert sorted(os.listdir(cache_dir)) == before
