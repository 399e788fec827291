"""numba.cuda.libdevice: every libdevice function as a name of the kernel language.

`libdevice.sin(x)`, `s, c = libdevice.sincos(x)`, `libdevice.sad(x, y, z)` inside GPU functions,
with libdevice's own signatures (the name is libdevice's without `__nv_`). Each attribute is a stub
carrying its declaration, made on first access from the table that gpunb.cuda.libdevicefuncs reads
out of libdevice's bitcode; importing this module parses nothing. Called from Python, a stub says
it works only inside GPU code.
"""

from __future__ import annotations

from gpunb.compiler.kernel_api import LibdeviceFunction


def __getattr__(name: str) -> LibdeviceFunction | list:
    if name.startswith("__") and name != "__all__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from gpunb.cuda import libdevicefuncs

    if name == "__all__":  # `from gpunb.cuda.libdevice import *`
        return __dir__()
    symbol = "__nv_" + name
    declaration = libdevicefuncs.declarations().get(symbol)
    if declaration is None:
        why = libdevicefuncs.not_offered().get(symbol)
        detail = f"libdevice's {symbol} cannot be called from kernels: {why}" if why else \
            f"libdevice has no function {symbol}"
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} ({detail})")
    stub = LibdeviceFunction(declaration)
    return globals().setdefault(name, stub)  # one object per name: later lookups skip this


def __dir__() -> list:
    from gpunb.cuda import libdevicefuncs

    return sorted(d.name for d in libdevicefuncs.declarations().values())
