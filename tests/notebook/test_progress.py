"""The compile progress watcher: stage names from compile events, slow compiles only."""

import threading
import time

import pytest

from gpunb.foundation import events
from gpunb.foundation.events import CompileEvent, EventKind, Stage
from gpunb.notebook import progress


def _publish(kind: EventKind, stage: Stage | None = None, kernel: str = "slow_kernel") -> None:
    events.publish(kind, CompileEvent(kind, kernel, "void(float32[::1])", "cpu", stage))


def fake_compile(seconds: float, kernel: str = "slow_kernel") -> None:
    """The events backends/pipeline.compile publishes, around a stage that takes `seconds`."""
    _publish(EventKind.COMPILE_STARTED, kernel=kernel)
    _publish(EventKind.STAGE_STARTED, Stage.TYPES, kernel)
    time.sleep(seconds)
    _publish(EventKind.STAGE_FINISHED, Stage.TYPES, kernel)
    _publish(EventKind.COMPILE_FINISHED, kernel=kernel)


def test_slow_compile_shows_stage_and_finish(capsys):
    watcher = progress.CompileWatcher(threshold_s=0.2, interval_s=0.02)
    watcher.start()
    fake_compile(0.6)
    time.sleep(0.1)
    watcher.stop()
    err = capsys.readouterr().err
    assert "gpunb: compiling slow_kernel: types" in err
    assert watcher.shown and watcher.shown[0].startswith("gpunb: compiled slow_kernel in")


def test_fast_compile_shows_nothing(capsys):
    watcher = progress.CompileWatcher(threshold_s=1.0, interval_s=0.02)
    watcher.start()
    fake_compile(0.1)
    watcher.stop()
    assert watcher.shown == [] and "gpunb" not in capsys.readouterr().err


def test_only_the_watched_thread_counts_and_stop_unsubscribes(capsys):
    watcher = progress.CompileWatcher(threshold_s=0.05, interval_s=0.01)
    watcher.start()
    other = threading.Thread(target=fake_compile, args=(0.3, "elsewhere"))
    other.start()
    other.join()
    watcher.stop()
    assert watcher.shown == [] and not events.has_subscribers(EventKind.COMPILE_STARTED)


@pytest.mark.slow
def test_a_real_compile_is_seen_with_its_stages(monkeypatch):
    """Against the real pipeline: the watcher names the stages the CPU backend runs."""
    import numpy as np

    from gpunb import cuda

    seen = []
    monkeypatch.setattr(progress, "make_view", lambda kernel: _Recorder(kernel, seen))
    watcher = progress.CompileWatcher(threshold_s=0.0, interval_s=0.001)
    watcher.start()

    @cuda.jit(target="cpu", cache=False)
    def watched(out):
        out[0] = 1.0

    out = np.zeros(1, np.float32)
    watched[1, 1](out)
    time.sleep(0.05)
    watcher.stop()
    assert watcher.shown == ["done watched"]
    assert set(seen) <= {"starting", "types", "LLVM", "host code"} and seen


class _Recorder:
    def __init__(self, kernel: str, seen: list):
        self.kernel = kernel
        self.seen = seen

    def update(self, stage: str, elapsed: float, stages: list) -> None:
        self.seen.append(stage)

    def finish(self, elapsed: float) -> str:
        return f"done {self.kernel}"
