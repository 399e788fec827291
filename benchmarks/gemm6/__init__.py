"""Variants of the 128 x 320 cluster GEMM (gpunb.examples.hopper_gemm_wide) timed against it in
the eighth H200 session (issue 24): each module has hopper_gemm's descriptors() and launch(),
for `python -m benchmarks.bench_hopper --only gemm --module benchmarks.gemm6.NAME`. Kept: the
controls (before, twin, n256) and grid64; the variants that lost (lanes_a, split, n64a, a256:
whole copies of the kernel with one change each, RESULTS.md says what they measured) are in
the history: git show 9e73fb8:benchmarks/gemm6/NAME.py."""
