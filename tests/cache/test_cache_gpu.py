"""The new-process scenarios on a GPU: cubins stored, loaded from disk through the driver, timed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from test_processes import HELPER_B, KERNEL_A, WORKER, _env, _write

pytestmark = pytest.mark.gpu


def _run_cuda(cache_dir, module_dir, *kernels) -> list[dict]:
    # bytecode caching on (as in any installed package), kept apart from the source tree
    env = dict(_env(cache_dir), GPUNB_TARGET="cuda",
               PYTHONPYCACHEPREFIX=str(cache_dir.parent / "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE")
    proc = subprocess.run([sys.executable, str(WORKER), "--cuda", str(module_dir), *kernels],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def test_seed_002_on_the_gpu_and_disk_hit_time(tmp_path):
    src, cache_dir = tmp_path / "src", tmp_path / "cache"
    _write(src, "b", HELPER_B.format(inc="1.0"))
    _write(src, "a", KERNEL_A)
    (first,) = _run_cuda(cache_dir, src, "a:kern")
    assert first["kind"] == "miss" and first["out"] == [i + 1.0 for i in range(16)]
    assert first["cubin"] == "7f454c46"  # an ELF cubin is what the entry holds
    _write(src, "b", HELPER_B.format(inc="2.0"))
    (second,) = _run_cuda(cache_dir, src, "a:kern")
    assert second["reason"] == "changed"
    assert second["why"].startswith("changed: device function `b.helper`")
    assert second["out"] == [i + 2.0 for i in range(16)]
    hits = [_run_cuda(cache_dir, src, "a:kern")[0] for _ in range(3)]
    assert all(h["kind"] == "hit" and h["source"] == "disk" for h in hits)
    assert all(h["out"] == [i + 2.0 for i in range(16)] for h in hits)
    best = min(hits, key=lambda h: h["ms"])
    print(f"\ndisk hit, new process, fingerprint to loaded kernel: {best['ms']:.1f} ms "
          f"(lookup {best['lookup_ms']:.1f} ms, the rest fingerprints and loads the cubin); "
          f"compile + link on a miss: {second['ms']:.0f} ms")


def test_a_shared_cache_on_the_gpu_loads_authenticated_cubins_only(tmp_path):
    """GPUNB_CACHE_SHARED=1: the cubin entry carries a MAC; a disk hit verifies it, and an
    entry rewritten without the key (another kernel's cubin under this key) never runs."""
    import os

    from gpunb.cache import auth
    from gpunb.cache.store import DiskStore, digest, encode_metadata

    src, cache_dir = tmp_path / "src", tmp_path / "cache"
    _write(src, "b", HELPER_B.format(inc="1.0"))
    _write(src, "a", KERNEL_A)
    key_file = tmp_path / "keys" / "cache.key"
    auth.generate(str(key_file))
    os.environ.update(GPUNB_CACHE_SHARED="1", GPUNB_CACHE_KEY_FILE=str(key_file))
    try:
        (first,) = _run_cuda(cache_dir, src, "a:kern")
        hits = [_run_cuda(cache_dir, src, "a:kern")[0] for _ in range(3)]
        assert all(h["outcome"] == "hit (disk)" for h in hits)
        assert all(h["out"] == [i + 1.0 for i in range(16)] for h in hits)
        best = min(hits, key=lambda h: h["ms"])
        print(f"\nshared cache, authenticated disk hit: {best['ms']:.1f} ms")
        # an attacker without the key: the same entry with its MAC dropped and its checksums
        # recomputed over a changed cubin
        entry = DiskStore(str(cache_dir), 1 << 30, shared=True,
                          key_file=str(key_file)).read(first["key"])
        cubin = bytearray(entry.blobs["bin"])
        cubin[-1] ^= 0x01
        body = dict(entry.body)
        body["blobs"] = dict(body["blobs"], bin={"size": len(cubin),
                                                 "blake2b": digest(bytes(cubin))})
        (cache_dir / f"{first['key']}.bin").write_bytes(bytes(cubin))
        (cache_dir / f"{first['key']}.json").write_bytes(encode_metadata(first["key"], body))
        (forged,) = _run_cuda(cache_dir, src, "a:kern")
        assert forged["outcome"] == "miss (untrusted: not signed)"
        assert forged["out"] == [i + 1.0 for i in range(16)]
    finally:
        os.environ.pop("GPUNB_CACHE_SHARED", None)
        os.environ.pop("GPUNB_CACHE_KEY_FILE", None)
