"""One compile per key across processes: claim or wait (fake clock), and the KernelCache protocol.

The waits here are simulated (a fake clock) or between two KernelCaches of one process standing
in for two processes; test_compile_once_processes.py does the same with real processes.
"""

from __future__ import annotations

import errno
import json
import os
import threading
import time
import warnings

import pytest
from cache_support import SIGNATURE, TOOLCHAIN, MiniDispatcher, fake_artifact, jit

from gpunb.cache import KernelCache, collect, keylock
from gpunb.cache.compile_once import claim
from gpunb.cache.store import CacheDirWarning

KEY = "c" * 40


class FakeTime:
    """clock() and sleep() for claim(): sleeping advances the clock and runs `on_sleep`."""

    def __init__(self, on_sleep=lambda now: None):
        self.now = 100.0
        self.on_sleep = on_sleep

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.on_sleep(self.now)


@pytest.fixture
def lock_path(tmp_path):
    yield str(tmp_path / f"{KEY}.lock")
    for lock in keylock.held_locks():
        lock.release()


def _foreign_lock(path: str, **holder) -> None:
    """A lock held by a process on another node (nothing here can check its pid)."""
    data = {"host": "node-elsewhere", "machine": "x/y", "pid": 4242, "started": "7",
            "nonce": "f" * 16, **holder}
    with open(path, "w") as f:
        json.dump(data, f)


def test_a_free_key_is_claimed_at_once(lock_path):
    result = claim(lock_path, lambda: None, 300, 30)
    assert result.outcome == "compile" and result.waited_ms == 0
    assert result.lock is not None and os.path.exists(lock_path)


def test_an_entry_stored_just_before_the_claim_is_found_and_the_lock_freed(lock_path):
    result = claim(lock_path, lambda: "entry", 300, 30)
    assert result.outcome == "found" and result.found == "entry" and result.lock is None
    assert not os.path.exists(lock_path)


def test_a_waiter_loads_the_entry_its_holder_stores(lock_path):
    _foreign_lock(lock_path)
    entry = []
    fake = FakeTime(lambda now: entry.append("entry") if now >= 100.4 else None)
    result = claim(lock_path, lambda: entry[0] if entry else None, 300, 30,
                   fake.clock, fake.sleep)
    assert result.outcome == "found" and result.found == "entry"
    assert 400 <= result.waited_ms < 520  # polls back off to 100 ms at most


def test_a_heartbeating_holder_is_waited_for_until_the_timeout(lock_path):
    _foreign_lock(lock_path)
    beats = []

    def heartbeat(now):
        if now - (beats[-1] if beats else 100) >= 1.0:  # stale 3 s: it beats every second
            beats.append(now)
            os.utime(lock_path, ns=(int(now * 1e9), int(now * 1e9)))

    fake = FakeTime(heartbeat)
    result = claim(lock_path, lambda: None, 10, 3, fake.clock, fake.sleep)
    assert result.outcome == "timed out" and result.lock is None
    assert 10_000 <= result.waited_ms < 10_200 and len(beats) >= 9
    assert keylock.holder_of(keylock.observe(lock_path))["host"] == "node-elsewhere"


def test_a_silent_holder_on_another_node_is_taken_over_after_the_stale_time(lock_path):
    _foreign_lock(lock_path)  # its node died: no heartbeat, no pid we could check
    fake = FakeTime()
    result = claim(lock_path, lambda: None, 300, 3, fake.clock, fake.sleep)
    assert result.outcome == "compile" and result.lock is not None
    assert 3_000 <= result.waited_ms < 3_200
    assert keylock.holder_of(keylock.observe(lock_path))["pid"] == os.getpid()


def test_a_holder_that_beats_slower_than_our_stale_time_is_not_taken_over_early(lock_path):
    _foreign_lock(lock_path, beat_s=2.0)  # its stale time is 10 s; ours says 1 s
    fake = FakeTime()
    result = claim(lock_path, lambda: None, 300, 1, fake.clock, fake.sleep)
    assert result.outcome == "compile" and 6_000 <= result.waited_ms < 6_200  # 3 beats


