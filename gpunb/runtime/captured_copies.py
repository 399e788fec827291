"""Copies made inside a graph capture: `d.copy_to_device(h)` and `d.copy_to_host(h)` become
graph nodes that copy again at each replay.

A graph copies between the same addresses every replay, so a host array must be the caller's own
(no temporary made for a conversion or a layout), and on a GPU it must be page-locked
(cuda.pinned_array): the driver cannot repeat a copy of pageable memory. On the CPU target
the copy is recorded as addresses and geometry and made at each replay, referencing neither
array, so that a freed array is found there as it is on a GPU (gpunb/graphs checks).
"""

from __future__ import annotations

import ctypes

import numpy as np

from gpunb.foundation.errors import GraphError, user_location
from gpunb.runtime import arrayview as av
from gpunb.runtime import capture as capture_state
from gpunb.runtime.capture import CapturedCopy

_PINNED_HINT = ("make the host array page-locked: cuda.pinned_array(shape, dtype) (or "
                "cuda.pinned_array_like(d)), fill it before each g.replay(), and copy into/out of "
                "it inside the capture")


def copy_to_host(device, ary, stream, cap) -> np.ndarray:
    """`device.copy_to_host(ary, stream)` inside capture `cap` (either array kind)."""
    if ary is None:
        raise _located("copy_to_host() without a destination makes a new host array, which "
                       "a graph cannot do at each replay",
                       hint="pass the destination: d.copy_to_host(out), with "
                            "out = cuda.pinned_array_like(d) made before the capture")
    device._check_host_compatible(ary, "copy_to_host")
    if device.size == 0:
        return ary
    if cap.target == "cpu":
        _record_cpu_copy(cap, "device to host", ary, device._array, (device, ary))
        return ary
    _check_host_side(device, ary, "copy_to_host")
    from gpunb.runtime.copies import copy_dtoh, copy_strided

    handle = capture_state.stream_for(cap, stream)
    if device.is_c_contiguous() or device.is_f_contiguous():
        copy_dtoh(ary, device._ptr, device.nbytes, handle)
    else:
        copy_strided(device, ary, to_device=False, stream=handle)
    _record_cuda_copy(cap, "device to host", device.nbytes, (device, ary))
    return ary


def copy_to_device(device, source, host, stream, cap) -> None:
    """`device.copy_to_device(...)` inside capture `cap` (either array kind): from `source`, a
    device array of the same target (gpunb's, or a CAI view of CuPy's or PyTorch's), or from
    `host`, a numpy array already shaped like `device` (None: what was given is no array)."""
    if device.size == 0:
        return
    if source is None and host is None:
        raise _located("copy_to_device() inside a graph capture copies arrays only (a list "
                       "or a scalar would be converted now, once)",
                       hint="copy from a numpy array made before the capture")
    if cap.target == "cpu":
        origin = source._array if source is not None else host
        device._check_host_compatible(origin, "copy_to_device")
        _record_cpu_copy(cap, "host to device" if source is None else "device to device",
                         device._array, origin, (device, source if source is not None else host))
        return
    from gpunb.runtime.copies import copy_htod, copy_strided

    handle = capture_state.stream_for(cap, stream)
    if source is not None:
        device.copy_from_device(source, handle)
        _record_cuda_copy(cap, "device to device", device.nbytes, (device, source))
        return
    device._check_host_compatible(host, "copy_to_device")
    _check_host_side(device, host, "copy_to_device")
    if device.is_c_contiguous() or device.is_f_contiguous():
        copy_htod(device._ptr, host, device.nbytes, handle)
    else:
        copy_strided(device, host, to_device=True, stream=handle)
    _record_cuda_copy(cap, "host to device", device.nbytes, (device, host))


def _located(message: str, hint: str) -> GraphError:
    return GraphError(message, user_location(), hint=hint)


def _check_host_side(device, host: np.ndarray, what: str) -> None:
    """A host array a GPU graph can copy at each replay: this very array (its layout matches,
    so no temporary stands in for it) in page-locked memory."""
    from gpunb.backends.cuda import graphs

    if device.is_c_contiguous() or device.is_f_contiguous():
        fits = tuple(host.strides) == tuple(device.strides) or device.size <= 1
    else:
        fits = host.flags.c_contiguous  # strided views copy row by row from a C-order array
    if not fits:
        raise _located(f"{what}: the host array's layout (strides {host.strides}) differs "
                       f"from the device array's ({device.strides}), so a temporary would "
                       "be copied, which a graph cannot repeat",
                       hint="use a host array of the same layout: cuda.pinned_array_like(d)")
    if not graphs.is_pinned(host.ctypes.data):
        raise _located(f"{what}: the host array is in pageable memory, which a captured "
                       "graph cannot copy", hint=_PINNED_HINT)


def _record_cuda_copy(cap, kind: str, nbytes: int, arrays: tuple) -> None:
    cap.add_copy(CapturedCopy(kind, nbytes), arrays)


def _record_cpu_copy(cap, kind: str, dst: np.ndarray, src: np.ndarray, arrays: tuple) -> None:
    """A copy the CPU target's graph makes at each replay, by addresses (see the module)."""
    target, source = _raw(dst), _raw(src)

    def replay() -> None:
        target()[...] = source()

    cap.add_copy(CapturedCopy(kind, dst.nbytes, replay), arrays)


def _raw(array: np.ndarray):
    """() -> a numpy array over the same memory as `array`, built from its address."""
    shape, strides, dtype = array.shape, array.strides, array.dtype
    low, high = av.span(shape, strides, dtype.itemsize)
    start = array.ctypes.data + low
    size = max(high - low, 1)

    def view() -> np.ndarray:
        buffer = (ctypes.c_char * size).from_address(start)
        return np.ndarray(shape, dtype, buffer=buffer, offset=-low, strides=strides)

    return view
