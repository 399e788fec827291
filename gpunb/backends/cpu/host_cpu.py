"""The host CPU's LLVM features that the CPU target compiles host objects for: the host's own,
less those whose instructions are not exact (a light module: cache keys need it without
loading the compiler)."""

from __future__ import annotations

import functools

# x86 lowers float32 -> bfloat16 (LLVM's fptrunc) to VCVTNEPS2BF16 where the CPU has it, and
# that instruction flushes subnormal inputs and results to zero whatever MXCSR says: bfloat16
# results would then differ from numpy's and from the GPU's cvt.rn.bf16.f32. Without these
# features LLVM calls __truncsfbf2, gpunb's own exact helper (lowfloat.host_helpers_ir).
_INEXACT_FEATURES = ("avx512bf16", "avxneconvert")


def exact_features(features: dict) -> str:
    """LLVM's feature string ("+avx2,-avx512bf16,...") for {feature: present}, with the
    features whose instructions are not exact turned off."""
    chosen = dict(features, **{name: False for name in _INEXACT_FEATURES})
    return ",".join(("+" if on else "-") + name for name, on in sorted(chosen.items()))


@functools.cache
def host_features() -> str:
    """The host CPU's LLVM features that host objects are compiled for."""
    import llvmlite.binding as llvm

    return exact_features(dict(llvm.get_host_cpu_features()))
