"""Checks of what a user hands to cuda.jit, compile_ptx and set_target: the function, signatures,
options, target and arch. A mistake raises a typed error at the user's own line (the decorator or
the call), with a caret and a hint, instead of a TypeError from deep inside gpunb.
"""

from __future__ import annotations

import inspect
import operator

from gpunb.foundation.errors import (  # noqa: F401 - user_location: its callers' import
    CompileError,
    JitOptionError,
    KernelReturnError,
    SignatureError,
    SourceLocation,
    user_location,
)
from gpunb.foundation.pointer_types import CPointer, voidptr

FASTMATH_FLAGS = frozenset({"contract", "arcp", "nnan", "ninf", "nsz", "afn", "reassoc", "fast"})
TARGETS = ("cpu", "cuda", "auto")
_SIGNATURE_HINT = "write e.g. 'void(float32[::1], int32)': a return type, then the argument " \
                  "types in parentheses; arrays as float32[:], float32[::1] or float32[:, ::1]"


def check_function(obj, what: str = "cuda.jit") -> None:
    """GPU functions are plain Python functions (def): their source is what gets compiled."""
    if inspect.isfunction(obj):
        return
    kind = type(obj).__name__
    hint = "decorate a def: @cuda.jit above `def kernel(...):`"
    if isinstance(obj, type):
        hint = "classes cannot be GPU functions; decorate a def"
    elif kind == "partial":
        hint = "bind values inside a def (or pass them as arguments) instead of functools.partial"
    elif inspect.isbuiltin(obj) or inspect.ismethoddescriptor(obj):
        hint = "built-in functions have no Python source to compile; write a def that calls " \
               "the math you need"
    elif inspect.ismethod(obj):
        hint = "methods cannot be GPU functions; write a module-level def"
    raise CompileError(f"{what} needs a Python function, got {_describe(obj)}", user_location(),
                       hint=hint)


def _describe(obj) -> str:
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    return f"{type(obj).__name__} {name!r}" if name else f"{obj!r:.60} ({type(obj).__name__})"


# numba's string signatures may name C pointers: 'float32(CPointer(float32), int32)'
_POINTER_NAMES = {"CPointer": CPointer, "voidptr": voidptr}


def parse_signature(sig, what: str = "signature"):
    """A Signature from a string, a Signature or a tuple of types; SignatureError otherwise."""
    from gpunb.foundation import types as t
    from gpunb.foundation.numba_types import from_numba, is_numba_object

    if is_numba_object(sig):  # numba's own signature or type objects
        sig = from_numba(sig) or sig
    elif isinstance(sig, tuple):
        sig = tuple(from_numba(a) or a if is_numba_object(a) else a for a in sig)
    if isinstance(sig, t.Signature):
        return sig
    if isinstance(sig, tuple) and all(isinstance(a, t.Type) for a in sig):
        return t.Signature(None, sig)
    if isinstance(sig, str):
        try:
            parsed = t.parse_signature(sig, _POINTER_NAMES)
        except (TypeError, ValueError, SyntaxError) as exc:
            detail = str(exc).split(": ", 1)[-1]
            raise SignatureError(f"cannot read the {what} {sig!r}: {detail}", user_location(),
                                 hint=_SIGNATURE_HINT) from None
        if not isinstance(parsed, t.Signature) or not all(
                isinstance(a, t.Type) for a in parsed.args):
            raise SignatureError(f"the {what} {sig!r} does not list argument types",
                                 user_location(), hint=_SIGNATURE_HINT)
        return parsed
    raise SignatureError(f"cannot use {_describe(sig)} as a {what}", user_location(),
                         hint=_SIGNATURE_HINT)


def signature_list(signatures) -> list:
    """cuda.jit's first argument: one signature or a list of them."""
    if signatures is None:
        return []
    if isinstance(signatures, (list, tuple)) and not _is_type_tuple(signatures):
        return [parse_signature(s) for s in signatures]
    return [parse_signature(signatures)]


def _is_type_tuple(value) -> bool:
    from gpunb.foundation import types as t
    from gpunb.foundation.numba_types import is_numba_object

    return isinstance(value, tuple) and bool(value) and all(
        isinstance(a, t.Type) or (is_numba_object(a) and type(a).__name__ != "Signature")
        for a in value)


