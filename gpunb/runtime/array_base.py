"""What DeviceArray (GPU memory) and HostDeviceArray (the CPU target's) share: their geometry
(shape, strides in bytes, contiguity, the interned type key the launch path compares by
identity) and numba's DeviceNDArray methods that are views or copies of views (split, squeeze,
getitem/setitem with a stream, ravel, T, flags)."""

from __future__ import annotations

import math

import numpy as np

from gpunb.runtime import arrayview as av

_TYPE_KEYS: dict = {}  # interned array type keys (few: one per class, dtype, ndim, layout)


class ArrayBase:
    """Geometry common to both array kinds; subclasses set shape, strides, dtype, _ptr."""

    __array_priority__ = 10.0

    def _init_geometry(self, shape: tuple, strides: tuple, dtype: np.dtype) -> None:
        self.shape = shape
        self.strides = strides
        self.dtype = dtype
        self.ndim = len(shape)
        self.size = math.prod(shape)  # exact Python ints; np.prod costs microseconds
        self.itemsize = dtype.itemsize
        self.nbytes = self.size * self.itemsize
        c, f = av.contiguity(shape, strides, dtype.itemsize)
        self._c_contiguous = c
        self._f_contiguous = f
        self._layout = av.layout_of(self.ndim, c, f)
        key = (type(self), dtype, self.ndim, self._layout)  # see typeof.type_key
        # one object per distinct key: native launchers (native_pack.py) compare by identity
        self._key = _TYPE_KEYS.setdefault(key, key)

    def is_c_contiguous(self) -> bool:
        return self._c_contiguous

    def is_f_contiguous(self) -> bool:
        return self._f_contiguous

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    @property
    def alloc_size(self) -> int:
        """numba's DeviceNDArray.alloc_size: the bytes this array's elements span (0 for an
        empty array)."""
        low, high = av.span(self.shape, self.strides, self.itemsize)
        return high - low

    @property
    def _numba_type_(self):
        """The kernel type a launch gives this array (numba's magic attribute: a C or F layout
        only when contiguous and not broadcast)."""
        from gpunb.foundation import types as t

        return t.Array(t.from_dtype(self.dtype), self.ndim, self._layout)  # as typeof gives

    @property
    def T(self):
        return self.transpose()

    @property
    def flags(self) -> dict:
        """numba's DeviceNDArray.flags: the contiguity of this layout, as numpy names it."""
        return {"C_CONTIGUOUS": self._c_contiguous, "F_CONTIGUOUS": self._f_contiguous,
                "WRITEABLE": True, "ALIGNED": True}

    def _viewed_geometry(self, dtype: np.dtype) -> tuple:
        """(shape, strides) of this memory read as `dtype`, by numpy's rules for .view()
        (the last axis must be contiguous when the item size changes)."""
        probe = np.lib.stride_tricks.as_strided(np.empty(1, self.dtype), self.shape,
                                                self.strides)  # geometry only: never read
        viewed = probe.view(dtype)
        return viewed.shape, viewed.strides

    def ravel(self, order: str = "C"):
        """A 1-d view of a contiguous array (numba raises for non-contiguous arrays too); order
        "A" reads an F-contiguous array in F order, any other in C order, as numpy's."""
        if order not in ("C", "F", "A"):
            raise ValueError(f"ravel: order must be 'C', 'F' or 'A', not {order!r}")
        if order == "A":
            order = "F" if self._f_contiguous and not self._c_contiguous else "C"
        return self.reshape(self.size, order=order)

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

    def _check_host_compatible(self, host: np.ndarray, what: str) -> None:
        if host.dtype != self.dtype:
            raise TypeError(f"{what}: dtype {host.dtype} does not match the device array's "
                            f"{self.dtype}; convert with .astype({str(self.dtype)!r}) first")
        if host.shape != self.shape:
            raise ValueError(f"{what}: shape {host.shape} does not match the device array's "
                             f"{self.shape}")
