"""numba.cuda's ahead-of-time compile functions: compile_ptx, compile, compile_all and their
`_for_current_device` forms. They need no GPU: PTX comes from LLVM's NVPTX backend.

As in numba-cuda: kernels (device=False) take the numba ABI only and must return void; device
functions are exported under their Python name (or `abi_info={'abi_name': ...}`) with the C ABI,
returning their declared type. Only PTX output exists in gpunb: `output='ltoir'` (NVVM's LTO-IR)
raises, saying so.
"""

from __future__ import annotations

_ABIS = ("numba", "c")


def _check_request(sig, device: bool, abi: str, output: str):
    from gpunb.foundation import types as t
    from gpunb.jit import options as jit_checks

    sig = jit_checks.parse_signature(sig)
    if abi not in _ABIS:
        raise NotImplementedError(f"Unsupported ABI: {abi}")
    if output != "ptx":
        if output == "ltoir":
            raise NotImplementedError(
                "Unsupported output type: ltoir (gpunb has no NVVM, whose LTO-IR this is; "
                "compile to output='ptx')")
        raise NotImplementedError(f"Unsupported output type: {output}")
    if not device:
        if abi == "c":
            raise NotImplementedError("The C ABI is not supported for kernels")
        if sig.return_type is not None and not isinstance(sig.return_type, t.NoneType):
            raise TypeError(f"CUDA kernel must have void return type (declared: {sig})")
    return sig


def compile_ptx(pyfunc, sig, debug: bool = False, lineinfo: bool = False, device: bool = False,
                fastmath: bool = False, cc: tuple | None = None, opt: bool = True,
                abi: str = "numba", abi_info: dict | None = None, launch_bounds=None,
                output: str = "ptx", cluster_dims=None) -> tuple:
    """PTX for `pyfunc` with signature `sig`, without a GPU: returns (ptx, return_type).
    `cluster_dims` as cuda.jit's (a kernel's compile-time thread-block cluster shape)."""
    from gpunb import backends
    from gpunb.backends.pipeline import compile as run_compile
    from gpunb.foundation import config
    from gpunb.foundation.events import Stage
    from gpunb.jit import options as jit_checks

    func = getattr(pyfunc, "py_func", pyfunc)
    jit_checks.check_function(func, "compile_ptx")
    sig = _check_request(sig, device, abi, output)
    cc = jit_checks.check_arch(cc) if cc else config.default_arch()
    options = {"lineinfo": lineinfo, "debug": debug, "fastmath": fastmath, "opt": opt,
               "launch_bounds": launch_bounds, "cluster_dims": cluster_dims}
    options = {**options, **jit_checks.check_options(options, tuple(options))}
    jit_checks.check_kernel_only(options, device, "compile_ptx")
    if device:  # the calling convention of the exported function (numba's, or C's)
        options["abi"] = abi
    for name in ("launch_bounds", "cluster_dims"):
        if options[name] is None:
            del options[name]
    export = device and (abi_info or {}).get("abi_name") or device
    compiled = run_compile(func, tuple(sig.args), options, backends.get("cuda"),
                           stop_after=Stage.PTX, arch=cc, device=device, export_device=export,
                           return_type=sig.return_type if device else None)
    return compiled.artifact.ptx, compiled.typed.return_type


def _current_cc() -> tuple:
    """The current device's compute capability, or the newest one before it that gpunb's LLVM
    writes PTX for (a GPU newer than gpunb: its driver JIT-compiles that PTX)."""
    from gpunb.backends.cuda.target import llvm_arch
    from gpunb.cuda.devices import get_current_device

    return llvm_arch(tuple(get_current_device().compute_capability))


def compile_ptx_for_current_device(pyfunc, sig, device: bool = False, **kwargs) -> tuple:
    """compile_ptx for the current device's compute capability (GPUNB_ARCH on the CPU target)."""
    return compile_ptx(pyfunc, sig, device=device, cc=_current_cc(), **kwargs)


def compile(pyfunc, sig, debug: bool = False, lineinfo: bool = False, device: bool = True,
            fastmath: bool = False, cc: tuple | None = None, opt: bool = True, abi: str = "c",
            abi_info: dict | None = None, output: str = "ptx", forceinline: bool = False,
            launch_bounds=None) -> tuple:
    """numba.cuda.compile: like compile_ptx, but a device function with the C ABI by default.
    forceinline=True marks the function for inlining where it is linked, which only LTO-IR
    output can carry (numba-cuda's rule; gpunb does not write LTO-IR)."""
    if forceinline and output != "ltoir":
        raise ValueError("Can only designate forced inlining in LTO-IR")
    return compile_ptx(pyfunc, sig, debug=debug, lineinfo=lineinfo, device=device,
                       fastmath=fastmath, cc=cc, opt=opt, abi=abi, abi_info=abi_info,
                       launch_bounds=launch_bounds, output=output)


def compile_for_current_device(pyfunc, sig, device: bool = True, abi: str = "c",
                               **kwargs) -> tuple:
    """compile() for the current device's compute capability."""
    return compile(pyfunc, sig, device=device, abi=abi, cc=_current_cc(), **kwargs)


def compile_all(pyfunc, sig, debug: bool = False, lineinfo: bool = False, device: bool = True,
                fastmath: bool = False, cc: tuple | None = None, opt: bool = True,
                abi: str = "c", abi_info: dict | None = None, output: str = "ptx",
                forceinline: bool = False, launch_bounds=None) -> tuple:
    """numba.cuda.compile_all: ([code, linked files...], return_type). gpunb links no foreign
    files into ahead-of-time output, so the list holds the one PTX module."""
    ptx, resty = compile(pyfunc, sig, debug=debug, lineinfo=lineinfo, device=device,
                         fastmath=fastmath, cc=cc, opt=opt, abi=abi, abi_info=abi_info,
                         output=output, forceinline=forceinline, launch_bounds=launch_bounds)
    return [ptx], resty
