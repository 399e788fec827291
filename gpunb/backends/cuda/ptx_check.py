"""Inline PTX for the CUDA target: CUDA's asm() operand syntax turned into LLVM's, the text
checked by ptxas inside a minimal kernel (so a typo is reported at the user's call, not as a
driver link failure), and the PTX ISA version a module needs raised where LLVM's default for the
arch is too old for an instruction gpunb emits (fp8 mma.sync needs PTX 8.4)."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile

_OPERAND = re.compile(r"%(\d+|=|%)")
# register names for each constraint class in the check kernel
_REGISTERS = {"h": ("%h", ".b16"), "r": ("%r", ".b32"), "l": ("%rd", ".b64"),
              "f": ("%f", ".f32"), "d": ("%fd", ".f64")}
_ERROR = re.compile(r"line (\d+); error\s*:\s*(.*)")


def llvm_asm_text(template: str) -> str:
    """CUDA asm() text -> LLVM inline asm: %N -> $N, %% -> %, %= -> a unique number, $ -> $$."""
    text = template.replace("$", "$$")

    def convert(match: re.Match) -> str:
        token = match.group(1)
        if token == "%":
            return "%"
        if token == "=":
            return "${:uid}"
        return f"${token}"

    return _OPERAND.sub(convert, text)


def _check_kernel(template: str, outputs: tuple, inputs: tuple, arch: str,
                  version: tuple) -> tuple[str, int]:
    """A kernel holding the template with registers for its operands; and the line (1-based)
    of the template's first line in it."""
    letters = list(outputs) + list(inputs)
    names, counts = [], {}
    for letter in letters:
        prefix, _ = _REGISTERS[letter]
        counts[letter] = counts.get(letter, 0) + 1
        names.append(f"{prefix}{counts[letter] - 1}")

    def operand(match: re.Match) -> str:
        token = match.group(1)
        if token == "%":
            return "%"
        if token == "=":
            return "0"
        return names[int(token)] if int(token) < len(names) else f"%{token}"

    head = [f".version {version[0]}.{version[1]}", f".target {arch}", ".address_size 64",
            ".visible .entry _gpunb_inline_ptx_check()", "{"]
    head += [f"\t.reg {_REGISTERS[letter][1]} {_REGISTERS[letter][0]}<{count}>;"
             for letter, count in counts.items()]
    body = _OPERAND.sub(operand, template)
    return "\n".join(head + [body, "\tret;", "}", ""]), len(head) + 1


@functools.lru_cache(maxsize=512)
def check_inline_ptx(template: str, outputs: tuple, inputs: tuple, arch: str,
                     version: tuple) -> tuple[int, str] | None:
    """None when ptxas accepts the template (or is not installed: the driver's linker then
    checks it); else (line in the template, ptxas's first error)."""
    from gpunb.backends.cuda.toolchain import find_tool

    ptxas = find_tool("ptxas")
    if ptxas is None:
        return None
    text, first = _check_kernel(template, outputs, inputs, arch, version)

    with tempfile.TemporaryDirectory(prefix="gpunb-ptx-") as tmp:
        path = os.path.join(tmp, "inline.ptx")
        with open(path, "w") as f:
            f.write(text)
        try:
            proc = subprocess.run([ptxas, f"-arch={arch}", path, "-o",
                                   os.path.join(tmp, "inline.cubin")],
                                  capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return None
    if proc.returncode == 0:
        return None
    for line in proc.stderr.splitlines():
        found = _ERROR.search(line)
        if found:
            return max(1, int(found.group(1)) - first + 1), found.group(2).strip()
    return 1, (proc.stderr.strip().splitlines() or ["ptxas failed"])[-1]


_NEEDS_84 = ("mma.sync.aligned.m16n8k32.row.col.f32.e4m3",
             "mma.sync.aligned.m16n8k32.row.col.f32.e5m2")
_VERSION_LINE = re.compile(r"^\.version (\d+)\.(\d+)$", re.MULTILINE)


def raise_ptx_version(ptx: str) -> str:
    """PTX 8.4 for modules with fp8 mma.sync (LLVM writes 7.8 for sm_89 and sm_90)."""
    if ".e4m3" not in ptx and ".e5m2" not in ptx:
        return ptx
    if not any(marker in ptx for marker in _NEEDS_84):
        return ptx
    found = _VERSION_LINE.search(ptx)
    if found is None or (int(found.group(1)), int(found.group(2))) >= (8, 4):
        return ptx
    return ptx[:found.start()] + ".version 8.4" + ptx[found.end():]
