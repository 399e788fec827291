"""The issue's new-process scenarios with the real compiler (CPU target); 8 writers at once.

Every process here is fresh: nothing survives between runs but the cache directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
WORKER = HERE / "real_worker.py"


def _env(cache_dir) -> dict:
    env = dict(os.environ)
    env.update(GPUNB_CACHE_DIR=str(cache_dir), GPUNB_TARGET="cpu", GPUNB_NOTICES="0",
               PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join(filter(None, (str(REPO), str(HERE),
                                                        os.environ.get("PYTHONPATH")))))
    env.pop("GPUNB_CACHE", None)
    return env


def _run(cache_dir, module_dir, *kernels) -> list[dict]:
    proc = subprocess.run([sys.executable, str(WORKER), str(module_dir), *kernels],
                          env=_env(cache_dir), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _write(folder: Path, name: str, text: str) -> None:
    """Write a module file; a rewrite gets a later mtime (a .pyc is keyed on mtime seconds)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(textwrap.dedent(text))
    later = max(before + 2_000_000_000, time.time_ns())
    os.utime(path, ns=(later, later))


HELPER_B = """
    from gpunb import cuda

    @cuda.jit(device=True)
    def helper(v):
        return v + {inc}
"""

KERNEL_A = """
    import b
    from gpunb import cuda

    @cuda.jit
    def kern(out, x):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = b.helper(x[i])
"""


def test_seed_002_edit_imported_device_function_between_processes(tmp_path):
    """numba's cache kept returning the old helper's result; here each edit recompiles."""
    src, cache_dir = tmp_path / "src", tmp_path / "cache"
    _write(src, "b", HELPER_B.format(inc="1.0"))
    _write(src, "a", KERNEL_A)
    (first,) = _run(cache_dir, src, "a:kern")
    assert first["kind"] == "miss" and first["reason"] == "new"
    assert first["out"] == [float(i) + 1 for i in range(16)]

    _write(src, "b", HELPER_B.format(inc="2.0"))  # edit b.py only; a.py is untouched
    (second,) = _run(cache_dir, src, "a:kern")
    assert second["kind"] == "miss"
    assert second["outcome"] == "miss (changed: b.helper)"
    assert second["why"] == (f'changed: device function `b.helper` defined at '
                                f'File "{src / "b.py"}", line 4')
    assert second["out"] == [float(i) + 2 for i in range(16)]

    (third,) = _run(cache_dir, src, "a:kern")
    assert third["kind"] == "hit" and third["source"] == "disk"
    assert third["out"] == [float(i) + 2 for i in range(16)]

    _write(src, "b", "# a comment only\n" + textwrap.dedent(HELPER_B.format(inc="2.0")))
    (fourth,) = _run(cache_dir, src, "a:kern")
    assert fourth["kind"] == "hit"  # comments and moved lines are not content


def test_same_kernel_in_another_directory_is_a_disk_hit(tmp_path):
    cache_dir = tmp_path / "cache"
    for name in ("project1", "elsewhere/project2"):
        _write(tmp_path / name, "b", HELPER_B.format(inc="5.0"))
        _write(tmp_path / name, "a", KERNEL_A)
    (first,) = _run(cache_dir, tmp_path / "project1", "a:kern")
    (second,) = _run(cache_dir, tmp_path / "elsewhere/project2", "a:kern")
    assert first["kind"] == "miss" and second["kind"] == "hit" and second["source"] == "disk"
    assert second["key"] == first["key"]
    assert second["out"] == [float(i) + 5 for i in range(16)]


KERNEL_FACTOR = """
    from gpunb import cuda

    @cuda.jit
    def kern(out, x):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] * {factor}
"""