def test_a_dead_holder_on_this_machine_is_taken_over_at_once(lock_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    _foreign_lock(lock_path, **dict(keylock.identity(), pid=int(done.stdout)))
    fake = FakeTime()
    result = claim(lock_path, lambda: None, 300, 30, fake.clock, fake.sleep)
    assert result.outcome == "compile" and result.waited_ms < 50


def test_a_lock_released_without_an_entry_is_taken_over_at_once(lock_path):
    """Its holder's compile failed (it abandoned the key): the next waiter compiles now."""
    _foreign_lock(lock_path)
    fake = FakeTime(lambda now: os.path.exists(lock_path) and now > 100.2
                    and os.unlink(lock_path))
    result = claim(lock_path, lambda: None, 300, 30, fake.clock, fake.sleep)
    assert result.outcome == "compile" and 200 <= result.waited_ms < 400


# ---- the KernelCache protocol, two caches standing in for two processes ------------------------

@pytest.fixture
def kern(cells):
    cells.run("def kern(out, x):\n    out[0] = x[0] * 3.0\n")
    return jit(cells.ns["kern"])


def _lookup(cache: KernelCache, fp):
    return cache.lookup("kern", fp, SIGNATURE, {}, "cpu", "test-arch", TOOLCHAIN)


def test_a_second_process_waits_for_the_first_ones_entry(kern, cache_dir):
    fp = collect(kern)
    first, second = KernelCache(str(cache_dir)), KernelCache(str(cache_dir))
    art, pending = _lookup(first, fp)
    assert art is None and os.path.exists(first.disk.lock_path(pending.key))
    got = {}
    waiter = threading.Thread(target=lambda: got.update(result=_lookup(second, fp)))
    waiter.start()
    time.sleep(0.3)  # "compiling"
    assert "result" not in got  # still waiting
    first.store(pending, fake_artifact(fp), fp, 300.0)
    waiter.join(10)
    art2, pending2 = got["result"]
    event = pending2.event
    assert art2 is not None and art2.binary == fake_artifact(fp).binary
    assert event.kind == "hit" and event.source == "disk" and event.waited_ms >= 300
    assert event.outcome == f"hit (disk, waited {event.waited_ms:.0f} ms)"
    assert event.describe() == f"{event.outcome} in {event.time_ms:.2f} ms"
    assert not os.path.exists(first.disk.lock_path(pending.key))


def test_threads_of_one_process_compile_once(kern, cache_dir):
    """A Dask worker with several threads: one thread compiles, the others wait in memory."""

    class Slow(MiniDispatcher):
        def compile(self, fingerprint):
            time.sleep(0.3)
            return super().compile(fingerprint)

    cache = KernelCache(str(cache_dir))
    kernels = [Slow(kern.py_func, cache) for _ in range(4)]
    threads = [threading.Thread(target=k.launch) for k in kernels]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sum(k.compiles for k in kernels) == 1
    events = sorted((k.event.kind, k.event.source) for k in kernels)
    assert events == [("hit", "memory")] * 3 + [("miss", None)]
    assert all(k.event.waited_ms >= 100 for k in kernels if k.event.kind == "hit")
    assert keylock.held_locks() == []


def test_a_failed_compile_frees_the_key(kern, cache_dir):
    class Failing(MiniDispatcher):
        def compile(self, fingerprint):
            raise RuntimeError("the compiler failed")

    cache = KernelCache(str(cache_dir))
    with pytest.raises(RuntimeError):
        Failing(kern.py_func, cache).launch()
    assert keylock.held_locks() == [] and not [n for n in os.listdir(cache_dir)
                                               if n.endswith(".lock") and n != ".lock"]
    k = MiniDispatcher(kern.py_func, cache)
    k.launch()
    assert k.event.kind == "miss" and k.event.waited_ms == 0


def test_a_claim_never_stored_is_taken_over_not_waited_for(kern, cache_dir, monkeypatch):
    """A caller that let a compile error escape without abandon(): the retry must not hang."""
    monkeypatch.setenv("GPUNB_CACHE_WAIT_SECONDS", "60")
    fp = collect(kern)
    cache = KernelCache(str(cache_dir))
    _, forgotten = _lookup(cache, fp)
    started = time.perf_counter()
    art, pending = _lookup(cache, fp)
    assert art is None and time.perf_counter() - started < 5
    assert pending.claim is forgotten.claim and pending.claim.lock is not None
    cache.store(pending, fake_artifact(fp), fp, 1.0)
    assert keylock.held_locks() == []


def test_a_thread_whose_compile_fails_hands_the_key_to_a_waiting_thread(kern, cache_dir):
    attempts = []

    class FailsFirst(MiniDispatcher):
        def compile(self, fingerprint):
            attempts.append(threading.get_ident())
            time.sleep(0.2)
            if len(attempts) == 1:
                raise RuntimeError("the first compile failed")
            return super().compile(fingerprint)

    cache = KernelCache(str(cache_dir))
    kernels = [FailsFirst(kern.py_func, cache) for _ in range(2)]
    errors = []

    def launch(k):
        try:
            k.launch()
        except RuntimeError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=launch, args=(k,)) for k in kernels]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(errors) == 1 and len(attempts) == 2 and attempts[0] != attempts[1]
    survivor = next(k for k in kernels if k.event is not None)
    assert survivor.event.kind == "miss" and survivor.event.waited_ms >= 150


