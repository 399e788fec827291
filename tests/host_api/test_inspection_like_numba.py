"""numba-cuda's inspection API on every target: inspect_llvm() is the NVPTX IR handed to LLVM's
optimiser (numba's is NVVM's input), inspect_asm() is PTX, device functions are inspected as
functions of their own; inline= / forceinline= show there as numba-cuda's do; opt=False keeps
locals in local memory and fuses no multiply-add; compile_device and compile(forceinline=)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gpunb import cuda
from gpunb.foundation.errors import InvalidConfigWarning
from gpunb.foundation.types import float32, float64, int32

SIG = (int32[::1],)
CALL = re.compile(r"call [a-zA-Z0-9]* @")


def _caller_of(callee):
    @cuda.jit(SIG)
    def call_set_zero(a):
        callee(a)

    a = np.ones(2, np.int32)
    call_set_zero[1, 2](a)
    assert a[0] == 0
    return call_set_zero.inspect_llvm(SIG)


@pytest.mark.parametrize("inline, inlined", [("always", True), (True, True), ("never", False),
                                             (False, False), (lambda *a: True, True),
                                             (lambda *a: False, False)])
def test_inline_option_decides_the_call(target, inline, inlined):
    @cuda.jit(inline=inline)
    def set_zero(a):
        a[0] = 0

    llvm_ir = _caller_of(set_zero)
    assert (CALL.search(llvm_ir) is None) == inlined
    assert "alwaysinline" not in llvm_ir


def test_forceinline_marks_the_callee(target):
    @cuda.jit(forceinline=True)
    def set_zero(a):
        a[0] = 0

    llvm_ir = _caller_of(set_zero)
    assert CALL.search(llvm_ir) is not None
    callee = re.search(r"define.*[^_]set_zero.*", llvm_ir).group()
    kernel = re.search(r"define.*call_set_zero.*", llvm_ir).group()
    assert "alwaysinline" in callee and "alwaysinline" not in kernel


def test_a_failing_cost_model_is_a_compile_error():
    import gpunb

    @cuda.jit(inline=lambda *a: 1 / 0)
    def set_zero(a):
        a[0] = 0

    @cuda.jit
    def caller(a):
        set_zero(a)

    with pytest.raises(gpunb.CompileError, match="cost model .* ZeroDivisionError"):
        caller[1, 1](np.ones(1, np.int32))


def kernel_func(x):
    x[0] = 1


def device_func(x, y, z):
    return x * y + z


def test_ptx_on_every_target_and_opt(target):
    sig = (float64[::1],)
    assert "__local_depot0" not in cuda.jit(sig)(kernel_func).inspect_asm(sig)
    assert "__local_depot0" in cuda.jit(sig, opt=False)(kernel_func).inspect_asm(sig)
    dsig = (float64, float64, float64)
    fast = cuda.jit(dsig, device=True)(device_func).inspect_asm(dsig)
    assert ".func" in fast and "fma.rn.f64" in fast
    assert "fma.rn.f64" not in cuda.jit(dsig, device=True, opt=False)(device_func).inspect_asm(
        dsig)


def test_compile_device_names_its_symbol(target):
    foo = cuda.jit(device=True)(lambda x, y: x + y)
    result = foo.compile_device((int32, int32))
    name = result.fndesc.mangled_name
    assert "lambda" in name and tuple(result.signature.args) == (int32, int32)
    assert name in foo.inspect_llvm((int32, int32)) and name in foo.inspect_asm((int32, int32))


def test_compile_forceinline_needs_ltoir():
    with pytest.raises(ValueError, match="Can only designate forced inlining in LTO-IR"):
        cuda.compile(lambda a: None, (float64,), device=True, forceinline=True)


def test_debug_with_lineinfo_warns_as_numba():
    with pytest.warns(InvalidConfigWarning, match="debug and lineinfo are mutually exclusive"):
        cuda.jit(debug=True, lineinfo=True, opt=False)(kernel_func)


def test_debug_true_puts_dwarf_sections_in_the_ptx(ptxas):
    sig = (int32[::1],)
    ptx = cuda.jit(sig, debug=True, opt=False)(kernel_func).inspect_asm(sig)
    assert re.search(r"\.section\s+\.debug_info\s+{", ptx)
    ptxas(ptx)  # and ptxas accepts it
    plain = cuda.jit(sig, opt=False)(kernel_func).inspect_asm(sig)
    assert not re.search(r"\.section\s+\.debug_info", plain)


def _local_variable(llvm_ir: str, name: str) -> tuple[str, str]:
    """(metadata id, fields) of the DILocalVariable named `name`."""
    found = re.search(rf'^!(\d+) = !DILocalVariable\(([^)]*name: "{name}"[^)]*)\)', llvm_ir,
                      re.MULTILINE)
    assert found, f"no DILocalVariable {name}:\n{llvm_ir}"
    return found.group(1), found.group(2)


def _type_of(llvm_ir: str, fields: str) -> str:
    type_id = re.search(r"type: !(\d+)", fields).group(1)
    return re.search(rf"^!{type_id} = (.*)$", llvm_ir, re.MULTILINE).group(1)


def test_debug_true_describes_parameters_and_locals_for_a_debugger(ptxas):
    """numba-cuda's debug=True variables (cuda-gdb's `info locals`): each scalar parameter a
    DILocalVariable with its number, declared on its stack slot; each scalar local one with
    arg 0 whose values llvm.dbg.value follows; their DIBasicTypes; the subroutine's types; a
    name holding several types described as numba's union of them."""
    sig = (int32, float32, int32[::1])

    def described(n, scale, out):
        same = n == 3
        total = 0
        for i in range(n):
            total += i
        poly = 100
        poly = 2.5
        out[0] = total + int(scale) + int(same) + int(poly)

    kernel = cuda.jit(sig, debug=True, opt=False)(described)
    llvm_ir = kernel.inspect_llvm(sig)
    for number, name, basic in ((1, "n", 'DW_ATE_signed, name: "int32", size: 32'),
                                (2, "scale", 'DW_ATE_float, name: "float32", size: 32')):
        md, fields = _local_variable(llvm_ir, name)
        assert f"arg: {number}," in fields and basic in _type_of(llvm_ir, fields)
        assert re.search(rf'call void @"llvm\.dbg\.declare"\(metadata i32\* %"{name}", '
                         rf"metadata !{md}, metadata !\d+\)", llvm_ir.replace("float*", "i32*"))
    md, fields = _local_variable(llvm_ir, "same")
    assert "arg: 0," in fields and "DW_ATE_boolean" in _type_of(llvm_ir, fields)
    assert re.search(rf'call void @"llvm\.dbg\.value"\(metadata i1 [^,]+, metadata !{md},',
                     llvm_ir)
    md, fields = _local_variable(llvm_ir, "total")
    assert len(re.findall(rf"llvm\.dbg\.value\"\([^)]*metadata !{md},", llvm_ir)) >= 2
    assert not re.search(rf'llvm\.dbg\.declare"\([^)]*metadata !{md},', llvm_ir)
    _, fields = _local_variable(llvm_ir, "poly")
    assert "DW_TAG_union_type" in _type_of(llvm_ir, fields)
    subroutine = re.search(r"!DISubroutineType\(types: !(\d+)\)", llvm_ir).group(1)
    assert re.search(rf"^!{subroutine} = !{{ null, !\d+, !\d+, null }}", llvm_ir, re.MULTILINE)
    ptx = kernel.inspect_asm(sig)
    assert re.search(r"\.section\s+\.debug_info\s+{", ptx)
    ptxas(ptx)  # ptxas accepts the variables' DWARF
    plain = cuda.jit(sig, opt=False)(described).inspect_llvm(sig)
    assert "DILocalVariable" not in plain and "llvm.dbg.value" not in plain  # debug=True only


@pytest.mark.gpu
def test_a_debug_kernel_with_described_variables_loads_and_runs_on_the_gpu():
    import gpunb

    gpunb.set_target("cuda")
    try:
        @cuda.jit(debug=True, opt=False)
        def summed(n, out):
            total = 0
            for i in range(n):
                total += i
            flag = total > 10
            out[0] = total + int(flag)

        out = np.zeros(1, np.int64)
        summed[1, 1](6, out)
        assert out[0] == 16
    finally:
        gpunb.set_target(None)
