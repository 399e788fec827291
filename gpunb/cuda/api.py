"""numba.cuda.api under gpunb: the host API functions numba-cuda defines there (declare_device,
device and number-format queries, the profiler switch, synchronize); `gpunb.cuda` re-exports
them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

# CUDA driver major versions gpunb is built and tested against (cuda-bindings 12 and 13)
_SUPPORTED_DRIVER_MAJORS = (12, 13)


def declare_device(name: str, sig, link=None, use_cooperative: bool = False, abi: str = "numba"):
    """A foreign device function callable from kernels: `name` with the numba signature `sig`,
    defined in the code `link` names (.cu compiled by NVRTC, .ptx, .cubin, .fatbin, .o, .a,
    .ltoir, or cuda.CUSource & co.), linked into every kernel that calls it (CUDA target only).
    abi="numba": `int name(Ret *out, args...)`; abi="c": `Ret name(args...)`."""
    from gpunb.compiler.builtins.external import ABIS, ExternalFunction
    from gpunb.foundation.errors import JitOptionError
    from gpunb.foundation.linkable import link_items
    from gpunb.jit import options as jit_checks

    if abi not in ABIS:
        raise JitOptionError(f"Unsupported ABI: {abi!r}", jit_checks.user_location(),
                             hint="abi='numba' (int f(Ret *out, args...)) or abi='c'")
    if not isinstance(name, str) or not name.isidentifier():
        raise TypeError(f"declare_device: the name must be the function's C symbol, got {name!r}")
    if isinstance(sig, str) and sig.strip().startswith("("):
        raise TypeError("Return type must be provided for device declarations, e.g. "
                        f"'int32{sig.strip()}'")
    parsed = jit_checks.parse_signature(sig, "declare_device signature")
    if parsed.return_type is None:
        raise TypeError("Return type must be provided for device declarations, e.g. "
                        "int32(float32, int32)")
    return ExternalFunction(name, parsed, link_items(link), abi, use_cooperative)


def _device_supports(cc: tuple) -> bool:
    """On the CPU target every number type works; on a GPU, by compute capability."""
    from gpunb.runtime.target import active_target

    if active_target() != "cuda":
        return True
    from gpunb.backends.cuda import driver

    return tuple(driver.current_device().compute_capability) >= cc


def is_float16_supported() -> bool:
    """numba-cuda's spelling: float16 is supported on every device numba-cuda runs on (5.3+),
    and on the CPU target."""
    return is_fp16_supported()


def is_fp16_supported() -> bool:
    """float16 arithmetic: compute capability 5.3 and later (always on the CPU target)."""
    return _device_supports((5, 3))


def is_bfloat16_supported() -> bool:
    """bfloat16 (cuda.bf16): compute capability 8.0 and later, as in numba-cuda (always on the
    CPU target)."""
    return _device_supports((8, 0))


def is_fp8_supported() -> bool:
    """fp8 types: compute capability 8.9 and later, as in numba-cuda (always on the CPU target).
    gpunb converts fp8 in software on every arch; this answers numba-cuda's question."""
    return _device_supports((8, 9))



def is_available() -> bool:
    from gpunb.backends.cuda import driver

    return driver.is_available()


def detect() -> bool:
    """Print the devices found, as numba.cuda.detect does; True when at least one is usable."""
    from gpunb.backends.cuda import driver

    if not driver.is_available():
        print("gpunb: no CUDA GPU found (kernels run on the CPU target)")
        return False
    print(f"Found {driver.device_count()} CUDA device(s)")
    for i in range(driver.device_count()):
        d = driver.device_info(i) if hasattr(driver, "device_info") else driver.current_device()
        cc = ".".join(map(str, d.compute_capability))
        print(f"id {i}    {d.name}    [SUPPORTED] compute capability: {cc}")
    return True


def select_device(device_id: int):
    """Make GPU `device_id` current in this thread; on the CPU target its one simulated device,
    number 0 (as current_context(0)), so numba-cuda scripts that start with
    `cuda.select_device(0)` run on a machine without a GPU."""
    from gpunb.runtime.target import active_target

    if active_target() != "cuda":
        from gpunb.cuda.devices import get_current_device

        if device_id != 0:
            raise ValueError(f"select_device({device_id}): the CPU target has one device, "
                             "number 0")
        return get_current_device()
    from gpunb.backends.cuda import driver

    return driver.select_device(device_id)


def synchronize() -> None:
    from gpunb.runtime import capture
    from gpunb.runtime.target import active_target

    capture.refuse_synchronize("cuda.synchronize()")
    if active_target() == "cuda":
        from gpunb.backends.cuda import driver

        driver.synchronize()


def is_supported_version() -> bool:
    """numba-cuda's question "is this CUDA version one the library is tested with": on a GPU,
    whether the driver's CUDA major version is one gpunb is built and tested against (other
    versions may still work); on the CPU target, where no CUDA version is involved, True."""
    from gpunb.runtime.target import active_target

    if active_target() != "cuda":
        return True
    from gpunb.backends.cuda import driver

    return driver.driver_version()[0] in _SUPPORTED_DRIVER_MAJORS


def cuda_error() -> str | None:
    """numba-cuda's: None when the CUDA driver initialised (or gpunb runs on the CPU target by
    choice), else the reason it could not, as a sentence."""
    from gpunb.backends.cuda import driver

    try:
        driver.init()
    except Exception as exc:  # noqa: BLE001 - whatever stopped the driver is the answer
        return str(exc) or type(exc).__name__
    return None


def profile_start() -> None:
    """Start collecting in an attached profiler (Nsight Systems' / Nsight Compute's
    --capture-range=cudaProfilerApi): cuProfilerStart. On the CPU target no CUDA profiler can be
    attached, so there is nothing to start."""
    _profiler_call("cuProfilerStart")


def profile_stop() -> None:
    """Stop collecting in an attached profiler (cuProfilerStop); nothing on the CPU target."""
    _profiler_call("cuProfilerStop")


@contextlib.contextmanager
def profiling() -> Iterator[None]:
    """`with cuda.profiling(): ...` - profile_start() on entry, profile_stop() on exit (also
    when the block raises, unlike numba-cuda's, so a failed block does not leave collection on)."""
    profile_start()
    try:
        yield
    finally:
        profile_stop()


def _profiler_call(name: str) -> None:
    from gpunb.runtime.target import active_target

    if active_target() != "cuda":
        return
    from gpunb.backends.cuda import driver

    driver.ensure_context()
    driver.check(getattr(driver.cuda_driver(), name)(), name)
