"""The CPU target's host objects leave out x86 features whose instructions are not exact:
VCVTNEPS2BF16 (AVX512-BF16, AVX-NE-CONVERT) flushes subnormal float32 inputs and bfloat16
results to zero, so LLVM's fptrunc to bfloat must not be lowered to it."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from gpunb import bfloat16, cuda
from gpunb.backends.cpu.backend import host_arch
from gpunb.backends.cpu.host_cpu import exact_features, host_features

_FPTRUNC = r"""
define i32 @pair(float %a, float %b) {
  %p0 = insertelement <2 x float> undef, float %a, i32 0
  %p1 = insertelement <2 x float> %p0, float %b, i32 1
  %t = fptrunc <2 x float> %p1 to <2 x bfloat>
  %r = bitcast <2 x bfloat> %t to i32
  ret i32 %r
}
"""


def _asm(cpu: str, features: str) -> str:
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    machine = llvm.Target.from_triple("x86_64-unknown-linux-gnu").create_target_machine(
        cpu=cpu, features=features, opt=2)
    return machine.emit_assembly(llvm.parse_assembly(_FPTRUNC))


def test_bf16_conversion_is_not_lowered_to_a_flushing_instruction():
    # a Sapphire Rapids or Zen 4 host has AVX512-BF16: with all its features the conversion is
    # VCVTNEPS2BF16; with gpunb's feature string it is a call of the exact __truncsfbf2
    assert "vcvtneps2bf16" in _asm("sapphirerapids", "")
    features = exact_features({"avx2": True, "avx512bf16": True})
    assert features == "+avx2,-avx512bf16,-avxneconvert"
    assert "vcvtneps2bf16" not in _asm("sapphirerapids", features)
    assert "vcvtneps2bf16" not in _asm("znver4", exact_features({}))
    assert "-avx512bf16" in host_features() and "-avxneconvert" in host_features()
    assert host_arch().count("/") == 2  # the cache key covers the features compiled for


@cuda.jit
def _to_bf16(out, x):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = bfloat16(x[i])


def test_cpu_target_rounds_subnormals_to_bfloat16_exactly():
    import gpunb

    x = np.array([2.0 ** -130, -(2.0 ** -133) * 3, 2.0 ** -127 * 1.5, 1e-39, -1e-40,
                  2.0 ** -149, 1.0 + 2.0 ** -8, 3.0e38], np.float32)
    out = np.zeros(x.size, ml_dtypes.bfloat16)
    gpunb.set_target("cpu")
    try:
        _to_bf16[1, 32](out, x)
    finally:
        gpunb.set_target(None)
    np.testing.assert_array_equal(out.view(np.uint16), x.astype(ml_dtypes.bfloat16)
                                  .view(np.uint16))
