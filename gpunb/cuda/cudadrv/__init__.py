"""numba.cuda.cudadrv under gpunb: the public names of numba-cuda's driver layer (device arrays,
streams, driver errors); the driver binding itself is gpunb's runtime, not exposed."""


def __getattr__(name: str):
    # `cuda.cudadrv.devicearray.X` works without an import, as in numba-cuda
    if name in ("devicearray", "driver", "error", "nvrtc", "runtime"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
