"""The compile progress watcher: stage names from the compiling thread's stack, > 1 s only."""

import threading
import time

from gpunb.notebook import progress


def build_specialization(dispatcher, seconds):  # named like the dispatcher's slow path
    return infer_kernel(seconds)


def infer_kernel(seconds):  # named like the inference stage
    time.sleep(seconds)


class _Kernel:
    __name__ = "slow_kernel"


def _use_test_tables(monkeypatch):
    here = __file__.replace("\\", "/").rsplit("/", 1)[-1]
    monkeypatch.setattr(progress, "ROOTS", {(here, "build_specialization"): "compile"})
    monkeypatch.setattr(progress, "STAGES", {(here, "infer_kernel"): "types"})


def test_slow_compile_shows_stage_and_finish(monkeypatch, capsys):
    _use_test_tables(monkeypatch)
    watcher = progress.CompileWatcher(threshold_s=0.2, interval_s=0.02)
    watcher.start()
    build_specialization(_Kernel(), 0.6)
    time.sleep(0.1)
    watcher.stop()
    err = capsys.readouterr().err
    assert "gpunb: compiling slow_kernel: types" in err
    assert watcher.shown and watcher.shown[0].startswith("gpunb: compiled slow_kernel in")


def test_fast_compile_shows_nothing(monkeypatch, capsys):
    _use_test_tables(monkeypatch)
    watcher = progress.CompileWatcher(threshold_s=1.0, interval_s=0.02)
    watcher.start()
    build_specialization(_Kernel(), 0.1)
    watcher.stop()
    assert watcher.shown == [] and "gpunb" not in capsys.readouterr().err


def test_sample_finds_root_and_innermost_stage(monkeypatch):
    _use_test_tables(monkeypatch)
    seen = {}

    def probe(_):
        import sys

        seen["s"] = progress.sample(sys._current_frames()[threading.get_ident()])

    monkeypatch.setattr(time, "sleep", probe)
    build_specialization(_Kernel(), 0)
    root, stage = seen["s"]
    assert stage == "types" and root.f_code.co_name == "build_specialization"
    assert progress.kernel_name(root) == "slow_kernel"


def test_stage_tables_name_functions_that_exist():
    """The watcher recognises stages by file and function name: catch renames in other layers."""
    import re
    from pathlib import Path

    root = Path(progress.__file__).resolve().parents[1]
    for suffix, name in list(progress.STAGES) + list(progress.ROOTS):
        text = (root / suffix).read_text()
        assert re.search(rf"def {name}\(", text), f"{suffix} has no function {name}()"