def check_options(options: dict, known: tuple) -> dict:
    """Options as the compiler reads them, after refusing unknown names and unusable values."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise JitOptionError(f"unknown option(s) for cuda.jit: {', '.join(unknown)}",
                             user_location(), hint=f"known options: {', '.join(known)}")
    out = {}
    for name, value in options.items():
        if value is None:
            continue
        check = _OPTION_CHECKS.get(name, _boolean)
        problem, value = check(value)
        if problem is not None:
            raise JitOptionError(f"cuda.jit option {name}={value!r}: {problem}", user_location(),
                                 hint=f"e.g. @cuda.jit({name}={_EXAMPLES.get(name, 'True')})")
        out[name] = value
    return out


def check_kernel_only(options: dict, device: bool, what: str = "cuda.jit") -> None:
    """cluster_dims shapes a kernel's launch: a device function given one is a mistake."""
    if device and options.get("cluster_dims") is not None:
        raise JitOptionError(f"{what}: cluster_dims is a kernel's launch shape, and this is a "
                             "device function (device=True)", user_location(),
                             hint="put cluster_dims on the kernel that calls it")


def check_kernel_signatures(signatures, device: bool) -> None:
    """numba's "CUDA kernel must have void return type": a kernel's declared signature with a
    return type other than void, refused when it is declared (the body may not even return)."""
    from gpunb.foundation import types as t

    if device:
        return
    for sig in signatures:
        if sig.return_type is not None and not isinstance(sig.return_type, t.NoneType):
            raise KernelReturnError(
                f"CUDA kernel must have void return type (declared: {sig})", user_location(),
                hint="declare it as void(...) and write results into an output array, or "
                     "make it a device function: cuda.jit(sig, device=True)")


def check_flag(name: str, value) -> bool:
    """A True/False argument such as device=."""
    problem, value = _boolean(value)
    if problem is not None:
        raise JitOptionError(f"cuda.jit {name}={value!r}: {problem}", user_location(),
                             hint=f"e.g. @cuda.jit({name}=True)")
    return value


def _boolean(value):
    if isinstance(value, bool) or type(value).__name__ == "bool_" or value in (0, 1):
        return None, bool(value)
    return "expected True or False", value


def _max_registers(value):
    try:
        count = None if isinstance(value, bool) else operator.index(value)
    except TypeError:
        count = None
    if count is None or not 1 <= count <= 255:
        return "expected an int from 1 to 255 (registers per thread)", value
    return None, count


def _fastmath(value):
    if isinstance(value, (set, frozenset, list, tuple)):
        bad = sorted(str(v) for v in value if v not in FASTMATH_FLAGS)
        if bad:
            return (f"unknown fastmath flag(s) {', '.join(bad)}; known: "
                    f"{', '.join(sorted(FASTMATH_FLAGS))}"), value
        return None, bool(value)
    return _boolean(value)


def _opt(value):
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 3:
        return None, value > 0  # an NVVM -opt level; 0 turns optimisation off, as numba-cuda
    return _boolean(value)


def _inline(value):
    if value in ("always", "never") or isinstance(value, bool) or callable(value):
        return None, value
    return "expected 'always', 'never', True, False or a cost model function", value


def _cpu_mode(value):
    if value in ("auto", "workgroup", "coroutine"):
        return None, value
    return "expected 'auto', 'workgroup' or 'coroutine'", value


def _link(value):
    """link=: foreign code for the CUDA target's linker (paths or cuda.CUSource & co.)."""
    from gpunb.foundation.linkable import link_items

    try:
        return None, link_items(value)
    except (TypeError, ValueError, FileNotFoundError) as exc:
        return str(exc), value


def _launch_bounds(value):
    """numba's launch_bounds: max threads per block, then optionally min blocks per SM and max
    cluster rank; an int or a tuple of 1 to 3 ints, kept as a tuple."""
    bounds = value if isinstance(value, tuple) else (value,)
    if len(bounds) > 3:
        return f"Got {len(bounds)} launch bounds: {bounds}. A maximum of three is supported " \
               "(max threads per block, min blocks per SM, max cluster rank)", value
    try:
        bounds = tuple(operator.index(v) for v in bounds)
    except TypeError:
        return "expected an int or a tuple of up to three ints", value
    if not bounds or any(v < 1 for v in bounds) or bounds[0] > 1024:
        return "expected positive ints, at most 1024 threads per block", value
    return None, bounds


def _cluster_dims(value):
    """A compile-time cluster shape (CUDA's __cluster_dims__): an int or 1 to 3 ints, kept as
    (x, y, z); at most 8 blocks, the size every sm_90 GPU schedules (the portable limit)."""
    dims = value if isinstance(value, tuple) else (value,)
    try:
        dims = tuple(operator.index(v) for v in dims if not isinstance(v, bool))
    except TypeError:
        return "expected an int or a tuple of one to three ints", value
    if not 1 <= len(dims) <= 3 or len(dims) != (len(value) if isinstance(value, tuple) else 1):
        return "expected an int or a tuple of one to three ints", value
    if any(v < 1 for v in dims):
        return "cluster dimensions must be positive", value
    dims = dims + (1,) * (3 - len(dims))
    if dims[0] * dims[1] * dims[2] > 8:
        return (f"a cluster of {dims[0] * dims[1] * dims[2]} blocks: at most 8 blocks per "
                "cluster (the portable cluster size)"), value
    return None, dims


