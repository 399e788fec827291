"""numba.cuda.typing.typeof under gpunb: the kernel type a Python value is passed as."""

from gpunb.runtime.typeof import typeof  # noqa: F401 - re-exported
