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
from gpunb.foundation.types import float64, int32

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
