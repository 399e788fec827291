"""numba.cuda.kernels under gpunb: library kernels (`gpunb.cuda.kernels.transpose`)."""


def __getattr__(name: str):
    if name == "transpose":  # the module, as `numba.cuda.kernels.transpose` is
        import importlib

        return importlib.import_module(f"{__name__}.transpose")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
