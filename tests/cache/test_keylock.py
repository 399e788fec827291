"""Per-key lock files: exclusive, self-describing, kept alive by a heartbeat, broken when stale."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time

import pytest

from gpunb.cache import keylock
from gpunb.cache.store import atomic_write


@pytest.fixture
def lock_path(tmp_path):
    yield str(tmp_path / ("a" * 40 + ".lock"))
    for lock in keylock.held_locks():
        lock.release()


def test_one_holder_at_a_time_and_the_lock_names_it(lock_path):
    first = keylock.acquire(lock_path, 30.0)
    assert first is not None and keylock.acquire(lock_path, 30.0) is None
    holder = keylock.holder_of(keylock.observe(lock_path))
    me = keylock.identity()
    assert {k: holder[k] for k in ("host", "machine", "pid", "started")} == me
    assert len(holder["nonce"]) == 16 and me["started"]  # Linux: the pid's start time
    assert holder["beat_s"] == 6.0 and keylock.stale_after(holder, 1.0) == 18.0
    assert keylock.stale_after(holder, 30.0) == 30.0 and keylock.stale_after(None, 2.0) == 2.0
    assert first.release() and not os.path.exists(lock_path)
    assert not first.release()  # twice: nothing more to do
    again = keylock.acquire(lock_path, 30.0)
    assert again is not None and again.text != first.text
    leftovers = [n for n in os.listdir(os.path.dirname(lock_path)) if n.startswith(".tmp-")]
    assert leftovers == []  # the private file linked into place is gone


def test_release_leaves_a_lock_that_is_no_longer_ours(lock_path):
    ours = keylock.acquire(lock_path, 30.0)
    os.unlink(lock_path)  # as a waiter that judged us stale would
    theirs = keylock.acquire(lock_path, 30.0)
    assert not ours.release()
    assert keylock.observe(lock_path).text == theirs.text


def test_the_heartbeat_touches_held_locks_until_release(lock_path):
    lock = keylock.acquire(lock_path, stale_s=0.1)  # touched every 20 ms
    os.utime(lock_path, (1, 1))
    deadline = time.monotonic() + 5
    while os.stat(lock_path).st_mtime == 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert os.stat(lock_path).st_mtime > 1
    lock.release()
    assert lock not in keylock.held_locks()


def test_a_lock_is_broken_only_if_unchanged_since_observed(lock_path):
    lock = keylock.acquire(lock_path, 30.0)
    seen = keylock.observe(lock_path)
    os.utime(lock_path, ns=(seen.mtime_ns + 10**9, seen.mtime_ns + 10**9))  # a heartbeat
    assert not keylock.break_lock(lock_path, seen) and os.path.exists(lock_path)
    assert keylock.break_lock(lock_path, keylock.observe(lock_path))
    assert not os.path.exists(lock_path)
    assert not keylock.break_lock(lock_path, seen)  # nothing left to break
    lock.release()


def _holder(**changes) -> dict:
    return dict(keylock.identity(), nonce="0" * 16, **changes)


def test_a_holder_is_gone_only_on_proof():
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)
    dead_pid = int(finished.stdout)
    boot, _, pidns = keylock.identity()["machine"].partition("/")
    assert keylock.holder_gone(_holder(pid=dead_pid))
    assert not keylock.holder_gone(_holder())  # this very process
    assert keylock.holder_gone(_holder(started="1"))  # our pid, an older process: reused pid
    assert not keylock.holder_gone(_holder(host="node-elsewhere", pid=dead_pid))
    # a reboot, or another machine with our host name: its pids mean nothing here
    assert not keylock.holder_gone(_holder(pid=dead_pid, machine=f"another-boot/{pidns}"))
    assert not keylock.holder_gone(_holder(pid=dead_pid, machine=f"{boot}/pid:[1]"))  # container
    assert not keylock.holder_gone(None) and not keylock.holder_gone({"pid": "x"})


def test_a_killed_but_unreaped_holder_is_gone():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert keylock.process_start(child.pid)
        child.kill()
        deadline = time.monotonic() + 5
        while keylock.process_start(child.pid) is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert keylock.process_start(child.pid) is None  # a zombie until we wait() below
    finally:
        child.kill()
        child.wait()


def test_without_hard_links_the_lock_is_created_exclusively(lock_path, monkeypatch):
    def no_links(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(keylock.os, "link", no_links)
    first = keylock.acquire(lock_path, 30.0)
    assert first is not None and keylock.acquire(lock_path, 30.0) is None
    assert json.loads(keylock.observe(lock_path).text)["pid"] == os.getpid()
    assert first.release() and not os.path.exists(lock_path)


def test_a_link_reported_failed_but_made_counts_as_taken(lock_path, monkeypatch):
    """NFS: a retransmitted LINK can report an error for a link that was made."""
    real_link = os.link

    def lossy(src, dst):
        real_link(src, dst)
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(keylock.os, "link", lossy)
    assert keylock.acquire(lock_path, 30.0) is not None


def test_an_unwritable_directory_raises_for_the_caller(tmp_path):
    with pytest.raises(OSError):
        keylock.acquire(str(tmp_path / "absent" / ("b" * 40 + ".lock")), 30.0)


def test_temp_names_carry_host_and_pid(tmp_path, monkeypatch):
    """Writers on several nodes of one shared directory never pick the same temp name."""
    seen = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (seen.append(src), real_replace(src, dst)))
    atomic_write(str(tmp_path / "entry.json"), b"{}")
    name = os.path.basename(seen[0])
    prefix = keylock.temp_prefix()
    host, machine, pid, started, _ = prefix[len(".tmp-"):].split("+")
    assert host == keylock.host_tag() and pid == str(os.getpid()) and len(machine) == 8
    assert started == keylock.identity()["started"]
    assert name.startswith(prefix)
    assert len(name) >= len(prefix) + 6, "a random part follows host, machine and pid"
    assert keylock.temp_writer_state(name) == "alive"


def test_a_temp_file_is_known_dead_by_its_writers_pid(tmp_path):
    """No ten-minute wait: a temp file whose writer (on this machine) is gone is garbage now;
    one of a live writer, or of another host, is left alone."""
    import subprocess
    import sys

    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    dead_pid = int(child.stdout)
    me = keylock.temp_prefix()[len(".tmp-"):].split("+")
    dead = f".tmp-{me[0]}+{me[1]}+{dead_pid}+{me[3]}+abc123"
    reused = f".tmp-{me[0]}+{me[1]}+{os.getpid()}+1+abc123"  # our pid, another start time
    other_host = f".tmp-elsewhere+{me[1]}+{dead_pid}+{me[3]}+abc123"
    assert keylock.temp_writer_state(dead) == "dead"
    assert keylock.temp_writer_state(reused) == "dead"
    assert keylock.temp_writer_state(other_host) == "unknown"
    assert keylock.temp_writer_state(".tmp-old-style-123-x") == "unknown"


def test_host_tag_is_the_sanitised_hostname():
    import re
    import socket

    expected = re.sub(r"[^A-Za-z0-9.-]", "_", socket.gethostname() or "host")[:64] or "host"
    assert keylock.host_tag() == expected
