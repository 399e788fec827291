"""`numba.cuda.cudadrv.devicearray`: the device array class is gpunb's; the rest is Missing."""

from __future__ import annotations

from .missing import Missing, gpunb_attr

DeviceNDArray = gpunb_attr("numba.cuda.cudadrv.devicearray.DeviceNDArray",
                           "gpunb.cuda.DeviceNDArray")


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return Missing(f"numba.cuda.cudadrv.devicearray.{name}")
