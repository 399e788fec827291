"""Section sizes of a cubin (an ELF64 file): the figures ptxas -v no longer prints.

Recent ptxas versions leave `cmem[N]` out of their `-v` report, so the constant memory a kernel
uses (numba-cuda's `get_const_mem_size()`, the driver's CONST_SIZE_BYTES) is read from the cubin
itself: the user constant bank is the `.nv.constant<N>` section with no kernel name (bank 0,
`.nv.constant0.<kernel>`, holds the kernel's parameters and is not counted). pyelftools reads
the section headers; nothing in the file is executed.
"""

from __future__ import annotations

import io
import re

_USER_CONSTANT = re.compile(r"\.nv\.constant([1-9]\d*)$")


def section_sizes(cubin: bytes) -> dict[str, int]:
    """{section name: size in bytes} of an ELF file; {} when it is not one."""
    try:
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile
    except ImportError:  # a dependency of gpunb's, but an install may lack it
        from gpunb.foundation.errors import ToolchainError

        raise ToolchainError("reading a cubin's sections needs pyelftools (a dependency of "
                             "gpunb's): pip install pyelftools") from None

    try:
        elf = ELFFile(io.BytesIO(bytes(cubin)))
        return {section.name: int(section["sh_size"]) for section in elf.iter_sections()}
    except (ELFError, ValueError, KeyError, IndexError, OSError, EOFError):
        return {}  # not an ELF file, or a damaged one


def user_constant_bytes(cubin: bytes) -> int:
    """Bytes of `cuda.const` arrays and other module constants (print formats) in the cubin."""
    return sum(size for name, size in section_sizes(cubin).items()
               if _USER_CONSTANT.match(name))
