"""The native launch trampoline (gpunb/backends/native_launch/trampoline.py), driven through a
recording C callback with cuLaunchKernel's signature: argument conversion, the result, refusals,
and that the GIL is released around the call. The GPU test launching through it is in
tests/runtime/test_runtime_gpu.py."""

from __future__ import annotations

import ctypes
import threading
import time

import pytest

pytest.importorskip("llvmlite")

from gpunb.backends.native_launch.trampoline import Trampoline  # noqa: E402

U32, U64 = ctypes.c_uint32, ctypes.c_uint64
LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, U64, U32, U32, U32, U32, U32, U32, U32, U64, U64, U64)
COOPERATIVE = ctypes.CFUNCTYPE(ctypes.c_int, U64, U32, U32, U32, U32, U32, U32, U32, U64, U64)


class Recorder:
    def __init__(self, result: int = 0, prototype=LAUNCH):
        self.calls = []
        self.result = result
        self.gil_free_during_call = None
        self.callback = prototype(self._record)
        self.address = ctypes.cast(self.callback, ctypes.c_void_p).value

    def _record(self, *args):
        self.calls.append(args)
        return self.result


ARGS = (0x7F00_1234_5678, 4096, 2, 3, 256, 1, 1, 49152, 0xDEAD_BEEF_0000, 0x7FFF_0000_1000)


@pytest.fixture(scope="module")
def launch_pair():
    rec = Recorder()
    coop = Recorder(prototype=COOPERATIVE)
    return rec, Trampoline(rec.address, "cuLaunchKernel", True), coop, Trampoline(
        coop.address, "cuLaunchCooperativeKernel", False)


def test_passes_every_argument_through_and_returns_the_result(launch_pair):
    rec, tramp, coop, coop_tramp = launch_pair
    rec.calls.clear()
    assert tramp.call(*ARGS) == 0
    assert rec.calls == [ARGS + (0,)]  # `extra` is NULL
    coop.calls.clear()
    assert coop_tramp.call(*ARGS) == 0
    assert coop.calls == [ARGS]


def test_driver_error_codes_come_back_as_ints():
    rec = Recorder(result=719)  # CUDA_ERROR_LAUNCH_FAILED
    tramp = Trampoline(rec.address, "cuLaunchKernel", True)
    assert tramp.call(*ARGS) == 719
    assert type(tramp.call(*ARGS)) is int


def test_largest_values_are_not_truncated(launch_pair):
    rec, tramp, *_ = launch_pair
    rec.calls.clear()
    big = (2**64 - 1, 2**32 - 1, 65535, 65535, 1024, 1024, 64, 2**32 - 1, 2**64 - 1, 2**64 - 2)
    tramp.call(*big)
    assert rec.calls == [big + (0,)]


@pytest.mark.parametrize("bad, error", [
    ((1.0,) + ARGS[1:], TypeError),              # a float handle
    (ARGS[:3] + (-1,) + ARGS[4:], OverflowError),  # a negative dimension
    (ARGS[:4] + (None,) + ARGS[5:], TypeError),
    (ARGS[:1] + (2**32,) + ARGS[2:], TypeError),   # past 32 bits: refused, not wrapped
    (ARGS[:9], TypeError),                       # too few
    (ARGS + (0,), TypeError),                    # too many
])
def test_bad_arguments_raise_without_calling(launch_pair, bad, error):
    rec, tramp, *_ = launch_pair
    rec.calls.clear()
    with pytest.raises(error):
        tramp.call(*bad)
    assert rec.calls == []
    assert tramp.call(*ARGS) == 0  # and it still works afterwards


def test_numpy_integers_are_refused_so_the_caller_falls_back():
    np = pytest.importorskip("numpy")
    rec = Recorder()
    tramp = Trampoline(rec.address, "cuLaunchKernel", True)
    with pytest.raises(TypeError):
        tramp.call(np.int64(1), *ARGS[1:])


def test_the_gil_is_released_during_the_driver_call():
    """While one thread sits in the C call (libc usleep stands in for a driver call that blocks
    on a full launch queue), another thread keeps running Python."""
    libc = ctypes.CDLL(None)
    usleep = ctypes.cast(libc.usleep, ctypes.c_void_p).value  # int usleep(useconds_t): 1st arg
    tramp = Trampoline(usleep, "cuLaunchKernel", True)
    inside = threading.Event()

    def call():
        inside.set()
        tramp.call(300_000, 1, 1, 1, 1, 1, 1, 0, 0, 0)  # 0.3 s in C

    worker = threading.Thread(target=call)
    worker.start()
    inside.wait(5)
    ticks = [time.perf_counter()]
    while worker.is_alive():
        time.sleep(0.001)
        ticks.append(time.perf_counter())
    worker.join()
    assert ticks[-1] - ticks[0] > 0.2  # the call did take its time
    assert max(b - a for a, b in zip(ticks, ticks[1:], strict=False)) < 0.15


def test_gpunb_native_launch_0_turns_it_off(monkeypatch):
    from gpunb.backends.cuda import driver, launch

    monkeypatch.setattr(driver, "drives_libcuda", lambda: True)  # as if on a GPU machine
    monkeypatch.setenv("GPUNB_NATIVE_LAUNCH", "0")
    calls = launch.DriverCalls()
    assert not calls.prepare() and calls.trampolines is None
    assert calls.launch_address() is None  # native launchers do not call libcuda either
    monkeypatch.delenv("GPUNB_NATIVE_LAUNCH")
    monkeypatch.setattr(driver, "drives_libcuda", lambda: False)  # a stand-in driver
    assert not calls.prepare() and calls.launch_address() is None


def test_the_builtin_keeps_its_machine_code_alive():
    import gc

    rec = Recorder()
    call = Trampoline(rec.address, "cuLaunchKernel", True).call  # the Trampoline is dropped
    gc.collect()
    assert call(*ARGS) == 0 and rec.calls == [ARGS + (0,)]
