"""Helpers for the kernel test suite: PTX validation for both archs, hang-proof launches."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import threading

import pytest

ARCHS = ("sm_90", "sm_80")


@pytest.fixture(params=ARCHS)
def arch(request) -> str:
    return request.param


@pytest.fixture
def check_ptx(ptxas, arch):
    """compile_ptx(kernel, sig) for the arch under test, validated by ptxas; returns the PTX."""
    from gpunb import cuda

    cc = (int(arch[3:-1]), int(arch[-1]))

    def check(kernel, sig, device: bool = False, **options) -> str:
        ptx, _ = cuda.compile_ptx(kernel, sig, device=device, cc=cc, **options)
        assert f".target {arch}" in ptx
        ptxas(ptx, arch)
        return ptx

    return check


def _run_with_timeout(fn, seconds: float = 60.0):
    """Run fn() in a daemon thread; fail (instead of hanging the suite) if it does not return."""
    result: dict = {}

    def body():
        try:
            result["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            result["error"] = exc

    worker = threading.Thread(target=body, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        pytest.fail(f"did not return within {seconds} s (hang)")
    if "error" in result:
        raise result["error"]
    return result.get("value")


def _run_script(code: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    """Run Python code in a fresh interpreter (for crashes and hangs that would kill the suite)."""
    env = dict(os.environ)
    env.setdefault("GPUNB_NOTICES", "0")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    # a file, not `python -c`: GPU functions need source that inspect can read
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "script.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(code))
        return subprocess.run([sys.executable, script], capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=root)


@pytest.fixture
def run_with_timeout():
    """`run_with_timeout(fn, seconds)`: fn's result, or a test failure if it hangs."""
    return _run_with_timeout


@pytest.fixture
def run_script():
    """`run_script(code, timeout)`: a CompletedProcess of running `code` in a fresh process."""
    return _run_script