@pytest.mark.slow
def test_eight_processes_same_and_different_kernels_then_damage(tmp_path):
    from gpunb.cache.store import DiskStore

    src, cache_dir = tmp_path / "src", tmp_path / "cache"
    for factor in range(4):
        _write(src, f"k{factor}", KERNEL_FACTOR.format(factor=f"{factor + 2}.0"))
    procs = []
    for worker in range(8):
        # everyone compiles k0 (same key); pairs share k1..k3 (different keys)
        kernels = ["k0:kern", f"k{1 + worker % 3}:kern"]
        procs.append((kernels, subprocess.Popen(
            [sys.executable, str(WORKER), str(src), *kernels], env=_env(cache_dir),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    for kernels, proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        results = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        for spec, result in zip(kernels, results, strict=True):
            factor = int(spec[1]) + 2
            assert result["out"] == [float(i) * factor for i in range(16)]
            assert result["reason"] != "corrupt"
    store = DiskStore(str(cache_dir), 1 << 30)
    entries = store.entries()
    assert len(entries) == 4 and not [e for e in entries if e.problem]
    assert all(store.read(e.key) is not None for e in entries)
    assert not [n for n in os.listdir(cache_dir) if n.startswith(".tmp-")]

    # truncate one entry's JSON and corrupt another's binary: detected, reported, rebuilt
    by_name = {}
    for spec in ("k0:kern", "k1:kern"):
        (r,) = _run(cache_dir, src, spec)
        by_name[spec] = r["key"]
    js = cache_dir / f"{by_name['k0:kern']}.json"
    js.write_bytes(js.read_bytes()[:100])
    binary = cache_dir / f"{by_name['k1:kern']}.bin"
    data = bytearray(binary.read_bytes())
    data[len(data) // 2] ^= 0x55
    binary.write_bytes(bytes(data))
    results = _run(cache_dir, src, "k0:kern", "k1:kern")
    assert [r["reason"] for r in results] == ["corrupt", "corrupt"]
    assert results[0]["out"] == [float(i) * 2 for i in range(16)]
    assert results[1]["out"] == [float(i) * 3 for i in range(16)]
    results = _run(cache_dir, src, "k0:kern", "k1:kern")
    assert [(r["kind"], r["source"]) for r in results] == [("hit", "disk")] * 2


STRESS = r"""
import os, random, sys, hashlib
from gpunb.cache.store import DiskStore, CorruptEntry
directory, worker = sys.argv[1], int(sys.argv[2])
store = DiskStore(directory, 1 << 40)
rng = random.Random(worker)
keys = [hashlib.blake2b(str(i).encode(), digest_size=20).hexdigest() for i in range(6)]

def content(key, writer):
    # writers of one key write different bytes (as a nondeterministic compiler might), so an
    # entry mixing one writer's JSON with another's blobs would fail its checksums
    seed = hashlib.blake2b(f"{key}/{writer}".encode()).digest()
    return seed * (300_000 // len(seed)), f"// ptx {key} {writer}"

bad = 0
for step in range(40):
    key = rng.choice(keys[:2] if step % 2 else keys)   # keys 0 and 1 are everyone's
    binary, ptx = content(key, worker)
    store.write(key, {"function": "k" + key[:4], "signature": "()", "target": "cpu"},
                {"bin": binary, "ptx": ptx.encode()})
    probe = rng.choice(keys)
    try:
        entry = store.read(probe)
    except CorruptEntry as exc:
        print("CORRUPT", probe, exc)
        bad += 1
        continue
    if entry is not None and (entry.blobs["bin"], entry.blobs["ptx"].decode()) != content(
            probe, int(entry.blobs["ptx"].split()[-1])):
        print("WRONG", probe)
        bad += 1
sys.exit(1 if bad else 0)
"""


def test_eight_processes_hammering_the_store_never_see_a_corrupt_entry(tmp_path):
    cache_dir = tmp_path / "cache"
    env = _env(cache_dir)
    procs = [subprocess.Popen([sys.executable, "-c", STRESS, str(cache_dir), str(i)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(8)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, out + err
    from gpunb.cache.store import DiskStore

    store = DiskStore(str(cache_dir), 1 << 40)
    entries = store.entries()
    assert entries and not [e for e in entries if e.problem]
    assert all(store.read(e.key) is not None for e in entries)


def test_an_environment_variable_that_changes_code_changes_the_key(tmp_path):
    """GPUNB_BOUNDSCHECK=0 compiles CPU code without its default bounds checks: never the
    checked entry."""
    src, cache_dir = tmp_path / "src", tmp_path / "cache"
    _write(src, "k2", KERNEL_FACTOR.format(factor="2.0"))
    (plain,) = _run(cache_dir, src, "k2:kern")
    env = _env(cache_dir)
    env["GPUNB_BOUNDSCHECK"] = "0"
    proc = subprocess.run([sys.executable, str(WORKER), str(src), "k2:kern"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    checked = json.loads(proc.stdout.splitlines()[-1])
    assert checked["kind"] == "miss" and checked["key"] != plain["key"]
    assert checked["why"] == "option changed: boundscheck True -> False"
    assert checked["outcome"] == "miss (option changed: boundscheck)"
    assert checked["out"] == plain["out"] == [float(i) * 2 for i in range(16)]
    (again,) = _run(cache_dir, src, "k2:kern")
    assert (again["kind"], again["source"], again["key"]) == ("hit", "disk", plain["key"])
