"""Warn when ptxas will serialise a kernel's wgmma: it waits for every wgmma.mma_async before
issuing the next (no MMA overlaps the next one's issue) in any kernel that calls a subroutine,
and the driver's JIT, which links gpunb's kernels, says nothing about it.

Several PTX instructions are subroutine calls in SASS: 64-bit integer division and remainder
(Python ints are 64-bit in kernels, so `i // n` is one), IEEE float division, reciprocal and
square root (`x / y`, `math.sqrt` without fastmath), and explicit calls. nvJitLink's ptxas
names the cause ("C7509 ... serialized due to the presence of Extern calls"); on an H200 the
Hopper GEMM example ran 7 % slower for one 64-bit division in its tile order. This module
finds those instructions in the PTX of a kernel that uses wgmma and names their source lines.
"""

from __future__ import annotations

import re
import warnings

from gpunb.foundation.errors import PerformanceWarning

_CALLING = re.compile(
    r"^\s*(?:@!?%\w+\s+)?"
    r"((?:div|rem)\.[su]64|(?:div|rcp|sqrt)\.r[nzmp]\.f(?:32|64)|call(?:\.uni)?)\b")
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)")
_REMEDY = {
    "int": ("divides 64-bit integers",
            "divide 32-bit values, each operand wrapped: uint32(a) // uint32(b)"),
    "div": ("divides floats with IEEE rounding",
            "use cuda.libdevice.fast_fdividef(a, b), or fastmath=True"),
    "sqrt": ("takes an IEEE square root", "use fastmath=True (sqrt.approx)"),
    "call": ("calls a function that is not inlined", "make it forceinline=True"),
}


def _kind(instruction: str) -> str:
    if instruction.startswith("call"):
        return "call"
    if instruction.endswith(("s64", "u64")):
        return "int"
    return "sqrt" if instruction.startswith("sqrt") else "div"


def serialising_sites(ptx: str) -> list:
    """[(file, line, kind)] of the instructions that SASS makes into subroutine calls, in
    source order, one per (file, line, kind); file and line are None without a .loc."""
    files, where, sites = {}, (None, None), []
    for text in ptx.splitlines():
        if match := _FILE.match(text):
            files[match.group(1)] = match.group(2)
        elif match := _LOC.match(text):
            where = (files.get(match.group(1)), int(match.group(2)))
        elif match := _CALLING.match(text):
            site = (*where, _kind(match.group(1)))
            if site not in sites:
                sites.append(site)
    return sites


def warn_if_serialised(ptx: str, name: str, filename: str, first_line: int) -> None:
    """A PerformanceWarning at each line of a wgmma kernel that makes ptxas serialise it."""
    if "wgmma.mma_async" not in ptx:
        return
    for file, line, kind in serialising_sites(ptx):
        what, fix = _REMEDY[kind]
        warnings.warn_explicit(
            f"'{name}' uses wgmma and this line {what}, which SASS does in a subroutine call: "
            "ptxas then waits for every wgmma of the kernel before issuing the next (the "
            f"driver's JIT does not say so). {fix[0].upper()}{fix[1:]}.",
            PerformanceWarning, file or filename, line or first_line)
