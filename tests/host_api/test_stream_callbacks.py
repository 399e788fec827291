"""numba-cuda's Stream.add_callback and Stream.async_done, on the CPU target (nothing pending:
the callback runs at once on a helper thread) and, gpu-marked, on CUDA streams."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from gpunb import cuda


def _check_callbacks(stream) -> None:
    seen = threading.Event()
    got = []

    def callback(s, status, arg):
        got.append((s is stream, status, arg))
        seen.set()

    stream.add_callback(callback, "payload")
    assert seen.wait(5.0)
    assert got == [(True, 0, "payload")]
    default_arg = threading.Event()
    stream.add_callback(lambda s, status, arg: arg is None and default_arg.set())
    assert default_arg.wait(5.0)


async def _await_streams(streams) -> tuple:
    done = await asyncio.gather(*[s.async_done() for s in streams])
    first, second = streams[0].async_done(), streams[0].async_done()
    first.cancel()
    await second
    return done, first.cancelled(), second.result()


def _check_async(make_stream) -> None:
    streams = [make_stream() for _ in range(3)]
    done, cancelled, result = asyncio.run(_await_streams(streams))
    assert done == streams and cancelled and result is streams[0]


def test_cpu_stream_callbacks_and_async_done():
    import gpunb

    gpunb.set_target("cpu")
    try:
        _check_callbacks(cuda.stream())
        _check_async(cuda.stream)
    finally:
        gpunb.set_target(None)


def test_a_failing_callback_warns_instead_of_vanishing():
    import gpunb

    gpunb.set_target("cpu")
    try:
        stream = cuda.stream()
        with pytest.warns(RuntimeWarning, match="Exception in stream callback: boom"):
            thread_done = threading.Event()

            def bad(s, status, arg):
                try:
                    raise ValueError("boom")
                finally:
                    arg.set()

            stream.add_callback(bad, thread_done)
            assert thread_done.wait(5.0)
            import time

            time.sleep(0.1)  # the warning is emitted after the callback returns
    finally:
        gpunb.set_target(None)


@pytest.mark.gpu
def test_cuda_stream_callbacks_run_after_queued_work():
    import gpunb

    gpunb.set_target("cuda")
    try:
        stream = cuda.stream()
        host = cuda.pinned_array(1 << 20, np.float32)
        host[:] = 3.0
        device = cuda.to_device(host, stream=stream)
        finished = threading.Event()
        stream.add_callback(lambda s, status, arg: arg.set(), finished)
        device.copy_to_host(host, stream=stream)
        assert finished.wait(10.0)
        _check_callbacks(stream)
        _check_async(cuda.stream)
    finally:
        gpunb.set_target(None)
