"""The ninth H200 session's GEMM work (issue 24, RESULTS.md): `uniform`, the 128 x 320 kernel
as it was before its tile plan (every tile 320 wide; `--module benchmarks.gemm7.uniform` of
bench_hopper, the control); `clocks`, the SM clock and power each GEMM runs at; `trace`, a
clock64 trace of one block of the example's kernel per K-slice and tile; `launch_host`, the host
time of hopper_gemm.launch per dtype. The mixed-width plan itself moved into gpunb.examples
(hopper_gemm_plan); its first benchmark module is in the history:
git show 3f9100a:benchmarks/gemm7/mixed.py."""
