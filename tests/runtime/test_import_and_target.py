"""`import gpunb` touches no CUDA; the target choice follows the request, env var and hardware."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=REPO)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_import_gpunb_does_not_import_cuda_bindings():
    out = _run("import sys, gpunb, gpunb.cuda; "
               "print(any(m.startswith('cuda.bindings') or m == 'cuda' for m in sys.modules))")
    assert out == "False"


def test_runtime_modules_import_without_cuda():
    # the runtime itself imports cuda.bindings only when a driver call is made
    out = _run("import sys\n"
               "import gpunb.runtime.memory, gpunb.runtime.packing, gpunb.runtime.typeof\n"
               "import gpunb.runtime.target, gpunb.backends.cuda.occupancy\n"
               "import gpunb.backends.cuda.driver\n"
               "print('cuda.bindings.driver' in sys.modules)")
    assert out == "False"


def test_explicit_targets_are_returned_as_asked(fresh_target, monkeypatch):
    monkeypatch.setenv("GPUNB_TARGET", "cuda")
    assert fresh_target.active_target() == "cuda"
    assert fresh_target.active_target("cpu") == "cpu"
    monkeypatch.setenv("GPUNB_TARGET", "cpu")
    assert fresh_target.active_target() == "cpu"  # recomputed: the request changed


def test_auto_without_gpu_is_cpu_with_one_notice(fresh_target, monkeypatch, capsys):
    from gpunb.backends.cuda import driver

    monkeypatch.delenv("GPUNB_TARGET", raising=False)
    monkeypatch.setenv("GPUNB_NOTICES", "1")
    monkeypatch.setattr(driver, "is_available", lambda: False)
    assert fresh_target.active_target() == "cpu"
    assert fresh_target.active_target("auto") == "cpu"
    assert fresh_target.active_target() == "cpu"
    err = capsys.readouterr().err
    assert err.count(fresh_target.NOTICE) == 1
    assert err.strip() == fresh_target.NOTICE


def test_auto_notice_is_silenced_by_gpunb_notices(fresh_target, monkeypatch, capsys):
    from gpunb.backends.cuda import driver

    monkeypatch.setenv("GPUNB_TARGET", "auto")
    monkeypatch.setenv("GPUNB_NOTICES", "0")
    monkeypatch.setattr(driver, "is_available", lambda: False)
    assert fresh_target.active_target() == "cpu"
    assert capsys.readouterr().err == ""


def test_auto_with_gpu_is_cuda(fresh_target, monkeypatch, capsys):
    from gpunb.backends.cuda import driver

    monkeypatch.setenv("GPUNB_TARGET", "auto")
    monkeypatch.setattr(driver, "is_available", lambda: True)
    assert fresh_target.active_target() == "cuda"
    assert capsys.readouterr().err == ""


def test_decision_is_cached_until_the_request_changes(fresh_target, monkeypatch):
    import gpunb
    from gpunb.backends.cuda import driver

    calls = []

    def available():
        calls.append(1)
        return False

    monkeypatch.setenv("GPUNB_TARGET", "auto")
    monkeypatch.setattr(driver, "is_available", available)
    for _ in range(5):
        assert fresh_target.active_target() == "cpu"
    assert len(calls) == 1
    gpunb.set_target("cuda")
    try:
        assert fresh_target.active_target() == "cuda"
    finally:
        gpunb.set_target(None)
    assert fresh_target.active_target() == "cpu"


def test_unknown_target_is_rejected(fresh_target, monkeypatch):
    with pytest.raises(ValueError, match="expected one of"):
        fresh_target.active_target("gpu")
    monkeypatch.setenv("GPUNB_TARGET", "metal")
    with pytest.raises(ValueError, match="GPUNB_TARGET"):
        fresh_target.active_target()


def test_is_available_is_false_and_quiet_without_a_driver():
    out = _run("from gpunb.backends.cuda import driver\n"
               "print(driver.is_available(), driver.is_available())")
    expected = "True True" if _has_gpu() else "False False"
    assert out == expected


def _has_gpu() -> bool:
    from gpunb.backends.cuda import driver

    return driver.is_available()
