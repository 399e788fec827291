"""Launching and compiling kernels from several Python threads at once (numba-cuda's
test_multithreads pattern): 8 threads x 100 launches, the same kernel and different kernels, on
every target under test. Before each thread had its own argument buffer, launches of one
specialisation from several threads overwrote each other's arguments (lost launches, results of
another thread's arrays)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from gpunb import cuda
from gpunb.foundation import abi
from gpunb.foundation import types as t
from gpunb.runtime.packing import ArgPacker

THREADS = 8
LAUNCHES = 100


@cuda.jit
def add_scalar(out, x, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] + a


def _run_threads(work) -> list:
    """Run work(k) in THREADS threads started together; the failures they report."""
    failures: list = []
    start = threading.Barrier(THREADS)

    def body(k):
        try:
            start.wait()
            work(k)
        except Exception as exc:  # noqa: BLE001 - reported below with the thread number
            failures.append((k, repr(exc)))

    threads = [threading.Thread(target=body, args=(k,)) for k in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads), "a launching thread hung"
    return failures


def _arrays(k: int, on_device: bool):
    x = np.arange(256, dtype=np.float32) * (k + 1)
    out = np.zeros_like(x)
    if on_device:
        return cuda.to_device(x), cuda.to_device(out), x
    return x, out, x


def test_same_kernel_from_eight_threads(target):
    """Each thread launches the shared kernel with its own arrays and scalar 100 times; every
    result must be its own (first launch, so the compile itself also races)."""
    on_device = target == "cuda"
    add_scalar.specializations.clear()
    add_scalar.forget_target()  # the lookup of its specialisations too

    def work(k):
        x, out, host_x = _arrays(k, on_device)
        for j in range(LAUNCHES):
            add_scalar[2, 128](out, x, np.float32(j))
            got = out.copy_to_host() if on_device else out
            if not np.array_equal(got, host_x + np.float32(j)):
                raise AssertionError(f"launch {j}: got {got[:4]}, expected {host_x[:4] + j}")

    assert _run_threads(work) == []


def _make_kernel(k: int):
    scale = float(k + 2)

    def scaled(out, x):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] * scale + 1.0

    scaled.__name__ = scaled.__qualname__ = f"scaled_{k}"
    return cuda.jit(scaled)


@pytest.mark.slow
def test_different_kernels_compiled_and_launched_from_eight_threads(target):
    """Eight kernels compiled at the same time (one per thread), each launched 100 times."""
    on_device = target == "cuda"
    kernels = [_make_kernel(k) for k in range(THREADS)]

    def work(k):
        x, out, host_x = _arrays(k, on_device)
        expected = host_x * np.float32(k + 2) + np.float32(1.0)
        for j in range(LAUNCHES):
            kernels[k][2, 128](out, x)
            got = out.copy_to_host() if on_device else out
            if not np.array_equal(got, expected):
                raise AssertionError(f"kernel {k}, launch {j}: got {got[:4]}")
            if on_device:  # the next launch must write again
                out.copy_to_device(np.zeros_like(host_x))
            else:
                out[:] = 0

    assert _run_threads(work) == []


def test_each_thread_packs_into_its_own_buffer():
    """The packer's buffer belongs to the thread that made it; other threads get their own."""
    types = (t.int32, t.float64)
    packer = ArgPacker(abi.signature_slots(types), target="cpu", kernel="k")
    mine, _ = packer.pack((1, 2.0), types)
    seen = {}

    def other(k):
        seen[k] = packer.pack((k, float(k)), types)[0]

    threads = [threading.Thread(target=other, args=(k,)) for k in range(3)]
    for thread in threads:
        thread.start()
        thread.join()  # one at a time: distinct addresses are not a matter of timing
    assert mine not in seen.values()
    assert packer.pack((5, 6.0), types)[0] == mine  # the owner keeps its buffer


@pytest.mark.gpu
def test_threads_on_the_gpu_use_the_current_device():
    """A thread that never selected a device launches on the process's device (context made
    current on its first launch)."""
    import gpunb

    gpunb.set_target("cuda")
    try:
        out = cuda.device_array(256, dtype=np.float32)
        x = cuda.to_device(np.ones(256, dtype=np.float32))
        failures = []

        def work():
            try:
                add_scalar[2, 128](out, x, np.float32(3))
            except Exception as exc:  # noqa: BLE001 - asserted below
                failures.append(repr(exc))

        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
        assert failures == []
        assert np.array_equal(out.copy_to_host(), np.full(256, 4, np.float32))
    finally:
        gpunb.set_target(None)
