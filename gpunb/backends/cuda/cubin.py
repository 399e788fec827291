"""Section sizes of a cubin (an ELF64 file): the figures ptxas -v no longer prints.

Recent ptxas versions leave `cmem[N]` out of their `-v` report, so the constant memory a kernel
uses (numba-cuda's `get_const_mem_size()`, the driver's CONST_SIZE_BYTES) is read from the cubin
itself: the user constant bank is the `.nv.constant<N>` section with no kernel name (bank 0,
`.nv.constant0.<kernel>`, holds the kernel's parameters and is not counted). Only the section
header table is read; nothing in the file is executed or trusted beyond its bounds.
"""

from __future__ import annotations

import re
import struct

_ELF64_LITTLE = b"\x7fELF\x02\x01"
_USER_CONSTANT = re.compile(r"\.nv\.constant([1-9]\d*)$")


def section_sizes(cubin: bytes) -> dict[str, int]:
    """{section name: size in bytes} of an ELF64 little-endian file; {} when it is not one."""
    if len(cubin) < 64 or not cubin.startswith(_ELF64_LITTLE):
        return {}
    shoff = struct.unpack_from("<Q", cubin, 0x28)[0]
    entsize, count, names_index = struct.unpack_from("<HHH", cubin, 0x3A)
    if entsize < 64 or shoff + count * entsize > len(cubin) or names_index >= count:
        return {}
    headers = [struct.unpack_from("<IIQQQQ", cubin, shoff + k * entsize) for k in range(count)]
    names_offset = headers[names_index][4]
    sizes = {}
    for name_at, _kind, _flags, _addr, _offset, size in headers:
        start = names_offset + name_at
        end = cubin.find(b"\0", start)
        if start >= len(cubin) or end < 0:
            continue
        sizes[cubin[start:end].decode("ascii", "replace")] = int(size)
    return sizes


def user_constant_bytes(cubin: bytes) -> int:
    """Bytes of `cuda.const` arrays and other module constants (print formats) in the cubin."""
    return sum(size for name, size in section_sizes(cubin).items()
               if _USER_CONSTANT.match(name))
