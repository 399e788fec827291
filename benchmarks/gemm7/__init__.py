"""Variants of the 128 x 320 cluster GEMM (gpunb.examples.hopper_gemm_wide) timed against it in
the ninth H200 session (issue 24): each module has hopper_gemm's descriptors() and launch(),
for `python -m benchmarks.bench_hopper --only gemm --module benchmarks.gemm7.NAME`."""