_CARVEOUTS = {"default": -1, "maxl1": 0, "maxshared": 100}


def _carveout(value):
    """numba's shared_memory_carveout: 'default', 'MaxL1', 'MaxShared' or a percentage from -1
    to 100, kept as the percentage the driver takes."""
    if isinstance(value, str):
        if value.lower() not in _CARVEOUTS:
            return (f"Invalid carveout value: {value}. Must be -1 to 100 or one of "
                    f"{list(_CARVEOUTS)}"), value
        return None, _CARVEOUTS[value.lower()]
    if isinstance(value, bool) or not isinstance(value, int):
        return "expected an int from -1 to 100 or 'default', 'MaxL1', 'MaxShared'", value
    if not -1 <= value <= 100:
        return "Carveout must be between -1 and 100", value
    return None, value


_OPTION_CHECKS = {"max_registers": _max_registers, "fastmath": _fastmath, "opt": _opt,
                  "inline": _inline, "cpu_mode": _cpu_mode, "link": _link,
                  "launch_bounds": _launch_bounds, "shared_memory_carveout": _carveout,
                  "cluster_dims": _cluster_dims}
_EXAMPLES = {"max_registers": "64", "inline": "'always'", "cpu_mode": "'coroutine'",
             "link": "['functions.cu']", "launch_bounds": "(256, 2)",
             "shared_memory_carveout": "'MaxShared'", "cluster_dims": "(2, 1, 1)"}


def check_target(target, what: str = "target") -> None:
    if target is not None and target not in TARGETS:
        raise JitOptionError(f"{what}={target!r}: expected one of 'cpu', 'cuda', 'auto'",
                             user_location(),
                             hint="'cuda' runs on the GPU, 'cpu' on gpunb's CPU target, 'auto' "
                                  "picks the GPU when there is one")


def check_gpu_function(obj, what: str, kernel_only: bool = False) -> None:
    """JitOptionError at the caller's line when `obj` is not a GPU function (a kernel, with
    `kernel_only`): the notebook's views take @cuda.jit / %%gpukernel functions, and anything
    else was an AttributeError from inside them."""
    if getattr(type(obj), "__gpunb_function__", False) and \
            not (kernel_only and getattr(obj, "device", False)):
        return
    wanted = "a GPU kernel" if kernel_only else "a GPU function"
    raise JitOptionError(f"{what} needs {wanted} (@cuda.jit or a %%gpukernel cell's def), got "
                         f"{_describe(obj)}", user_location(),
                         hint=f"e.g. {what}(saxpy) for a kernel saxpy defined with @cuda.jit")


def check_inspection_arch(arch):
    """inspect()'s / diff_view's arch (sm_XX, or None for the default), refused with a
    JitOptionError at the caller's line when gpunb cannot write PTX for it - not a report with
    empty PTX and SASS tabs."""
    from gpunb.foundation.arch import check_known

    if arch is None:
        return None
    try:
        return check_known(arch).name  # "sm_75" also for 75, "7.5" or (7, 5)
    except ValueError as exc:
        raise JitOptionError(f"arch={arch!r}: {exc}", user_location(),
                             hint="e.g. arch='sm_90'") from None


def check_arch(cc) -> tuple:
    """compile_ptx's cc: a (major, minor) compute capability of sm_50 or newer, or numba's
    arch-specific (major, minor, 'a') / family (major, minor, 'f') form of sm_90 and newer
    (foundation/arch.py reads them)."""
    from gpunb.foundation.arch import parse_arch

    try:
        arch = parse_arch(cc) if isinstance(cc, (tuple, list)) else None
    except ValueError:
        arch = None
    if arch is None or arch.major < 5:
        raise JitOptionError(f"cc={cc!r} is not a compute capability gpunb can target",
                             user_location(),
                             hint="pass (major, minor) of sm_50 or newer, e.g. cc=(9, 0) for "
                                  "sm_90, or (9, 0, 'a') for sm_90a")
    from gpunb.backends.cuda.target import supported_arches

    if tuple(arch.key[:2]) not in supported_arches():  # asked by name: no silent fallback
        known = ", ".join(f"({a}, {b})" for a, b in supported_arches())
        raise JitOptionError(f"cc={cc!r} is not an architecture gpunb's LLVM writes PTX for",
                             user_location(), hint=f"pass one of {known}")
    return arch.key
