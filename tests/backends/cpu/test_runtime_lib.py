"""The CPU target's runtime library (backends/cpu/runtime_lib.py): coroutine kernels call the
block scheduler compiled once per process, by a name that carries its ABI's digest."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from gpunb import cuda, float32
from gpunb.backends.cpu import runtime_lib
from gpunb.foundation.errors import LaunchError

REPO = Path(__file__).resolve().parents[3]


def _shifted_sum():
    @cuda.jit(cpu_mode="coroutine")
    def shifted_sum(out, a):
        buf = cuda.shared.array(64, float32)
        t = cuda.threadIdx.x
        buf[t] = a[t]
        cuda.syncthreads()
        out[t] = buf[t] + buf[(t + 1) % cuda.blockDim.x]

    return shifted_sum


def _run_shifted(kernel, n: int = 64) -> np.ndarray:
    a = np.arange(n, dtype=np.float32)
    out = np.zeros_like(a)
    kernel[1, n](out, a)
    np.testing.assert_array_equal(out, a + np.roll(a, -1))
    return out


def test_a_coroutine_kernel_declares_the_scheduler_instead_of_compiling_it():
    kernel = _shifted_sum()
    _run_shifted(kernel)
    (text,) = kernel.inspect_host_llvm().values()
    declared = re.findall(r"^declare [^\n]*@\"?(gpunb_rt_schedule_[0-9a-f]{12})\"?\(", text,
                          re.M)
    assert declared == [runtime_lib.scheduler_symbol(False, False, False)]
    assert not re.search(r"^define [^\n]*@\"?gpunb_schedule", text, re.M)
    # the scheduler's own code (its warp-mask and deadlock diagnoses) is not in the kernel
    assert "wgroup" not in text and "deadlock" not in text
    assert declared[0] in runtime_lib.loaded()


def test_workgroup_kernels_call_no_runtime_code():
    @cuda.jit
    def add_one(out, a):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a[i] + 1

    a = np.arange(8, dtype=np.float32)
    out = np.zeros_like(a)
    add_one[1, 8](out, a)
    np.testing.assert_array_equal(out, a + 1)
    (text,) = add_one.inspect_host_llvm().values()
    assert runtime_lib.PREFIX not in text


def test_variants_are_named_by_what_they_schedule():
    assert runtime_lib.variant_name(False, False, False) == "schedule"
    assert runtime_lib.variant_name(False, True, False) == "schedule"  # record: async only
    assert runtime_lib.variant_name(True, True, True) == "schedule_async_record_grid"
    names = {runtime_lib.scheduler_symbol(a, r, g)
             for a in (False, True) for r in (False, True) for g in (False, True)}
    assert len(names) == 6  # each variant its own code, its own digest


def test_a_grid_sync_kernel_uses_the_cooperative_scheduler():
    @cuda.jit
    def two_phase(out):
        g = cuda.cg.this_grid()
        i = g.thread_rank()
        out[i] = i
        g.sync()  # every block's writes are seen by every other block
        v = out[(i + 1) % out.size]
        g.sync()
        out[i] = v * 2

    out = np.zeros(64, np.int64)
    two_phase[4, 16](out)
    np.testing.assert_array_equal(out, np.roll(np.arange(64), -1) * 2)
    (text,) = two_phase.inspect_host_llvm().values()
    assert runtime_lib.scheduler_symbol(False, False, True) in text


def test_a_cluster_kernel_uses_the_cluster_scheduler_and_others_keep_theirs():
    # the cluster step is a variant of its own: the variants other kernels call are unchanged
    assert runtime_lib.variant_name(True, False, False, True) == "schedule_async_cluster"
    plain = {runtime_lib.scheduler_symbol(a, r, g)
             for a in (False, True) for r in (False, True) for g in (False, True)}
    clustered = {runtime_lib.scheduler_symbol(a, False, False, True) for a in (False, True)}
    assert not plain & clustered and len(clustered) == 2

    @cuda.jit(cluster_dims=(2, 1, 1))
    def pairs(out):
        c = cuda.cg.this_cluster()
        out[cuda.blockIdx.x] = c.block_rank()
        c.sync()

    out = np.full(4, -1, np.int32)
    pairs[4, 8](out)
    np.testing.assert_array_equal(out, [0, 1, 0, 1])
    (text,) = pairs.inspect_host_llvm().values()
    assert runtime_lib.scheduler_symbol(False, False, False, True) in text


def test_an_object_of_another_runtime_abi_is_refused_before_it_is_loaded():
    from gpunb.backends.cpu.backend import CpuProgram

    kernel = _shifted_sum()
    _run_shifted(kernel)
    (spec,) = kernel.specializations.values()
    artifact = spec.artifact
    name = runtime_lib.scheduler_symbol(False, False, False).encode()
    other = name[:-12] + b"0123456789ab"  # the same length: the object stays well formed
    assert name in artifact.binary
    stale = dataclasses.replace(artifact, binary=artifact.binary.replace(name, other))
    with pytest.raises(LaunchError, match="another version of gpunb") as info:
        CpuProgram(stale)
    assert "compile the kernel again" in str(info.value.hint)


@pytest.mark.parametrize("name", ["gpunb_rt_schedule_warp_0123456789ab",
                                  "gpunb_rt_schedule_record_0123456789ab", "gpunb_rt__"])
def test_a_runtime_name_this_gpunb_never_makes_is_refused(name):
    with pytest.raises(LaunchError, match=f"it calls {name}"):
        runtime_lib.require(name, "k")


def _fresh_python(code: str, env_extra: dict | None = None) -> str:
    env = dict(os.environ, GPUNB_TARGET="cpu", GPUNB_NOTICES="0", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join(filter(None, (str(REPO),
                                                        os.environ.get("PYTHONPATH")))))
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


KERNEL_MODULE = """
    from gpunb import cuda, float32

    @cuda.jit(cpu_mode="coroutine")
    def kern(out, x):
        buf = cuda.shared.array(16, float32)
        t = cuda.threadIdx.x
        buf[t] = x[t]
        cuda.syncthreads()
        out[t] = buf[15 - t] * 2
