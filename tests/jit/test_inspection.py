"""inspect_asm() / inspect_llvm() of device functions on the CUDA target (simulated driver): the
function's own PTX (a `.func` returning its value), as on the CPU target, never the launchable
wrapper the CUDA target compiles to type-check a declared signature."""

from __future__ import annotations

import math

from gpunb import cuda, float32


def _unary(op):
    def device_function(x):
        return op(x)

    return device_function


def test_device_function_asm_is_the_function_with_fastmath(simulated_gpu):
    sig = (float32,)
    fast = cuda.jit(sig, device=True, fastmath=True)(_unary(math.cos))
    precise = cuda.jit(sig, device=True)(_unary(math.cos))
    fast_ptx, precise_ptx = fast.inspect_asm(sig), precise.inspect_asm(sig)
    for ptx in (fast_ptx, precise_ptx):
        assert ".entry" not in ptx
        assert ".func  (.param .b32 func_retval0)" in ptx
        assert "st.param.b32 \t[func_retval0]" in ptx  # the value is returned, not dropped
    assert "cos.approx.ftz.f32 " in fast_ptx
    assert "cos.approx.ftz.f32 " not in precise_ptx


def test_kernel_and_device_function_of_one_python_function_differ(simulated_gpu):
    def add_one(r, x):
        r[0] = x + 1

    sig = (float32[::1], float32)
    kernel = cuda.jit(sig)(add_one)
    device = cuda.jit(sig, device=True)(add_one)
    assert ".entry" in kernel.inspect_asm(sig)
    assert ".entry" not in device.inspect_asm(sig)
    assert "define ptx_kernel" in kernel.inspect_llvm(sig)
    assert "define ptx_kernel" not in device.inspect_llvm(sig)


def test_device_function_asm_on_the_cpu_target_matches(cpu):
    sig = (float32,)
    fast = cuda.jit(sig, device=True, fastmath=True)(_unary(math.sin))
    ptx = fast.inspect_asm(sig)
    assert ".entry" not in ptx and "sin.approx.ftz.f32 " in ptx


def test_inspect_refuses_an_arch_gpunb_cannot_write_ptx_for():
    """An arch typo was a report with empty PTX/SASS tabs ("resources: unknown") and LLVM's
    "not a recognized processor" warnings on stderr; now it is an error at the caller's line."""
    import numpy as np
    import pytest

    from gpunb.foundation.errors import JitOptionError

    @cuda.jit(target="cpu")
    def one(o):
        o[0] = 1.0

    one[1, 1](np.zeros(1))
    with pytest.raises(JitOptionError, match="arch='sm_999': sm_999 is not an architecture "
                                             "gpunb writes PTX for") as info:
        one.inspect(arch="sm_999")
    assert info.value.loc.line > 0
    assert ".target sm_75" in one.inspect(arch="sm_75").ptx


def test_a_report_without_ptx_says_why_in_its_summary(monkeypatch):
    """With a bad GPUNB_ARCH the summary read "resources: unknown" and nothing else."""
    import numpy as np

    @cuda.jit(target="cpu")
    def one(o):
        o[0] = 1.0

    one[1, 1](np.zeros(1))
    monkeypatch.setenv("GPUNB_ARCH", "banana")
    text = one.inspect().text()
    assert "resources: unknown (" in text and "GPUNB_ARCH='banana'" in text
