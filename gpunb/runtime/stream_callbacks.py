"""Host callbacks after a stream's work (numba-cuda's `Stream.add_callback` and
`Stream.async_done`): a CUDA stream hands the callback to the driver (cuStreamAddCallback), which
calls it from its own thread once everything queued before has finished; the CPU target's
stream has nothing pending, so its callbacks run at once on a helper thread, as the driver's
would.

The callback is `callback(stream, status, arg)`; status is the CUresult of the stream's work
(0: success). An exception in a callback is turned into a warning (it runs on a driver thread,
where nothing could catch it).
"""

from __future__ import annotations

import ctypes
import threading
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

# void (*)(CUstream, CUresult, void *userData); userData is the (stream, callback, arg) tuple
_CALLBACK_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.py_object)
_incref = ctypes.pythonapi.Py_IncRef
_decref = ctypes.pythonapi.Py_DecRef
_incref.argtypes = [ctypes.py_object]
_decref.argtypes = [ctypes.py_object]


def _call(stream, callback, arg, status: int) -> None:
    try:
        callback(stream, status, arg)
    except Exception as exc:  # noqa: BLE001 - no caller to hand it to on the driver's thread
        warnings.warn(f"Exception in stream callback: {exc}", RuntimeWarning, stacklevel=1)


@_CALLBACK_TYPE
def _from_driver(handle, status, data) -> None:
    try:
        stream, callback, arg = data
        _call(stream, callback, arg, status)
    finally:
        _decref(data)  # the reference add_callback_cuda took for the driver


def add_callback_cuda(stream, callback, arg=None) -> None:
    """Queue `callback(stream, status, arg)` on a CUDA stream (cuStreamAddCallback)."""
    from gpunb.backends.cuda import driver

    driver.ensure_context()
    cu = driver.cuda_driver()
    data = (stream, callback, arg)
    _incref(data)  # kept alive until the driver has called back
    pointer = ctypes.cast(_from_driver, ctypes.c_void_p).value
    try:
        driver.check(cu.cuStreamAddCallback(stream.handle, cu.CUstreamCallback(pointer),
                                            id(data), 0), "cuStreamAddCallback")
    except BaseException:
        _decref(data)
        raise


def add_callback_now(stream, callback, arg=None) -> None:
    """A stream with nothing pending (the CPU target's): the callback runs at once, on a helper
    thread as the driver's callbacks do."""
    threading.Thread(target=_call, args=(stream, callback, arg, 0),
                     name="gpunb-stream-callback", daemon=True).start()


def async_done(stream) -> asyncio.Future:
    """An awaitable that resolves to `stream` once its queued work has finished (call it inside
    a running event loop)."""
    import asyncio  # here: importing gpunb (the streams module) never loads asyncio

    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def resolve(future, status: int) -> None:
        if future.done():  # cancelled meanwhile
            return
        if status == 0:
            future.set_result(stream)
        else:
            future.set_exception(RuntimeError(f"Stream error {status}"))

    def callback(_stream, status, future):
        loop.call_soon_threadsafe(resolve, future, status)

    stream.add_callback(callback, future)
    return future