"""


def test_a_kernel_cached_on_disk_loads_and_runs_in_a_new_process(tmp_path):
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "coro_mod.py").write_text(textwrap.dedent(KERNEL_MODULE))
    worker = REPO / "tests" / "cache" / "real_worker.py"
    env = dict(os.environ, GPUNB_CACHE_DIR=str(tmp_path / "cache"), GPUNB_TARGET="cpu",
               GPUNB_NOTICES="0", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join(filter(None, (str(REPO),
                                                        os.environ.get("PYTHONPATH")))))
    env.pop("GPUNB_CACHE", None)
    runs = []
    for _ in range(2):  # compiled and stored; then loaded from disk by a process of its own
        proc = subprocess.run([sys.executable, str(worker), str(tmp_path / "mod"),
                               "coro_mod:kern"], env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr
        runs.append([line for line in proc.stdout.splitlines() if line.startswith("{")][0])
    import json

    first, second = (json.loads(r) for r in runs)
    assert first["kind"] == "miss" and second["kind"] == "hit" and second["source"] == "disk"
    assert second["out"] == [2.0 * (15 - i) for i in range(16)]


def test_two_threads_loading_coroutine_kernels_at_once_load_the_runtime_once():
    out = _fresh_python("""
        import threading
        import numpy as np
        from gpunb import cuda, float32
        from gpunb.backends.cpu import objects, runtime_lib

        runtime_compiles = []
        emit_object = objects.emit_object

        def counting(text, *args, **kwargs):  # counts the runtime's compiles
            if text.startswith('; ModuleID = "gpunb_rt_'):
                runtime_compiles.append(1)
            return emit_object(text, *args, **kwargs)

        objects.emit_object = counting

        def make(k):
            @cuda.jit(cpu_mode="coroutine")
            def kern(out, a):
                buf = cuda.shared.array(32, float32)
                t = cuda.threadIdx.x
                buf[t] = a[t] + k
                cuda.syncthreads()
                out[t] = buf[31 - t]
            return kern

        kernels = [make(k) for k in range(4)]
        start = threading.Barrier(len(kernels))
        failures = []

        def run(k):
            a = np.arange(32, dtype=np.float32)
            out = np.zeros_like(a)
            start.wait()
            try:
                kernels[k][1, 32](out, a)
                assert (out == (a + k)[::-1]).all(), out
            except BaseException as exc:
                failures.append(repr(exc))

        threads = [threading.Thread(target=run, args=(k,)) for k in range(len(kernels))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not failures, failures
        print(len(runtime_compiles), sorted(runtime_lib.loaded()))
    """, {"GPUNB_CACHE": "0"})
    assert out.strip() == "1 " + repr([runtime_lib.scheduler_symbol(False, False, False)])


def test_the_schedulers_deadlock_diagnosis_names_both_barriers():
    """The scheduler's own diagnosis (threads at different barriers), run from the runtime."""
    @cuda.jit(cpu_mode="coroutine")
    def diverged(out):
        t = cuda.threadIdx.x
        if t < 16:
            cuda.syncthreads()
        else:
            cuda.syncthreads()
        out[t] = t

    with pytest.raises(LaunchError, match="wait at different barriers") as info:
        diverged[1, 32](np.zeros(32, np.int64))
    first = diverged.py_func.__code__.co_firstlineno
    assert f"line {first + 4} and cuda.syncthreads at line {first + 6}" in str(info.value)


def test_a_fault_in_the_runtimes_code_is_caught_and_the_next_launch_works():
    """A TMA load lands in the scheduler's idle step (runtime code, not the kernel's): a load
    from a descriptor whose address was corrupted faults there, and the guard catches it."""
    import ctypes

    from gpunb import KernelFaultError, float16, uint64

    @cuda.jit
    def load_tile(out, desc):
        s = cuda.shared.array((16, 16), float16, alignment=1024)
        bars = cuda.shared.array(1, uint64)
        t = cuda.threadIdx.x
        if t == 0:
            cuda.mbarrier.init(bars, 0, 1)
        cuda.syncthreads()
        if t == 0:
            cuda.mbarrier.arrive_expect_tx(bars, 0, 16 * 16 * 2)
            cuda.tma.load(s, desc, (0, 0), bars, 0)
        cuda.mbarrier.wait(bars, 0, 0)
        out[t] = s[t // 16, t % 16]

    a = np.arange(256, dtype=np.float16).reshape(16, 16)
    out = np.zeros(64, np.float16)
    broken = cuda.tma.descriptor(a, (16, 16), 0)
    ctypes.c_uint64.from_address(broken.cpu_address()).value = 0x10  # the tensor's address
    with pytest.raises(KernelFaultError, match="invalid memory access at address 0x10") as info:
        load_tile[1, 64](out, broken)
    assert "block (0, 0, 0)" in str(info.value)
    load_tile[1, 64](out, cuda.tma.descriptor(a, (16, 16), 0))
    np.testing.assert_array_equal(out, a.reshape(-1)[:64])


def test_runtime_names_are_the_same_in_every_process():
    """A kernel cached by one process binds in another only if both build the same IR."""
    code = """
        from gpunb.backends.cpu import runtime_lib as r
        print(sorted(r.scheduler_symbol(a, b, g)
                     for a in (False, True) for b in (False, True) for g in (False, True)))
    """
    outputs = {_fresh_python(code, {"PYTHONHASHSEED": seed}) for seed in ("1", "2")}
    assert len(outputs) == 1
    assert outputs.pop().strip() == repr(sorted(
        runtime_lib.scheduler_symbol(a, b, g)
        for a in (False, True) for b in (False, True) for g in (False, True)))


def test_a_coroutine_kernels_artifact_carries_its_schedulers_object():
    import json

    from gpunb.foundation.artifact import KernelArtifact

    kernel = _shifted_sum()
    _run_shifted(kernel)
    (spec,) = kernel.specializations.values()
    artifact = spec.artifact
    name = runtime_lib.scheduler_symbol(False, False, False)
    assert [n for n, _ in artifact.runtime_objects] == [name]
    assert artifact.runtime_objects[0][1][:4] == b"\x7fELF"
    data = json.loads(json.dumps(artifact.to_json_dict()))  # as the disk cache stores it
    assert KernelArtifact.from_json_dict(data, artifact.binary) == artifact


def test_an_artifact_without_runtime_objects_compiles_the_runtime_it_calls():
    """Entries cached before artifacts carried the runtime, and names not carried."""
    out = _fresh_python("""
        from gpunb.backends.cpu import runtime_lib
        name = runtime_lib.scheduler_symbol(True, True, True)
        assert name not in runtime_lib.loaded()
        runtime_lib.require(name, "k")
        print(name in runtime_lib.loaded())
    """)
    assert out.strip() == "True"


def test_a_disk_hit_in_a_new_process_loads_the_runtime_without_compiling_it(tmp_path):
    (tmp_path / "coro_disk.py").write_text(textwrap.dedent(KERNEL_MODULE))
    code = f"""
        import sys
        import numpy as np
        from gpunb.backends.cpu import objects, runtime_lib

        runtime_compiles = []
        emit_object = objects.emit_object

        def counting(text, *args, **kwargs):  # counts the runtime's compiles
            if text.startswith('; ModuleID = "gpunb_rt_'):
                runtime_compiles.append(1)
            return emit_object(text, *args, **kwargs)

        objects.emit_object = counting
        sys.path.insert(0, {str(tmp_path)!r})
        import coro_disk
        x = np.arange(16, dtype=np.float32)
        out = np.zeros_like(x)
        coro_disk.kern[1, 16](out, x)
        assert (out == x[::-1] * 2).all(), out
        print(len(runtime_compiles), sorted(runtime_lib.loaded()))
    """
    env = {"GPUNB_CACHE_DIR": str(tmp_path / "cache"), "GPUNB_CACHE": "1"}
    first = _fresh_python(code, env).split()
    second = _fresh_python(code, env).split()
    name = runtime_lib.scheduler_symbol(False, False, False)
    assert first[-2:] == ["1", repr([name])]  # compiled with the kernel, stored with it
    assert second[-2:] == ["0", repr([name])]  # loaded from the kernel's entry
