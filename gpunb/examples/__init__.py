"""Kernels written with gpunb's kernel language, for notebooks, benchmarks and tests:
hopper_gemm (TMA + wgmma GEMM with warp specialisation), hopper_attention (a causal
FlashAttention-2 forward with wgmma), async_pipeline (cp.async double buffering). Each runs on
the CPU target too."""
