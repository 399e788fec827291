"""A fault in CPU-target kernel code, told as a KernelFaultError: what happened (an invalid
address, a stack overflow, an arithmetic trap), where in the source (the object's line table of
code sites, codesites.py), which thread and block, and what to do.

The guard (guard_ir.py) caught the signal, jumped out of the kernel and wrote the Status fields
read here; the launch was abandoned and the process carries on.
"""

from __future__ import annotations

import signal

from gpunb.backends.cpu import abi
from gpunb.foundation.artifact import KernelArtifact
from gpunb.foundation.errors import KernelFaultError, SourceLocation

# a fault this close to the faulting stack pointer is the stack's end (guard page, probes)
_STACK_REACH = 1 << 16


def fault_error(artifact: KernelArtifact, status: abi.Status, text_base: int,
                params_address: int) -> KernelFaultError:
    """`text_base`: where the object's text section was loaded (faulting pc - base = offset in
    the line table)."""
    site = _site(artifact, status.fault_pc, text_base)
    loc, function, kind = None, artifact.name, ""
    if site is not None:
        filename, line, col, function, kind = site
        loc = SourceLocation(filename, line, col)
    what, hint = _what(artifact, status, params_address)
    if kind == "def" and not what.startswith("stack overflow"):
        what += (" (the optimiser moved the faulting code away from its statement: the "
                 "function's def line is shown)")
    where = _who(status)
    kernel = "" if function == artifact.name else f" in kernel '{artifact.name}'"
    return KernelFaultError(f"{what}{kernel} ({where}); the launch was "
                            "abandoned (what its output arrays hold is undefined); the next "
                            "launch of any kernel works", loc, function=function, hint=hint)


def _site(artifact: KernelArtifact, pc: int, text_base: int):
    if not pc or not artifact.code_sites:
        return None
    from gpunb.backends.cpu.codesites import site_at

    site = site_at(artifact.binary, pc - text_base)
    if site is None or not 0 <= site < len(artifact.code_sites):
        return None
    return artifact.code_sites[site]


def _who(status: abi.Status) -> str:
    block = tuple(status.ctaid)
    if not status.fault_ctaid_known:
        return "thread and block not known"
    if status.fault_tid_known:
        return f"thread {tuple(status.tid)}, block {block}"
    return (f"block {block}; thread not known: work-group mode runs a block's threads as one "
            "loop (cpu_mode='coroutine' names it)")


def _what(artifact: KernelArtifact, status: abi.Status, params_address: int) -> tuple[str, str]:
    sig = status.fault_signal
    addr, sp = status.fault_addr, status.fault_sp
    if sig in (signal.SIGSEGV, getattr(signal, "SIGBUS", -1)):
        if sp and abs(addr - sp) < _STACK_REACH:
            used = f" after {status.fault_depth / (1 << 20):.1f} MiB" \
                if status.fault_depth > 0 else ""
            return (f"stack overflow: the host thread's stack ran out{used}",
                    "a device function recursing too deep, or large local arrays in a "
                    "recursive function; a GPU thread's stack is smaller still (about 1 KiB by "
                    "default): turn the recursion into a loop")
        near = _near_array(artifact, addr, params_address)
        return (f"invalid memory access at address {addr:#x}{near}",
                "an index out of bounds with bounds checks off (boundscheck=False or "
                "GPUNB_BOUNDSCHECK=0): run with bounds checks on (the CPU target's default) to "
                "get the index, the array and the thread")
    if sig == getattr(signal, "SIGFPE", -1):
        return ("arithmetic fault (an integer division by zero, or the most negative integer "
                "divided by -1)", "check the divisor before dividing")
    if sig == getattr(signal, "SIGILL", -1):
        return ("illegal instruction (code the compiler marked unreachable was reached)",
                "please report this kernel: it should have been a clear error")
    return f"signal {sig}", ""


def _near_array(artifact: KernelArtifact, addr: int, params_address: int) -> str:
    """', N bytes past the end of argument k (...)' for the array argument the address lies
    beyond (or before), if any lies within 1 TiB of it."""
    from gpunb.backends.cpu.accesses import decode_arguments

    try:
        arrays = decode_arguments(artifact.signature, params_address)
    except Exception:  # noqa: BLE001 - a hint only
        return ""
    best = None
    for arr in arrays:
        if not arr.data:
            continue
        count = 1
        for extent in arr.shape:
            count *= extent
        end = arr.data + count * arr.itemsize
        distance = addr - end if addr >= end else arr.data - addr
        if 0 <= distance < (1 << 40) and (best is None or distance < best[0]):
            best = (distance, arr, addr >= end, count)
    if best is None:
        return ""
    distance, arr, after, count = best
    side = "past the end of" if after else "before the start of"
    element = (addr - arr.data) // arr.itemsize if arr.itemsize else 0
    return (f", {distance:,} bytes {side} argument {arr.position} (a {arr.dtype} array of "
            f"{count:,} elements: element {element:,})")
