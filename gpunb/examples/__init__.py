"""Kernels written with gpunb's kernel language, for notebooks, benchmarks and tests:
hopper_gemm (TMA + wgmma GEMM with warp specialisation; its 128 x 320 kernel is in
hopper_gemm_wide, the host's tile plan for it in hopper_gemm_plan), hopper_attention (a causal
FlashAttention-2 forward with wgmma), async_pipeline (cp.async double buffering). Each runs on
the CPU target too."""
