"""numba's DeviceNDArray methods that are views through basic indexing (split, squeeze,
getitem / setitem with a stream, as_cuda_arg), shared by both device array kinds
(runtime/devicearray.py: DeviceArray, HostDeviceArray)."""

from __future__ import annotations

import numpy as np


class NumbaViewMethods:
    """Mixed into the device arrays, which provide shape, strides, ndim, size, itemsize,
    gpu_data, bind() and basic indexing."""

    def _on_stream(self, stream):
        """This array for a copy on `stream` (numba's _default_stream: 0 keeps its own)."""
        return self.bind(stream) if stream else self

    def split(self, section: int, stream=0):
        """numba's DeviceNDArray.split: views of `section` elements each (the last may be
        shorter) of a 1-d array with unit stride, yielded one by one."""
        if self.ndim != 1:
            raise ValueError("only support 1d array")
        if self.strides[0] != self.itemsize:
            raise ValueError("only support unit stride")
        if not isinstance(section, (int, np.integer)) or section < 1:
            raise ValueError(f"split: section must be a positive int, got {section!r}")
        source = self._on_stream(stream)
        return (source[begin:begin + section] for begin in range(0, self.size, section))

    def squeeze(self, axis=None, stream=0):
        """numba's DeviceNDArray.squeeze: a view without the axes of length one (`axis`: only
        those; numpy's ValueError for an axis longer than one)."""
        if axis is None:
            axes = {i for i, n in enumerate(self.shape) if n == 1}
        else:
            axes = {i % self.ndim if -self.ndim <= i < self.ndim else i
                    for i in (axis if isinstance(axis, tuple) else (axis,))}
            probe = np.lib.stride_tricks.as_strided(np.empty(1, bool), self.shape,
                                                    (0,) * self.ndim)  # shape only: no memory
            probe.squeeze(axis=axis)  # numpy's errors: an axis out of range, or longer than 1
        index = tuple(0 if i in axes else slice(None) for i in range(self.ndim))
        return self._on_stream(stream)[index + (Ellipsis,)]  # `...`: a view, even 0-d

    def getitem(self, item, stream=0):
        """numba's getitem: `self[item]`, its copy (for one element) on `stream`."""
        return self._on_stream(stream)[item]

    def setitem(self, key, value, stream=0) -> None:
        """numba's setitem: `self[key] = value`, its copy on `stream`."""
        self._on_stream(stream)[key] = value

    def as_cuda_arg(self):
        """numba's as_cuda_arg: the memory object a kernel receives (gpu_data)."""
        return self.gpu_data