def test_a_waiter_that_times_out_compiles_and_says_so(kern, cache_dir, monkeypatch):
    monkeypatch.setenv("GPUNB_CACHE_WAIT_SECONDS", "0.3")
    monkeypatch.setenv("GPUNB_CACHE_LOCK_STALE_SECONDS", "0.2")  # beats every 40 ms
    fp = collect(kern)
    holder = KernelCache(str(cache_dir))
    _, held = _lookup(holder, fp)  # alive and heartbeating, never finishing
    art, pending = _lookup(KernelCache(str(cache_dir)), fp)
    assert art is None and pending.claim.lock is None and pending.waited_ms >= 300
    assert "then compiled it here" in "; ".join(change.text for change in pending.changes)
    holder.abandon(held)


def test_waiting_turned_off_takes_no_lock(kern, cache_dir, monkeypatch):
    monkeypatch.setenv("GPUNB_CACHE_WAIT_SECONDS", "0")
    fp = collect(kern)
    cache = KernelCache(str(cache_dir))
    art, pending = _lookup(cache, fp)
    assert art is None and pending.claim is None and keylock.held_locks() == []
    cache.store(pending, fake_artifact(fp), fp, 1.0)
    names = os.listdir(cache_dir)
    assert f"{pending.key}.json" in names and f"{pending.key}.lock" not in names


def test_a_full_disk_degrades_to_memory_with_one_warning(cells, cache_dir, monkeypatch):
    from gpunb.cache import store

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(keylock, "acquire", full)
    monkeypatch.setattr(store, "atomic_write", full)
    monkeypatch.setattr(store, "_warned_dirs", set())
    cache = KernelCache(str(cache_dir))
    kernels = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(3):
            cells.run(f"def kern(out, x):\n    out[0] = x[{i}]\n")
            kernels.append(MiniDispatcher(cells.ns["kern"], cache))
            kernels[-1].launch()
        again = MiniDispatcher(cells.ns["kern"], cache)
        again.launch()
    messages = [str(w.message) for w in caught if issubclass(w.category, CacheDirWarning)]
    assert len(messages) == 1 and "No space left on device" in messages[0]
    assert [k.event.kind for k in kernels] == ["miss"] * 3
    assert again.compiles == 0 and again.event.source == "memory"
