"""The replay snapshot and its child process, on the CPU target; tool discovery and failures."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from profiling_kernels import matmul, saxpy

import gpunb
from gpunb import cuda
from gpunb.profiling import api, tools
from gpunb.profiling.snapshot import Snapshot, load_manifest


@pytest.fixture(autouse=True)
def _cpu():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def _replay(snapshot):
    return subprocess.run([sys.executable, "-m", "gpunb.profiling.replay", str(snapshot.path),
                           "--save-outputs"], capture_output=True, text=True, timeout=240,
                          env=tools.child_env())


def test_round_trip_relaunches_the_same_code_on_the_same_inputs():
    x = np.arange(1000, dtype=np.float32)
    out = np.zeros_like(x)
    a = np.random.default_rng(0).random((32, 32), dtype=np.float32)
    c = np.zeros_like(a)

    def cell():
        saxpy[4, 256](out, x, x, np.float32(2.5))
        saxpy[4, 256](out, x, x, np.float32(2.5))  # identical: snapshotted once
        matmul[(2, 2), (16, 16)](a, a, c)

    _, snapshot, profile = api.capture(cell)
    assert len(profile.launches) == 3
    launches = load_manifest(snapshot.path)
    assert [entry["kernel"] for entry in launches] == ["saxpy", "matmul"]
    assert launches[0]["args"][3] == {"kind": "scalar", "dtype": "<f4", "value": 2.5}
    proc = _replay(snapshot)
    assert proc.returncode == 0, proc.stderr
    assert "2 launch(es) replayed" in proc.stderr
    np.testing.assert_array_equal(np.load(snapshot.path / "out_launch0_arg0.npy"), out)
    np.testing.assert_allclose(np.load(snapshot.path / "out_launch1_arg2.npy"), c, rtol=1e-6)


def test_inputs_are_copied_before_the_launch_changes_them():
    x = np.ones(64, np.float32)
    _, snapshot, _ = api.capture(lambda: saxpy[1, 64](x, x, x, np.float32(1.0)))
    np.testing.assert_array_equal(np.load(snapshot.path / "launch0_arg0.npy"), 1.0)
    np.testing.assert_array_equal(x, 2.0)


def test_unsupported_argument_is_skipped_with_a_reason(tmp_path):
    snapshot = Snapshot(tmp_path)

    class Event:
        kernel = "k"
        grid, block, shared_bytes = 1, 1, 0
        args = (object(),)

        class specialization:  # noqa: N801 - stands in for the jit layer's record
            target = "cpu"

    snapshot.add(Event)
    assert snapshot.launches == [] and "cannot be snapshotted" in snapshot.skipped[0]


def test_a_failing_child_launch_is_one_line_and_status_3(tmp_path):
    x = np.ones(8, np.float32)
    _, snapshot, _ = api.capture(lambda: saxpy[1, 8](x, x, x, np.float32(1.0)))
    (snapshot.path / "launch0_arg1.npy").write_bytes(b"not numpy")
    proc = _replay(snapshot)
    assert proc.returncode == 3
    assert "gpunb replay: launch 0 (saxpy) failed:" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_sanitize_on_the_cpu_target_says_why_in_one_line():
    x = np.ones(8, np.float32)
    report = gpunb.sanitize(lambda: saxpy[1, 8](x, x, x, np.float32(1.0)), "memcheck")
    assert "CPU target" in report.error and "\n" not in report.error


def test_sanitize_without_launches_and_with_a_bad_tool():
    assert gpunb.sanitize(lambda: None).error == "no kernel launches to check"
    with pytest.raises(ValueError, match="memcheck, racecheck, synccheck, initcheck"):
        gpunb.sanitize(lambda: None, "leakcheck")


def test_missing_tools_are_one_line_saying_what_to_install(monkeypatch, tmp_path):
    for var in ("CUDA_HOME", "CUDA_PATH"):
        monkeypatch.setenv(var, str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    from gpunb.backends.cuda import toolchain

    monkeypatch.setattr(toolchain, "SYSTEM_ROOTS", ())
    monkeypatch.setattr(toolchain, "TOOL_GLOBS", {})
    from cuda.pathfinder import find_nvidia_binary_utility

    find_nvidia_binary_utility.cache_clear()
    for name in ("ncu", "compute-sanitizer"):
        if find_nvidia_binary_utility(name):  # a pip wheel ships it here: truly installed
            continue
        with pytest.raises(tools.ReplayError, match="was not found") as info:
            tools.require_tool(name)
        assert "\n" not in str(info.value)


def test_tool_timeout_and_counter_permission_messages():
    with pytest.raises(tools.ReplayError, match="did not finish within 1 s"):
        tools.run_tool([sys.executable, "-c", "import time; time.sleep(30)"], "ncu", 1)
    with pytest.raises(tools.ReplayError, match="ERR_NVGPUCTRPERM") as info:
        tools.check_counters("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission")
    assert "\n" not in str(info.value)


def test_kernels_defined_and_dropped_one_after_another_are_all_kept(tmp_path):
    """A snapshot keys launches and binaries by their specialisation's and artifact's id(): a
    kernel dropped before the next is defined must not lend its id (and its binary) to it."""
    import gc

    snapshot = Snapshot(tmp_path, limit=12)
    for k in range(12):
        namespace = {"cuda": cuda}
        exec(f"def add_{k}(o):\n    o[0] += {k}\n", namespace)  # a new function each time
        kernel = cuda.jit(namespace[f"add_{k}"])
        api.record_launch(snapshot, kernel[1, 1], np.zeros(1, np.float32))
        del kernel, namespace
        gc.collect()
    assert len(snapshot.launches) == 12, snapshot.skipped
    assert len({launch["artifact"] for launch in snapshot.launches}) == 12


def test_a_kernel_with_bool_and_record_parameters_replays():
    # the replay read the artifact's signature text with numba's spelling: 'bool' and
    # 'Record(...)' were a SignatureError, so --sanitize / --ncu could not replay such a kernel
    from profiling_kernels import scale_when

    x = np.arange(8.0)
    out = np.zeros(8)
    recs = np.zeros(8, np.dtype([("x", np.float32), ("n", np.int32)]))
    recs["n"] = 1
    _, snapshot, _ = api.capture(lambda: scale_when[1, 8](out, x, True, recs))
    proc = _replay(snapshot)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(snapshot.path / "out_launch0_arg0.npy"), x * 3 + 1)
