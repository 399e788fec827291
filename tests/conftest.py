"""Shared test setup: the `gpu` marker, the target under test, ptxas for PTX validation."""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import subprocess
import tempfile

import pytest

# the simulated CUDA driver's fixtures (fake_cuda, simulated_gpu), for every test directory
pytest_plugins = ("simulated_cuda",)

os.environ.setdefault("GPUNB_NOTICES", "0")
# kernels compiled by the tests never land in the user's own cache directory
if "GPUNB_CACHE_DIR" not in os.environ:
    os.environ["GPUNB_CACHE_DIR"] = tempfile.mkdtemp(prefix="gpunb-test-cache-")
    # removed when the process that made it ends (xdist's workers inherit the variable)
    atexit.register(shutil.rmtree, os.environ["GPUNB_CACHE_DIR"], ignore_errors=True)


def _gpu_available() -> bool:
    try:
        from gpunb.backends.cuda import driver

        return driver.is_available()
    except Exception:  # noqa: BLE001 - any failure to reach a driver means no GPU here
        return False


def pytest_collection_modifyitems(config, items):
    if _gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on the device machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


_module_running: str | None = None  # the test file whose tests this process runs now


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """When a process moves on to another test file: collect what the last one left, then
    freeze what survives (gc.freeze: later collections no longer scan it).

    A test process keeps growing: every test module's kernels stay compiled in its globals,
    libraries load (torch, numba, IPython), and an xdist worker holds 1-1.3 million objects
    by the end. Every full collection then scans all of them (~0.5-1 s each): the collector's
    own automatic ones, and the gc.collect() of tests that need their objects finalised (the
    simulated driver's teardown, 87 tests). Frozen at each move, a collection scans only what
    the running test file made. What was frozen stays alive for the session: the kernels and
    modules would anyway, and the garbage collected just before the freeze is gone."""
    global _module_running
    module = item.nodeid.split("::", 1)[0]
    if module != _module_running:
        _module_running = module
        gc.collect()
        gc.freeze()


def targets_under_test() -> list[str]:
    """CPU always; CUDA too when a GPU is present (the same tests must agree on both)."""
    return ["cpu", "cuda"] if _gpu_available() else ["cpu"]


@pytest.fixture(params=targets_under_test())
def target(request):
    """Runs a kernel test once per available target, with that target active."""
    import gpunb

    gpunb.set_target(request.param)
    yield request.param
    gpunb.set_target(None)


@pytest.fixture(scope="session")
def ptxas():
    """A callable validating PTX with ptxas for an arch; skips visibly when ptxas is missing."""
    from gpunb.backends.cuda.toolchain import find_tool

    path = find_tool("ptxas")
    if path is None:
        pytest.skip("ptxas not found: pip install nvidia-cuda-nvcc to validate PTX")

    def check(ptx: str, arch: str = "sm_90") -> str:
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "k.ptx")
            with open(src, "w") as f:
                f.write(ptx)
            proc = subprocess.run([path, f"-arch={arch}", "-v", src, "-o",
                                   os.path.join(tmp, "k.cubin")], capture_output=True, text=True)
            assert proc.returncode == 0, f"ptxas rejected the PTX:\n{proc.stderr}\n{ptx[:4000]}"
            return proc.stderr

    return check
