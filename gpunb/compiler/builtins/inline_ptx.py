"""cuda.inline_ptx(template, constraints, *inputs, volatile=True, memory=False): CUDA's asm().

The template is PTX with CUDA's operand syntax (%0, %1 ...; %% for a literal %, %= for a number
unique to the statement); constraints are CUDA's, outputs first: "=r,=r,l,f" means two 32-bit
register outputs, a 64-bit input and a float32 input. Outputs come back as the call's value: none,
one value, or a tuple. `memory=True` is the "memory" clobber; `volatile=False` lets the compiler
drop or move the statement when its outputs are unused. The CUDA target checks the text with
ptxas (errors point at the call); the CPU target cannot run PTX and says so.
"""

from __future__ import annotations

import re

from gpunb.compiler import datamodel as dm
from gpunb.compiler import operators as ops
from gpunb.compiler.builtins import Builtin
from gpunb.compiler.typed import Typed
from gpunb.foundation import types as t

# constraint letter -> the kernel-language type of such an operand (PTX register class)
CONSTRAINT_TYPES = {"h": t.uint16, "r": t.uint32, "l": t.uint64, "f": t.float32, "d": t.float64}
_OPERAND = re.compile(r"%(\d+)")


def parse_constraints(text: str) -> tuple[list[str], list[str]] | str:
    """("=r,l,f") -> (["r"], ["l", "f"]), or an error message."""
    outputs, inputs = [], []
    for part in filter(None, (p.strip() for p in text.split(","))):
        if part.startswith("="):
            if inputs:
                return "outputs come first in the constraints, as in CUDA's asm()"
            letter = part[1:]
            target = outputs
        else:
            letter = part
            target = inputs
        if letter not in CONSTRAINT_TYPES:
            return (f"unknown constraint {part!r}: use h (16-bit), r (32-bit), l (64-bit), "
                    "f (float32) or d (float64), '=' before an output")
        target.append(letter)
    return outputs, inputs


class InlinePtx(Builtin):
    name = "cuda.inline_ptx"

    def type_call(self, inf, node, argtypes, kwtypes):
        if len(node.args) < 2 or set(kwtypes) - {"volatile", "memory"}:
            raise inf.error(node, "cuda.inline_ptx(template, constraints, *inputs, "
                            "volatile=True, memory=False)",
                            'e.g. r = cuda.inline_ptx("add.s32 %0, %1, %2;", "=r,r,r", a, b)')
        template = inf.const(node.args[0], "the PTX template")
        constraints = inf.const(node.args[1], "the constraints")
        if not isinstance(template, str) or not isinstance(constraints, str):
            raise inf.error(node, "the PTX template and the constraints are string constants")
        parsed = parse_constraints(constraints)
        if isinstance(parsed, str):
            raise inf.error(node.args[1], parsed)
        outputs, inputs = parsed
        if len(inputs) != len(node.args) - 2:
            raise inf.error(node, f"the constraints name {len(inputs)} input(s); the call "
                            f"passes {len(node.args) - 2}")
        for arg, letter, ty in zip(node.args[2:], inputs, argtypes[2:], strict=True):
            if isinstance(ty, t.Array) and letter == "l":
                continue  # an array passes the address of its first element
            if not (t.is_number(ty) or isinstance(ty, t.BFloat16)) or isinstance(ty, t.Complex):
                raise inf.error(arg, f"an inline PTX operand must be a number (or, for 'l', "
                                f"an array: its address), got {ty}")
        used = {int(n) for n in _OPERAND.findall(template.replace("%%", ""))}
        total = len(outputs) + len(inputs)
        if used and max(used) >= total:
            raise inf.error(node.args[0], f"the template names %{max(used)}, but there are "
                            f"{total} operand(s) (%0 to %{total - 1})")
        flags = {kw.arg: bool(inf.const(kw.value, kw.arg)) for kw in node.keywords}
        result = t.none if not outputs else CONSTRAINT_TYPES[outputs[0]] if len(outputs) == 1 \
            else t.Tuple(tuple(CONSTRAINT_TYPES[o] for o in outputs))
        return Typed(result, (template, tuple(outputs), tuple(inputs),
                              flags.get("volatile", True), flags.get("memory", False)))

    def lower_call(self, low, node, call):
        template, outputs, inputs, volatile, memory = call.data
        b = low.builder
        values = []
        for arg, letter, ty in zip(node.args[2:], inputs, call.argtypes[2:], strict=True):
            value = low.expr(arg)
            if isinstance(ty, t.Array):
                values.append(b.ptrtoint(b.extract_value(value, 0), dm.i64))
                continue
            values.append(_to_register(b, value, ty, CONSTRAINT_TYPES[letter]))
        out = low.target.tensor_cores().inline_ptx(low, node, template, outputs, inputs, values,
                                                   volatile, memory)
        if not outputs:
            return None
        if len(outputs) == 1:
            return out[0]
        return low.build_tuple(out, call.result)


def _to_register(b, value, ty: t.Type, reg: t.Type):
    """An input in its register class: a float into an integer register of its own width as
    its bit pattern (float32 into 'r', float16 or bfloat16 into 'h'); otherwise by value."""
    if isinstance(reg, t.Integer) and isinstance(ty, (t.Float, t.BFloat16)) and \
            t.sizeof(ty) * 8 == reg.bitwidth:
        return b.bitcast(value, dm.value_type(reg))
    return ops.cast(b, value, ty, reg)


BUILTINS = {"cuda.inline_ptx": InlinePtx()}
