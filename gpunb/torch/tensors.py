"""PyTorch tensors as gpunb kernel arguments, without copies: a CPU tensor as the numpy array over
its memory (the CPU target), a CUDA tensor as a gpunb DeviceArray view of its memory (its data
pointer, shape and strides in bytes; the tensor stays alive through the view). Both are the
argument kinds the launch fast path packs natively, and cost a few microseconds per tensor
(reading a tensor's __cuda_array_interface__ costs more, and refuses tensors that require grad).

`current_stream` is a stream object for `kernel[grid, block, stream]` whose handle is PyTorch's
current CUDA stream at each launch (inside `torch.cuda.graph`, the capturing stream).
"""

from __future__ import annotations

import numpy as np
import torch

from gpunb.foundation.errors import LaunchError

_NUMPY_DTYPES = {
    torch.float16: np.float16, torch.float32: np.float32, torch.float64: np.float64,
    torch.int8: np.int8, torch.int16: np.int16, torch.int32: np.int32, torch.int64: np.int64,
    torch.uint8: np.uint8, torch.bool: np.bool_, torch.complex64: np.complex64,
    torch.complex128: np.complex128,
}
if hasattr(torch, "uint16"):  # (torch >= 2.3)
    _NUMPY_DTYPES.update({torch.uint16: np.uint16, torch.uint32: np.uint32,
                          torch.uint64: np.uint64})


def numpy_dtype(dtype: torch.dtype) -> np.dtype:
    """The numpy dtype of a torch dtype (bfloat16 and float8 through ml_dtypes)."""
    found = _NUMPY_DTYPES.get(dtype)
    if found is not None:
        return np.dtype(found)
    import ml_dtypes

    low = {torch.bfloat16: ml_dtypes.bfloat16}
    for name, ml_name in (("float8_e4m3fn", "float8_e4m3fn"), ("float8_e5m2", "float8_e5m2")):
        if hasattr(torch, name):
            low[getattr(torch, name)] = getattr(ml_dtypes, ml_name)
    if dtype in low:
        return np.dtype(low[dtype])
    raise LaunchError(f"a torch.{str(dtype).removeprefix('torch.')} tensor cannot be passed to "
                      "a gpunb kernel", hint="convert it: t.to(torch.float32)")


def kernel_argument(value):
    """`value` as a kernel argument: a tensor as a view of its memory, anything else as it is."""
    if not isinstance(value, torch.Tensor):
        return value
    tensor = value.detach()
    if tensor.device.type == "cpu":
        return _host_view(tensor)
    if tensor.device.type == "cuda":
        return _device_view(tensor)
    raise LaunchError(f"a tensor on {tensor.device} cannot be passed to a gpunb kernel",
                      hint="gpunb runs on CUDA GPUs and on the CPU: move it with t.cuda() or "
                           "t.cpu()")


def _host_view(tensor: torch.Tensor) -> np.ndarray:
    dtype = numpy_dtype(tensor.dtype)
    if tensor.dtype in _NUMPY_DTYPES:
        return tensor.resolve_conj().numpy() if tensor.is_conj() else tensor.numpy()
    bits = {1: torch.uint8, 2: torch.int16}[dtype.itemsize]  # (numpy has no bfloat16)
    return tensor.view(bits).numpy().view(dtype)


def _device_view(tensor: torch.Tensor):
    from gpunb.runtime import arrayview as av
    from gpunb.runtime.devicearray import DeviceAllocation, DeviceArray

    dtype = numpy_dtype(tensor.dtype)
    shape = tuple(tensor.shape)
    strides = tuple(s * dtype.itemsize for s in tensor.stride())
    low, high = av.span(shape, strides, dtype.itemsize)
    memory = DeviceAllocation(high - low, ptr=tensor.data_ptr() + low, owner=tensor)
    return DeviceArray(shape, strides, dtype, 0, memory, -low)


def current_stream_handle(index: int) -> int:
    """The handle of PyTorch's current CUDA stream on device `index` (inside torch.cuda.graph,
    the capturing stream): torch's raw-stream query where it has one (what inductor's own
    launches call; it makes no Stream object), else torch.cuda.current_stream."""
    if _RAW_STREAM is not None:
        return _RAW_STREAM(index)
    return torch.cuda.current_stream(index).cuda_stream


# (a private name of torch's, present in its CUDA builds since 2.0; looked up once)
_RAW_STREAM = getattr(torch._C, "_cuda_getCurrentRawStream", None)


class _CurrentStream:
    """PyTorch's current CUDA stream, read at each launch (see the module docstring)."""

    __gpunb_dynamic_stream__ = True  # never baked into a native launcher

    @property
    def cuda_stream(self) -> int:
        return current_stream_handle(torch.cuda.current_device())

    def __repr__(self) -> str:
        return "<PyTorch's current CUDA stream, read at each launch>"


current_stream = _CurrentStream()
