"""GPU architecture names, read in one place: `parse_arch("sm_90a")` and every spelling the CUDA
toolchain takes.

nvcc, ptxas and the driver's JIT name an architecture `sm_XY` (a real GPU), `compute_XY` (a
virtual one) or as a compute capability `X.Y`; since sm_90 an `a` suffix means arch-specific
(sm_90a: wgmma, setmaxnreg - code that runs on that architecture only) and since sm_100 an `f`
suffix a family (sm_100f runs on the 10.x family). `--arch`, GPUNB_ARCH, compile_ptx's `cc`,
the occupancy tables and the linker all read names through `parse_arch`.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# The architectures LLVM's NVPTX backend writes PTX for (sm_50 on), as major * 10 + minor -> the
# lowest PTX ISA version (x10) it accepts for them: backends/cuda/target.py asks for these, and an
# architecture outside the table is not one gpunb can write PTX for (check_known)
PTX_ISA_FOR_ARCH = {50: 40, 52: 41, 53: 42, 60: 50, 61: 50, 62: 50, 70: 60, 72: 61, 75: 63,
                    80: 71, 86: 71, 87: 74, 88: 90, 89: 78, 90: 80, 100: 86, 101: 86, 103: 88,
                    110: 90, 120: 87, 121: 88}

_NAME = re.compile(r"^(?:sm_|compute_)?(\d+?)(\d)([af]?)$|^(\d+)\.(\d)([af]?)$")


class Arch(NamedTuple):
    """A GPU architecture: compute capability `major`.`minor`, and `suffix` "a"
    (arch-specific) or "f" (family) or ""."""

    major: int
    minor: int
    suffix: str = ""

    @property
    def cc(self) -> tuple[int, int]:
        """(major, minor): what the driver reports and what its JIT compiles for."""
        return (self.major, self.minor)

    @property
    def key(self) -> tuple:
        """(major, minor) or (major, minor, suffix): numba's `cc` form of it."""
        return (self.major, self.minor, self.suffix) if self.suffix else (self.major, self.minor)

    @property
    def name(self) -> str:
        """`sm_90`, `sm_90a`, `sm_100f`."""
        return f"sm_{self.major}{self.minor}{self.suffix}"

    def __str__(self) -> str:
        return self.name


def parse_arch(value) -> Arch:
    """The architecture `value` names: "sm_90", "sm_90a", "sm_100f", "compute_90", "90",
    "9.0", (9, 0) or numba's (9, 0, "a"). ValueError, saying what is expected, for anything
    else - including an `a`/`f` suffix before the architectures that have them (sm_90 / sm_100)."""
    if isinstance(value, Arch):
        return value
    if isinstance(value, (tuple, list)):
        arch = _from_tuple(value)
    else:
        match = _NAME.match(str(value).strip().lower())
        if match is None:
            raise ValueError(f"{value!r} is not a GPU architecture; expected sm_XY (e.g. sm_90, "
                             "sm_90a, sm_100f), compute_XY or a compute capability such as 9.0")
        major, minor, suffix = (match.group(1, 2, 3) if match.group(1) is not None
                                else match.group(4, 5, 6))
        arch = Arch(int(major), int(minor), suffix)
    if arch.suffix == "a" and arch.major < 9 or arch.suffix == "f" and arch.major < 10:
        raise ValueError(f"{arch.name}: the '{arch.suffix}' suffix names architectures from "
                         f"sm_{'90' if arch.suffix == 'a' else '100'} on")
    return arch


def _from_tuple(value) -> Arch:
    try:
        if len(value) == 3 and value[2] in ("a", "f"):
            return Arch(int(value[0]), int(value[1]), value[2])
        if len(value) == 2:
            major, minor = (int(v) for v in value)
            if (major, minor) == tuple(value) and major >= 0 and 0 <= minor <= 9:
                return Arch(major, minor)
    except (TypeError, ValueError):
        pass
    raise ValueError(f"{tuple(value)!r} is not a compute capability; expected (major, minor), "
                     "e.g. (9, 0), or (9, 0, 'a') for sm_90a")


def known_names() -> str:
    """"sm_50, sm_52, ..., sm_121": the architectures gpunb writes PTX for."""
    return ", ".join(f"sm_{k}" for k in sorted(PTX_ISA_FOR_ARCH))


def check_known(value) -> Arch:
    """parse_arch(value), refused (ValueError naming the known ones) when it is no architecture
    gpunb writes PTX for: for an arch asked for by name (%%gpukernel --arch, inspect(arch=),
    diff_view), where a typo such as sm_999 or sm_77 would otherwise reach LLVM, which warns on
    stderr and writes PTX no ptxas or driver takes. (A GPU, or GPUNB_ARCH, newer than the table
    gets the newest arch before it: backends/cuda/target.llvm_arch.)"""
    arch = parse_arch(value)
    if arch.major * 10 + arch.minor not in PTX_ISA_FOR_ARCH:
        raise ValueError(f"{arch.name} is not an architecture gpunb writes PTX for; known: "
                         f"{known_names()} (an 'a' suffix from sm_90, 'f' from sm_100)")
    return arch
